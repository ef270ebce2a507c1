"""The spark-submit call the ``spark`` runner builds (without submitting it): secrets in the
driver's environment only, checks before any JVM starts, job errors mapped to Firn errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firn.errors import LeaseHeld, NoSuchTable, ValidationError
from firn.spark.config import ENV_CATALOG_PROPERTIES, ENV_CATALOG_URI, ENV_CATALOG_WAREHOUSE
from firn.spark.job import path as job_path
from firn_airflow.errors import SparkConnectionError, SparkJobFailed
from firn_airflow.hooks.connection import FirnConnectionConfig
from firn_airflow.hooks.spark_job import (
    SparkMaintenanceJob,
    SparkSettings,
    driver_environment,
    entry_error,
    job_arguments,
)
from tests.firn_airflow.operators.helpers import set_spark_connection

pytestmark = pytest.mark.airflow

SECRET_URI = "postgresql+psycopg://firn:uri-secret-1@db:5432/firn"
CONFIG = FirnConnectionConfig(
    conn_id="firn_secret",
    uri=SECRET_URI,
    name="prod",
    warehouse="s3://bucket/wh",
    properties={"s3.secret-access-key": "s3-secret-2", "s3.endpoint": "http://minio:9000"},
    secrets=("uri-secret-1", "s3-secret-2"),
)


def test_the_catalog_goes_to_the_environment_and_never_to_the_command_line(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_spark_connection(monkeypatch)
    job = SparkMaintenanceJob(
        SparkSettings(conf={"spark.ui.enabled": "false"}, env_vars={"TZ": "UTC"}, driver_memory="1g"),
        CONFIG,
        extra_properties={"maintenance.lease.owner-label": "airflow d.t r"},
    )
    hook = job.submit_hook("rewrite_data_files", "db.events", {"min-input-files": 2}, "/tmp/r.json")
    command = hook._build_spark_submit_command(job_path())
    text = " ".join(command)
    for secret in CONFIG.secrets:
        assert secret not in text
    assert (
        "--master local[2]" in text
        and "--driver-memory 1g" in text
        and "--name firn-compact-db.events" in text
    )
    assert command[command.index(job_path()) + 1 :] == [
        "compact",
        "--table",
        "db.events",
        "--options",
        '{"min-input-files":2}',
        "--result",
        "/tmp/r.json",
    ]
    # Client/local mode: the hook hands env_vars to the spark-submit process (the driver's parent).
    env = hook._env
    assert env["TZ"] == "UTC" and env[ENV_CATALOG_URI] == SECRET_URI
    assert env[ENV_CATALOG_WAREHOUSE] == "s3://bucket/wh"
    assert json.loads(env[ENV_CATALOG_PROPERTIES]) == {
        "s3.secret-access-key": "s3-secret-2",
        "s3.endpoint": "http://minio:9000",
        "maintenance.lease.owner-label": "airflow d.t r",
        "name": "prod",
    }


def test_driver_environment_and_arguments() -> None:
    env = driver_environment(CONFIG, {})
    assert set(env) == {ENV_CATALOG_URI, ENV_CATALOG_WAREHOUSE, ENV_CATALOG_PROPERTIES}
    assert job_arguments("expire", "db.t", {"retain-last": 3}, "r.json") == [
        "expire",
        "--table",
        "db.t",
        "--options",
        '{"retain-last":3}',
        "--result",
        "r.json",
    ]


def test_checks_before_anything_is_submitted(airflow_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A missing connection: SparkSubmitHook alone would fall back to YARN.
    missing = SparkMaintenanceJob(SparkSettings(conn_id="spark_nowhere"), CONFIG)
    with pytest.raises(SparkConnectionError, match=r"'spark_nowhere' is not defined .*YARN"):
        missing.check()
    # Cluster mode would put env_vars (the secrets) on the command line.
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    with pytest.raises(SparkConnectionError, match=r"cluster deploy mode.*holds secrets"):
        SparkMaintenanceJob(SparkSettings(conn_id="spark_yarn"), CONFIG).check()
    without_secrets = FirnConnectionConfig(
        conn_id="plain", uri="sqlite:///c.db", name="default", warehouse=None
    )
    with pytest.raises(SparkConnectionError, match="pass result_dir"):
        SparkMaintenanceJob(SparkSettings(conn_id="spark_yarn"), without_secrets).check()
    # spark-submit must be on the PATH the hook will use.
    set_spark_connection(monkeypatch)
    with pytest.raises(SparkConnectionError, match="spark-submit is not on PATH"):
        SparkMaintenanceJob(SparkSettings(env_vars={"PATH": "/nonexistent"}), CONFIG).check()
    SparkMaintenanceJob(SparkSettings(), CONFIG).check()  # everything in place: no error


def test_job_errors_become_firn_errors() -> None:
    def entry(kind: str, message: str) -> dict[str, object]:
        return {"operation": "compact", "table": "db.t", "error": {"type": kind, "message": message}}

    error = entry_error(entry("NoSuchTable", "table 'db.t' does not exist"), "rewrite_data_files", "db.t")
    assert isinstance(error, NoSuchTable)
    assert str(error) == "rewrite_data_files on db.t failed in the Spark job: table 'db.t' does not exist"
    held = entry_error(entry("LeaseHeld", "cannot run x on db.t: held by h"), "rewrite_data_files", "db.t")
    assert isinstance(held, LeaseHeld) and str(held) == "cannot run x on db.t: held by h"
    assert isinstance(
        entry_error(entry("ValidationError", "bad"), "expire_snapshots", "db.t"), ValidationError
    )
    other = entry_error(entry("MemoryError", "out of memory"), "expire_snapshots", "db.t")
    assert isinstance(other, SparkJobFailed) and "MemoryError: out of memory" in str(other)


def test_results_are_read_from_a_local_path_or_a_result_dir_uri(tmp_path: Path) -> None:
    plain = FirnConnectionConfig(conn_id="plain", uri="sqlite:///c.db", name="default", warehouse=None)
    job = SparkMaintenanceJob(SparkSettings(result_dir=tmp_path.as_uri()), plain)
    entry = {"operation": "flush_root", "table": "db.events", "data_files_moved": 3}
    uri_file = tmp_path / "firn-flush-1.json"
    uri_file.write_text(json.dumps([entry]))
    assert job._read(uri_file.as_uri()) == [entry]
    assert not uri_file.exists()  # read once, then removed from the shared location
    assert job._read((tmp_path / "missing.json").as_uri()) is None
    local = tmp_path / "result.json"
    local.write_text("not json")
    with pytest.raises(SparkJobFailed, match="is not JSON"):
        job._read(str(local))
    # One --table, one entry: the catalog may spell the name differently from the task.
    assert job._entry([entry], "flush_root", "DB.events", None) == entry
    with pytest.raises(SparkJobFailed, match=r"spark-submit failed\. exit 1"):
        job._entry(None, "flush_root", "db.events", "exit 1")


def test_kill_ends_only_this_submission_s_processes(tmp_path: Path) -> None:
    """kill() ends the processes that carry this submission's result path (and what they
    started), never another Spark process of the same task process, e.g. a local
    SparkSession's JVM (an earlier version killed every descendant whose command line said
    "spark", and took the test session's own JVM with it)."""
    import subprocess
    import sys
    import time
    from unittest import mock

    import psutil

    result = str(tmp_path / "result.json")
    sleeper = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); time.sleep(120)"
    ours = subprocess.Popen([sys.executable, "-c", sleeper, "--result", result])
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "org.apache.spark.deploy.SparkSubmit", "firn"]
    )
    try:
        deadline = time.monotonic() + 30
        while not psutil.Process(ours.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchild = psutil.Process(ours.pid).children()[0]
        job = SparkMaintenanceJob(SparkSettings(), CONFIG)
        job._hook = mock.Mock()
        job._result = result
        job.kill()
        job._hook.on_kill.assert_called_once_with()
        assert ours.wait(timeout=30) != 0
        psutil.wait_procs([grandchild], timeout=30)
        assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
        assert other.poll() is None  # another Spark-looking process of this process lives on
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
