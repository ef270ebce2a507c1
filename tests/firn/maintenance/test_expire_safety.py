"""Expiry beside writers that never stop, and expiry killed midway.

* Racing writers: writer processes append and delete on one table (SQLite, and Postgres with
  the ``postgres_catalog`` fixture) while expiries run: no committed row is lost or comes back,
  no file a retained snapshot needs is deleted, and every retained snapshot still reads.
* Crashes: a process killed (SIGKILL) after its expiry committed but before it deleted files,
  or before the commit landed, leaves a loadable table equal to a committed state; what it left
  behind is what ``remove_orphan_files`` then reclaims.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import LeaseHeld, ValidationConflict
from firn.table.table import Table
from tests.fixtures.catalogs import make_postgres_catalog, make_sqlite_catalog, postgres_unavailable
from tests.fixtures.maintenance import files_by_snapshot, files_on_disk, rows, rows_by_snapshot, soon_ms

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])
WRITERS = 3
ROUNDS = 6
ROOT = Path(__file__).resolve().parents[3]


def _create(catalog: SqlCatalog, version: int) -> Table:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        properties={
            "format-version": str(version),
            "write.delete.mode": "merge-on-read",
            "commit.retry.num-retries": "20",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "200",
        },
    )
    t.append(pa.table({"id": [-1], "worker": [-1]}, schema=SCHEMA))
    return t


def _writer(uri: str, warehouse: str, name: str, worker: int, start: Any, results: Any) -> None:
    """Child process: each round appends 3 rows, then deletes one of them; reports the rows
    whose commits landed (appended and deleted)."""
    catalog = SqlCatalog(name, uri, warehouse=warehouse)
    table = catalog.load_table("db.t")
    appended: list[int] = []
    deleted: list[int] = []
    conflicts = 0
    error = None
    start.wait(timeout=120)
    try:
        for r in range(ROUNDS):
            ids = [worker * 10_000 + r * 10 + k for k in range(3)]
            table.append(pa.table({"id": ids, "worker": [worker] * 3}, schema=SCHEMA))
            appended.extend(ids)
            for _attempt in range(10):
                try:
                    table.delete(f"id = {ids[1]}")
                    break
                except ValidationConflict:
                    # The snapshot the delete started from was expired meanwhile, so its
                    # conflict validation cannot see the history (Iceberg Java refuses the
                    # same way): the delete committed nothing; start it again.
                    conflicts += 1
                    table.refresh()
            else:
                raise AssertionError("delete kept conflicting")
            deleted.append(ids[1])
    except Exception as e:  # reported to the parent
        error = f"{type(e).__name__}: {e}"
    finally:
        catalog.close()
    results.put((worker, appended, deleted, error))


def _race(catalog: SqlCatalog, uri: str, warehouse: Path, version: int) -> None:
    t = _create(catalog, version)
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(uri, str(warehouse), catalog.name, w, start, results))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    start.set()
    reports: list[tuple[int, list[int], list[int], str | None]] = []
    expiries = 0
    deadline = time.monotonic() + 300
    try:
        while len(reports) < WRITERS:
            # Expire while they write: each run re-plans on what it finds, the commit asserts the
            # refs it read, files go only after it landed.
            t.refresh()
            result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
            expiries += 1 if result.metadata_location else 0
            check_retained_snapshots(t)
            try:
                reports.append(results.get(timeout=0.05))
            except queue.Empty:
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    pytest.fail(f"writers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [f"writer {w}: {e}" for w, _, _, e in reports if e]
    assert not errors, errors
    assert expiries >= 1
    t.refresh()
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    expected = {-1} | {i for _, a, _, _ in reports for i in a} - {i for _, _, d, _ in reports for i in d}
    assert {r["id"] for r in rows(t)} == expected
    check_retained_snapshots(t)
    assert t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan().orphans == ()


def check_retained_snapshots(t: Table) -> None:
    """Every file each snapshot still in the metadata needs exists, and each one reads."""
    t.refresh()
    disk = files_on_disk(t.location)
    for sid, needed in files_by_snapshot(t).items():
        assert needed <= disk, f"snapshot {sid} lost {sorted(needed - disk)[:3]}"
        t.scan(snapshot_id=sid).to_arrow()


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3, 4])
def test_expiry_beside_racing_writers_sqlite(tmp_path: Path, version: int) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    _race(catalog, f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path / "warehouse", version)
    catalog.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_expiry_beside_racing_writers_postgres(tmp_path: Path) -> None:
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    from tests.fixtures.catalogs import POSTGRES_URL, drop_postgres_catalog

    catalog = make_postgres_catalog(tmp_path / "warehouse")
    try:
        _race(catalog, POSTGRES_URL, tmp_path / "warehouse", 3)
    finally:
        drop_postgres_catalog(catalog)


# -- crashes ---------------------------------------------------------------------------------------------
_KILL_AFTER_COMMIT = """
from firn.maintenance.expire_snapshots import ExpireSnapshotsPlan
def die(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the commit landed; no file deleted yet
ExpireSnapshotsPlan.cleanup_units = die
"""
_KILL_BEFORE_COMMIT = """
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationConflict
def die(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the new metadata file is written, the swap never happens
SqlCatalog.swap_metadata_location = die
"""


# The killed run's lease outlives it until it expires: short here, so the tests can wait it out.
SHORT_LEASE = {"maintenance.lease.duration-ms": "1500", "maintenance.lease.heartbeat-interval-ms": "500"}


def _wait_out_the_dead_runs_lease(t: Table) -> None:
    """A killed maintenance run still holds the table's lease: nothing else runs until it expires."""
    with pytest.raises(LeaseHeld, match="expire_snapshots"):
        t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).run()
    time.sleep(1.6)


def _expire_in_a_process_that_dies(directory: Path, patch: str, older_than: int) -> None:
    script = (
        textwrap.dedent(
            """
        import os, signal
        from pathlib import Path
        from tests.fixtures.catalogs import make_sqlite_catalog
        """
        )
        + textwrap.dedent(patch)
        + textwrap.dedent(
            f"""
        t = make_sqlite_catalog(Path({str(directory)!r}), **{SHORT_LEASE!r}).load_table("db.t")
        t.maintenance.expire_snapshots(older_than={older_than}, retain_last=1).run()
        raise SystemExit("expected to be killed")
        """
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, check=False, capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def _history(catalog: SqlCatalog, version: int) -> Table:
    t = _create(catalog, version)
    for i in range(4):
        t.append(pa.table({"id": [10 * i, 10 * i + 1], "worker": [0, 1]}, schema=SCHEMA))
    t.delete("id = 1")
    t.overwrite(pa.table({"id": [99], "worker": [9]}, schema=SCHEMA), filter="id >= 30")
    return t


@pytest.mark.parametrize("version", [2, 4])
def test_killed_between_commit_and_deletes(sqlite_catalog: SqlCatalog, tmp_path: Path, version: int) -> None:
    t = _history(sqlite_catalog, version)
    current_rows = rows(t)
    head = t.current_snapshot()
    assert head is not None
    older_than = soon_ms()
    expected = t.maintenance.expire_snapshots(older_than=older_than, retain_last=1).plan()
    would_delete = {p for g in expected.files.values() for p in g.paths}
    disk = files_on_disk(t.location)
    _expire_in_a_process_that_dies(tmp_path, _KILL_AFTER_COMMIT, older_than)
    t.refresh()  # loadable, and equal to the committed expiry
    assert [s.snapshot_id for s in t.snapshots()] == [head.snapshot_id]
    assert rows(t) == current_rows
    assert files_on_disk(t.location) >= disk  # nothing deleted before the kill
    check_retained_snapshots(t)
    _wait_out_the_dead_runs_lease(t)
    result = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, dry_run=False).run()
    assert would_delete <= set(result.orphan_file_locations)
    # What the orphans were: what expiry would have deleted (the kill left nothing else).
    assert set(result.orphan_file_locations) == would_delete
    check_retained_snapshots(t)
    assert rows(t) == current_rows


def test_killed_before_the_commit_landed(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    t = _history(sqlite_catalog, 3)
    before_files, before_rows = files_by_snapshot(t), rows_by_snapshot(t)
    location = t.metadata_location
    disk = files_on_disk(t.location)
    _expire_in_a_process_that_dies(tmp_path, _KILL_BEFORE_COMMIT, soon_ms())
    t.refresh()
    assert t.metadata_location == location  # the committed state before the expiry
    assert files_by_snapshot(t) == before_files and rows_by_snapshot(t) == before_rows
    leftovers = files_on_disk(t.location) - disk
    assert len(leftovers) == 1 and next(iter(leftovers)).endswith(".metadata.json")
    _wait_out_the_dead_runs_lease(t)
    result = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, dry_run=False).run()
    assert set(result.orphan_file_locations) == leftovers
    assert files_on_disk(t.location) == disk
