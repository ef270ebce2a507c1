"""FirnTableHealthSensor: parse-time validation, the deferrable default, and real runs under
``dag.test()`` (where the trigger runs inline) against a SQLite Firn catalog."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn_airflow.sensors import FirnTableHealthSensor
from firn_airflow.triggers.conditions import HEALTH_METRICS
from firn_airflow.triggers.health import CLASSPATH
from tests.firn_airflow.triggers.support import (
    AfterDeferral,
    commit,
    create_table,
    firn_connection,
    head,
    trigger_classpaths,
    wait_for_running,
    watch_polls,
    xcom_return,
)
from tests.fixtures.airflow import load_test_dag

pytestmark = pytest.mark.airflow


def test_unknown_metric_fails_at_parse_time_listing_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as info:
        FirnTableHealthSensor(task_id="s", table="db.events", conditions={"root_files": ">= 200"})
    assert "unknown health metric 'root_files'" in str(info.value)
    assert ", ".join(HEALTH_METRICS) in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "wanted"),
    [
        ({"conditions": {"small_files": "at least 50"}}, "expected '<op> <number>'"),
        ({"conditions": {}}, "empty"),
        ({"match": "both"}, "'all' or 'any'"),
        ({"table": "events"}, "'<namespace>.<table>'"),
    ],
)
def test_bad_arguments_fail_at_parse_time(kwargs: dict[str, object], wanted: str) -> None:
    arguments: dict[str, object] = {
        "task_id": "s",
        "table": "db.events",
        "conditions": {"small_files": ">= 50"},
        **kwargs,
    }
    with pytest.raises(ValidationError, match=wanted):
        FirnTableHealthSensor(**arguments)  # type: ignore[arg-type]


def test_a_dag_with_a_bad_condition_is_an_import_error(tmp_path: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "bad_health_dag.py").write_text(
        "import pendulum\n"
        "from airflow.sdk import DAG\n"
        "from firn_airflow.sensors import FirnTableHealthSensor\n"
        "with DAG('bad_health', schedule=None, start_date=pendulum.datetime(2024, 1, 1)):\n"
        "    FirnTableHealthSensor(task_id='s', table='db.t', conditions={'small_files': '>> 5'})\n"
    )
    bag = DagBag(dag_folder=str(tmp_path))
    (error,) = bag.import_errors.values()
    assert "condition on 'small_files' is '>> 5'" in error
    assert not bag.dags


def test_templated_table_is_checked_when_rendered() -> None:
    sensor = FirnTableHealthSensor(task_id="s", table="{{ params.table }}", conditions={"data_files": ">= 1"})
    assert sensor.table == "{{ params.table }}"
    assert "table" in sensor.template_fields


def test_deferrable_defaults_to_the_operators_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    kwargs = {"table": "db.events", "conditions": {"small_files": ">= 50"}}
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    assert FirnTableHealthSensor(task_id="a", **kwargs).deferrable is True  # type: ignore[arg-type]
    assert FirnTableHealthSensor(task_id="b", deferrable=False, **kwargs).deferrable is False  # type: ignore[arg-type]
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "False")
    assert FirnTableHealthSensor(task_id="c", **kwargs).deferrable is False  # type: ignore[arg-type]


def test_defers_then_succeeds_when_another_writer_crosses_the_threshold(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)

    def three_commits() -> None:
        for i in range(3):
            commit(table, start=i * 10)

    writer = AfterDeferral(CLASSPATH, three_commits)
    writer.start()
    run = load_test_dag("firn_test_sensor_health").test()
    writer.join(timeout=60)
    assert writer.error is None
    assert writer.saw_trigger  # the task deferred before the threshold was crossed
    assert run.state == "success"
    health = xcom_return(run, "wait_for_files")
    assert health["table"] == "db.events"
    assert health["data_files"] == 4
    assert health["snapshot_id"] == head(table)


def test_no_deferral_when_the_condition_already_holds(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=5)
    since = dt.datetime.now(dt.UTC)
    run = load_test_dag("firn_test_sensor_health").test()
    assert run.state == "success"
    assert xcom_return(run, "wait_for_files")["data_files"] == 5
    assert xcom_return(run, "wait_for_files")["snapshot_id"] == head(table)
    assert CLASSPATH not in trigger_classpaths(since=since)


def test_poke_mode_waits_for_the_writer(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import threading

    from airflow.models import import_all_models

    import_all_models()  # here, not in the writer thread: concurrent model imports deadlock
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    since = dt.datetime.now(dt.UTC)
    started: list[bool] = []
    polls = watch_polls(monkeypatch)

    def commits_once_poking() -> None:
        started.append(wait_for_running("firn_test_sensor_health_poke", "wait_for_files"))
        polls.wait_for_count(2)  # two pokes read the one-file table
        for i in range(3):
            commit(table, start=i * 10)

    writer = threading.Thread(target=commits_once_poking, daemon=True)
    writer.start()
    run = load_test_dag("firn_test_sensor_health_poke").test()
    writer.join()
    out = capfd.readouterr().out
    assert started == [True]
    assert run.state == "success"
    health = xcom_return(run, "wait_for_files")
    assert health["data_files"] == 4 or health["snapshots"] == 4
    assert "data_files = 1 (wants >= 4: not yet)" in out  # it poked before the commits
    assert CLASSPATH not in trigger_classpaths(since=since)  # and never deferred


def test_a_missing_table_fails_the_task_with_one_clear_error(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    create_table(firn_connection(tmp_path, monkeypatch))
    run = load_test_dag("firn_test_sensor_health_poke").test(run_conf={"table": "db.nope"})
    out = capfd.readouterr().out
    assert run.state == "failed"
    assert "NoSuchTable" in out
    assert "db.nope" in out
