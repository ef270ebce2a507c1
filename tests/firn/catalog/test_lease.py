"""The per-table maintenance lease: one holder at a time across processes (SQLite, Postgres),
renewed while the run works, released at the end, taken over only after it expires, also
after its holder was killed.

Timing (issue 25, item 4): expiry is judged on the store's own clock (the database's, or the
memory catalog's), which ``_lease_get`` returns, so the tests wait on that clock instead of
sleeping a guessed time and compare the store's timestamps instead of wall-clock bounds.
Leases live long enough (seconds, heartbeats every 100-200 ms) that a heartbeat thread or a
test step stalled for a second on a loaded two-core machine changes nothing.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa

from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.lease import LEASE_OWNER_LABEL, LeaseSettings, default_owner
from firn.catalog.sql import MAINTENANCE_LEASES, SqlCatalog
from firn.errors import LeaseHeld, ValidationError
from tests.fixtures.catalogs import (
    POSTGRES_URL,
    drop_postgres_catalog,
    make_memory_catalog,
    make_postgres_catalog,
    make_sqlite_catalog,
    require_postgres,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCatalog]:
    if request.param == "memory":
        yield make_memory_catalog()
    elif request.param == "sqlite":
        c = make_sqlite_catalog(tmp_path)
        yield c
        c.close()
    else:
        require_postgres()
        pg = make_postgres_catalog(tmp_path / "warehouse")
        yield pg
        drop_postgres_catalog(pg)


def _in_thread(fn: Any) -> Any:
    """Run ``fn`` in another thread (the lease is re-entrant within one thread) and return
    what it returned or raised."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as e:
            out.append(e)

    th = threading.Thread(target=target)
    th.start()
    th.join()
    return out[0]


def _store_clock(catalog: BaseCatalog, table: str = "db.t") -> tuple[Any, int]:
    """The table's lease row (or None) and the lease store's clock, in ms."""
    ns, name = table.split(".")
    return catalog._lease_get(ns, name)


def _wait_for_store_clock(catalog: BaseCatalog, until_ms: int, *, timeout_s: float = 60) -> None:
    """Block until the lease store's clock reaches ``until_ms``."""
    deadline = time.monotonic() + timeout_s
    while (now := _store_clock(catalog)[1]) < until_ms:
        assert time.monotonic() < deadline, f"the store's clock stayed at {now}, short of {until_ms}"
        time.sleep(min(0.05, (until_ms - now) / 1000))


def _try(catalog: BaseCatalog, operation: str = "other", table: str = "db.t", **kw: Any) -> Any:
    def attempt() -> str:
        with catalog.maintenance_lease(table, operation, owner="rival", **kw):
            return "won"

    return _in_thread(attempt)


def test_held_refused_released(catalog: BaseCatalog) -> None:
    with catalog.maintenance_lease("db.t", "expire_snapshots", owner="host:1:task-a") as lease:
        holder = catalog.maintenance_lease_holder("db.t")
        assert (
            holder is not None and holder.owner == "host:1:task-a" and holder.operation == "expire_snapshots"
        )
        assert holder == lease.info
        err = _try(catalog, "rewrite_data_files")
        assert isinstance(err, LeaseHeld)
        assert (err.holder, err.operation, err.expires_at_ms) == (
            "host:1:task-a",
            "expire_snapshots",
            holder.expires_at_ms,
        )
        assert "cannot run rewrite_data_files on db.t" in str(err)
        assert "held by host:1:task-a (running expire_snapshots since" in str(err) and " until " in str(err)
        assert _try(catalog, table="db.other") == "won"  # leases are per table
    assert catalog.maintenance_lease_holder("db.t") is None
    assert _try(catalog) == "won"  # released: free at once


def test_expired_lease_is_taken_over_and_its_renewal_fails(catalog: BaseCatalog) -> None:
    # A holder that stopped renewing: the primitive alone, no heartbeat. Two seconds: far more
    # than the one statement the next line needs, even on a loaded machine.
    row, _ = catalog._lease_acquire("db", "t", "stale-id", "dead:1", "flush_root", 2000)
    assert row.lease_id == "stale-id"
    err = _try(catalog)
    assert isinstance(err, LeaseHeld) and err.expires_at_ms == row.expires_at_ms
    _wait_for_store_clock(catalog, row.expires_at_ms)
    assert catalog.maintenance_lease_holder("db.t") is None
    assert _try(catalog) == "won"
    taken, _ = _store_clock(catalog)
    assert taken.owner == "rival" and taken.acquired_at_ms >= row.expires_at_ms
    assert catalog._lease_renew("db", "t", "stale-id", 2000) is None  # taken over: cannot renew


