"""The view's data helpers: snapshot history, table walk, adapters, connection discovery."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

import firn
from firn.errors import Unsupported
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


def test_adapters_call_issue_11_interfaces_or_say_they_are_missing() -> None:
    reported = SimpleNamespace(to_dict=lambda: {"data_files": 3})
    with_health = SimpleNamespace(
        name="db.t",
        health=lambda: reported,
        maintenance=SimpleNamespace(
            recommend=lambda: [SimpleNamespace(to_dict=lambda: {"operation": "flush_root"})]
        ),
    )
    assert data.table_health(with_health) == {"data_files": 3}  # type: ignore[arg-type]
    assert data.table_recommendations(with_health) == [{"operation": "flush_root"}]  # type: ignore[arg-type]
    without = SimpleNamespace(name="db.t", maintenance=SimpleNamespace())
    with pytest.raises(Unsupported, match=r"db\.t: this Firn version has no table\.health\(\)"):
        data.table_health(without)  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match=r"no table\.maintenance\.recommend\(\)"):
        data.table_recommendations(without)  # type: ignore[arg-type]
    outcome = data.Outcome.of(data.table_health, without)
    assert outcome.value is None and outcome.error is not None and "health()" in outcome.error


def test_env_connections_of_type_firn_are_found() -> None:
    environ = {
        "AIRFLOW_CONN_FIRN_JSON": json.dumps({"conn_type": "firn", "host": "sqlite:///x.db"}),
        "AIRFLOW_CONN_FIRN_URI": "firn://?warehouse=x",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "AIRFLOW_CONN_BROKEN": "{not json",
        "OTHER": "firn://x",
    }
    assert sorted(data._env_connection_ids(environ)) == ["firn_json", "firn_uri"]
