"""``FirnSparkSubmitOperator`` without a Spark cluster: the checks it makes before anything is
submitted, and where the Firn connection's catalog goes.

The spark-submit command line is inspected as the Spark provider's hook builds it
(``SparkSubmitHook._build_spark_submit_command``), and the environment as the submitted process
receives it: a recording ``spark-submit`` first on ``PATH`` stands in for Spark and writes its
arguments and the ``FIRN_CATALOG_*`` variables it was given (the hook's real ``Popen`` path; the
real spark-submit end to end is the ``firn_ingest_events`` DAG's test).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from firn.spark.config import ENV_CATALOG_PROPERTIES, ENV_CATALOG_URI, ENV_CATALOG_WAREHOUSE
from firn_airflow.errors import FirnConnectionError, SparkConnectionError
from firn_airflow.operators import FirnSparkSubmitOperator

pytestmark = pytest.mark.airflow

URI_SECRET = "uri-secret-6182"
STORAGE_SECRET = "s3-secret-2718"
CREDENTIAL = "client-cred-1414"
SECRET_URI = f"postgresql+psycopg://firn:{URI_SECRET}@127.0.0.1:5432/test"
SECRETS = (URI_SECRET, STORAGE_SECRET, CREDENTIAL)


def _firn_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, *, secrets: bool = True) -> None:
    extra: dict[str, Any] = {"warehouse": "s3://lake/wh", "properties": {"s3.endpoint": "http://minio:9000"}}
    if secrets:
        extra["s3_secret_access_key"] = STORAGE_SECRET
        extra["properties"]["client.credential"] = CREDENTIAL
    host = SECRET_URI if secrets else "postgresql+psycopg://firn@127.0.0.1:5432/test"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "firn", "host": host, "extra": extra})
    )


def _spark_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, host: str, **extra: str) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": host, "extra": extra})
    )


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``spark-submit`` first on PATH that records its arguments and catalog environment to
    the returned file (absent: it never ran)."""
    record = tmp_path / "spark-submit-call.json"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "spark-submit"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "env = {k: v for k, v in os.environ.items() if k.startswith('FIRN_') or k == 'TZ'}\n"
        f"with open({str(record)!r}, 'w') as f:\n"
        "    json.dump({'argv': sys.argv[1:], 'env': env}, f)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


def _operator(tmp_path: Path, **kwargs: Any) -> FirnSparkSubmitOperator:
    app = tmp_path / "job.py"
    app.write_text("print('never run by the recorder')\n")
    return FirnSparkSubmitOperator(
        task_id="pipeline", application=str(app), application_args=["--table", "db.events"], **kwargs
    )


def test_a_missing_spark_connection_is_one_clear_error_before_anything_runs(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Path
) -> None:
    _firn_connection(monkeypatch, "firn_sub")
    op = _operator(tmp_path, firn_conn_id="firn_sub", conn_id="spark_sub_missing")
    with pytest.raises(SparkConnectionError) as raised:
        op.execute({})  # type: ignore[arg-type]
    message = str(raised.value)
    assert "Spark connection 'spark_sub_missing' is not defined" in message
    assert "YARN" in message and "AIRFLOW_CONN_SPARK_SUB_MISSING" in message
    # One error: no chain of causes behind it.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    # Nothing was submitted (the hook would have run spark-submit against YARN).
    assert not recorder.exists()
    assert op._hook is None


def test_a_missing_firn_connection_is_one_clear_error_before_anything_runs(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Path
) -> None:
    _spark_connection(monkeypatch, "spark_sub", "local[2]")
    op = _operator(tmp_path, firn_conn_id="firn_sub_missing", conn_id="spark_sub")
    with pytest.raises(FirnConnectionError, match="'firn_sub_missing'") as raised:
        op.execute({})  # type: ignore[arg-type]
    assert raised.value.__cause__ is None
    assert not recorder.exists()


