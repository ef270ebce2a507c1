"""The shape every maintenance operation shares: options, JSON plans, staleness, runners."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import StalePlan, ValidationError
from firn.maintenance import FlushRootPlan, FlushRootResult, LocalRunner, MaintenancePlan
from firn.maintenance.options import MaintenanceOptions, PointInTime, option
from firn.maintenance.runner import execute_unit, local_io, make_unit

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@dataclass(frozen=True, kw_only=True)
class _Options(MaintenanceOptions):
    OPERATION: ClassVar[str] = "op"

    min_input_files: int = field(default=5, metadata=option("files", "int"))
    older_than: PointInTime | None = field(default=None, metadata=option("cut-off", "timestamp"))
    rewrite_all: bool = field(default=False, metadata=option("all", "bool"))
    strategy: str | None = field(default=None, metadata=option("how", "str", choices=("binpack", "sort")))
    partial_progress_enabled: bool = field(
        default=False, metadata=option("partial", "bool", iceberg="partial-progress.enabled")
    )


def _v4_table(catalog: SqlCatalog, n: int = 3):  # type: ignore[no-untyped-def]
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", schema=SCHEMA)
    for i in range(n):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return t


def test_options_take_python_and_iceberg_spellings() -> None:
    when = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    got = _Options.from_iceberg(
        {"min_input_files": "7", "older-than": when, "rewrite_all": "true", "strategy": None}
    )
    assert got == _Options(min_input_files=7, older_than=1704153600000, rewrite_all=True)
    assert got.to_iceberg() == {
        "min-input-files": 7,
        "older-than": 1704153600000,
        "rewrite-all": True,
        "partial-progress.enabled": False,
    }
    assert _Options.from_iceberg({"older_than": "2024-01-02T00:00:00Z"}).older_than == 1704153600000
    # Iceberg's dotted names have a keyword spelling, and round-trip.
    dotted = _Options.from_iceberg({"partial_progress_enabled": "true"})
    assert dotted.partial_progress_enabled is True
    assert _Options.from_iceberg(dotted.to_iceberg()) == dotted


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"min_inputs": 1},
            "op has no option 'min_inputs'; valid options: min-input-files, .*; did you mean 'min-input-files'\\?",
        ),
        ({"rewrite_al": True}, "did you mean 'rewrite-all'"),
        ({"min_input_files": "x"}, "option 'min-input-files' must be an integer"),
        ({"older_than": dt.datetime(2024, 1, 2)}, "needs a timezone-aware datetime"),
        ({"rewrite_all": "yes"}, "must be true or false"),
        ({"strategy": "zorder"}, r"must be one of \['binpack', 'sort'\]"),
        ({"min_input_files": 1, "min-input-files": 2}, "given twice"),
    ],
)
def test_bad_options_are_clear_errors(given: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _Options.from_iceberg(given)


def test_unknown_operation_option_fails_before_planning(sqlite_catalog: SqlCatalog) -> None:
    t = _v4_table(sqlite_catalog)
    with pytest.raises(
        ValidationError,
        match=r"flush_root has no option 'forced'; valid options: affiliate, .*; did you mean 'force'\?",
    ):
        t.maintenance.flush_root(forced=True)  # type: ignore[call-arg]


def test_plan_round_trips_through_json_and_runs_elsewhere(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    t = _v4_table(sqlite_catalog)
    plan = t.maintenance.flush_root(force=True).plan()
    text = plan.to_json()
    again = MaintenancePlan.from_json(text)
    assert isinstance(again, FlushRootPlan) and again == plan
    assert "flush_root on db.t" in str(again) and "would move data files into leaves" in str(again)
    # Another process (here: a fresh catalog connection) executes the plan from its JSON.
    other = SqlCatalog("test", f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    result = again.execute(other.load_table("db.t"))
    assert isinstance(result, FlushRootResult) and result.data_files_moved == 3
    assert FlushRootResult.from_dict(result.to_dict()) == result
    assert result.to_dict()["operation"] == "flush_root" and result.duration_ms >= 0


def test_stale_plans_are_refused(sqlite_catalog: SqlCatalog) -> None:
    t = _v4_table(sqlite_catalog)
    plan = t.maintenance.flush_root(force=True).plan()
    sqlite_catalog.drop_table("db.t")
    recreated = _v4_table_again(sqlite_catalog)
    with pytest.raises(StalePlan, match="was made for table UUID"):
        plan.execute(recreated)
    fake = FlushRootPlan.from_dict({**plan.to_dict(), "table_uuid": str(recreated.metadata.table_uuid)})
    bad = FlushRootPlan.from_dict({**fake.to_dict(), "snapshot_id": 12345})
    with pytest.raises(StalePlan, match="snapshot 12345, which has been expired"):
        bad.execute(recreated)


def _v4_table_again(catalog: SqlCatalog):  # type: ignore[no-untyped-def]
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(pa.table({"id": [9]}, schema=SCHEMA))
    return t


@pytest.mark.parametrize(
    "text",
    ["not json", "[1]", '{"operation": "defragment"}', '{"operation": "flush_root", "table": "db.t"}'],
)
def test_malformed_plans_are_clear_errors(text: str) -> None:
    with pytest.raises(ValidationError):
        MaintenancePlan.from_json(text)


def _echo(ctx, payload):  # type: ignore[no-untyped-def]
    return {"n": payload["n"] * 2, "format": ctx.metadata.format_version, "io": ctx.io is not None}


def test_units_run_on_the_drivers_io_or_a_rebuilt_one(sqlite_catalog: SqlCatalog) -> None:
    t = _v4_table(sqlite_catalog, 1)
    with local_io(t.io) as ref:
        units = [
            make_unit("echo", io=t.io, metadata_location=t.metadata_location, payload={"n": 0}, io_ref=ref)
        ]
        assert execute_unit(_echo, units[0]) == {"n": 0, "format": 4, "io": True}
    # Outside the registration (another process), the FileIO is rebuilt from the unit's properties.
    rebuilt = dict(units[0], **{"io-ref": "gone"})
    assert execute_unit(_echo, rebuilt)["format"] == 4
    many = [dict(units[0], payload={"n": i}) for i in range(10)]
    results = LocalRunner(max_workers=4).map(lambda u: execute_unit(_echo, u), many)
    assert [r["n"] for r in results] == [2 * i for i in range(10)]
    with pytest.raises(ValidationError, match="max_workers must be at least 1"):
        LocalRunner(max_workers=0)
