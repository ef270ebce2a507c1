"""Four OS processes appending to one table through one SQLite catalog file at once, under the
default commit.retry.* properties: every commit lands, the history stays one linear chain,
and no row is lost or duplicated.

That they ran at once is checked, not assumed (``tests/fixtures/races.py``): the workers
load the table and then wait at a barrier, so imports are over before anyone commits; each
append (``Table.append``'s own transaction) reports its commit's attempts and span, and the
test requires retried commits and two workers' commits in flight at the same moment. A
serial run fails."""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.races import TimedCommit, assert_raced, timed_commit
from tests.fixtures.tables import make_events_table

WORKERS = 4
APPENDS = 15
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])


Report = tuple[int, list[TimedCommit], str | None]  # worker, its commits in order, error


def _worker(directory: str, worker: int, barrier: Any, results: Any) -> None:
    """Runs in a child process: APPENDS single-row appends, reporting each commit."""
    catalog = make_sqlite_catalog(Path(directory))
    table = catalog.load_table("db.events")
    made: list[TimedCommit] = []
    error: str | None = None
    barrier.wait(timeout=120)  # everyone imported and loaded: start together
    try:
        for i in range(APPENDS):
            row = pa.table(
                {"id": pa.array([worker * 1000 + i], pa.int64()), "worker": pa.array([worker], pa.int32())},
                schema=SCHEMA,
            )
            made.append(timed_commit(worker, lambda tx, row=row: tx.append(row), table))
    except Exception as e:  # reported to the parent, which fails the test with it
        error = f"{type(e).__name__}: {e}"
    finally:
        catalog.close()
    results.put((worker, made, error))


def _run(directory: Path) -> list[Report]:
    ctx = mp.get_context("spawn")  # no fork: the parent holds threads and connections
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(directory), w, barrier, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    reports: list[Report] = []
    deadline = time.monotonic() + 300
    try:
        while len(reports) < WORKERS:
            try:
                reports.append(results.get(timeout=1))
            except queue.Empty:
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    pytest.fail(f"workers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return reports


@pytest.mark.parametrize("version", [2, 3])
def test_four_processes_appending_lose_no_commit(tmp_path: Path, version: int) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    make_events_table(catalog, version, schema=SCHEMA)

    reports = _run(tmp_path)

    errors = [f"worker {w}: {e}" for w, _, e in reports if e is not None]
    assert errors == []
    assert_raced([c for _, commits, _ in reports for c in commits])
    made = {c.snapshot_id for _, commits, _ in reports for c in commits}
    assert len(made) == WORKERS * APPENDS

    table = catalog.load_table("db.events")
    metadata = table.metadata
    # Every reported commit is in the table, and they form one linear chain from the head.
    chain = metadata.ancestors_of(metadata.current_snapshot_id)
    assert {s.snapshot_id for s in chain} == made == {s.snapshot_id for s in table.snapshots()}
    assert chain[-1].parent_snapshot_id is None
    assert [s.sequence_number for s in reversed(chain)] == list(range(1, WORKERS * APPENDS + 1))
    assert [e.snapshot_id for e in metadata.snapshot_log] == [s.snapshot_id for s in reversed(chain)]
    # No row lost or duplicated; per worker, its rows arrived in its own order.
    rows = table.scan().to_arrow()
    expected = sorted(w * 1000 + i for w in range(WORKERS) for i in range(APPENDS))
    assert sorted(rows.column("id").to_pylist()) == expected
    head = table.current_snapshot()
    assert head is not None and head.summary.get("total-records") == str(WORKERS * APPENDS)
    assert head.summary.get("total-data-files") == str(WORKERS * APPENDS)
    position = {s.snapshot_id: n for n, s in enumerate(reversed(chain))}
    for _, commits, _ in reports:
        assert [position[c.snapshot_id] for c in commits] == sorted(position[c.snapshot_id] for c in commits)
    if version == 3:
        row_ids = table.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()
        assert len(set(row_ids)) == WORKERS * APPENDS and None not in row_ids
    catalog.close()
