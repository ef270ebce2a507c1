"""The one shape, checked on every operation of ``table.maintenance``: options by Iceberg name
(unknown ones listed, times as aware datetimes or epoch milliseconds), ``plan()`` as the dry
run (nothing written, nothing committed), plans and results through JSON, a plan executed
elsewhere with units run from their JSON alone, and stale plans refused."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import StalePlan, ValidationError
from firn.maintenance import MaintenancePlan, MaintenanceResult
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import backdate_orphan_record, local, soon_ms
from tests.fixtures.rewrites import MOR, JsonRunner, fill, ids, local_files, make_table

# operation -> (format version, options that give it work on the table of _table()).
OPERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "expire_snapshots": ("3", {"retain_last": 1}),
    "remove_orphan_files": ("3", {"force": True, "dry_run": False}),
    "flush_root": ("4", {"force": True}),
    "rewrite_data_files": ("3", {"min_input_files": 2}),
    "rewrite_deletion_vectors": ("3", {"rewrite_all": True, "min_input_files": 1}),
    "rewrite_position_delete_files": ("2", {"rewrite_all": True, "min_input_files": 1}),
    "rewrite_manifests": ("2", {}),
}
TIMED = ("expire_snapshots", "remove_orphan_files")


def _table(directory: Path, operation: str) -> Table:
    version = OPERATIONS[operation][0]
    t = make_table(make_sqlite_catalog(directory), version, properties=MOR)
    fill(t, version, appends=4, rows=20)
    for victim in (1, 6, 22, 41):
        t.delete(f"id = {victim}")
    (Path(local(t.location)) / "data" / "stray.parquet").write_bytes(b"never committed")
    if operation == "remove_orphan_files":
        # Phase one ran two days ago: the stray is recorded, so a run now deletes it (units).
        t.maintenance.remove_orphan_files(**_options(operation)).run()
        assert backdate_orphan_record(t, 2 * 24 * 3600 * 1000) >= 1
    return t


def _options(operation: str) -> dict[str, Any]:
    options = dict(OPERATIONS[operation][1])
    if operation in TIMED:
        # An aware datetime just after now: everything so far is old enough.
        options["older_than"] = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
    return options


def _state(directory: Path, t: Table) -> tuple[str, dict[str, float]]:
    """The table's metadata pointer and every file of the warehouse with its modification time."""
    files = local_files(directory / "warehouse")
    return t.refresh().metadata_location, {p: os.path.getmtime(p) for p in files}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_plan_is_a_dry_run_that_travels_as_json_and_runs_elsewhere(tmp_path: Path, operation: str) -> None:
    t = _table(tmp_path, operation)
    before_ids = ids(t)
    before = _state(tmp_path, t)
    plan = getattr(t.maintenance, operation)(**_options(operation)).plan()
    assert not plan.is_noop, str(plan)
    assert _state(tmp_path, t) == before  # nothing written, nothing committed
    assert str(plan).startswith(f"{operation} on db.events (snapshot {plan.snapshot_id})")
    again = MaintenancePlan.from_json(plan.to_json())
    assert type(again) is type(plan) and again == plan

    # Another process: its own catalog connection, the plan from JSON, units run from their
    # JSON alone (the FileIO rebuilt from the unit's properties), results as JSON.
    other = SqlCatalog("test", f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    runner = JsonRunner()
    result = again.execute(other.load_table("db.events"), runner)
    assert all("io-ref" not in u for u in runner.units)
    if operation != "flush_root":  # a flush commits in the driver alone
        assert runner.units, "the work ran as units"
    assert _state(tmp_path, t) != before  # this time something changed
    assert isinstance(result, MaintenanceResult) and result.to_dict()["operation"] == operation
    assert type(result).from_dict(result.to_dict()) == result
    assert ids(t.refresh()) == before_ids  # maintenance never changes the rows
    other.close()


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_unknown_options_list_the_valid_ones(tmp_path: Path, operation: str) -> None:
    t = _table(tmp_path, operation)
    op = getattr(t.maintenance, operation)
    valid = ", ".join(op(**_options(operation)).options.valid_names())
    with pytest.raises(ValidationError) as err:
        op(bogus_option=1)
    assert str(err.value) == f"{operation} has no option 'bogus_option'; valid options: {valid}"


@pytest.mark.parametrize("operation", TIMED)
def test_times_are_aware_datetimes_or_epoch_milliseconds(tmp_path: Path, operation: str) -> None:
    t = _table(tmp_path, operation)
    op = getattr(t.maintenance, operation)
    force = {"force": True} if operation == "remove_orphan_files" else {}
    when = dt.datetime(2030, 1, 2, 3, 4, 5, 678_000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    ms = 1_893_546_245_678  # the same instant
    for value in (when, ms, float(ms) + 0.4, "2030-01-02T01:04:05.678Z", str(ms)):
        assert op(older_than=value, **force).plan().older_than_ms == ms, value
    with pytest.raises(
        ValidationError, match="needs a timezone-aware datetime, got naive 2030-01-02T03:04:05"
    ):
        op(older_than=dt.datetime(2030, 1, 2, 3, 4, 5))
    with pytest.raises(ValidationError, match="needs a time with an offset"):
        op(older_than="2030-01-02T03:04:05")
    with pytest.raises(ValidationError, match="timezone-aware datetime, epoch milliseconds or ISO-8601"):
        op(older_than=dt.date(2030, 1, 2))
    recent = int(time.time() * 1000) - 3600_000
    if operation == "remove_orphan_files":  # less than a day ago needs force
        with pytest.raises(ValidationError, match="less than a day ago"):
            op(older_than=recent)
        assert op(older_than=recent, force=True).plan().older_than_ms == recent


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_plan_for_a_replaced_table_is_refused(tmp_path: Path, operation: str) -> None:
    t = _table(tmp_path, operation)
    plan = getattr(t.maintenance, operation)(**_options(operation)).plan()
    catalog = make_sqlite_catalog(tmp_path)
    catalog.drop_table("db.events")
    recreated = _table(tmp_path, operation)
    before = _state(tmp_path, recreated)
    with pytest.raises(StalePlan, match="table UUID"):
        plan.execute(recreated)
    assert _state(tmp_path, recreated) == before
    catalog.close()


def test_a_plan_whose_snapshot_was_expired_is_refused(tmp_path: Path) -> None:
    t = _table(tmp_path, "rewrite_data_files")
    plan = t.maintenance.rewrite_data_files(min_input_files=2).plan()
    t.append(t.scan(limit=1).to_arrow())
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    with pytest.raises(StalePlan, match=f"snapshot {plan.snapshot_id}, which has been expired"):
        plan.execute(t)


def test_iceberg_s_spark_only_switches_are_accepted(tmp_path: Path) -> None:
    """Calls written for Iceberg's procedures keep working: its Spark driver-memory and listing
    switches are accepted (they change nothing here) and the plan is the same without them."""
    t = _table(tmp_path, "expire_snapshots")
    options = {"older_than": soon_ms(), "retain_last": 1}
    plain = t.maintenance.expire_snapshots(**options).plan()
    streamed = t.maintenance.expire_snapshots(**options, stream_results=True).plan()
    assert streamed.expire_snapshot_ids == plain.expire_snapshot_ids and streamed.files == plain.files
    orphans = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True)
    listed = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, stream_results=True, prefix_listing=True
    )
    assert [o.path for o in listed.plan().orphans] == [o.path for o in orphans.plan().orphans]
    with pytest.raises(ValidationError, match="has no option 'file_list_view'"):
        t.maintenance.remove_orphan_files(file_list_view="files")
