"""What every rewrite operation shares: ``plan()`` writes nothing, plans survive JSON, stale
plans are refused, unknown options list the valid ones."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import StalePlan, ValidationError
from firn.maintenance import MaintenancePlan
from firn.table.table import Table
from tests.fixtures.rewrites import MOR, JsonRunner, fill, local_files, make_table, rows_of

OPERATIONS: dict[str, dict[str, Any]] = {
    "rewrite_data_files": {"min_input_files": 2},
    "rewrite_deletion_vectors": {"rewrite_all": True},
    "rewrite_position_delete_files": {},
    "rewrite_manifests": {},
}


def _busy_table(catalog: SqlCatalog, name: str = "events") -> Table:
    """A v2 table upgraded to v3: small files, manifests, v2 position deletes and DVs."""
    t = make_table(catalog, "2", name=name, properties=MOR)
    fill(t, "2", appends=4, rows=20)
    t.delete("id in (1, 2, 33)")
    t.upgrade(format_version=3)
    t.delete("id in (45, 70)")
    return t


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_plan_writes_nothing_and_survives_json(
    sqlite_catalog: SqlCatalog, tmp_path: Path, operation: str
) -> None:
    t = _busy_table(sqlite_catalog)
    before = rows_of(t)
    files = {p: os.path.getmtime(p) for p in local_files(tmp_path)}
    plan = getattr(t.maintenance, operation)(**OPERATIONS[operation]).plan()
    assert not plan.is_noop, str(plan)
    assert {p: os.path.getmtime(p) for p in local_files(tmp_path)} == files  # a dry run
    assert str(plan).startswith(f"{operation} on db.events (snapshot ")
    again = MaintenancePlan.from_json(plan.to_json())
    assert type(again) is type(plan) and again == plan
    runner = JsonRunner()  # units run from their JSON alone, results come back as JSON
    result = again.execute(t, runner)
    assert runner.units and all("io-ref" not in u for u in runner.units)
    assert result.snapshot_id is not None and result.to_dict()["operation"] == operation
    assert type(result).from_dict(result.to_dict()) == result
    assert rows_of(t) == before


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_stale_plans_are_refused(sqlite_catalog: SqlCatalog, operation: str) -> None:
    t = _busy_table(sqlite_catalog)
    plan = getattr(t.maintenance, operation)(**OPERATIONS[operation]).plan()
    sqlite_catalog.drop_table("db.events")
    recreated = _busy_table(sqlite_catalog)
    with pytest.raises(StalePlan, match="table UUID"):
        plan.execute(recreated)


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_unknown_options_list_the_valid_ones(sqlite_catalog: SqlCatalog, operation: str) -> None:
    t = make_table(sqlite_catalog, "3")
    with pytest.raises(ValidationError, match=f"{operation} has no option 'bogus'; valid options: "):
        getattr(t.maintenance, operation)(bogus=1)
