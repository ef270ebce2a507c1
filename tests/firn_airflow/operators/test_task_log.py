"""Real task logs (``dag.test(use_executor=True)``: a supervised process per task, a log file
written through Airflow's secrets masker): no secret reaches the log of a Spark run, and bad
connections, tables or options end in one clear task error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from tests.firn_airflow.operators.helpers import (
    catalog_with_table,
    maintenance_table,
    set_firn_connection,
    set_spark_connection,
    task_states,
)
from tests.fixtures.airflow import load_test_dag
from tests.fixtures.catalogs import (
    POSTGRES_URL,
    drop_postgres_catalog,
    make_postgres_catalog,
    require_postgres,
)

pytestmark = pytest.mark.airflow

DAG_ID = "firn_test_op_task_log"
PASSWORD = "pg-conn-secret-5417"
STORAGE_KEY = "s3-access-key-7716"
STORAGE_SECRET = "s3-secret-key-2290"
CREDENTIAL = "client-cred-6203"


def log_events(airflow_home: Path, run: Any, task_id: str) -> tuple[str, list[dict[str, Any]]]:
    """The task's log file text and its JSON events."""
    log_dir = airflow_home / "logs" / f"dag_id={DAG_ID}" / f"run_id={run.run_id}"
    (log_file,) = log_dir.glob(f"task_id={task_id}/attempt=*.log")
    text = log_file.read_text()
    return text, [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def task_error(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exceptions of the task's failure, outermost first (one per chained cause)."""
    (failed,) = [e for e in events if e.get("event") == "Task failed with exception"]
    detail: list[dict[str, Any]] = failed["error_detail"]
    return detail


def test_bad_names_and_options_give_one_clear_task_error(
    airflow_api_server: str, airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_op_errors", tmp_path)
    run = load_test_dag(DAG_ID).test(use_executor=True, mark_success_pattern="flush_with_secrets")
    expected = {
        "missing_table": ("NoSuchTable", ["db.nope", "firn_op_errors"]),
        "not_a_table_name": ("ValidationError", ["'events' needs a namespace"]),
        "missing_firn_conn": ("FirnConnectionNotFound", ["firn_op_missing", "AIRFLOW_CONN_FIRN_OP_MISSING"]),
        "missing_spark_conn": ("SparkConnectionError", ["spark_op_missing", "YARN"]),
        "unknown_option": ("ValidationError", ["min-input-filez", "min-input-files"]),
    }
    states = task_states(run)
    for task_id, (kind, words) in expected.items():
        assert states[task_id] == "failed", (task_id, states)
        _, events = log_events(airflow_home, run, task_id)
        [error] = task_error(events)  # one exception, no chain of wrapped causes
        assert kind in error["exc_type"], (task_id, error["exc_type"])
        for word in words:
            assert word in error["exc_value"], (task_id, error["exc_value"])


@pytest.fixture
def secret_catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    """A PostgreSQL catalog (trust auth: any password is accepted, so one can be given)."""
    require_postgres()
    catalog = make_postgres_catalog(tmp_path / "warehouse")
    yield catalog
    drop_postgres_catalog(catalog)


@pytest.mark.spark
@pytest.mark.postgres
@pytest.mark.xdist_group("spark")
def test_secrets_reach_the_spark_driver_but_not_the_command_line_or_the_log(
    airflow_api_server: str,
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    secret_catalog: SqlCatalog,
) -> None:
    table = maintenance_table(secret_catalog)
    snapshots = len(table.snapshots())
    monkeypatch.setenv(
        "AIRFLOW_CONN_FIRN_OP_SECRET",
        json.dumps(
            {
                "conn_type": "firn",
                # The password goes into the catalog URI only inside the task (FirnHook).
                "host": POSTGRES_URL,
                "password": PASSWORD,
                "extra": {
                    "catalog_name": secret_catalog.name,
                    "warehouse": str(tmp_path / "warehouse"),
                    "s3_access_key_id": STORAGE_KEY,
                    "s3_secret_access_key": STORAGE_SECRET,
                    "properties": {"client.credential": CREDENTIAL},
                },
            }
        ),
    )
    set_spark_connection(monkeypatch)
    catalog_with_table(tmp_path / "errors")
    set_firn_connection(monkeypatch, "firn_op_errors", tmp_path / "errors")

    run = load_test_dag(DAG_ID).test(use_executor=True)
    assert task_states(run)["flush_with_secrets"] == "success"
    # The driver found the PostgreSQL catalog from its environment and committed the flush.
    assert len(table.refresh().snapshots()) == snapshots + 1

    text, events = log_events(airflow_home, run, "flush_with_secrets")
    for secret in (PASSWORD, STORAGE_KEY, STORAGE_SECRET, CREDENTIAL):
        assert secret not in text, f"{secret} leaked into the task log"
    [command] = [e["event"] for e in events if str(e.get("event", "")).startswith("Spark-Submit cmd:")]
    # Had a secret been on the command line, the secrets masker would show *** here.
    assert "***" not in command and "--catalog" not in command and "FIRN_CATALOG" not in command
    assert "--table db.events" in command
    assert any("firn flush: 1 table(s), 1 done, 0 failed" in str(e.get("event")) for e in events)
