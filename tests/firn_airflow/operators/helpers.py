"""Shared by the operator tests: connections through ``AIRFLOW_CONN_*``, a V4 table on which every
maintenance operation has work, and reading a ``dag.test()`` run back (task states, XComs,
asset events) from the metadata database."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.spark import spark_env
from tests.fixtures.spark_tables import build_table, catalog_uri, spark_catalog
from tests.fixtures.tables import events

VENV_BIN = str(Path(sys.executable).parent)
# Options with which every operation has work on maintenance_table() (checked by the tests).
DV_OPTIONS = {"min-input-files": 2}
COMPACT_OPTIONS = {"min_input_files": 2, "where": "region = 'eu'"}
FLUSH_OPTIONS = {"force": True}


def set_firn_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, directory: Path, **extra: Any) -> None:
    """``conn_id``: the SQLite catalog of :func:`spark_catalog` in ``directory``."""
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps(
            {
                "conn_type": "firn",
                "host": catalog_uri(directory),
                "extra": {"warehouse": str(directory / "warehouse"), **extra},
            }
        ),
    )


def set_spark_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str = "spark_default") -> None:
    """``conn_id``: Spark master ``local[2]``; spark-submit on PATH, our Python for PySpark."""
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": "local[2]"})
    )
    for key, value in spark_env().items():
        if key.startswith(("PYSPARK_", "SPARK_LOCAL_IP", "PYTHONHASHSEED")):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def maintenance_table(catalog: SqlCatalog, name: str = "events") -> Table:
    """A V4 ``db.<name>`` where each operation has work: two small leaves and root entries,
    deletion vectors in several Puffin files, many small files, a dozen snapshots."""
    table = build_table(catalog, "v4", name=name)
    table.maintenance.flush_root(force=True).run()
    table.refresh()
    for i in range(3):
        table.append(events(8, start=200 + i * 8))
    table.delete("id = 201 or id = 210")
    table.maintenance.flush_root(force=True).run()
    table.refresh()
    table.append(events(4, start=300))
    return table.refresh()


def catalog_with_table(directory: Path, name: str = "events") -> SqlCatalog:
    catalog = spark_catalog(directory)
    maintenance_table(catalog, name)
    return catalog


def add_orphans(table: Table, *names: str, age_days: float = 10) -> list[str]:
    """Files under the table's data directory that nothing references, ``age_days`` old."""
    data = Path(table.location.removeprefix("file://")) / "data"
    data.mkdir(parents=True, exist_ok=True)
    paths = []
    old = time.time() - age_days * 86400
    for name in names:
        path = data / name
        path.write_bytes(b"not a data file")
        os.utime(path, (old, old))
        paths.append(str(path))
    return paths


# -- a dag.test() run, read back -------------------------------------------------------------------
def task_states(run: Any) -> dict[str, str | None]:
    """``task_id`` (``task_id[i]`` for mapped instances) -> state."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(TaskInstance.task_id, TaskInstance.map_index, TaskInstance.state).where(
                TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
            )
        ).all()
    return {
        (t if i < 0 else f"{t}[{i}]"): (str(getattr(s, "value", s)) if s is not None else None)
        for t, i, s in rows
    }


def xcom(run: Any, task_id: str, map_index: int = -1) -> Any:
    """The return value of ``task_id`` in ``run``."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.scalars(
            XComModel.get_many(
                run_id=run.run_id,
                key="return_value",
                task_ids=task_id,
                dag_ids=run.dag_id,
                map_indexes=map_index,
            )
        ).first()
        assert row is not None, f"no XCom from {task_id}[{map_index}] in {run.run_id}"
        return XComModel.deserialize_value(row)


def events_of(conn_id: str, table: str, run: Any | None = None) -> list[dict[str, Any]]:
    """The table asset's events as the health view reads them (of ``run`` only, if given)."""
    from airflow.utils.session import create_session

    from firn_airflow.health_view.data import maintenance_events

    with create_session() as session:
        found = maintenance_events(session, conn_id, table)
    return [e for e in found if run is None or e["run_id"] == run.run_id]


__all__ = [
    "COMPACT_OPTIONS",
    "DV_OPTIONS",
    "FLUSH_OPTIONS",
    "add_orphans",
    "catalog_with_table",
    "events_of",
    "maintenance_table",
    "set_firn_connection",
    "set_spark_connection",
    "task_states",
    "xcom",
]
