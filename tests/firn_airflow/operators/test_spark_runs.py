"""The operators with ``execution="spark"``: real spark-submit (master ``local[2]``) through the Spark
provider's SparkSubmitHook, inside real ``dag.test()`` runs; the same results as the local
runner; a killed job leaves no process behind; a lease held in the job is handled like one
found before submitting. Spark-submit runs are few (one per operation family): each costs
10-20 s here.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pendulum
import psutil
import pytest
from airflow.sdk.exceptions import AirflowSkipException

from firn.errors import LeaseHeld
from firn_airflow.errors import SparkJobFailed
from firn_airflow.hooks.firn import FirnHook
from firn_airflow.hooks.spark_job import SparkMaintenanceJob, SparkSettings
from firn_airflow.operators import FirnExpireSnapshotsOperator, FirnRewriteDataFilesOperator
from tests.firn_airflow.operators.helpers import (
    add_orphans,
    catalog_with_table,
    set_firn_connection,
    set_spark_connection,
    task_states,
    xcom,
)
from tests.fixtures.airflow import load_test_dag

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.xdist_group("spark")]

OPERATIONS = ["rewrite_dvs", "compact", "flush", "rewrite_manifests", "expire", "orphans"]
# What differs between two identical runs: timings, random snapshot ids, and the sizes of
# metadata files that embed those ids (compressed leaf and root manifests).
VOLATILE = {"duration_ms", "snapshot_id", "snapshot_ids", "metadata_location", "bytes_written"}
METADATA_KINDS = {"root_manifests", "leaf_manifests", "manifest_lists", "manifests", "metadata_files"}


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _unordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unordered(v) for k, v in value.items()}
    if isinstance(value, list):  # listed in path order, and the paths hold random UUIDs
        return sorted((_unordered(v) for v in value), key=json.dumps)
    return value


def comparable(entry: dict[str, Any], root: Path) -> dict[str, Any]:
    """``entry`` without what differs between two runs of one operation on twin tables: the
    catalog directory, the random UUIDs in file names, timings and snapshot ids."""
    text = UUID.sub("<uuid>", json.dumps(entry).replace(str(root), "<root>"))
    out = {k: v for k, v in json.loads(text).items() if k not in VOLATILE}
    if "expired_snapshot_ids" in out:
        out["expired_snapshot_ids"] = len(out["expired_snapshot_ids"])
    if isinstance(out.get("deleted_bytes"), dict):
        out["deleted_bytes"] = {k: v for k, v in out["deleted_bytes"].items() if k not in METADATA_KINDS}
    return dict(_unordered(out))


@pytest.mark.timeout(1200)  # measured 213 s on a loaded 2-core machine: every operation on Spark
def test_spark_runner_matches_the_local_runner(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    tables = {}
    for runner in ("local", "spark"):
        catalog = catalog_with_table(tmp_path / runner)
        tables[runner] = catalog.load_table("db.events")
        add_orphans(tables[runner], "orphan-1.parquet")
        set_firn_connection(monkeypatch, f"firn_op_{runner}", tmp_path / runner)
    set_spark_connection(monkeypatch)

    dag = load_test_dag("firn_test_op_chain")
    # A cut-off far ahead: every snapshot but the current one expires in both chains, however
    # long the Spark chain takes to get there.
    run = dag.test(run_conf={"expire_before": pendulum.now("UTC").add(days=1).isoformat()})
    log = capfd.readouterr().out
    states = task_states(run)
    assert all(s == "success" for s in states.values()), states

    # The spark chain really ran on Spark: six submits (compaction chose Spark: auto, size > 0),
    # each job printing its one summary line through the hook's log.
    assert log.count("Spark-Submit cmd:") == len(OPERATIONS), log[-3000:]
    for short in ("rewrite-dvs", "compact", "flush", "rewrite-manifests", "expire", "orphans"):
        assert f"firn {short}: 1 table(s), 1 done, 0 failed" in log

    for op in OPERATIONS:
        local = comparable(xcom(run, f"local_{op}"), tmp_path / "local")
        spark = comparable(xcom(run, f"spark_{op}"), tmp_path / "spark")
        assert spark == local, op
    assert xcom(run, "spark_compact")["rewritten_data_files_count"] > 0
    assert xcom(run, "spark_orphans")["orphan_file_locations"] == [
        str(tmp_path / "spark" / "warehouse" / "db" / "events" / "data" / "orphan-1.parquet")
    ]

    local_table, spark_table = (t.refresh() for t in tables.values())
    assert local_table.scan().to_arrow().sort_by("id").equals(spark_table.scan().to_arrow().sort_by("id"))
    keep = ("snapshots", "records", "data_files", "data_bytes", "delete_files", "manifests", "root_entries")
    local_health, spark_health = local_table.health().to_dict(), spark_table.health().to_dict()
    assert {k: spark_health[k] for k in keep} == {k: local_health[k] for k in keep}


def _spark_job(conn_id: str) -> SparkMaintenanceJob:
    return SparkMaintenanceJob(
        SparkSettings(conf={"spark.ui.enabled": "false"}), FirnHook(conn_id).get_config()
    )


def test_a_killed_job_leaves_no_process(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_op_kill", tmp_path)
    set_spark_connection(monkeypatch)
    operator = FirnRewriteDataFilesOperator(
        task_id="compact", table="db.events", firn_conn_id="firn_op_kill", options={"min-input-files": 2}
    )
    context = {"ti": SimpleNamespace(dag_id="d", task_id="compact", run_id="r", map_index=-1)}
    outcome: dict[str, BaseException] = {}

    def execute() -> None:
        try:
            operator.execute(context)  # type: ignore[arg-type]
        except BaseException as e:
            outcome["error"] = e

    worker = threading.Thread(target=execute)
    worker.start()
    # Wait until spark-submit has started the PySpark driver (a child of its JVM).
    deadline = time.monotonic() + 120
    processes: list[psutil.Process] = []
    while time.monotonic() < deadline:
        job = operator._hook._spark_job if operator._hook is not None else None
        submit = getattr(job._hook, "_submit_sp", None) if job is not None else None
        if submit is not None and submit.poll() is None:
            parent = psutil.Process(submit.pid)
            children = parent.children(recursive=True)
            if any("python" in " ".join(c.cmdline()).lower() for c in children if c.is_running()):
                processes = [parent, *children]
                break
        time.sleep(0.2)
    assert processes, "spark-submit did not start its Python driver in time"

    operator.on_kill()
    worker.join(timeout=60)
    assert not worker.is_alive()
    _, alive = psutil.wait_procs(processes, timeout=30)
    assert not alive, f"still running after on_kill: {[p.pid for p in alive]}"
    error = outcome.get("error")
    assert isinstance(error, SparkJobFailed) and "the Spark job was killed" in str(error)
    assert error.__cause__ is None


def test_a_lease_the_job_finds_held_is_handled_like_one_found_before(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_op_job_lease", tmp_path)
    set_spark_connection(monkeypatch)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another maintenance run, in another thread (the lease is per thread)
        with catalog.maintenance_lease("db.events", "rewrite_data_files", owner="another-run"):
            held.set()
            release.wait(120)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        job = _spark_job("firn_op_job_lease")
        options = {"older-than": int(time.time() * 1000), "retain-last": 1}
        raised: list[LeaseHeld] = []

        def submit() -> dict[str, Any]:
            try:
                return job.run("expire_snapshots", "db.events", options)
            except LeaseHeld as e:
                raised.append(e)
                raise

        # The operator checks the lease before submitting; here the job meets it, as when
        # another run takes the lease in between, and the same policy applies.
        operator = FirnExpireSnapshotsOperator(task_id="expire", table="db.events", on_lease_held="skip")
        with pytest.raises(AirflowSkipException, match="held by another-run"):
            operator._with_lease_policy(submit, catalog, "db.events", 0)
        [error] = raised
        assert "cannot run expire_snapshots on db.events" in str(error) and error.__cause__ is None
    finally:
        release.set()
        holder.join()
