"""Dynamic task mapping and the ``firn_table_maintenance`` group: outlets declared while the DAG is
parsed, and events recorded on each table's own asset through the connection's asset alias."""

from __future__ import annotations

import itertools
from pathlib import Path

import pendulum
import pytest
from airflow.sdk import Asset, AssetAlias

from firn_airflow.assets import maintenance_asset
from firn_airflow.operators import maintenance_alias
from tests.firn_airflow.operators.helpers import (
    events_of,
    maintenance_table,
    set_firn_connection,
    task_states,
    xcom,
)
from tests.fixtures.airflow import load_test_dag
from tests.fixtures.spark_tables import spark_catalog

pytestmark = pytest.mark.airflow

CONN_ID = "firn_op_mapped"
NIGHTLY = [
    "rewrite_deletion_vectors",
    "rewrite_data_files",
    "flush_root",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
]


def test_outlets_are_declared_when_the_dag_is_parsed(airflow_home: Path) -> None:
    dag = load_test_dag("firn_test_op_mapped")
    alias = maintenance_alias(CONN_ID)
    assert alias == AssetAlias(name="firn-maintenance:firn_op_mapped", group="firn")
    # Mapped over tables known only at run time: the alias.
    assert dag.task_dict["compact"].outlets == [alias]
    for op in NIGHTLY:
        task = dag.task_dict[f"nightly.{op}"]
        assert task.outlets == [alias]
        assert task.partial_kwargs["options"] == ({"delete": False} if op == "remove_orphan_files" else None)
    # A table named in the DAG file: its own asset.
    solo = dag.task_dict["maintain_ops_solo.expire_snapshots"]
    assert solo.outlets == [maintenance_asset(CONN_ID, "ops.solo")]
    assert isinstance(solo.outlets[0], Asset)
    # The chain, in nightly order; each step runs whatever became of the one before.
    for before, after in itertools.pairwise(NIGHTLY):
        assert dag.task_dict[f"nightly.{before}"].downstream_task_ids == {f"nightly.{after}"}
        assert dag.task_dict[f"nightly.{after}"].trigger_rule == "all_done"
    assert dag.task_dict["nightly.rewrite_deletion_vectors"].upstream_task_ids == {"compact", "list_tables"}
    assert sorted(t for t in dag.task_dict if t.startswith("maintain_ops_solo.")) == [
        "maintain_ops_solo.expire_snapshots",
        "maintain_ops_solo.flush_root",
    ]


def test_mapped_runs_record_events_on_each_tables_asset(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = spark_catalog(tmp_path)
    catalog.create_namespace("ops")
    for name in ("a", "b"):
        table = maintenance_table(catalog, name)
        # So that recommend() asks for a flush and an expiry after the compaction.
        table.set_properties({"commit.root.max-data-files": "1", "maintenance.expire.max-snapshots": "2"})
    maintenance_table(catalog, "solo_src")
    catalog.rename_table("db.solo_src", "ops.solo")
    set_firn_connection(monkeypatch, CONN_ID, tmp_path)

    run = load_test_dag("firn_test_op_mapped").test(
        run_conf={"expire_before": pendulum.now("UTC").add(minutes=1).isoformat()}
    )
    states = task_states(run)
    assert states["list_tables"] == "success"
    assert {states["compact[0]"], states["compact[1]"]} == {"success"}
    for i, name in enumerate(["db.a", "db.b"]):
        assert xcom(run, "compact", i)["table"] == name
        assert states[f"nightly.flush_root[{i}]"] == "success"
        assert states[f"nightly.expire_snapshots[{i}]"] == "success"
        # Young tables with few deletes: nothing else is recommended.
        for op in ("rewrite_deletion_vectors", "remove_orphan_files"):
            assert states[f"nightly.{op}[{i}]"] == "skipped", (op, states)
        events = events_of(CONN_ID, name, run)
        tasks = [e["task_id"] for e in events]
        assert (
            tasks[0] == "compact"
            and "nightly.flush_root" in tasks
            and tasks[-1] == "nightly.expire_snapshots"
        )
        assert events[0]["result"] == xcom(run, "compact", i)
        assert events[-1]["health"]["snapshots"] == 2 == len(catalog.load_table(name).snapshots())
    assert states["maintain_ops_solo.flush_root"] == "success"
    assert states["maintain_ops_solo.expire_snapshots"] == "success"
    assert [e["operation"] for e in events_of(CONN_ID, "ops.solo", run)] == ["flush_root", "expire_snapshots"]
    assert len(catalog.load_table("ops.solo").snapshots()) == 1
