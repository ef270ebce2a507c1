"""``make demo``, the main job, end to end in a subprocess (its own warehouse and Airflow home):
ingest DAG runs on Spark, the compaction DAG run the ingest's asset event queued, the
commit-triggered downstream DAG (its aggregate equal to a recomputation), health, the root
flush DAG firing on Spark, the nightly maintenance DAG, the before/after table -- and, in the
demo's Airflow database, the trigger relation and no backdated run."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import firn
from tests.fixtures.spark import spark_env

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.airflow, pytest.mark.xdist_group("spark")]


@pytest.mark.timeout(2400)  # measured ~11 min on a loaded 2-core machine
def test_demo_runs_ingest_and_maintenance_dags(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}  # not the tests' Airflow
    env.update({k: v for k, v in spark_env().items() if k.startswith(("PYSPARK_", "SPARK_LOCAL_IP"))})
    warehouse, home = tmp_path / "warehouse", tmp_path / "airflow"
    args = ["--runs", "2", "--warehouse", str(warehouse), "--airflow-home", str(home)]
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-4000:]
    assert out.count("ingest success") == 2
    started = re.search(r"^Demo started at (\S+) ", out, re.M)
    assert started, out[:2000]
    demo_start = datetime.fromisoformat(started.group(1))
    # After each ingest, the scheduler's asset logic created a compaction run from the ingest's
    # event; each ran (the last one after the root flush) and compacted.
    queued = re.findall(
        r"^  firn_compact_after_ingest (\S+) queued by the asset event of firn_ingest_events ", out, re.M
    )
    compactions = re.findall(r"^  firn_compact_after_ingest (\S+): compact (\w+)", out, re.M)
    assert len(queued) == 2 and sorted(queued) == sorted(r for r, _ in compactions), out[-4000:]
    assert all(s == "success" for _, s in compactions), out[-4000:]  # 8 small files after each ingest
    assert re.search(r"firn_root_flush_on_growth\n\s+root_grew\s+success\n\s+flush_root\s+success", out), out
    # The downstream DAG ran after the first and the last ingest; each time its aggregate
    # equalled the recomputation from the source (the demo fails otherwise).
    assert out.count("firn_downstream_on_commit: wake success, aggregate success") == 2, out[-4000:]
    assert out.count("Downstream equals the full recomputation: yes") == 2
    assert "-> rewrite_data_files:" in out and "-> flush_root:" in out
    # The nightly run after them: the triggered compaction has left nothing to compact; the
    # history is longer than the table's maintenance.expire.max-snapshots.
    assert re.search(r"maintain\.expire_snapshots\[0\]\s+success", out), out
    assert re.search(r"maintain\.rewrite_data_files\[0\]\s+skipped", out), out
    # The demo's deletes are DVs in a V4 table: nothing for the DV rewrite to merge or convert,
    # and compaction lowers the delete ratio, so recommend() does not name it (issue 20: it
    # used to run every night and do nothing).
    assert re.search(r"maintain\.rewrite_deletion_vectors\[0\]\s+skipped", out), out
    metric = r"^  (snapshots|data files|deletion vectors|rows)\s+([\d,]+)\s+([\d,]+)$"
    before_after = {
        m.group(1): (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")))
        for m in re.finditer(metric, out, re.M)
    }
    assert set(before_after) == {"snapshots", "data files", "deletion vectors", "rows"}, out[-3000:]
    assert before_after["data files"][1] < before_after["data files"][0]
    assert before_after["deletion vectors"] == (before_after["deletion vectors"][0], 0)
    assert before_after["snapshots"][1] <= 5 < before_after["snapshots"][0]
    rows = before_after["rows"][0]
    assert before_after["rows"] == (rows, rows) and "Rows identical before and after" in out
    # The warehouse it names holds the table with exactly those rows; the DAG runs are in its
    # own Airflow database.
    catalog = firn.load_catalog(f"sqlite:///{warehouse / 'catalog.db'}", warehouse=str(warehouse))
    assert catalog.load_table("demo.events").scan().count() == rows
    by_kind = catalog.load_table("demo.events_by_kind").scan().to_arrow()
    assert sum(by_kind["events"].to_pylist()) == rows  # maintenance changed no row
    catalog.close()
    assert (home / "airflow.db").exists()
    _assert_airflow_history(home / "airflow.db", demo_start, [run_id for run_id, _ in compactions])


def _assert_airflow_history(db: Path, demo_start: datetime, compaction_run_ids: list[str]) -> None:
    """The demo's Airflow database: the four DAGs ran with these task states, each compaction
    run was created by the asset logic from the ingest's own event, and nothing is backdated."""
    con = sqlite3.connect(db)
    try:
        runs = con.execute(
            "SELECT id, dag_id, run_id, run_type, state, start_date, logical_date FROM dag_run"
        ).fetchall()
        tis = con.execute("SELECT dag_id, run_id, task_id, state FROM task_instance").fetchall()
        consumed = con.execute(
            "SELECT dr.run_id, e.source_dag_id, e.source_run_id, a.uri FROM dagrun_asset_event x"
            " JOIN dag_run dr ON dr.id = x.dag_run_id JOIN asset_event e ON e.id = x.event_id"
            " JOIN asset a ON a.id = e.asset_id WHERE dr.dag_id = 'firn_compact_after_ingest'"
        ).fetchall()
    finally:
        con.close()
    by_dag: dict[str, list[tuple[str, str, str]]] = {}
    for _, dag_id, run_id, run_type, state, _, _ in runs:
        by_dag.setdefault(dag_id, []).append((run_id, run_type, state))
    assert {d: len(r) for d, r in by_dag.items()} == {
        "firn_ingest_events": 2,
        "firn_compact_after_ingest": 2,
        "firn_downstream_on_commit": 2,
        "firn_root_flush_on_growth": 1,
        "firn_nightly_maintenance": 1,
    }
    assert all(state == "success" for r in by_dag.values() for _, _, state in r), runs
    assert {run_type for _, run_type, _ in by_dag["firn_compact_after_ingest"]} == {"asset_triggered"}
    assert sorted(r for r, _, _ in by_dag["firn_compact_after_ingest"]) == sorted(compaction_run_ids)
    states = {(d, t): s for d, _, t, s in tis}
    assert states[("firn_ingest_events", "ingest")] == "success"
    assert states[("firn_root_flush_on_growth", "root_grew")] == "success"
    assert states[("firn_root_flush_on_growth", "flush_root")] == "success"
    assert states[("firn_downstream_on_commit", "aggregate")] == "success"
    assert states[("firn_compact_after_ingest", "compact")] in ("success", "skipped")
    # Each compaction run consumed exactly one event: the table asset's event of one ingest run,
    # a different one each time.
    ingest_runs = {r for r, _, _ in by_dag["firn_ingest_events"]}
    assert sorted(r for r, _, _, _ in consumed) == sorted(compaction_run_ids), consumed
    assert all(dag == "firn_ingest_events" and run in ingest_runs for _, dag, run, _ in consumed), consumed
    assert len({run for _, _, run, _ in consumed}) == 2
    assert all(
        uri.startswith("firn://firn_default/demo/events") and "maintenance" not in uri for *_, uri in consumed
    )
    # No backdated run: every run started, and every logical date lies, after the demo started.
    for _, dag_id, run_id, _, _, start_date, logical_date in runs:
        for value in (start_date, logical_date):
            if value is not None:
                when = (
                    datetime.fromisoformat(value).replace(tzinfo=UTC)
                    if "+" not in value
                    else datetime.fromisoformat(value)
                )
                assert when >= demo_start, (dag_id, run_id, value, demo_start)
