"""Faults on S3: a proxy between Firn and the S3 server (``tests/fixtures/s3_faults.py``)
throttles (``503 SlowDown``), drops connections (before and after the server acted), delays
answers past the request timeout, and fails some keys of batch deletes.

Commits, scans and maintenance either succeed after bounded retries or fail with a
``FirnError`` naming the file; a commit whose answers were lost is never applied twice; and a
later orphan removal leaves the bucket holding exactly what the table needs, nothing lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import FirnError
from firn.table.table import Table
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.row_deletes import ids, make_table, rows
from tests.fixtures.s3 import S3Server
from tests.fixtures.s3_faults import Fault, FaultProxy
from tests.fixtures.s3_tables import MOR, fill, needed, objects

# Firn's own retries wait little here; the SDK's backoff inside pyarrow is its own.
FAST = {
    "s3.retry.min-wait-ms": "10",
    "s3.retry.max-wait-ms": "100",
    "s3.request-timeout": "1",
    "s3.retry.num-retries": "3",
}


@dataclass
class Faulty:
    proxy: FaultProxy
    catalog: SqlCatalog


@pytest.fixture
def faulty(tmp_path: Path, s3_server: S3Server, s3_warehouse: str) -> Iterator[Faulty]:
    with FaultProxy(s3_server.endpoint) as proxy:
        catalog = SqlCatalog(
            "s3test",
            f"sqlite:///{tmp_path / 'catalog.db'}",
            warehouse=s3_warehouse,
            properties=s3_server.properties(proxy.endpoint, **FAST),
        )
        yield Faulty(proxy, catalog)
        catalog.close()


def settle(f: Faulty, t: Table) -> None:
    """With the faults gone: two orphan-removal runs (record, then delete; grace 0), then
    the bucket must hold exactly what the table needs."""
    f.proxy.clear()
    for _ in range(2):
        t.refresh().maintenance.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run()
    assert objects(t) == needed(t)


def test_commits_survive_throttling_and_lost_answers_without_committing_twice(faulty: Faulty) -> None:
    t = make_table(faulty.catalog, 3, partitioned=True, properties=MOR)
    proxy = faulty.proxy
    proxy.add(Fault("slowdown", method="PUT", every=3, times=-1))  # every third upload throttled
    proxy.add(Fault("drop", method="HEAD", every=4, times=-1))  # connections dropped
    # The metadata file's upload reaches the server but its answer is lost, twice: pyarrow
    # uploads it again (same name, same bytes) and the catalog swap happens once.
    lost = proxy.add(Fault("drop-after", method="PUT", path=r"\.metadata\.json$", times=2))
    for i in range(4):
        t.append(rows(range(10 * i, 10 * i + 3)))
    t.delete("id = 1")
    t.upsert(rows([2, 99], name="u"), join_cols=["id"])
    assert lost.hits == 2 and proxy.count(outcome="SlowDown") >= 3 and proxy.count(outcome="drop") >= 1
    reloaded = faulty.catalog.load_table("db.t")
    assert ids(reloaded) == [0, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 99]
    assert len(reloaded.metadata.snapshots) == 6  # four appends, a delete, an upsert: each once
    settle(faulty, reloaded)


def test_scans_retry_throttled_reads_and_answers_slower_than_the_timeout(faulty: Faulty) -> None:
    t = make_table(faulty.catalog, 3, partitioned=True, properties=MOR)
    fill(t)
    expected = ids(t)
    proxy = faulty.proxy
    # pyarrow reports a throttled whole-file GET as INTERNAL_FAILURE and does not retry it:
    # Firn does. Data files are read by the Parquet reader, which the SDK retries.
    throttled = proxy.add(Fault("slowdown", method="GET", every=2, times=6))
    slow = proxy.add(Fault("delay", method="GET", seconds=2.5, skip=3, times=1))  # > s3.request-timeout
    assert ids(faulty.catalog.load_table("db.t")) == expected
    assert throttled.hits == 6 and slow.hits == 1
    proxy.clear()
    assert ids(faulty.catalog.load_table("db.t"), filter="region = 'us'") == [
        i for i in expected if (i // 5) % 2 == 1
    ]


def test_persistent_faults_fail_with_a_clear_error_and_orphan_removal_cleans_up(faulty: Faulty) -> None:
    t = make_table(faulty.catalog, 3, properties=MOR)
    t.append(rows([1, 2]))
    before = t.metadata_location
    proxy = faulty.proxy
    # The new metadata file can never be written; the cleanup of the attempt's data file and
    # manifests fails too, so they stay behind for orphan removal.
    proxy.add(Fault("slowdown", method="PUT", path=r"\.metadata\.json$", times=-1))
    proxy.add(Fault("slowdown", method="POST", query="delete", times=-1))
    started = time.monotonic()
    with pytest.raises(FirnError) as info:
        t.append(rows([3]))
    assert type(info.value).__module__.startswith("firn.")
    assert ".metadata.json: write failed" in str(info.value) and "SLOW_DOWN" in str(info.value)
    assert time.monotonic() - started < 120  # bounded
    proxy.clear()
    reloaded = faulty.catalog.load_table("db.t")
    assert reloaded.metadata_location == before and ids(reloaded) == [1, 2]  # nothing committed
    assert objects(reloaded) - needed(reloaded)  # the failed attempt's files are still there
    settle(faulty, reloaded)
    reloaded.append(rows([3]))
    assert ids(reloaded) == [1, 2, 3]


def test_reads_that_keep_failing_raise_a_firn_error_naming_the_file(faulty: Faulty) -> None:
    t = make_table(faulty.catalog, 3)
    t.append(rows([1]))
    faulty.proxy.add(Fault("slowdown", method="GET", times=-1))
    with pytest.raises(FirnError, match=r"s3://.*: read failed"):
        ids(faulty.catalog.load_table("db.t"))
    faulty.proxy.clear()
    assert ids(faulty.catalog.load_table("db.t")) == [1]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_maintenance_under_throttling_and_dropped_connections(faulty: Faulty, version: int) -> None:
    t = make_table(faulty.catalog, version, partitioned=True, properties=MOR)
    fill(t)
    expected = ids(t)
    proxy = faulty.proxy
    proxy.add(Fault("slowdown", every=7, times=-1))  # every seventh request of any kind
    proxy.add(Fault("drop", method="GET", every=11, times=-1))
    proxy.add(Fault("drop-after", method="PUT", every=13, times=-1))
    m = t.maintenance
    m.rewrite_data_files(min_input_files=2).run()
    if version == 2:
        m.rewrite_position_delete_files(rewrite_all=True).run()
    else:
        m.rewrite_deletion_vectors(rewrite_all=True).run()
    m.rewrite_manifests().run()
    if version == 4:
        m.flush_root(force=True).run()
    m.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    for _ in range(2):
        m.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run()
    assert proxy.count(outcome="SlowDown") >= 5 and proxy.count(outcome="drop") >= 1
    proxy.clear()
    reloaded = faulty.catalog.load_table("db.t")
    assert ids(reloaded) == expected and len(reloaded.metadata.snapshots) == 1
    assert objects(reloaded) == needed(reloaded)


def test_batch_deletes_retry_throttled_keys_and_report_refused_ones(faulty: Faulty) -> None:
    t = make_table(faulty.catalog, 3, partitioned=True, properties=MOR)
    fill(t)
    t.maintenance.rewrite_data_files(min_input_files=2).run()
    expected = ids(t)
    proxy = faulty.proxy
    # S3 answers 200 with per-key errors: SlowDown for the us files (retried by Firn), and
    # AccessDenied for the eu ones (reported, not raised, and left for orphan removal).
    partial = proxy.add(
        Fault(
            "fail-keys",
            method="POST",
            query="delete",
            keys={"region=us": "SlowDown", "region=eu": "AccessDenied"},
        )
    )
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert partial.hits == 1
    assert result.deleted_files and result.skipped
    assert all("region=eu" in s.item and "AccessDenied" in s.reason for s in result.skipped)
    assert not any("region=us" in s.item for s in result.skipped)
    left = {s.item for s in result.skipped}
    assert left <= objects(t.refresh())  # reported and still there
    assert ids(t) == expected
    settle(faulty, t)
    assert not left & objects(t)


CANNOT_COMMIT: list[tuple[str, int, Callable[[Any], Any]]] = [
    ("rewrite_data_files", 4, lambda m: m.rewrite_data_files(min_input_files=2)),
    ("rewrite_deletion_vectors", 4, lambda m: m.rewrite_deletion_vectors(rewrite_all=True)),
    ("rewrite_position_delete_files", 2, lambda m: m.rewrite_position_delete_files(rewrite_all=True)),
    ("rewrite_manifests", 2, lambda m: m.rewrite_manifests()),  # v2: a manifest per append
    ("flush_root", 4, lambda m: m.flush_root(force=True)),
    ("expire_snapshots", 3, lambda m: m.expire_snapshots(older_than=soon_ms(), retain_last=1)),
]


@pytest.mark.parametrize(("operation", "version", "build"), CANNOT_COMMIT, ids=[c[0] for c in CANNOT_COMMIT])
def test_maintenance_that_cannot_commit_fails_clearly_and_leaves_the_table_as_it_was(
    faulty: Faulty, operation: str, version: int, build: Callable[[Any], Any]
) -> None:
    t = make_table(faulty.catalog, version, partitioned=True, properties=MOR)
    fill(t)
    before, location = ids(t), t.metadata_location
    planned = build(t.maintenance)
    # The store throttles every upload of a metadata file, for good.
    faulty.proxy.add(Fault("slowdown", method="PUT", path=r"\.metadata\.json$", times=-1))
    started = time.monotonic()
    with pytest.raises(FirnError, match=r"\.metadata\.json: write failed"):
        planned.run()
    assert time.monotonic() - started < 300  # bounded retries
    faulty.proxy.clear()
    reloaded = faulty.catalog.load_table("db.t")
    assert reloaded.metadata_location == location and ids(reloaded) == before
    assert faulty.catalog.maintenance_lease_holder("db.t") is None  # released on failure
    settle(faulty, reloaded)
