"""The rewrites beside writers that never stop, and killed halfway.

* Racing writers: four OS processes append and delete (merge-on-read) through one catalog while
  this process compacts, rewrites DVs / position deletes and rewrites manifests in a loop. No
  committed row is lost or resurrected, every file the table reaches exists, and every
  snapshot still reads. SQLite for v2, v3 and V4; Postgres for one case.
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
from tests.fixtures.rewrites import MOR, local_files

WRITERS = 4
OPS = 6
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])


def _catalog(directory: str, postgres_name: str | None) -> SqlCatalog:
    if postgres_name is not None:
        return make_postgres_catalog(Path(directory) / "warehouse", name=postgres_name)
    return make_sqlite_catalog(Path(directory))


def _writer(directory: str, postgres_name: str | None, worker: int, start: Any, results: Any) -> None:
    """Child process: appends of 10 rows, and every third op a delete of one of its own rows
    (retried after a conflict with a rewrite, as a writer would). Reports what committed."""
    catalog = _catalog(directory, postgres_name)
    table = catalog.load_table("db.t")
    appended: list[int] = []
    deleted: list[int] = []
    error: str | None = None
    start.wait(timeout=120)
    try:
        for i in range(OPS):
            if i % 3 == 2:
                victim = next(x for x in appended if x not in deleted and x % 10 == i % 10)
                for _ in range(20):
                    try:
                        table.refresh()
                        table.delete(f"id = {victim}")
                        deleted.append(victim)
                        break
                    except CommitConflict:
                        time.sleep(0.05)
            else:
                ids = [worker * 100_000 + i * 10 + k for k in range(10)]
                table.append(pa.table({"id": ids, "worker": [worker] * 10}, schema=SCHEMA))
                appended.extend(ids)
    except Exception as e:  # reported to the parent, which fails the test with it
        error = f"{type(e).__name__}: {e}"
    finally:
        catalog.close()
    results.put((worker, appended, deleted, error))


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


def _race(directory: Path, version: int, postgres_name: str | None = None) -> None:
    catalog = _catalog(str(directory), postgres_name)
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": str(version), **MOR})
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(directory), postgres_name, w, start, results))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    start.set()
    reports: list[tuple[int, list[int], list[int], str | None]] = []
    rounds: list[str] = []
    deadline = time.monotonic() + 300
    try:
        while len(reports) < WRITERS:
            rounds += _maintain(table, version)
            time.sleep(0.2)  # leave the writers some of the two cores
            try:
                while True:
                    reports.append(results.get_nowait())
            except queue.Empty:
                pass
            if time.monotonic() > deadline or any(p.exitcode not in (None, 0) for p in procs):
                pytest.fail(f"writers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [f"worker {w}: {e}" for w, _, _, e in reports if e]
    assert not errors, errors
    rounds += _maintain(table, version)  # and once more, with the writers gone
    assert any(r.endswith("True") for r in rounds), rounds

    expected = sorted(i for _, appended, deleted, _ in reports for i in appended if i not in deleted)
    table.refresh()
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