RENEWED_MS = 1500  # a lease of 1.5 s renewed every 100 ms survives a 1.4 s stall of its heartbeat


def test_renewal_keeps_a_long_run_s_lease(catalog: BaseCatalog) -> None:
    with catalog.maintenance_lease(
        "db.t", "compact", duration_ms=RENEWED_MS, heartbeat_interval_ms=100
    ) as lease:
        assert lease.info is not None
        first_expiry = lease.info.expires_at_ms
        end = lease.info.acquired_at_ms + 2 * RENEWED_MS  # two lease durations, on the store's clock
        while _store_clock(catalog)[1] < end:
            assert isinstance(_try(catalog), LeaseHeld)
            time.sleep(0.25)
        assert isinstance(_try(catalog), LeaseHeld)  # past its first and second expiry: renewed
        assert not lease.lost and lease.info.expires_at_ms > first_expiry + RENEWED_MS
    assert _try(catalog) == "won"


def test_reentrant_in_one_thread(catalog: BaseCatalog) -> None:
    with catalog.maintenance_lease("db.t", "rewrite_deletion_vectors") as outer:
        with catalog.maintenance_lease("db.t", "rewrite_data_files") as inner:
            assert inner.reentered and inner.info == outer.info
        # Leaving the inner block keeps the outer lease.
        assert isinstance(_try(catalog), LeaseHeld)


def test_a_maintenance_run_holds_the_lease(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(pa.table({"id": [1]}, schema=SCHEMA))
    plan = t.maintenance.flush_root(force=True).plan()

    def run_flush() -> Any:
        return t.maintenance.flush_root(force=True).run()

    with catalog.maintenance_lease("db.t", "expire_snapshots", owner="airflow:7:expire"):
        err = _in_thread(run_flush)
        assert isinstance(err, LeaseHeld) and "airflow:7:expire" in str(err)
        assert isinstance(_in_thread(lambda: plan.execute(t)), LeaseHeld)
        assert t.refresh().current_snapshot().snapshot_id == plan.snapshot_id  # nothing committed
    result = run_flush()
    assert result.data_files_moved == 1
    assert catalog.maintenance_lease_holder("db.t") is None  # released after the run


def test_settings_and_owner(tmp_path: Path) -> None:
    assert LeaseSettings.parse({}) == LeaseSettings(300_000, 60_000, None)
    assert LeaseSettings.parse({"maintenance.lease.duration-ms": "10000"}).heartbeat_interval_ms == 2000
    with pytest.raises(ValidationError, match="must be shorter than"):
        LeaseSettings.parse(
            {"maintenance.lease.duration-ms": "1000", "maintenance.lease.heartbeat-interval-ms": "1000"}
        )
    with pytest.raises(ValidationError, match="must be an integer"):
        LeaseSettings.parse({"maintenance.lease.duration-ms": "soon"})
    assert default_owner("dag.task") == f"{default_owner()}:dag.task"
    c = make_sqlite_catalog(tmp_path, **{LEASE_OWNER_LABEL: "maintenance.expire.run-1"})
    with c.maintenance_lease("db.t", "expire_snapshots") as lease:
        assert lease.owner.endswith(":maintenance.expire.run-1") and lease.owner.count(":") >= 2
    c.close()


def test_the_lease_table_is_created_on_first_use(tmp_path: Path) -> None:
    c = make_sqlite_catalog(tmp_path)
    assert MAINTENANCE_LEASES not in sa.inspect(c.engine).get_table_names()
    with c.maintenance_lease("db.t", "flush_root"):
        pass
    assert MAINTENANCE_LEASES in sa.inspect(c.engine).get_table_names()
    c.close()


# -- processes ---------------------------------------------------------------------------------------------
ROUNDS = 6


def _racer(uri: str, warehouse: str, name: str, worker: int, barrier: Any, results: Any) -> None:
    """A child process: in each round, race the others for the lease of db.t<round>, hold it
    until everyone has tried, then release."""
    catalog = SqlCatalog(name, uri, warehouse=warehouse)
    for r in range(ROUNDS):
        barrier.wait(timeout=120)
        lease = catalog.maintenance_lease(f"db.t{r}", "race", owner=f"worker-{worker}")
        try:
            lease.__enter__()
        except LeaseHeld as e:
            results.put((r, worker, "held", e.holder))
            barrier.wait(timeout=120)
            continue
        results.put((r, worker, "won", lease.owner))
        barrier.wait(timeout=120)  # everyone tried while it was held
        lease.__exit__(None, None, None)
    catalog.close()


def _race(uri: str, warehouse: str, name: str, workers: int = 3) -> list[tuple[int, int, str, str]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_racer, args=(uri, warehouse, name, w, barrier, results)) for w in range(workers)
    ]
    for p in procs:
        p.start()
    out: list[tuple[int, int, str, str]] = []
    deadline = time.monotonic() + 240
    try:
        while len(out) < workers * ROUNDS and time.monotonic() < deadline:
            try:
                out.append(results.get(timeout=1))
            except queue.Empty:
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not crashed, f"a racer died: exit codes {crashed}"
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return out


