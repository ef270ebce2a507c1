"""Expiry killed midway: a process killed (SIGKILL) after its expiry committed but before it
deleted files, or before the commit landed, leaves a loadable table equal to a committed state;
what it left behind is exactly what ``remove_orphan_files`` then reclaims (the plan's files).
Expiry beside racing writers is in ``test_racing_writers``; every operation killed at every
step in ``test_crashes``."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import LeaseHeld
from firn.table.table import Table
from tests.fixtures.maintenance import (
    files_by_snapshot,
    files_on_disk,
    remove_orphans,
    rows,
    rows_by_snapshot,
    soon_ms,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("worker", pa.int32())])
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


def check_retained_snapshots(t: Table) -> None:
    """Every file each snapshot still in the metadata needs exists, and each one reads."""
    t.refresh()
    disk = files_on_disk(t.location)
    for sid, needed in files_by_snapshot(t).items():
        assert needed <= disk, f"snapshot {sid} lost {sorted(needed - disk)[:3]}"
        t.scan(snapshot_id=sid).to_arrow()


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


# The killed run's lease outlives it until it expires: short here, so the tests can wait it out,
# yet long enough (4 s, renewed every 400 ms) that the checks this test makes between the kill
# and the refusal below fit in it on a loaded machine.
SHORT_LEASE = {"maintenance.lease.duration-ms": "4000", "maintenance.lease.heartbeat-interval-ms": "400"}


def _wait_out_the_dead_runs_lease(t: Table) -> None:
    """A killed maintenance run still holds the table's lease: nothing else runs until it
    expires (waited for on the catalog's clock, not guessed)."""
    with pytest.raises(LeaseHeld, match="expire_snapshots"):
        t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).run()
    deadline = time.monotonic() + 60
    while t.catalog.maintenance_lease_holder(t.identifier) is not None:
        assert time.monotonic() < deadline, "the killed run's lease never expired"
        time.sleep(0.1)


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


@pytest.mark.parametrize("version", [2, pytest.param(4, marks=pytest.mark.slow)])
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
    result = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).run()
    assert would_delete <= set(result.orphan_file_locations)
    # What the orphans were: what expiry would have deleted (the kill left nothing else).
    assert set(result.orphan_file_locations) == would_delete
    check_retained_snapshots(t)
    assert rows(t) == current_rows


@pytest.mark.slow  # test_crashes kills other operations at the swap by default
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
    # Both phases of orphan removal (recorded, then deleted past orphans.grace): afterwards the
    # disk holds what it held before the killed run, plus the orphan record itself.
    result = remove_orphans(t, older_than=soon_ms(), force=True)
    assert set(result.orphan_file_locations) == leftovers
    assert set(result.deleted_file_locations) == leftovers
    assert {p for p in files_on_disk(t.location) if "/metadata/orphans/" not in p} == disk
