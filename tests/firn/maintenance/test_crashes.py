"""Every maintenance operation killed (SIGKILL) at each of its steps.

The steps of a run are: its work units (files written), the commit (a new metadata file, then
the catalog's pointer swap), and the clean-up after the commit (files deleted). A process
killed at any of them must leave a loadable table equal to a committed state (the one before
the run, or the one it committed), with every retained snapshot reading as before; whatever it
wrote and did not commit is orphaned, and ``remove_orphan_files`` reclaims it, after which the
files on disk are exactly the files the table references (worked out independently, by scan
planning). The killed run's lease expires and the operation then runs again.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.maintenance.runner import LocalRunner, UnitFunction, UnitResult, WorkUnit
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import (
    backdate_orphan_record,
    files_by_snapshot,
    files_on_disk,
    local,
    remove_orphans,
    rows,
    rows_by_snapshot,
    soon_ms,
)
from tests.fixtures.rewrites import MOR, fill, make_table

# The killed run's lease outlives it until it expires: short here, so the test can wait it out.
SHORT_LEASE = {"maintenance.lease.duration-ms": "1500", "maintenance.lease.heartbeat-interval-ms": "500"}
DAY_MS = 24 * 3600 * 1000

# Where a run is killed:
#   units       after the first work unit wrote its files, before the others ran
#   swap        the new metadata file is written; the catalog pointer never moves
#   after-swap  the pointer moved; nothing after it ran (clean-up, deleting dropped outputs)
#   cleanup     after the first batch of post-commit deletes (expire, orphans)
STEPS: dict[str, tuple[str, ...]] = {
    "expire_snapshots": ("swap", "after-swap", "cleanup"),
    "remove_orphan_files": ("cleanup",),
    "flush_root": ("swap", "after-swap"),
    "rewrite_data_files": ("units", "swap", "after-swap"),
    "rewrite_deletion_vectors": ("units", "swap", "after-swap"),
    "rewrite_position_delete_files": ("units", "swap", "after-swap"),
    "rewrite_manifests": ("units", "swap", "after-swap"),
}
# One step per operation runs by default; the rest of the matrix is marked slow.
DEFAULT = {
    ("expire_snapshots", "cleanup"),
    ("remove_orphan_files", "cleanup"),
    ("flush_root", "swap"),
    ("rewrite_data_files", "units"),
    ("rewrite_deletion_vectors", "after-swap"),
    ("rewrite_position_delete_files", "swap"),
    ("rewrite_manifests", "units"),
}
VERSION = {
    "expire_snapshots": "3",
    "remove_orphan_files": "3",
    "flush_root": "4",
    "rewrite_data_files": "3",
    "rewrite_deletion_vectors": "3",
    "rewrite_position_delete_files": "2",
    "rewrite_manifests": "2",
}


def _options(operation: str) -> dict[str, Any]:
    return {
        "expire_snapshots": {"older_than": soon_ms(), "retain_last": 1, "max_concurrent_deletes": 4},
        "remove_orphan_files": {"dry_run": False, "max_concurrent_deletes": 4},
        "flush_root": {"force": True},
        "rewrite_data_files": {"min_input_files": 2},
        # A small target: DVs go into several Puffin files, one unit each.
        "rewrite_deletion_vectors": {"rewrite_all": True, "min_input_files": 1, "target_file_size_bytes": 50},
        "rewrite_position_delete_files": {"rewrite_all": True, "min_input_files": 1},
        "rewrite_manifests": {},
    }[operation]


def _table(directory: Path, operation: str) -> Table:
    """A partitioned table with history, deletes and (for orphan removal) old stray files."""
    catalog = make_sqlite_catalog(directory)
    version = VERSION[operation]
    t = make_table(catalog, version, properties=MOR)
    fill(t, version, appends=4, rows=20)
    for victim in (1, 6, 22, 41, 66, 70):  # one row of a five-row file each
        t.delete(f"id = {victim}")  # position delete files (v2), DVs in Puffin files (v3+)
    if operation == "remove_orphan_files":
        strays = Path(local(t.location)) / "data" / "region=eu"
        old = time.time() - 5 * DAY_MS / 1000  # past the default 3-day cut-off
        for i in range(8):
            p = strays / f"stray-{i}.parquet"
            p.write_bytes(b"left behind by a writer that crashed days ago")
            os.utime(p, (old, old))
        # Phase one ran two days ago: the strays are recorded, so the run deletes them.
        t.maintenance.remove_orphan_files(delete=True).run()
        assert backdate_orphan_record(t, 2 * DAY_MS) == 8
    return t


def _referenced(t: Table) -> set[str]:
    """Every file the table references, from scan planning and the metadata (not from
    ``firn.maintenance``): each snapshot's tree and files, the metadata JSON files in the log,
    statistics files."""
    md = t.metadata
    out: set[str] = set().union(*files_by_snapshot(t).values()) if md.snapshots else set()
    out.add(local(t.metadata_location))
    out.update(local(e.metadata_file) for e in md.metadata_log)
    out.update(local(s.statistics_path) for s in md.statistics)
    out.update(local(s.statistics_path) for s in md.partition_statistics)
    return out


class _KillingRunner:
    """Runs the units of batch ``batch`` (1: the first ``map`` call) up to the first one, then
    kills this process; earlier batches run whole."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.calls = 0

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]:
        self.calls += 1
        if self.calls < self.batch:
            return LocalRunner(2).map(fn, units)
        fn(units[0])
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def _crash(directory: str, operation: str, options: dict[str, Any], step: str) -> None:
    """Child process: run ``operation`` and die at ``step``."""
    from firn.catalog.sql import SqlCatalog

    swap = SqlCatalog.swap_metadata_location

    def die_at_swap(self: SqlCatalog, *args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def die_after_swap(self: SqlCatalog, *args: Any, **kwargs: Any) -> None:
        swap(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    if step == "swap":
        SqlCatalog.swap_metadata_location = die_at_swap  # type: ignore[method-assign]
    elif step == "after-swap":
        SqlCatalog.swap_metadata_location = die_after_swap  # type: ignore[method-assign]
    table = make_sqlite_catalog(Path(directory), **SHORT_LEASE).load_table("db.events")
    plan = getattr(table.maintenance, operation)(**options).plan()
    # Units run in batch 1; post-commit deletes in the next batch, which is batch 1 when the
    # operation has no units (expiry, orphan removal).
    runner: Any = _KillingRunner(1) if step in ("units", "cleanup") else LocalRunner(2)
    plan.execute(table, runner)
    raise SystemExit(f"{operation} was expected to be killed at {step}")


def _wait_for_the_lease(catalog: SqlCatalog) -> None:
    deadline = time.monotonic() + 30
    while catalog.maintenance_lease_holder("db.events") is not None:
        assert time.monotonic() < deadline, "the killed run's lease never expired"
        time.sleep(0.1)


def _cases() -> list[Any]:
    out = []
    for operation, steps in STEPS.items():
        for step in steps:
            marks = () if (operation, step) in DEFAULT else (pytest.mark.slow,)
            out.append(pytest.param(operation, step, id=f"{operation}-{step}", marks=marks))
    return out


@pytest.mark.parametrize(("operation", "step"), _cases())
def test_a_run_killed_at_each_step_leaves_a_committed_state(
    tmp_path: Path, operation: str, step: str
) -> None:
    t = _table(tmp_path, operation)
    options = _options(operation)
    plan = getattr(t.maintenance, operation)(**options).plan()
    assert not plan.is_noop, str(plan)
    if step == "units":  # enough units that the kill lands between them
        assert len(plan.units(t, "ref")) >= 2, str(plan)
    before_location = t.metadata_location
    before_rows = rows(t)
    before_snapshot_rows = rows_by_snapshot(t)
    before_disk = files_on_disk(t.location)
    before_referenced = _referenced(t)

    proc = mp.get_context("spawn").Process(target=_crash, args=(str(tmp_path), operation, options, step))
    proc.start()
    proc.join(timeout=180)
    assert proc.exitcode == -signal.SIGKILL, f"exit code {proc.exitcode}"

    catalog = make_sqlite_catalog(tmp_path)
    t = catalog.load_table("db.events")  # loadable
    committed = t.metadata_location != before_location
    if step in ("units", "swap"):
        assert not committed  # the state before the run
    elif operation != "remove_orphan_files":
        assert committed  # the state the run committed
    assert rows(t) == before_rows
    disk = files_on_disk(t.location)
    referenced = _referenced(t)
    # Every retained snapshot's files exist, and it reads as it did before.
    assert referenced <= disk, sorted(referenced - disk)[:3]
    for sid, snapshot_rows in rows_by_snapshot(t).items():
        if sid in before_snapshot_rows:
            assert snapshot_rows == before_snapshot_rows[sid], sid
    if step in ("units", "swap"):
        # What the run wrote is orphaned: on disk, referenced by nothing.
        written = disk - before_disk
        assert written and not (written & referenced)
        assert referenced == before_referenced

    _wait_for_the_lease(catalog)
    result = remove_orphans(t, older_than=soon_ms(), force=True)  # recorded, then deleted
    record = local(result.record_location)
    assert {local(p) for p in result.deleted_file_locations} == disk - referenced - {record}
    assert files_on_disk(t.location) - {record} == _referenced(t)  # every leftover reclaimed, nothing else
    assert rows(t) == before_rows

    # The table is not stuck: the operation runs again to completion.
    again = getattr(t.maintenance, operation)(**_options(operation)).run()
    assert again.duration_ms >= 0
    assert rows(t.refresh()) == before_rows
    catalog.close()