def _assert_one_winner_per_round(reports: list[tuple[int, int, str, str]], workers: int = 3) -> None:
    assert len(reports) == workers * ROUNDS
    for r in range(ROUNDS):
        this = [x for x in reports if x[0] == r]
        winners = [x for x in this if x[2] == "won"]
        assert len(winners) == 1, this
        # Every loser was told who holds it.
        assert all(x[3] == winners[0][3] for x in this if x[2] == "held")


def test_processes_race_sqlite(tmp_path: Path) -> None:
    c = make_sqlite_catalog(tmp_path)  # creates the catalog tables before the race
    c.close()
    _assert_one_winner_per_round(
        _race(f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"), "test")
    )


@pytest.mark.postgres
def test_processes_race_postgres(tmp_path: Path) -> None:
    require_postgres()
    pg = make_postgres_catalog(tmp_path / "warehouse")
    try:
        _assert_one_winner_per_round(_race(POSTGRES_URL, str(tmp_path / "warehouse"), pg.name))
    finally:
        drop_postgres_catalog(pg)


HOLDER_MS = 2000
_HOLDER = textwrap.dedent(
    f"""
    import sys, time
    from firn.catalog.sql import SqlCatalog
    catalog = SqlCatalog(sys.argv[2], sys.argv[1], warehouse=sys.argv[3])
    lease = catalog.maintenance_lease("db.t", "rewrite_data_files", owner="doomed",
                                      duration_ms={HOLDER_MS}, heartbeat_interval_ms=200)
    lease.__enter__()
    print("acquired", flush=True)
    time.sleep(600)
    """
)


def _crash_then_take_over(catalog: SqlCatalog, uri: str, warehouse: str) -> None:
    """A holder process renews its lease past its first expiry and is killed; the lease is
    taken over, and only once it expired (both on the database's clock)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, uri, catalog.name, warehouse],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "acquired"
        held, _ = _store_clock(catalog)
        # Past the lease's first expiry: only the heartbeat keeps it.
        _wait_for_store_clock(catalog, held.acquired_at_ms + HOLDER_MS + 500)
        err = _try(catalog)
        assert isinstance(err, LeaseHeld) and err.holder == "doomed"
        assert err.expires_at_ms > held.acquired_at_ms + HOLDER_MS  # renewed
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        dead, killed_at = _store_clock(catalog)
        assert dead.owner == "doomed"
        # Its last renewal stands: the lease frees itself within one lease duration of the kill.
        assert dead.expires_at_ms <= killed_at + HOLDER_MS
        deadline = time.monotonic() + 60
        while isinstance(outcome := _try(catalog), LeaseHeld):
            assert outcome.holder == "doomed"
            assert time.monotonic() < deadline, "a dead holder's lease never expired"
            time.sleep(0.1)
        assert outcome == "won"
        taken, _ = _store_clock(catalog)
        assert taken.owner == "rival" and taken.acquired_at_ms >= dead.expires_at_ms  # not before expiry
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_holder_is_taken_over_after_expiry_sqlite(tmp_path: Path) -> None:
    c = make_sqlite_catalog(tmp_path)
    try:
        _crash_then_take_over(c, f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    finally:
        c.close()


@pytest.mark.postgres
def test_killed_holder_is_taken_over_after_expiry_postgres(tmp_path: Path) -> None:
    require_postgres()
    pg = make_postgres_catalog(tmp_path / "warehouse")
    try:
        _crash_then_take_over(pg, POSTGRES_URL, str(tmp_path / "warehouse"))
    finally:
        drop_postgres_catalog(pg)
