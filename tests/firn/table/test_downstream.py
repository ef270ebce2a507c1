"""Exactly-once downstream tables (``firn.table.downstream``), through the example pipeline's job
(``dags/jobs/aggregate_events.py``, its in-process delta): a clean run equals a recomputation;
a run killed with SIGKILL after its commit, then retried, equals one clean run; duplicate and
late events, concurrent duplicate runs, maintenance-only ranges, maintenance on the target,
expired records and a rolled-back source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import InvalidMetadata, ValidationConflict, ValidationError
from firn.table.downstream import (
    commit_increment,
    plan_increment,
    recorded_source_snapshot,
    source_snapshot_key,
)
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "dags" / "jobs"))
import aggregate_events as job  # noqa: E402

SOURCE = "demo.events"
TARGET = "demo.events_by_kind"
SOURCE_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("region", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)
KINDS = ("view", "click", "cart", "buy")
REGIONS = ("eu", "us", "ap", None)


def batch(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "event_id": list(ids),
            "kind": [KINDS[i % 4] for i in ids],
            "region": [REGIONS[(i // 3) % 4] for i in ids],
            "amount": [None if i % 11 == 0 else (i * 13 % 10000) / 100 for i in ids],
        },
        schema=SOURCE_SCHEMA,
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path, name="lake")
    c.create_namespace("demo")
    yield c
    c.close()


def make_source(catalog: SqlCatalog, version: int) -> Table:
    props = {"format-version": str(version)}
    if version >= 2:
        props["write.delete.mode"] = "merge-on-read"
    return catalog.create_table(SOURCE, SOURCE_SCHEMA, properties=props)


def run(catalog: SqlCatalog, target: str = TARGET, **kwargs: Any) -> dict[str, object]:
    return job.run(catalog, SOURCE, target, job.arrow_delta, **kwargs)


def target_rows(catalog: SqlCatalog, target: str = TARGET) -> pa.Table:
    return (
        catalog.load_table(target).scan().to_arrow().sort_by([("kind", "ascending"), ("region", "ascending")])
    )


def expected(catalog: SqlCatalog) -> pa.Table:
    rows = job.recompute(catalog.load_table(SOURCE).scan().to_arrow())
    return rows.sort_by([("kind", "ascending"), ("region", "ascending")])


def history(source: Table) -> None:
    """Appends, a merge-on-read delete (position deletes / DVs), a compaction, more appends."""
    source.append(batch(0, 40))
    source.append(batch(40, 25))
    source.delete("region = 'us' AND event_id < 30")


@pytest.mark.parametrize("version", [2, 3, 4])
def test_each_commit_processed_once_equals_recomputation(catalog: SqlCatalog, version: int) -> None:
    source = make_source(catalog, version)
    statuses = []
    source.append(batch(0, 40))
    statuses.append(run(catalog)["status"])
    source.append(batch(40, 25))
    source.delete("region = 'us' AND event_id < 30")
    statuses.append(run(catalog)["status"])  # two commits in one range
    source.refresh().maintenance.rewrite_data_files(rewrite_all=True).run()
    statuses.append(run(catalog)["status"])  # compaction only: skipped
    source.refresh().append(batch(65, 10))
    statuses.append(run(catalog)["status"])
    statuses.append(run(catalog)["status"])  # nothing new
    assert statuses == ["processed", "processed", "skipped-maintenance", "processed", "up-to-date"]
    assert target_rows(catalog).equals(expected(catalog))
    assert expected(catalog).num_rows > 0
    # The record is the last data commit processed: the compaction before it is covered too.
    source = catalog.load_table(SOURCE)
    assert (
        recorded_source_snapshot(catalog.load_table(TARGET), SOURCE) == source.current_snapshot().snapshot_id
    )
    # One target commit per processed range, each carrying the source snapshot it covers.
    target = catalog.load_table(TARGET)
    recorded = [s.summary.get(source_snapshot_key(SOURCE)) for s in target.snapshots()]
    assert len(recorded) == 3 and all(r is not None for r in recorded)


_CRASHING_RUN = """
import sys
sys.path[:0] = {paths!r}
from tests.fixtures.catalogs import make_sqlite_catalog
import aggregate_events as job
catalog = make_sqlite_catalog(__import__("pathlib").Path({directory!r}), name="lake")
print(job.run(catalog, {source!r}, {target!r}, job.arrow_delta, crash=True))
"""


def test_killed_after_commit_then_retried_equals_one_clean_run(tmp_path: Path, catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    history(source)
    script = _CRASHING_RUN.format(
        paths=[str(REPO), str(REPO / "provider"), str(REPO / "dags" / "jobs")],
        directory=str(tmp_path),
        source=SOURCE,
        target=TARGET,
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "provider"), str(REPO)])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Killed by SIGKILL after the commit landed, before it reported anything.
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    assert done.stdout == ""
    crashed = catalog.load_table(TARGET)
    assert len(crashed.snapshots()) == 1
    # The retry finds the range recorded and processes nothing twice.
    retry = run(catalog)
    assert retry["status"] == "up-to-date"
    assert len(catalog.load_table(TARGET).snapshots()) == 1
    # The same table as one clean run into another target.
    assert run(catalog, target="demo.clean")["status"] == "processed"
    assert target_rows(catalog).equals(target_rows(catalog, "demo.clean"))
    assert target_rows(catalog).equals(expected(catalog))
    # And later commits continue from there: none skipped.
    catalog.load_table(SOURCE).append(batch(100, 7))
    assert run(catalog)["status"] == "processed"
    assert target_rows(catalog).equals(expected(catalog))


def test_an_exception_after_commit_then_a_retry_processes_nothing_twice(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = make_source(catalog, 3)
    history(source)
    real = job.commit_increment

    def commit_then_fail(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise ConnectionError("worker lost its connection after the commit")

    monkeypatch.setattr(job, "commit_increment", commit_then_fail)
    with pytest.raises(ConnectionError):
        run(catalog)
    monkeypatch.setattr(job, "commit_increment", real)
    assert run(catalog)["status"] == "up-to-date"
    assert target_rows(catalog).equals(expected(catalog))


def test_duplicate_and_late_events(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    s1 = source.append(batch(0, 10)).snapshot_id  # type: ignore[union-attr]
    s2 = source.append(batch(10, 10)).snapshot_id  # type: ignore[union-attr]
    s3 = source.append(batch(20, 10)).snapshot_id  # type: ignore[union-attr]
    first = run(catalog, to_snapshot_id=s1)
    assert first["status"] == "processed" and first["from_snapshot_id"] is None
    assert run(catalog, to_snapshot_id=s1)["status"] == "up-to-date"  # the same event again
    second = run(catalog, to_snapshot_id=s3)  # s2's event was lost: s3's covers it
    assert (second["from_snapshot_id"], second["to_snapshot_id"]) == (s1, s3)
    assert second["snapshot_ids"] == [s2, s3]
    assert run(catalog, to_snapshot_id=s2)["status"] == "up-to-date"  # s2's late event
    # s1's event, later still, after the source expired s1: already processed all the same.
    source.refresh().maintenance.expire_snapshots(retain_last=2, older_than="2999-01-01T00:00:00Z").run()
    assert catalog.load_table(SOURCE).snapshot_by_id(s1) is None
    assert run(catalog, to_snapshot_id=s1)["status"] == "up-to-date"
    assert run(catalog)["status"] == "up-to-date"
    assert target_rows(catalog).equals(expected(catalog))
    assert (
        target_rows(catalog)["events"].to_pylist() and sum(target_rows(catalog)["events"].to_pylist()) == 30
    )


def test_a_concurrent_duplicate_run_commits_nothing(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    source.append(batch(0, 10))
    job.ensure_target(catalog, TARGET)
    # Three runs load the target and plan the same range before any of them commits.
    first, second, third = (catalog.load_table(TARGET) for _ in range(3))
    a, b, c = (plan_increment(source, t) for t in (first, second, third))
    assert a == b == c and not a.is_empty
    assert job.process(first, a, job.arrow_delta(source, a))["status"] == "processed"
    files_before = sorted(p.name for p in Path(first.location).rglob("*.parquet"))
    with pytest.raises(ValidationConflict, match=r"another run processed it"):
        commit_increment(
            second,
            b,
            lambda tx, props: tx.append(job.to_rows({("x", "y"): (1, 1)}), snapshot_properties=props),
        )
    assert len(catalog.load_table(TARGET).snapshots()) == 1
    # The loser's data files were deleted with its commit.
    assert sorted(p.name for p in Path(first.location).rglob("*.parquet")) == files_before
    # Through the job, the loser reports the range as processed instead of failing.
    assert job.process(third, c, job.arrow_delta(source, c))["status"] == "already-processed"
    assert len(catalog.load_table(TARGET).snapshots()) == 1
    assert target_rows(catalog).equals(expected(catalog))


def test_maintenance_on_the_target_keeps_the_record(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    source.append(batch(0, 10))
    run(catalog)
    source.append(batch(10, 10))
    run(catalog)
    target = catalog.load_table(TARGET)
    recorded = recorded_source_snapshot(target, SOURCE)
    target.maintenance.rewrite_data_files(rewrite_all=True).run()
    target = catalog.load_table(TARGET)
    assert target.current_snapshot().summary.operation.value == "replace"  # type: ignore[union-attr]
    assert recorded_source_snapshot(target, SOURCE) == recorded
    source.append(batch(20, 10))
    assert run(catalog)["status"] == "processed"
    assert target_rows(catalog).equals(expected(catalog))


def test_an_expired_record_is_kept_by_the_property_else_an_error(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    source.append(batch(0, 10))
    run(catalog)

    def compact_and_expire_target() -> Table:
        for _ in range(2):
            catalog.load_table(TARGET).maintenance.rewrite_data_files(rewrite_all=True).run()
        catalog.load_table(TARGET).maintenance.expire_snapshots(
            retain_last=1, older_than="2999-01-01T00:00:00Z"
        ).run()
        target = catalog.load_table(TARGET)
        assert len(target.snapshots()) == 1
        assert target.current_snapshot().summary.get(source_snapshot_key(SOURCE)) is None  # type: ignore[union-attr]
        return target

    # The commits that carried the record are expired; the property written with it keeps it.
    target = compact_and_expire_target()
    head = catalog.load_table(SOURCE).current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert recorded_source_snapshot(target, SOURCE) == head
    source.refresh().append(batch(10, 5))
    assert run(catalog)["status"] == "processed"
    assert target_rows(catalog).equals(expected(catalog))
    # Without the property too, the record is gone: an error, never a restart from the start.
    compact_and_expire_target().remove_properties(source_snapshot_key(SOURCE))
    with pytest.raises(
        InvalidMetadata, match=r"records no firn\.source\.demo\.events\.snapshot-id .* expired"
    ):
        recorded_source_snapshot(catalog.load_table(TARGET), SOURCE)


def test_a_rolled_back_source_is_refused(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    s1 = source.append(batch(0, 10)).snapshot_id  # type: ignore[union-attr]
    source.append(batch(10, 10))
    run(catalog)
    source.manage_snapshots().rollback_to(s1).commit()
    source.refresh().append(batch(50, 3))
    with pytest.raises(ValidationError, match=r"not an ancestor .* rolled back"):
        run(catalog)


def test_the_write_must_carry_the_record(catalog: SqlCatalog) -> None:
    source = make_source(catalog, 2)
    source.append(batch(0, 10))
    target = job.ensure_target(catalog, TARGET)
    increment = plan_increment(source, target)
    with pytest.raises(ValidationError, match=r"did not record firn\.source\.demo\.events\.snapshot-id"):
        commit_increment(target, increment, lambda tx, props: tx.append(job.to_rows({("a", "b"): (1, 2)})))
    assert json.loads(json.dumps(increment.to_dict()))["operations"] == ["append"]
