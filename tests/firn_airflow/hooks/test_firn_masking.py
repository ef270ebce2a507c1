"""Secrets from a Firn connection never reach a task log.

The task runs the way a worker runs it: ``dag.test(use_executor=True)`` hands it to the
LocalExecutor, whose supervisor starts the task process and writes the task log file through
Airflow's secrets masker (plain ``dag.test()`` runs tasks in-process and prints an unmasked
console log, so it cannot show masking).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.airflow import load_test_dag

pytestmark = pytest.mark.airflow

URI_PASSWORD = "uri-pass-31337"
CREDENTIAL = "client-cred-42424"  # a name Airflow alone would not mask ("credential")
STORAGE_SECRET = "s3-secret-97531"
PASSWORD = "conn-pass-86420"


def test_task_log_shows_stars_not_secrets(
    airflow_api_server: str, airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_FIRN_MASKING",
        json.dumps(
            {
                "conn_type": "firn",
                # Port 1 refuses at once: test_connection() fails, and its message is logged too.
                "host": f"postgresql+psycopg://firn:{URI_PASSWORD}@127.0.0.1:1/firn",
                "password": PASSWORD,
                "extra": {
                    "properties": {"client.credential": CREDENTIAL, "io.delete-threads": "4"},
                    "s3_secret_access_key": STORAGE_SECRET,
                },
            }
        ),
    )
    dag = load_test_dag("firn_test_hook_masking")
    run = dag.test(use_executor=True)
    assert run.state == "success"

    log_dir = airflow_home / "logs" / "dag_id=firn_test_hook_masking" / f"run_id={run.run_id}"
    (log_file,) = log_dir.glob("task_id=log_connection/attempt=*.log")
    text = log_file.read_text()
    events = [json.loads(line).get("event", "") for line in text.splitlines() if line.startswith("{")]
    for secret in (URI_PASSWORD, CREDENTIAL, STORAGE_SECRET, PASSWORD):
        assert secret not in text, f"{secret} leaked into {log_file}"
    assert "catalog uri: postgresql+psycopg://firn:***@127.0.0.1:1/firn" in events
    assert "client credential: ***" in events
    assert "storage secret: ***" in events
    (tested,) = [e for e in events if e.startswith("test_connection ok=False")]
    assert "127.0.0.1" in tested