def test_the_catalog_goes_to_the_environment_only_and_user_variables_win(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Path
) -> None:
    _firn_connection(monkeypatch, "firn_sub")
    _spark_connection(monkeypatch, "spark_sub", "local[2]")
    user_env = {ENV_CATALOG_WAREHOUSE: "s3://other-lake/wh", "TZ": "UTC"}
    op = _operator(
        tmp_path,
        firn_conn_id="firn_sub",
        conn_id="spark_sub",
        env_vars=user_env,
        conf={"spark.ui.enabled": "false"},
        driver_memory="1g",
    )
    op.execute({})  # type: ignore[arg-type]

    # The command line the hook builds, and the one the process got: no secret anywhere.
    command = op._get_hook()._build_spark_submit_command(op.application)
    assert "--master" in command and command[command.index("--master") + 1] == "local[2]"
    assert command[-3:] == [op.application, "--table", "db.events"]
    call = json.loads(recorder.read_text())
    assert call["argv"] == command[1:]
    for secret in SECRETS:
        assert secret not in " ".join(command)
        assert secret not in " ".join(call["argv"])

    # The environment carries the catalog, secrets included; the user's variables win.
    env = call["env"]
    assert env[ENV_CATALOG_URI] == SECRET_URI
    properties = json.loads(env[ENV_CATALOG_PROPERTIES])
    assert properties["s3.secret-access-key"] == STORAGE_SECRET
    assert properties["client.credential"] == CREDENTIAL
    assert properties["s3.endpoint"] == "http://minio:9000"
    assert env[ENV_CATALOG_WAREHOUSE] == "s3://other-lake/wh"  # the connection says s3://lake/wh
    assert env["TZ"] == "UTC"


@pytest.mark.parametrize(
    ("spark_extra", "op_kwargs"),
    [
        ({"deploy-mode": "cluster"}, {}),
        ({}, {"deploy_mode": "cluster"}),
        ({}, {"conf": {"spark.submit.deployMode": "cluster"}}),
    ],
    ids=["connection", "operator", "conf"],
)
def test_secrets_and_cluster_deploy_mode_are_refused(
    spark_extra: dict[str, str],
    op_kwargs: dict[str, Any],
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorder: Path,
) -> None:
    _firn_connection(monkeypatch, "firn_sub")
    _spark_connection(monkeypatch, "spark_sub_yarn", "yarn", **spark_extra)
    op = _operator(tmp_path, firn_conn_id="firn_sub", conn_id="spark_sub_yarn", **op_kwargs)
    with pytest.raises(SparkConnectionError) as raised:
        op.execute({})  # type: ignore[arg-type]
    message = str(raised.value)
    assert "'spark_sub_yarn' uses cluster deploy mode" in message
    assert "'firn_sub' holds secrets" in message and "client deploy mode" in message
    assert not any(secret in message for secret in SECRETS)
    assert not recorder.exists()


def test_cluster_mode_without_secrets_is_allowed_and_shows_why_secrets_are_not(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Path
) -> None:
    _firn_connection(monkeypatch, "firn_sub_open", secrets=False)
    _spark_connection(monkeypatch, "spark_sub_yarn", "yarn", **{"deploy-mode": "cluster"})
    op = _operator(tmp_path, firn_conn_id="firn_sub_open", conn_id="spark_sub_yarn")
    op._prepare()
    command = op._get_hook()._build_spark_submit_command(op.application)
    # On YARN in cluster mode the hook puts the driver's environment on the command line.
    assert (
        f"spark.yarn.appMasterEnv.{ENV_CATALOG_URI}=postgresql+psycopg://firn@127.0.0.1:5432/test" in command
    )


def test_spark_submit_missing_from_path_is_one_clear_error(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _firn_connection(monkeypatch, "firn_sub")
    _spark_connection(monkeypatch, "spark_sub", "local[2]")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    op = _operator(tmp_path, firn_conn_id="firn_sub", conn_id="spark_sub", env_vars={"PATH": str(empty)})
    with pytest.raises(
        SparkConnectionError, match=r"spark-submit is not on PATH \(Spark connection 'spark_sub'\)"
    ):
        op.execute({})  # type: ignore[arg-type]
