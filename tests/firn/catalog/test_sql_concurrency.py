"""Several processes doing compare-and-swap loops on one catalog: no swap is ever lost.

Each worker process opens its own catalog on the shared database and repeatedly reads the
table's pointer and tries to swap it to a location of its own. Afterwards every successful
swap a worker reported must sit on one linear chain from the initial pointer to the final
one: two successes from the same base would be a lost update, and a success missing from
the chain would be a commit the catalog forgot.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.create import new_table_metadata
from firn.errors import CommitConflict
from firn.io.memory import InMemoryFileIO
from tests.fixtures.catalogs import (
    POSTGRES_URL,
    drop_postgres_catalog,
    make_postgres_catalog,
    make_sqlite_catalog,
    require_postgres,
    simple_schema,
)

WORKERS = 4
SWAPS_PER_WORKER = 25
# Any TableMetadata will do for the cache the catalog keeps; each process builds its own.
_METADATA = new_table_metadata(simple_schema(), location="memory://wh/db/t", format_version=2)


def _worker(uri: str, name: str, worker: int, swaps: int, barrier: Any, results: Any) -> None:
    """Runs in a child process: ``swaps`` successful CAS commits, reported with the conflicts."""
    # The SQL commit only moves the pointer, so the files need not exist: a memory FileIO will do.
    catalog = SqlCatalog(name, uri, io=InMemoryFileIO(), warehouse="memory://wh")
    wins: list[tuple[str, str]] = []
    conflicts = 0
    attempt = 0
    barrier.wait(timeout=120)  # start together to maximise contention
    deadline = time.monotonic() + 120
    while len(wins) < swaps and time.monotonic() < deadline:
        attempt += 1
        current = catalog.load_metadata_location("db.t")
        new = f"memory://wh/db/t/metadata/{worker}-{attempt}.metadata.json"
        try:
            catalog.swap_metadata_location("db.t", current, new, _METADATA)
        except CommitConflict:
            conflicts += 1
            continue
        wins.append((current, new))
    catalog.close()
    results.put((wins, conflicts))


def _run_workers(uri: str, name: str) -> tuple[list[tuple[str, str]], int]:
    ctx = multiprocessing.get_context("spawn")  # no fork: the parent holds threads and connections
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(uri, name, w, SWAPS_PER_WORKER, barrier, results))
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    reports: list[tuple[list[tuple[str, str]], int]] = []
    deadline = time.monotonic() + 300
    try:
        while len(reports) < len(procs):
            try:
                reports.append(results.get(timeout=1))
            except queue.Empty:
                # Fail fast (not after the deadline) if a worker died without reporting.
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    pytest.fail(f"workers failed (exit codes {crashed}) or timed out")
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    wins = [win for worker_wins, _ in reports for win in worker_wins]
    return wins, sum(c for _, c in reports)


def _assert_linear_history(wins: list[tuple[str, str]], initial: str, final: str) -> None:
    assert len(wins) == WORKERS * SWAPS_PER_WORKER, "a worker ran out of time"
    successor = dict(wins)
    assert len(successor) == len(wins), "two swaps succeeded from the same base: a lost update"
    cursor, steps = initial, 0
    while cursor in successor:
        cursor, steps = successor[cursor], steps + 1
    assert steps == len(wins), "a reported success is not on the chain"
    assert cursor == final


@pytest.mark.slow
def test_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    initial = catalog.create_table("db.t", simple_schema()).metadata_location
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    wins, conflicts = _run_workers(uri, catalog.name)
    final = catalog.load_metadata_location("db.t")
    _assert_linear_history(wins, initial, final)
    assert conflicts > 0, "the workers never contended; the test proves nothing"
    catalog.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_processes_share_one_postgres_catalog(tmp_path: Path) -> None:
    require_postgres()
    catalog = make_postgres_catalog(tmp_path / "warehouse")
    try:
        catalog.create_namespace("db")
        initial = catalog.create_table("db.t", simple_schema()).metadata_location
        wins, _ = _run_workers(POSTGRES_URL, catalog.name)
        _assert_linear_history(wins, initial, catalog.load_metadata_location("db.t"))
    finally:
        drop_postgres_catalog(catalog)
