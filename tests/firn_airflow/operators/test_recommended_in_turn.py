"""``FirnMaintenanceOperator`` asks ``recommend()`` again before each step, as ``firn maintain
recommend --run`` does (the same function, ``run_in_turn``): a step an earlier one made
unnecessary is not run. A real V4 table, a real SQLite catalog, a run in the worker."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn.maintenance.recommend import Recommendation, run_in_turn
from firn_airflow.operators import FirnMaintenanceOperator
from tests.firn_airflow.operators.helpers import set_firn_connection
from tests.fixtures.spark_tables import spark_catalog

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def test_a_step_an_earlier_one_did_is_not_run(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = spark_catalog(tmp_path)
    table = catalog.create_table("db.events", schema=SCHEMA)  # a V4 table: three one-row appends
    for i in range(3):
        table.append(pa.table({"id": [i], "name": [f"n{i}"]}, schema=SCHEMA))
    table.set_properties({"commit.root.max-data-files": "2", "maintenance.compact.min-small-files": "3"})
    listed = [r.operation for r in table.maintenance.recommend()]
    assert listed == ["rewrite_data_files", "flush_root"], listed
    rows = table.scan().to_arrow().sort_by("id")
    set_firn_connection(monkeypatch, "firn_in_turn", tmp_path)

    out = FirnMaintenanceOperator(
        task_id="maintain",
        table="db.events",
        firn_conn_id="firn_in_turn",
        execution="worker",
        operations=["rewrite_data_files", "flush_root"],
    ).execute({})  # type: ignore[arg-type]

    assert [r["operation"] for r in out["recommendations"]] == ["rewrite_data_files", "flush_root"]
    assert out["operations"] == ["rewrite_data_files"] and out["satisfied"] == ["flush_root"]
    assert out["results"][0]["rewritten_data_files_count"] > 0
    after = catalog.load_table("db.events")
    assert "flush_root" not in [r.operation for r in after.maintenance.recommend()]
    assert after.scan().to_arrow().sort_by("id").equals(rows)


def test_run_in_turn_uses_the_options_recommended_now() -> None:
    first = [
        Recommendation(operation="a", options={"x": 1}, reason="r"),
        Recommendation(operation="b", reason="r"),
    ]
    again = [Recommendation(operation="b", options={"y": 2}, reason="r")]
    ran, satisfied = run_in_turn(first, lambda: again, lambda r: (r.operation, dict(r.options)))
    assert ran == [("a", {"x": 1}), ("b", {"y": 2})] and satisfied == []
    ran, satisfied = run_in_turn(first, lambda: [], lambda r: r.operation)
    assert ran == ["a"] and satisfied == ["b"]
