"""The view's data helpers: snapshot history, table walk, adapters, connection discovery."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import firn
from firn_airflow.health_view import data

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())}, schema=SCHEMA)


def test_snapshot_history_follows_the_current_branch(tmp_path: Path) -> None:
    catalog = firn.load_catalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"format-version": "2", "write.delete.mode": "merge-on-read"}
    )
    assert data.snapshot_history(table) == []
    for i in range(3):
        table.append(_rows(i * 10, 10))
    table.delete("id < 5")
    history = data.snapshot_history(table)
    assert [h["operation"] for h in history] == ["append", "append", "append", "delete"]
    assert [h["data_files"] for h in history] == [1, 2, 3, 3]
    assert [h["records"] for h in history] == [10, 20, 30, 30]
    assert [h["delete_files"] for h in history] == [0, 0, 0, 1]
    assert history[-1]["position_deletes"] == 5
    assert [h["snapshots"] for h in history] == [1, 2, 3, 4]
    assert all(h["root_entries"] is None for h in history)  # not a V4 table
    assert history == sorted(history, key=lambda h: h["timestamp_ms"])
    # Roll back to the second snapshot: the history is that branch's, but the metadata still
    # holds all four snapshots.
    second = history[1]["snapshot_id"]
    table.manage_snapshots().rollback_to(second).commit()
    rolled = data.snapshot_history(table)
    assert [h["snapshot_id"] for h in rolled] == [h["snapshot_id"] for h in history[:2]]
    catalog.close()


def test_all_tables_walks_nested_namespaces() -> None:
    catalog = firn.load_catalog("memory://")
    for ns in ("a", "a.b", "c"):
        catalog.create_namespace(ns)
    for name in ("a.t1", "a.b.t2", "c.t3"):
        catalog.create_table(name, SCHEMA)
    assert data.all_tables(catalog) == ["a.b.t2", "a.t1", "c.t3"]


def test_health_and_recommendations_are_the_tables_own_as_json(tmp_path: Path) -> None:
    catalog = firn.load_catalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", SCHEMA, properties={"format-version": "4", "commit.root.max-data-files": "1"}
    )
    table.append(_rows(0, 10))
    table.append(_rows(10, 10))
    health = data.table_health(table)
    again = json.loads(table.health().to_json())
    timing = ("measured_at_ms", "oldest_snapshot_age_ms")
    assert {k: v for k, v in health.items() if k not in timing} == {
        k: v for k, v in again.items() if k not in timing
    }
    assert health["data_files"] == 2 and health["root_data_files"] == 2
    recommended = data.table_recommendations(table)
    assert [r["operation"] for r in recommended] == [r.operation for r in table.maintenance.recommend()]
    assert "flush_root" in {r["operation"] for r in recommended}
    # An error the page should show instead of failing: a table dropped meanwhile.
    catalog.drop_table("db.t")
    outcome = data.Outcome.of(lambda: catalog.load_table("db.t"))
    assert outcome.value is None and outcome.error is not None and "does not exist" in outcome.error


def test_env_connections_of_type_firn_are_found() -> None:
    environ = {
        "AIRFLOW_CONN_FIRN_JSON": json.dumps({"conn_type": "firn", "host": "sqlite:///x.db"}),
        "AIRFLOW_CONN_FIRN_URI": "firn://?warehouse=x",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "AIRFLOW_CONN_BROKEN": "{not json",
        "OTHER": "firn://x",
    }
    assert sorted(data._env_connection_ids(environ)) == ["firn_json", "firn_uri"]


def test_browser_safe_turns_only_unsafe_integers_into_strings() -> None:
    big = 1233292918414980123  # a 64-bit snapshot id: JSON.parse would make it ...980100
    value = {
        "snapshot_id": big,
        "data_files": 8,
        "ok": True,
        "ratio": 0.5,
        "ids": [big, -big, data.MAX_SAFE_INTEGER, data.MAX_SAFE_INTEGER + 1],
        "nested": {"parent": (big, None)},
    }
    assert data.browser_safe(value) == {
        "snapshot_id": str(big),
        "data_files": 8,
        "ok": True,
        "ratio": 0.5,
        "ids": [str(big), str(-big), data.MAX_SAFE_INTEGER, str(data.MAX_SAFE_INTEGER + 1)],
        "nested": {"parent": [str(big), None]},
    }
