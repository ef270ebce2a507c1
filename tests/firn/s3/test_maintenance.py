"""Every maintenance operation on an ``s3://`` table, against a real S3 API server, with the
maintenance lease in the SQL catalog (a SQLite file).

After each operation the table reads the same rows; after expiry and orphan removal the
bucket holds exactly the files the table needs (an independent walk of the retained
snapshots: ``tests.fixtures.maintenance.snapshot_files``). Orphan removal over more than 1,000
objects needs S3's paginated listing (1,000 keys per page) and batch deletes (at most 1,000
keys per ``DeleteObjects``); a proxy in front of the server counts those requests.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import LeaseHeld
from firn.maintenance.orphan_record import record_location
from firn.maintenance.runner import LocalRunner
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.row_deletes import ids, make_table
from tests.fixtures.s3 import S3Server
from tests.fixtures.s3_faults import FaultProxy
from tests.fixtures.s3_tables import MOR, fill, needed, objects


class LeaseWatch:
    """A LocalRunner whose progress callback records who holds the table's lease."""

    def __init__(self, catalog: SqlCatalog, table: str) -> None:
        self.catalog, self.table = catalog, table
        self.seen: list[str | None] = []
        self.runner = LocalRunner(4, progress=self._progress)

    def _progress(self, done: int, total: int) -> None:
        if done == 0:
            holder = self.catalog.maintenance_lease_holder(self.table)
            self.seen.append(holder.operation if holder is not None else None)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_every_operation_leaves_the_rows_and_exactly_the_needed_objects(
    s3_catalog: SqlCatalog, version: int
) -> None:
    t = make_table(s3_catalog, version, partitioned=True, properties=MOR)
    fill(t)
    expected = ids(t)
    watch = LeaseWatch(s3_catalog, "db.t")
    m = t.maintenance

    compacted = m.rewrite_data_files(min_input_files=2).run(watch.runner)
    assert compacted.rewritten_data_files_count >= 4 and ids(t.refresh()) == expected
    t.delete("id in (3, 33)")  # deletes against the compacted files
    expected = ids(t)
    if version == 2:
        deletes = m.rewrite_position_delete_files(rewrite_all=True).run(watch.runner)
        assert deletes.rewritten_delete_files_count >= 1
    else:
        dvs = m.rewrite_deletion_vectors(rewrite_all=True).run(watch.runner)
        assert dvs.rewritten_delete_files_count >= 1
    assert ids(t.refresh()) == expected
    m.rewrite_manifests().run(watch.runner)
    assert ids(t.refresh()) == expected
    if version == 4:
        flushed = m.flush_root(force=True).run(watch.runner)
        assert flushed.entries_moved >= 1 and ids(t.refresh()) == expected

    expired = m.expire_snapshots(older_than=soon_ms(), retain_last=1).run(watch.runner)
    assert expired.expired_snapshot_ids and expired.deleted_files
    assert len(t.refresh().metadata.snapshots) == 1 and ids(t) == expected
    # Everything expiry left behind is needed; a stray object is an orphan.
    stray = f"{t.location}/data/region=eu/stray-00000.parquet"
    t.io.new_output(stray).write(b"not referenced")
    assert objects(t) - needed(t) == {stray}
    first = m.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run(watch.runner)
    assert first.recorded_file_locations == (stray,) and not first.deleted_file_locations
    second = m.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run(watch.runner)
    assert second.deleted_file_locations == (stray,)
    assert objects(t) == needed(t) and ids(t.refresh()) == expected

    # Each run held the table's lease (a row in the SQLite catalog) while its units ran, and
    # released it.
    assert watch.seen and all(op is not None for op in watch.seen)
    assert {"expire_snapshots", "remove_orphan_files"} <= set(watch.seen)
    assert s3_catalog.maintenance_lease_holder("db.t") is None


def test_a_held_lease_keeps_another_run_off_an_s3_table(s3_catalog: SqlCatalog) -> None:
    t = make_table(s3_catalog, 3, properties=MOR)
    fill(t)
    # Another run comes from another thread (within one thread the lease re-enters).
    with (
        s3_catalog.maintenance_lease("db.t", "rewrite_data_files", owner="airflow:run-1"),
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        other = pool.submit(
            lambda: s3_catalog.load_table("db.t").maintenance.expire_snapshots(older_than=soon_ms()).run()
        )
        with pytest.raises(LeaseHeld, match="airflow:run-1"):
            other.result(timeout=120)
    assert len(t.refresh().metadata.snapshots) == 10  # nothing expired


@pytest.fixture
def counting(s3_server: S3Server) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server.endpoint) as proxy:
        yield proxy


def test_orphan_removal_over_more_than_1000_objects(
    tmp_path: Path, s3_warehouse: str, s3_server: S3Server, counting: FaultProxy
) -> None:
    catalog = SqlCatalog(
        "s3test",
        f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_warehouse,
        properties=s3_server.properties(counting.endpoint, **{"s3.delete.batch-size": "1000"}),
    )
    t = make_table(catalog, 3, partitioned=True, properties=MOR)
    fill(t)
    expected, keep = ids(t), objects(t)
    strays = [f"{t.location}/data/region=eu/stray-{i:05d}.parquet" for i in range(1100)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: t.io.new_output(p).write(b"x"), strays))
    assert len(objects(t)) == len(keep) + 1100

    counting.reset_log()
    first = t.maintenance.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run()
    assert sorted(first.recorded_file_locations) == strays and not first.deleted_file_locations
    # More than 1,000 keys under the table: the listing took more than one page.
    assert counting.count("GET", query="list-type") >= 2
    counting.reset_log()
    second = t.maintenance.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run()
    assert sorted(second.deleted_file_locations) == strays and second.deleted_files == 1100
    # The deletes went in DeleteObjects batches of at most 1,000 keys, none key by key.
    assert counting.count("POST", query="delete") == math.ceil(1100 / 1000)
    assert counting.count("DELETE") == 0
    assert objects(t) == keep | {record_location(t.location)} and ids(t.refresh()) == expected
    catalog.close()
