"""Expiry, orphan removal and root flushes beside four writer processes that never stop.

Four OS processes append and delete (merge-on-read) on one table through the catalog while
this process runs an operation in a loop (the rewrites have their own race in
``test_rewrite_concurrency``). Afterwards, and after every run:

* no committed row is lost or comes back (the writers report what committed);
* every file a snapshot still in the metadata needs exists, and every such snapshot reads
  (time travel);
* each run either commits a plan validated against the table as it is then, or fails cleanly
  (a writer that lost a race retries; a run that lost one re-plans);
* nothing is left unreferenced: an orphan scan at the end finds nothing.

That it was a race is checked (issue 25): the writers and this process start at one barrier
after their imports; the writers keep going (ROUNDS rounds at least) until a run that did
something has been followed by a writer's commit, and the test requires such a run (the run
after the writers stopped does not count) and writers that raced each other
(``tests/fixtures/races.py``).

SQLite for v2, v3 and V4 tables; Postgres for one of each operation.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import CommitConflict, ValidationConflict
from firn.table.table import Table
from tests.fixtures.catalogs import (
    POSTGRES_URL,
    drop_postgres_catalog,
    make_postgres_catalog,
    make_sqlite_catalog,
    require_postgres,
)
from tests.fixtures.maintenance import files_by_snapshot, files_on_disk, local, rows, soon_ms
from tests.fixtures.races import TimedCommit, assert_raced, timed_commit

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])
WRITERS = 4
ROUNDS = 6  # each writer's rounds at least; more until a run has landed between writer commits
MAX_ROUNDS = 60
DAY_S = 24 * 3600


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
            # The writers commit until a run has landed between their commits, possibly more
            # than the default 100 versions: keep every metadata file in the log, so the final
            # orphan scan finding nothing still means the race left nothing behind.
            "write.metadata.previous-versions-max": "1000",
        },
    )
    for i in range(3):
        t.append(pa.table({"id": [-1 - 2 * i, -2 - 2 * i], "worker": [-1, -1]}, schema=SCHEMA))
    t.delete("id = -2")
    return t


def _writer(uri: str, warehouse: str, name: str, worker: int, barrier: Any, stop: Any, results: Any) -> None:
    """Child process: each round appends 3 rows, then deletes one of them; at least ROUNDS
    rounds, then until the parent says stop. Reports the rows whose commits landed (appended
    and deleted) and every commit."""
    catalog = SqlCatalog(name, uri, warehouse=warehouse)
    table = catalog.load_table("db.t")
    appended: list[int] = []
    deleted: list[int] = []
    commits: list[TimedCommit] = []
    error = None
    barrier.wait(timeout=120)
    try:
        for r in range(MAX_ROUNDS):
            if r >= ROUNDS and stop.is_set():
                break
            ids = [worker * 10_000 + r * 10 + k for k in range(3)]
            batch = pa.table({"id": ids, "worker": [worker] * 3}, schema=SCHEMA)
            append = lambda tx, b=batch: tx.append(b)  # noqa: E731
            commits.append(timed_commit(worker, append, table, refused=commits))
            appended.extend(ids)
            for _attempt in range(10):
                try:
                    delete = lambda tx, v=ids[1]: tx.delete(f"id = {v}")  # noqa: E731
                    commits.append(timed_commit(worker, delete, table, refused=commits))
                    break
                except ValidationConflict as e:
                    # The history after the snapshot the delete started from was expired
                    # meanwhile (expiry keeps 2 snapshots beside 4 writers), so its conflict
                    # validation cannot see what happened (Iceberg Java refuses the same way).
                    # A start that is itself expired but is the parent of the oldest retained
                    # snapshot commits (issue 23); a delete planned on a table object whose
                    # files expiry removed plans again by itself (``actions.replan``).
                    assert "was expired together with the history after it" in str(e), e
                    table.refresh()
            else:
                raise AssertionError("delete kept conflicting")
            deleted.append(ids[1])
    except Exception as e:  # reported to the parent
        error = f"{type(e).__name__}: {e}"
    finally:
        catalog.close()
    results.put((worker, appended, deleted, commits, error))


def check_retained_snapshots(t: Table) -> None:
    """Every file each snapshot still in the metadata needs exists, and each one reads."""
    t.refresh()
    disk = files_on_disk(t.location)
    for sid, needed in files_by_snapshot(t).items():
        assert needed <= disk, f"snapshot {sid} lost {sorted(needed - disk)[:3]}"
        t.scan(snapshot_id=sid).to_arrow()


def _age_everything(t: Table, strays: int) -> set[str]:
    """Make every file so far look 5 days old (older than orphan removal's default 3-day
    cut-off) and plant ``strays`` old unreferenced files; returns the strays."""
    base = Path(local(t.location))
    planted = set()
    for i in range(strays):
        p = base / "data" / f"stray-{i}.parquet"
        p.write_bytes(b"left behind by a writer that crashed days ago")
        planted.add(str(p))
    old = time.time() - 5 * DAY_S
    for path in files_on_disk(t.location):
        os.utime(path, (old, old))
    return planted


Maintain = Callable[[Table, int], bool]  # one run; True when it committed or deleted something


def _expire(t: Table, round_: int) -> bool:
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
    return result.metadata_location is not None


def _orphans_then_expire(t: Table, round_: int) -> bool:
    # Default options: a 3-day cut-off, no force. The writers' files are young and kept; the
    # old files are referenced (by the current or an older snapshot) or planted strays.
    if round_ % 2 == 0:
        result = t.maintenance.remove_orphan_files(delete=True).run()
        return result.deleted_files > 0
    return _expire(t, round_)


def _flush(t: Table, round_: int) -> bool:
    if round_ % 4 == 3:
        return _expire(t, round_)
    try:
        result = t.maintenance.flush_root(force=True).run()
    except CommitConflict:
        return False  # outlasted its retries beside four writers; the next round plans again
    return result.snapshot_id is not None


def _writer_committed_since(t: Table, sequence_number: int) -> bool:
    """Whether a writer's commit (not a flush's ``replace``) newer than ``sequence_number`` is
    in the table's metadata."""
    return any(
        s.sequence_number > sequence_number and s.operation.value != "replace" for s in t.metadata.snapshots
    )


