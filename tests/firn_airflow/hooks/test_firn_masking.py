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

QUERY_PASSWORD = "query-pass-31337"  # given as ?password= in the catalog URI
CREDENTIAL = "client-cred-42424"  # a name Airflow alone would not mask ("credential")
STORAGE_SECRET = "s3-secret-97531"
# The connection's password, with the characters a URI must encode: it reaches the task log
# inside the merged catalog URI as conn%40pass%2F86%3A420, a string Airflow was never given.
PASSWORD = "conn@pass/86:420"
ENCODED_PASSWORD = "conn%40pass%2F86%3A420"


def test_task_log_shows_stars_not_secrets(
    airflow_api_server: str, airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_FIRN_MASKING",
        json.dumps(
            {
                "conn_type": "firn",
                # Port 1 refuses at once: test_connection() fails, and its message is logged too.
                "host": f"postgresql+psycopg://firn@127.0.0.1:1/firn?password={QUERY_PASSWORD}",
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
    for secret in (QUERY_PASSWORD, CREDENTIAL, STORAGE_SECRET, PASSWORD, ENCODED_PASSWORD):
        assert secret not in text, f"{secret} leaked into {log_file}"
    assert "catalog uri: postgresql+psycopg://firn:***@127.0.0.1:1/firn?password=***" in events
    assert "client credential: ***" in events
    assert "storage secret: ***" in events
    (tested,) = [e for e in events if e.startswith("test_connection ok=False")]
    assert "127.0.0.1" in tested


# -- the hook feeds Airflow's masker every form of every secret (its real masker, in-process) -------
@pytest.mark.parametrize(
    ("host", "password", "secret", "shown"),
    [
        # The connection's password merged into the URI, as SQLAlchemy encodes it.
        ("postgresql://firn@db/wh", "p@ss/w:rd-1", "p%40ss%2Fw%3Ard-1", "postgresql://firn:***@db/wh"),
        # A password in the URI's query string, encoded or not.
        (
            "postgresql://firn@db/wh?password=qp%40ss-2",
            None,
            "qp@ss-2",
            "postgresql://firn@db/wh?password=***",
        ),
        ("postgresql://firn@db/wh?sslmode=x&password=qpass-3", None, "qpass-3", None),
        # A user-info password holding an encoded '@' and '/'.
        ("postgresql://firn:u%40p%2Fss-4@db/wh", None, "u@p/ss-4", "postgresql://firn:***@db/wh"),
    ],
)
def test_every_form_of_a_uri_password_is_masked(
    host: str, password: str | None, secret: str, shown: str | None
) -> None:
    from airflow.sdk._shared.secrets_masker import redact
    from airflow.sdk.definitions.connection import Connection

    from firn_airflow.hooks.connection import catalog_config

    config = catalog_config(Connection(conn_id="firn_forms", conn_type="firn", host=host, password=password))
    for form in {secret, *(s for s in config.secrets)}:
        assert "***" in redact(f"log line with {form} in it"), form
        assert form not in config.redact(f"message about {config.uri}: {form}")
    assert "***" in redact(config.uri) and redact(config.uri) != config.uri
    if shown is not None:
        assert config.display_uri == shown
    assert secret not in config.display_uri
