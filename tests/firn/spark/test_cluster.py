"""Maintenance through ``spark-submit`` on a real standalone cluster (Master and Worker from pip
pyspark's ``spark-class``, client mode: Spark runs Python apps on standalone only so), with
Firn shipped to the cluster rather than installed there.

* The job runs ``flush`` on a V4 table with ``--py-files firn.spark.package()`` and a Python
  that has Firn's dependencies but not Firn (driver and executors); the table is flushed and
  still reads identically, through Firn and through Spark on the cluster's executors, which
  get Firn from a packed virtualenv (``firn.spark.pack_venv``, ``--archives``).
* ``compact`` and ``expire`` (``rewrite_data_files``, ``expire_snapshots``) run the same way
  (Firn from the zip only): the table is compacted (fewer files) or expired (fewer snapshots),
  still reads identically, and the executors ran in the worker's own working directory.

Which job's executors: the cluster (and its work dir) is shared by every test of the run, so
each check reads the application id this submission got (the driver's log) and looks only at
that application's executor directories; the compaction's work units must show in them.
"""

from __future__ import annotations

import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.spark import SparkCluster
from tests.fixtures.spark_tables import build_table, catalog_uri, spark_catalog
from tests.fixtures.tables import events

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("spark")]

READ_APP = str(Path(__file__).with_name("cluster_read_app.py"))


def _failure(done: Any, cluster: SparkCluster) -> str:
    # Java stack frames drown the cause (Python tracebacks land on either stream): drop them.
    def lines(text: str) -> str:
        return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("at "))

    return f"{lines(done.stdout)[-4000:]}\n{lines(done.stderr)[-6000:]}\n{cluster.logs()}"


def _key_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["region"], r["name"], r["x"]) for r in rows)