def _race(catalog: SqlCatalog, uri: str, warehouse: Path, version: int, maintain: Maintain) -> None:
    t = _create(catalog, version)
    if maintain is _orphans_then_expire:
        # Two phases: one orphan run records the strays, a later one deletes them.
        t.set_properties({"orphans.grace": "0"})
    strays = _age_everything(t, 5) if maintain is _orphans_then_expire else set()
    ctx = mp.get_context("spawn")
    barrier, stop, results = ctx.Barrier(WRITERS + 1), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(uri, str(warehouse), catalog.name, w, barrier, stop, results))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    reports: list[tuple[int, list[int], list[int], list[TimedCommit], str | None]] = []
    done = 0
    round_ = 0
    first_effective: int | None = (
        None  # the table's last sequence number after the first run that did something
    )
    beside_writers = False  # a run that did something was followed by a writer's commit
    deadline = time.monotonic() + 300
    try:
        barrier.wait(timeout=120)
        while len(reports) < WRITERS:
            # Each run plans on what it finds; commits assert what they read; files go only
            # after a commit landed (expiry) or after the references were checked again (orphans).
            t.refresh()
            if maintain(t, round_):
                done += 1
                if first_effective is None:
                    first_effective = t.refresh().metadata.last_sequence_number
            round_ += 1
            check_retained_snapshots(t)
            writers_followed = first_effective is not None and _writer_committed_since(t, first_effective)
            if writers_followed and not beside_writers:
                beside_writers = True
                stop.set()  # the writers finish their ROUNDS and stop
            try:
                reports.append(results.get(timeout=0.05))
            except queue.Empty:
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    pytest.fail(f"writers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [f"writer {w}: {e}" for w, _, _, _, e in reports if e]
    assert not errors, errors
    assert done >= 1, "the operation never did anything beside the writers"
    assert beside_writers, f"no run that did something was followed by a writer's commit ({done} runs did)"
    assert_raced([c for *_, commits, _ in reports for c in commits])
    t.refresh()
    maintain(t, 0)  # once more with the writers gone (not counted above)
    expected = {-1, -3, -4, -5, -6}
    expected |= {i for _, a, _, _, _ in reports for i in a} - {i for _, _, d, _, _ in reports for i in d}
    assert {r["id"] for r in rows(t)} == expected  # nothing lost, nothing resurrected
    check_retained_snapshots(t)
    assert not strays & files_on_disk(t.location)  # the planted orphans are gone
    assert t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan().orphans == ()


OPERATIONS: dict[str, Maintain] = {
    "expire_snapshots": _expire,
    "remove_orphan_files": _orphans_then_expire,
    "flush_root": _flush,
}
SQLITE_CASES = [
    pytest.param(name, version, id=f"{name}-v{version}")
    for name in OPERATIONS
    for version in ((4,) if name == "flush_root" else (2, 3, 4))
]


@pytest.mark.parametrize(("operation", "version"), SQLITE_CASES)
def test_beside_four_writer_processes_sqlite(tmp_path: Path, operation: str, version: int) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    try:
        _race(
            catalog,
            f"sqlite:///{tmp_path / 'catalog.db'}",
            tmp_path / "warehouse",
            version,
            OPERATIONS[operation],
        )
    finally:
        catalog.close()


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("operation", "version"),
    [("expire_snapshots", 3), ("remove_orphan_files", 2), ("flush_root", 4)],
)
def test_beside_four_writer_processes_postgres(tmp_path: Path, operation: str, version: int) -> None:
    require_postgres()
    catalog = make_postgres_catalog(tmp_path / "warehouse")
    try:
        _race(catalog, POSTGRES_URL, tmp_path / "warehouse", version, OPERATIONS[operation])
    finally:
        drop_postgres_catalog(catalog)
