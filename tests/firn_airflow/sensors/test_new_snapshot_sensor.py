"""FirnNewSnapshotSensor: parse-time validation, direct pokes, and a real run under
``dag.test()`` (the trigger runs inline) against a SQLite Firn catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from firn.errors import NotFound, ValidationError
from firn_airflow.sensors import FirnNewSnapshotSensor
from firn_airflow.triggers.new_snapshot import CLASSPATH
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    AfterDeferral,
    commit,
    create_table,
    firn_connection,
    head,
    watch_polls,
    xcom_return,
)
from tests.fixtures.airflow import load_test_dag

pytestmark = pytest.mark.airflow


@pytest.mark.parametrize(
    ("kwargs", "wanted"),
    [
        ({"after_snapshot_id": 1, "after_timestamp": "2024-01-01T00:00:00Z"}, "not both"),
        ({"operation": "upsert"}, "unknown snapshot operation 'upsert'"),
        ({"after_snapshot_id": "first"}, "after_snapshot_id"),
        ({"after_timestamp": "last tuesday"}, "after_timestamp"),
        ({"branch": ""}, "branch"),
        ({"table": "events"}, "'<namespace>.<table>'"),
        ({"mode": "reschedule", "deferrable": False}, "mode='reschedule'"),
    ],
)
def test_bad_arguments_fail_at_parse_time(kwargs: dict[str, object], wanted: str) -> None:
    with pytest.raises(ValidationError, match=wanted):
        FirnNewSnapshotSensor(**{"task_id": "s", "table": "db.events", **kwargs})  # type: ignore[arg-type]


def test_templates_are_checked_when_rendered() -> None:
    sensor = FirnNewSnapshotSensor(
        task_id="s",
        table="{{ params.table }}",
        after_snapshot_id="{{ ti.xcom_pull(task_ids='x') }}",
        mode="reschedule",
        deferrable=False,
    )
    assert {"table", "after_snapshot_id", "after_timestamp", "branch"} <= set(sensor.template_fields)


def test_poke_finds_the_newest_matching_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    first = head(table)
    commit(table, start=10)
    commit(table, start=20)
    sensor = FirnNewSnapshotSensor(
        task_id="s", table="db.events", after_snapshot_id=first, firn_conn_id=CONN_ID, deferrable=False
    )
    found = sensor.execute({})  # type: ignore[arg-type]
    assert found["snapshot_id"] == head(table)
    assert found["new_snapshots"] == 2
    assert found["operation"] == "append"


def test_an_unknown_watermark_snapshot_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_table(firn_connection(tmp_path, monkeypatch))
    sensor = FirnNewSnapshotSensor(
        task_id="s", table="db.events", after_snapshot_id=12345, firn_conn_id=CONN_ID, deferrable=False
    )
    with pytest.raises(NotFound, match=r"after_snapshot_id 12345 is not a snapshot of table 'db.events'"):
        sensor.execute({})  # type: ignore[arg-type]


def test_defers_then_reports_the_delete(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    appended: list[int] = []
    polls = watch_polls(monkeypatch)  # dag.test() runs the deferred trigger in this process

    def append_then_delete() -> None:
        appended.append(commit(table, start=100))  # not a delete: the sensor keeps waiting
        polls.wait_for_head(appended[0])  # the trigger saw the append alone
        table.delete("id >= 100")

    writer = AfterDeferral(CLASSPATH, append_then_delete)
    writer.start()
    run = load_test_dag("firn_test_sensor_new_snapshot").test()
    writer.join(timeout=60)
    assert writer.error is None
    assert writer.saw_trigger
    assert run.state == "success"
    delete = head(table)

    waited = xcom_return(run, "wait_for_delete")
    assert waited["snapshot_id"] == delete
    assert waited["parent_snapshot_id"] == appended[0]
    assert waited["operation"] == "delete"
    assert waited["new_snapshots"] == 1
    assert waited["summary"]["operation"] == "delete"
    assert waited["summary"]["deleted-data-files"] == "1"
    # Templated watermarks: the delete's parent (from XCom), and the run's start time.
    after_parent = xcom_return(run, "after_its_parent")
    assert (after_parent["snapshot_id"], after_parent["new_snapshots"]) == (delete, 1)
    after_start = xcom_return(run, "after_run_start")
    assert (after_start["snapshot_id"], after_start["new_snapshots"]) == (delete, 1)
