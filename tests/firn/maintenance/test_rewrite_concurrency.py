"""The rewrites beside writers that never stop, and killed halfway.

* Racing writers: four OS processes append and delete (merge-on-read) through one catalog while
  this process compacts, rewrites DVs / position deletes and rewrites manifests in a loop. No
  committed row is lost or resurrected, every file the table reaches exists, and every
  snapshot still reads. SQLite for v2, v3 and V4; Postgres for one case. All five processes
  start at a barrier after their imports; the writers keep going until a rewrite has landed
  between writer commits, and the test requires such rewrites (one committed after the
  writers stopped does not count) and writers that raced each other (retried commits,
  commits in flight at once: ``tests/fixtures/races.py``).
* Crash: a process killed (SIGKILL) after a plan's work units ran and before its commit leaves
  the table as it was; what the units wrote is orphaned.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import CommitConflict
from firn.maintenance.runner import LocalRunner, UnitFunction, UnitResult, WorkUnit
from firn.table.table import Table
from tests.fixtures.catalogs import make_postgres_catalog, make_sqlite_catalog
from tests.fixtures.races import TimedCommit, assert_raced, timed_commit
from tests.fixtures.rewrites import MOR, local_files

WRITERS = 4
OPS = 6  # each writer's operations at least; more until a rewrite has landed between writer commits
MAX_OPS = 60  # the race gives up (and the test fails) after this many per writer
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])
REWRITE = "replace"  # the operation of every rewrite's snapshot; writers append and delete


def _catalog(directory: str, postgres_name: str | None) -> SqlCatalog:
    if postgres_name is not None:
        return make_postgres_catalog(Path(directory) / "warehouse", name=postgres_name)
    return make_sqlite_catalog(Path(directory))


def _writer(
    directory: str, postgres_name: str | None, worker: int, barrier: Any, stop: Any, results: Any
) -> None:
    """Child process: appends of 10 rows, and every third op a delete of one of its own rows
    (retried after a conflict with a rewrite, as a writer would), at least OPS operations and
    then until the parent says stop. Reports every commit it made."""
    catalog = _catalog(directory, postgres_name)
    table = catalog.load_table("db.t")
    appended: list[int] = []
    deleted: list[int] = []
    commits: list[TimedCommit] = []
    error: str | None = None
    barrier.wait(timeout=120)  # the writers and the maintaining parent start together
    try:
        for i in range(MAX_OPS):
            if i >= OPS and stop.is_set():
                break
            if i % 3 == 2:
                victim = next(x for x in appended if x not in deleted and x % 10 == i % 10)
                for _ in range(20):
                    try:
                        table.refresh()
                        delete = lambda tx, v=victim: tx.delete(f"id = {v}")  # noqa: E731
                        commits.append(timed_commit(worker, delete, table, refused=commits))
                        deleted.append(victim)
                        break
                    except CommitConflict:
                        time.sleep(0.05)
            else:
                ids = [worker * 100_000 + i * 10 + k for k in range(10)]
                rows = pa.table({"id": ids, "worker": [worker] * 10}, schema=SCHEMA)
                commits.append(timed_commit(worker, lambda tx, r=rows: tx.append(r), table))
                appended.extend(ids)
    except Exception as e:  # reported to the parent, which fails the test with it
        error = f"{type(e).__name__}: {e}"
    finally:
        catalog.close()
    results.put((worker, appended, deleted, commits, error))


def _maintain(table: Table, version: int) -> list[str]:
    """One round of every rewrite; conflicts are fine (the next round plans again)."""
    outcomes = []
    ops: list[tuple[str, dict[str, Any]]] = [
        ("rewrite_data_files", {"min_input_files": 2, "partial_progress_enabled": True}),
        ("rewrite_manifests", {}),
    ]
    ops.insert(
        1,
        (
            "rewrite_deletion_vectors" if version >= 3 else "rewrite_position_delete_files",
            {"min_input_files": 2},
        ),
    )
    for name, options in ops:
        try:
            table.refresh()
            result = getattr(table.maintenance, name)(**options).run()
            outcomes.append(f"{name}: {result.snapshot_id is not None}")
        except CommitConflict as e:
            outcomes.append(f"{name}: conflict {e}")
    return outcomes


def _rewrites_amid_writers(table: Table) -> list[int]:
    """Rewrite snapshots on the current history that a writer's commit followed: rewrites that
    landed while the writers were still committing (the ones the race is about)."""
    history = list(reversed(table.metadata.ancestors_of(table.metadata.current_snapshot_id)))
    last_writer = max((n for n, s in enumerate(history) if s.operation.value != REWRITE), default=-1)
    return [s.snapshot_id for s in history[:last_writer] if s.operation.value == REWRITE]


def _race(directory: Path, version: int, postgres_name: str | None = None) -> None:
    catalog = _catalog(str(directory), postgres_name)
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": str(version), **MOR})
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WRITERS + 1)
    stop = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(directory), postgres_name, w, barrier, stop, results))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    reports: list[tuple[int, list[int], list[int], list[TimedCommit], str | None]] = []
    rounds: list[str] = []
    deadline = time.monotonic() + 300
    try:
        barrier.wait(timeout=120)
        while len(reports) < WRITERS:
            rounds += _maintain(table, version)
            if not stop.is_set() and _rewrites_amid_writers(table.refresh()):
                stop.set()  # the writers finish their OPS and stop
            time.sleep(0.2)  # leave the writers some of the two cores
            try:
                while True:
                    reports.append(results.get_nowait())
            except queue.Empty:
                pass
            if time.monotonic() > deadline or any(p.exitcode not in (None, 0) for p in procs):
                pytest.fail(f"writers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [f"worker {w}: {e}" for w, _, _, _, e in reports if e]
    assert not errors, errors
    table.refresh()
    # What the race proves: rewrites landed between writer commits (so writers committed on
    # top of rewritten files), and the writers raced each other. Rewrites after the writers
    # stopped (the round below) do not count.
    amid = _rewrites_amid_writers(table)
    assert amid, f"no rewrite landed while the writers were committing in {MAX_OPS} ops each: {rounds}"
    writer_commits = [c for *_, commits, _ in reports for c in commits]
    assert_raced(writer_commits)
    rounds += _maintain(table, version)  # and once more, with the writers gone

    expected = sorted(i for _, appended, deleted, _, _ in reports for i in appended if i not in deleted)
    table.refresh()
    history = {s.snapshot_id for s in table.metadata.ancestors_of(table.metadata.current_snapshot_id)}
    landed = {c.snapshot_id for c in writer_commits if c.snapshot_id is not None}  # not refused attempts
    assert landed <= history  # every writer commit is on the history
    got = sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist())
    assert got == expected  # nothing lost, nothing resurrected, nothing duplicated
    for task in table.scan().plan_files():  # every reachable file exists
        assert table.io.new_input(task.file.file_path).exists()
        for d in task.delete_files:
            assert table.io.new_input(d.file_path).exists()
    for snap in table.metadata.snapshots:  # time travel to every snapshot still reads
        table.scan(snapshot_id=snap.snapshot_id).to_arrow()
    catalog.close()


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3, 4])
def test_rewrites_beside_four_writer_processes(tmp_path: Path, version: int) -> None:
    _race(tmp_path, version)


@pytest.mark.slow
@pytest.mark.postgres
def test_rewrites_beside_writers_on_postgres(postgres_catalog: SqlCatalog, tmp_path: Path) -> None:
    _race(tmp_path, 3, postgres_name=postgres_catalog.name)


# -- crash between units and commit -------------------------------------------------------------------
class _KillAfterUnits:
    """Runs the units, then kills this process before the driver can commit."""

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]:
        LocalRunner(2).map(fn, units)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def _crashing_run(directory: str, operation: str) -> None:
    table = make_sqlite_catalog(Path(directory)).load_table("db.t")
    options: dict[str, Any] = {"min_input_files": 2} if operation != "rewrite_manifests" else {}
    getattr(table.maintenance, operation)(**options).plan().execute(table, _KillAfterUnits())


@pytest.mark.parametrize("operation", ["rewrite_data_files", "rewrite_deletion_vectors", "rewrite_manifests"])
def test_a_crash_before_the_commit_leaves_a_committed_state(tmp_path: Path, operation: str) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": "3", **MOR})
    for i in range(4):
        table.append(pa.table({"id": [i * 10 + k for k in range(10)], "worker": [0] * 10}, schema=SCHEMA))
    for i in range(4):
        table.delete(f"id = {i * 10 + 1}")  # a Puffin file per delete: something to pack
    location = table.metadata_location
    rows = sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist())
    files_before = local_files(tmp_path / "warehouse")

    proc = mp.get_context("spawn").Process(target=_crashing_run, args=(str(tmp_path), operation))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -signal.SIGKILL

    table = make_sqlite_catalog(tmp_path).load_table("db.t")
    assert table.metadata_location == location  # nothing was committed
    assert sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist()) == rows
    orphans = local_files(tmp_path / "warehouse") - files_before
    assert orphans  # what the units wrote stays behind, unreferenced, for remove_orphan_files
    reachable = {t.file.file_path for t in table.scan().plan_files()} | {
        d.file_path for t in table.scan().plan_files() for d in t.delete_files
    }
    assert not (orphans & reachable)