def _spark_rows_on_cluster(
    cluster: SparkCluster, directory: Path, table: str, **submit: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    out = directory / f"read-{len(list(directory.glob('read-*.json')))}.json"
    done = cluster.submit(READ_APP, catalog_uri(directory), table, str(out), **submit)
    assert done.returncode == 0, _failure(done, cluster)
    data = json.loads(out.read_text())
    return data["rows"], data["executor_firn"]


def _submit_job(
    cluster: SparkCluster, directory: Path, operation: str, options: dict[str, Any], **submit: Any
) -> tuple[list[dict[str, Any]], str]:
    """Run the maintenance job on the cluster: its result entries and its application id."""
    result = directory / f"{operation}.json"
    args = [
        operation,
        "--catalog",
        catalog_uri(directory),
        "--table",
        "db.events",
        "--options",
        json.dumps(options),
        "--result",
        str(result),
    ]
    done = cluster.submit(firn.spark.job.path(), *args, **submit)
    assert done.returncode == 0, _failure(done, cluster)
    assert f"firn {operation}: 1 table(s), 1 done, 0 failed" in done.stdout
    entries: list[dict[str, Any]] = json.loads(result.read_text())
    return entries, cluster.application_id(done)


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


def _many_small_commits(catalog: SqlCatalog) -> Table:
    table = build_table(catalog, "v4")
    for i in range(6):
        table.append(events(4, start=200 + 10 * i))
    return table


def _archive_submit(tmp_path: Path, bare_python: str) -> dict[str, Any]:
    """spark-submit arguments shipping Firn to the executors in a packed virtualenv: a small
    virtualenv whose dependencies come from this machine (see ``bare_python``), Firn only from
    the archive."""
    env_dir = Path(bare_python).parent.parent
    archive = firn.spark.pack_venv(tmp_path / "firn-env.tar.gz", venv=env_dir)
    # Client mode: the data source's planning workers run on the driver with spark.pyspark.python
    # too, so ./env must also resolve where spark-submit runs (README "Spark").
    driver_dir = tmp_path / "driver"
    (driver_dir / "env").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(driver_dir / "env", filter="tar")
    return {
        "archives": f"{archive}#env",
        "driver_python": sys.executable,
        "conf": {"spark.pyspark.python": "./env/bin/python", "spark.pyspark.driver.python": sys.executable},
        "cwd": str(driver_dir),
    }


def test_flush_job_then_read_on_the_cluster(
    spark_cluster: SparkCluster, tmp_path: Path, catalog: SqlCatalog, bare_python: str
) -> None:
    table = _many_small_commits(catalog)
    before = table.scan().to_arrow()
    # The job: Firn only from --py-files (driver and executors run a Python without it).
    zip_path = str(firn.spark.package(tmp_path / "ship"))
    [entry], _ = _submit_job(
        spark_cluster, tmp_path, "flush", {"force": True}, py_files=zip_path, python=bare_python
    )
    table.refresh()
    assert entry["operation"] == "flush_root" and entry["table"] == "db.events"
    assert entry["snapshot_id"] == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert entry["data_files_moved"] > 0 and entry["leaves_written"] > 0
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.operation.value == "replace"
    after = table.scan().to_arrow()
    assert sorted(after.to_pylist(), key=lambda r: r["id"]) == sorted(
        before.to_pylist(), key=lambda r: r["id"]
    )
    # The flushed table read through Spark on the cluster's executors, which get Firn from a
    # packed virtualenv (--archives).
    rows, where = _spark_rows_on_cluster(
        spark_cluster, tmp_path, "db.events", **_archive_submit(tmp_path, bare_python)
    )
    assert _key_rows(rows) == _key_rows(after.to_pylist())
    assert where and all("/env/lib/" in w and "site-packages/firn/__init__.py" in w for w in where), where


CASES = [
    # (job operation, table.maintenance method, options in Iceberg's names)
    ("compact", "rewrite_data_files", {"min-input-files": 2}),
    # Every snapshot is minutes old, so the cut-off is "now" (set in the test), not 5 days ago.
    ("expire", "expire_snapshots", {"retain-last": 1}),
]


@pytest.mark.parametrize(("operation", "method", "options"), CASES, ids=[c[0] for c in CASES])
def test_maintenance_job_on_the_cluster(
    spark_cluster: SparkCluster,
    tmp_path: Path,
    catalog: SqlCatalog,
    bare_python: str,
    operation: str,
    method: str,
    options: dict[str, Any],
) -> None:
    table = _many_small_commits(catalog)
    if operation == "expire":
        options = {**options, "older-than": int(time.time() * 1000)}
    before = table.scan().to_arrow()
    files_before = len(table.scan().plan_files())
    snapshots_before = len(table.snapshots())
    zip_path = str(firn.spark.package(tmp_path / "ship"))
    apps_before = set(spark_cluster.work_dir.glob("app-*"))
    [entry], app_id = _submit_job(
        spark_cluster, tmp_path, operation, options, py_files=zip_path, python=bare_python
    )
    table.refresh()
    assert entry["table"] == "db.events" and entry["operation"] == method and "error" not in entry
    # This job's executors ran in the worker's own working directory: a directory for this
    # application (new since the submission, as no other job ran meanwhile) with their logs.
    assert spark_cluster.work_dir / app_id not in apps_before
    executor_logs = spark_cluster.executor_logs(app_id)
    assert executor_logs, f"no executor log of {app_id} under {spark_cluster.work_dir}"
    if operation == "compact":
        # The work units ran there: Spark tasks in this application's executors.
        assert any("Running task" in log.read_text(errors="replace") for log in executor_logs), [
            log.read_text(errors="replace")[-2000:] for log in executor_logs
        ]
    if operation == "compact":
        assert len(table.scan().plan_files()) < files_before
    else:
        assert len(table.snapshots()) < snapshots_before
    after = table.scan().to_arrow()
    assert sorted(after.to_pylist(), key=lambda r: r["id"]) == sorted(
        before.to_pylist(), key=lambda r: r["id"]
    )
