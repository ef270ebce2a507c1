"""The example DAGs of ``dags/``: they parse with no import errors, and each one runs end to end
through the real ``airflow dags test`` CLI (a temporary ``AIRFLOW_HOME`` with a migrated SQLite
metadata DB, a real SQLite Firn catalog, real spark-submit)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa

import firn
from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.airflow import REPO, airflow_cli
from tests.fixtures.spark import SparkCluster, spark_env
from tests.fixtures.tables import events

# Each `airflow dags test` may take up to 900 s (dags_test); a test runs one or two of them.
pytestmark = [pytest.mark.airflow, pytest.mark.timeout(1800)]

EXAMPLE_DAGS = {
    "firn_ingest_events",
    "firn_nightly_maintenance",
    "firn_root_flush_on_growth",
    "firn_compact_after_ingest",
    "firn_downstream_on_commit",
}
VENV_BIN = Path(sys.executable).parent


def _env(catalog_dir: Path, spark_master: str = "local[2]") -> dict[str, str]:
    """Connections (``AIRFLOW_CONN_*``), Spark on PATH, this venv's Python for PySpark."""
    firn_conn = {
        "conn_type": "firn",
        "host": f"sqlite:///{catalog_dir / 'catalog.db'}",
        "extra": {"warehouse": str(catalog_dir / "warehouse")},
    }
    spark_conn = {"conn_type": "spark", "host": spark_master, "extra": {"deploy-mode": "client"}}
    env = {
        k: v for k, v in spark_env().items() if k.startswith(("PYSPARK_", "SPARK_LOCAL_IP", "PYTHONHASHSEED"))
    }
    env.update(
        {
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW_CONN_FIRN_DEFAULT": json.dumps(firn_conn),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(spark_conn),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    return env


def dags_test(dag_id: str, env: Mapping[str, str], conf: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``airflow dags test <dag_id> -c <conf>``; then the task states of the run it made
    (``task[i]`` for mapped ones), read from the metadata DB. Fails unless the run succeeded."""
    args = ["dags", "test", dag_id]
    if conf is not None:
        args += ["-c", json.dumps(conf)]
    proc = airflow_cli(*args, env=env, timeout=900)
    engine = sa.create_engine(os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    try:
        with engine.connect() as conn:
            run_id, state = conn.execute(
                sa.text("SELECT run_id, state FROM dag_run WHERE dag_id = :d ORDER BY id DESC LIMIT 1"),
                {"d": dag_id},
            ).one()
            rows = conn.execute(
                sa.text(
                    "SELECT task_id, map_index, state FROM task_instance WHERE dag_id = :d AND run_id = :r"
                ),
                {"d": dag_id, "r": run_id},
            ).all()
    finally:
        engine.dispose()
    assert state == "success", proc.stdout[-6000:] + proc.stderr[-6000:]
    return {task + (f"[{index}]" if index >= 0 else ""): str(ti_state) for task, index, ti_state in rows}


def _catalog(catalog_dir: Path) -> SqlCatalog:
    catalog = firn.load_catalog(
        f"sqlite:///{catalog_dir / 'catalog.db'}", warehouse=str(catalog_dir / "warehouse")
    )
    assert isinstance(catalog, SqlCatalog)
    return catalog


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "lake"


def _rows(table: Table, key: str) -> pa.Table:
    return table.refresh().scan().to_arrow().sort_by(key)


def test_example_dags_parse_with_no_import_errors(airflow_home: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == EXAMPLE_DAGS
    for dag_id in EXAMPLE_DAGS:
        bag.get_dag(dag_id).validate()  # type: ignore[union-attr]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_ingest_then_compact_after_ingest(airflow_home: Path, catalog_dir: Path) -> None:
    env = _env(catalog_dir)
    states = dags_test("firn_ingest_events", env, {"commits": 3, "rows": 60, "late_delete_users": 2})
    assert states == {"ingest": "success"}
    catalog = _catalog(catalog_dir)
    table = catalog.load_table("demo.events")
    health = table.health()
    # Three small commits of two Spark partitions each, then a merge-on-read delete (DVs).
    assert health.format_version == 4 and health.records == 180
    assert health.data_files == 6 and health.deletion_vectors > 0 and health.position_deletes > 0
    rows = _rows(table, "event_id")
    assert rows.num_rows == 180 - health.position_deletes

    # Not enough small files for the default thresholds: the compaction is skipped cleanly.
    states = dags_test("firn_compact_after_ingest", env)
    assert states == {"compact": "skipped"}
    # Below the table's thresholds (table properties), compaction runs (in the worker: small).
    table.set_properties({"maintenance.compact.min-small-files": "4"})
    states = dags_test("firn_compact_after_ingest", env)
    assert states == {"compact": "success"}
    after = catalog.load_table("demo.events")
    assert after.health().data_files < health.data_files
    assert _rows(after, "event_id").equals(rows)
    catalog.close()


def _two_tables(catalog_dir: Path) -> tuple[SqlCatalog, dict[str, pa.Table]]:
    """``ops.v4`` (V4, many small files and DVs) and ``ops.v2`` (position deletes), with
    thresholds that make their maintenance due."""
    catalog = _catalog(catalog_dir)
    catalog.create_namespace("ops")
    thresholds = {
        "write.delete.mode": "merge-on-read",
        "maintenance.compact.min-small-files": "4",
        "maintenance.rewrite-dvs.min-delete-ratio": "0.01",
        "maintenance.expire.max-snapshots": "3",
        "commit.root.max-data-files": "3",
    }
    schema = events(1).schema
    v4 = catalog.create_table("ops.v4", schema, properties=thresholds)
    v2 = catalog.create_table("ops.v2", schema, properties={**thresholds, "format-version": "2"})
    for table in (v4, v2):
        for i in range(6):
            table.append(events(10, start=10 * i))
        table.delete("id = 3 or id = 14 or id = 25")
    before = {t.name: _rows(t, "id") for t in (v4, v2)}
    return catalog, before


def test_nightly_maintenance_over_a_namespace(airflow_home: Path, catalog_dir: Path) -> None:
    catalog, before = _two_tables(catalog_dir)
    health = {name: catalog.load_table(name).health() for name in before}
    states = dags_test("firn_nightly_maintenance", _env(catalog_dir), {"namespace": "ops"})
    assert states.pop("list_tables") == "success"
    steps = [
        "rewrite_deletion_vectors",
        "rewrite_data_files",
        "flush_root",
        "rewrite_manifests",
        "expire_snapshots",
        "remove_orphan_files",
    ]
    # Every step mapped over both tables, each ran or skipped (not recommended): none failed.
    assert set(states) == {f"maintain.{step}[{i}]" for step in steps for i in (0, 1)}
    assert set(states.values()) <= {"success", "skipped"}
    ran = {key for key, state in states.items() if state == "success"}
    # list_tables sorts: [0] is ops.v2, [1] ops.v4. Compaction (small files, and a delete ratio
    # above the tables' 1%) and expiry were due on both; v2 has no root to flush, and V4's
    # compaction left its root below the threshold. The delete rewrite is not recommended
    # (issue 20): v2's one position delete file is below min-delete-files, V4's DVs have
    # nothing to merge, and compaction is what lowers the ratio.
    for step in ("rewrite_data_files", "expire_snapshots"):
        assert {f"maintain.{step}[0]", f"maintain.{step}[1]"} <= ran, states
    assert states["maintain.rewrite_deletion_vectors[0]"] == "skipped"
    assert states["maintain.rewrite_deletion_vectors[1]"] == "skipped"
    assert states["maintain.flush_root[0]"] == "skipped"
    assert (catalog.load_table("ops.v4").health().root_data_files or 0) <= 3
    # Orphans are only swept for tables older than 3 days: skipped here.
    assert states["maintain.remove_orphan_files[0]"] == "skipped"
    for name, rows in before.items():
        table = catalog.load_table(name)
        after = table.health()
        assert after.data_files < health[name].data_files and after.snapshots <= 3
        # The deletes went with the rewritten files (DVs) or as dangling (v2's position file).
        assert after.delete_files == 0 and after.delete_ratio == 0.0, (name, after)
        assert _rows(table, "id").equals(rows), name
    catalog.close()


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_root_flush_on_growth_on_a_standalone_cluster(
    airflow_home: Path, catalog_dir: Path, spark_cluster: SparkCluster
) -> None:
    catalog = _catalog(catalog_dir)
    catalog.create_namespace("demo")
    # The sensor waits for the table's own commit.root.max-data-files (as the demo table, 8).
    table = catalog.create_table(
        "demo.events", events(1).schema, properties={"commit.root.max-data-files": "8"}
    )
    for i in range(8):  # 8 single-file commits: the root holds 8 data files
        table.append(events(2, start=2 * i))
    assert table.health().root_data_files == 8
    rows = _rows(table, "id")
    states = dags_test("firn_root_flush_on_growth", _env(catalog_dir, spark_cluster.master_url))
    assert states == {"root_grew": "success", "flush_root": "success"}
    after = catalog.load_table("demo.events")
    assert after.health().root_data_files == 0 and after.health().data_files == 8
    assert _rows(after, "id").equals(rows)
    # The flush ran on the cluster: its worker started an executor for the application.
    assert any(spark_cluster.work_dir.iterdir())
    catalog.close()
