"""The operators with ``execution="worker"`` through real ``dag.test()`` runs on real SQLite catalogs:
results to XCom and to the table asset's events, templates, dry runs, skips.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pendulum
import pytest

from firn.catalog.sql import SqlCatalog
from tests.firn_airflow.operators.helpers import (
    add_orphans,
    catalog_with_table,
    events_of,
    maintenance_table,
    set_firn_connection,
    task_states,
    xcom,
)
from tests.fixtures.airflow import load_test_dag
from tests.fixtures.spark_tables import build_table, spark_catalog
from tests.fixtures.tables import events, make_events_table

pytestmark = pytest.mark.airflow

LOCAL_CHAIN = [
    "local_rewrite_dvs",
    "local_compact",
    "local_flush",
    "local_rewrite_manifests",
    "local_expire",
    "local_orphans",
]


def test_each_operator_runs_locally_and_reports_to_xcom_and_the_asset(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = catalog_with_table(tmp_path)
    table = catalog.load_table("db.events")
    orphans = add_orphans(table, "orphan-1.parquet", "orphan-2.parquet")
    rows_before = sorted(r["id"] for r in table.scan().to_arrow().to_pylist())
    set_firn_connection(monkeypatch, "firn_op_local", tmp_path)
    expire_before = pendulum.now("UTC").add(minutes=1)
    logical = pendulum.datetime(2024, 3, 10, tz="UTC")

    dag = load_test_dag("firn_test_op_chain")
    run = dag.test(
        logical_date=logical,
        run_conf={"expire_before": expire_before.isoformat()},
        mark_success_pattern=r"spark_.*",
    )
    states = task_states(run)
    assert {t: states[t] for t in LOCAL_CHAIN} == dict.fromkeys(LOCAL_CHAIN, "success"), states
    assert run.state == "success"

    results = {t: xcom(run, t) for t in LOCAL_CHAIN}
    assert [r["operation"] for r in results.values()] == [
        "rewrite_deletion_vectors",
        "rewrite_data_files",
        "flush_root",
        "rewrite_manifests",
        "expire_snapshots",
        "remove_orphan_files",
    ]
    assert results["local_rewrite_dvs"]["packed_dvs"] > 0
    compact = results["local_compact"]
    assert compact["rewritten_data_files_count"] > compact["added_data_files_count"] > 0
    assert results["local_flush"]["leaves_written"] > 0
    assert results["local_rewrite_manifests"]["rewritten_manifests_count"] > 1
    expire = results["local_expire"]
    assert expire["expired_snapshot_ids"] and sum(expire["deleted_files"].values()) > 0
    orphan = results["local_orphans"]
    assert orphan["dry_run"] is True and sorted(orphan["orphan_file_locations"]) == orphans
    assert all(Path(p).exists() for p in orphans)  # a listing, not a deletion

    table.refresh()
    assert len(table.snapshots()) == 1  # retain_last=1, older_than rendered from the run's conf
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == rows_before
    health = table.health().to_dict()

    # One asset event per task, as the table-health view reads them; none of the dry run.
    events = events_of("firn_op_local", "db.events", run)
    assert [e["task_id"] for e in events] == LOCAL_CHAIN
    for event, task in zip(events, LOCAL_CHAIN, strict=True):
        assert event["operation"] == results[task]["operation"]
        assert event["result"] == results[task]
        assert event["health"]["table"] == "db.events"
    last = events[-1]["health"]
    assert {k: last[k] for k in ("snapshot_id", "data_files", "records")} == {
        k: health[k] for k in ("snapshot_id", "data_files", "records")
    }

    # The templated dry run: older_than = data_interval_end - 5 days, as epoch milliseconds.
    plan = xcom(run, "template_expire_plan")
    assert plan["dry_run"] is True and plan["operation"] == "expire_snapshots"
    expected = run.data_interval_end - dt.timedelta(days=5)
    assert plan["older_than_ms"] == int(expected.timestamp() * 1000), plan


def test_recommend_driven_runs_and_clean_skips(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    catalog = spark_catalog(tmp_path)
    busy = maintenance_table(catalog, "busy")
    busy.set_properties({"maintenance.compact.min-small-files": "5"})
    busy2 = maintenance_table(catalog, "busy2")
    busy2.set_properties(
        {
            "maintenance.compact.min-small-files": "5",
            "commit.root.max-data-files": "1",
            "maintenance.expire.max-snapshots": "3",
        }
    )
    quiet = make_events_table(catalog, 4, name="quiet")
    quiet.append(events(3))
    build_table(catalog, "v3-dvs", name="legacy")
    busy2.refresh()
    recommended = [r.operation for r in busy2.maintenance.recommend()]
    assert recommended == ["rewrite_data_files", "flush_root", "expire_snapshots"]
    set_firn_connection(monkeypatch, "firn_op_recommend", tmp_path)

    run = load_test_dag("firn_test_op_recommend").test()
    log = capfd.readouterr().out
    assert task_states(run) == {
        "compact_busy": "success",
        "compact_quiet": "skipped",
        "flush_legacy": "skipped",
        "maintain_busy2": "success",
        "maintain_quiet": "skipped",
    }
    assert xcom(run, "compact_busy")["rewritten_data_files_count"] > 0
    assert "rewrite_data_files on db.quiet is not recommended now (recommend() lists nothing)" in log
    assert "db.legacy is format version 3: only V4 tables have a root manifest to flush" in log
    assert "no maintenance of db.quiet is due: recommend() lists nothing" in log

    done = xcom(run, "maintain_busy2")
    assert done["table"] == "db.busy2" and done["operations"] == recommended
    assert [r["operation"] for r in done["recommendations"]] == recommended
    compact, flush, expire = done["results"]
    assert compact["rewritten_data_files_count"] > 0 and flush["data_files_moved"] > 0
    assert len(expire["expired_snapshot_ids"]) > 0
    assert len(busy2.refresh().snapshots()) == 3  # the recommended retain-last
    [event] = events_of("firn_op_recommend", "db.busy2", run)
    assert event["operation"] == "rewrite_data_files,flush_root,expire_snapshots"
    assert event["result"]["results"] == done["results"]
    assert event["result"]["files_rewritten"] == compact["rewritten_data_files_count"]
    assert event["result"]["files_deleted"] == sum(expire["deleted_files"].values())
    assert events_of("firn_op_recommend", "db.quiet", run) == []  # skipped tasks record nothing


def _hold_lease(catalog: SqlCatalog, table: str, release: threading.Event, held: threading.Event) -> None:
    # Another maintenance run, in another thread: within one thread the lease is re-entrant.
    with catalog.maintenance_lease(table, "rewrite_data_files", owner="another-run"):
        held.set()
        release.wait(120)


def _wait_until_running(run_id_prefix: str, task_id: str, timeout: float = 120) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with create_session() as session:
            states = session.scalars(
                select(TaskInstance.state).where(
                    TaskInstance.dag_id == "firn_test_op_lease",
                    TaskInstance.task_id == task_id,
                    TaskInstance.run_id.startswith(run_id_prefix),
                )
            ).all()
        if any(str(getattr(s, "value", s)) == "running" for s in states):
            return
        time.sleep(0.1)
    raise AssertionError(f"{task_id} did not start")


def test_a_held_lease_skips_fails_or_waits(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    catalog = catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_op_lease", tmp_path)
    dag = load_test_dag("firn_test_op_lease")
    snapshots = len(catalog.load_table("db.events").snapshots())

    release, held = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lease, args=(catalog, "db.events", release, held))
    holder.start()
    try:
        assert held.wait(30)
        run = dag.test(mark_success_pattern="wait")
    finally:
        release.set()
        holder.join()
    log = capfd.readouterr().out
    assert task_states(run) == {"skip": "skipped", "fail": "failed", "wait": "success"}
    refused = "cannot run flush_root on db.events: its maintenance lease is held by another-run"
    assert f"{refused}" in log and "skipped (on_lease_held='skip')" in log
    assert len(catalog.load_table("db.events").snapshots()) == snapshots  # nothing ran

    # "wait": the lease is released while the task polls for it; then the flush runs.
    release, held = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lease, args=(catalog, "db.events", release, held))
    holder.start()

    def release_once_waiting() -> None:
        _wait_until_running("manual__", "wait")
        time.sleep(1.5)
        release.set()

    releaser = threading.Thread(target=release_once_waiting)
    try:
        assert held.wait(30)
        releaser.start()
        run = dag.test(mark_success_pattern="skip|fail")
    finally:
        release.set()
        holder.join()
        releaser.join()
    log = capfd.readouterr().out
    assert task_states(run)["wait"] == "success"
    assert f"{refused}" in log and "waiting for it (on_lease_held='wait', at most 60 s)" in log
    assert "The maintenance lease on db.events is free" in log
    assert xcom(run, "wait")["operation"] == "flush_root"
    assert len(catalog.load_table("db.events").snapshots()) == snapshots + 1


def test_a_lease_the_operation_meets_is_handled_like_one_found_before(
    airflow_home: Path, tmp_path: Path
) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from firn.errors import LeaseHeld
    from firn_airflow.operators import FirnFlushRootManifestOperator
    from firn_airflow.operators.execution import run_in_worker

    catalog = catalog_with_table(tmp_path)
    table = catalog.load_table("db.events")
    release, held = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lease, args=(catalog, "db.events", release, held))
    holder.start()
    try:
        assert held.wait(30)

        def flush() -> dict[str, object]:  # as if another run took the lease after the check
            return run_in_worker(table.refresh(), "flush_root", {"force": True})

        def operator(policy: str) -> FirnFlushRootManifestOperator:
            return FirnFlushRootManifestOperator(
                task_id=policy, table="db.events", on_lease_held=policy, lease_poll_interval=0.1
            )

        with pytest.raises(AirflowSkipException, match="held by another-run"):
            operator("skip")._with_lease_policy(flush, catalog, "db.events", time.monotonic() + 60)
        with pytest.raises(LeaseHeld, match="held by another-run"):
            operator("fail")._with_lease_policy(flush, catalog, "db.events", time.monotonic() + 60)
        with pytest.raises(LeaseHeld, match=r"still held after waiting"):
            operator("wait")._with_lease_policy(flush, catalog, "db.events", time.monotonic() + 0.5)
        threading.Timer(1.0, release.set).start()
        result = operator("wait")._with_lease_policy(flush, catalog, "db.events", time.monotonic() + 60)
        assert result["operation"] == "flush_root" and result["snapshot_id"] is not None
    finally:
        release.set()
        holder.join()
