"""FirnTableHealthTrigger: arguments, serialize() round trip, and polling a real SQLite catalog."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn_airflow.triggers import FirnTableHealthTrigger
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    assert_round_trip,
    collect_while,
    commit,
    create_table,
    firn_connection,
    run_trigger,
    watch_polls,
)

pytestmark = pytest.mark.airflow


def test_serialize_round_trip() -> None:
    trigger = FirnTableHealthTrigger(
        table="db.events",
        conditions={"small_files": ">= 50", "delete_ratio": "> 0.1"},
        match="any",
        firn_conn_id="firn_prod",
        poll_interval=5,
    )
    assert assert_round_trip(trigger) == {
        "table": "db.events",
        "conditions": {"small_files": ">= 50", "delete_ratio": "> 0.1"},
        "match": "any",
        "firn_conn_id": "firn_prod",
        "poll_interval": 5.0,
    }


@pytest.mark.parametrize(
    ("kwargs", "wanted"),
    [
        ({"table": "events"}, "'<namespace>.<table>'"),
        ({"conditions": {"smallfiles": ">= 1"}}, "unknown health metric 'smallfiles'"),
        ({"conditions": {"small_files": "50"}}, "expected '<op> <number>'"),
        ({"match": "most"}, "'all' or 'any'"),
        ({"poll_interval": -1}, "poll_interval"),
    ],
)
def test_arguments_are_checked(kwargs: dict[str, object], wanted: str) -> None:
    arguments: dict[str, object] = {"table": "db.events", "conditions": {"small_files": ">= 1"}, **kwargs}
    with pytest.raises(ValidationError, match=wanted):
        FirnTableHealthTrigger(**arguments)  # type: ignore[arg-type]


def test_fires_once_another_writer_crosses_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    trigger = FirnTableHealthTrigger(
        table="db.events", conditions={"data_files": ">= 3"}, firn_conn_id=CONN_ID, poll_interval=0.05
    )

    def two_more_commits() -> None:
        commit(table)
        commit(table)

    polls = watch_polls(monkeypatch)
    before, events = asyncio.run(collect_while(trigger, 1, 60, two_more_commits, polls=polls))
    assert before == []  # 1 data file: polls, no event
    (event,) = events
    assert event["status"] == "success"
    assert event["table"] == "db.events"
    assert event["met"] == ["data_files >= 3"]
    assert event["health"]["data_files"] == 3
    assert event["health"]["snapshot_id"] == table.refresh().current_snapshot().snapshot_id


def test_match_any(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_table(firn_connection(tmp_path, monkeypatch), commits=2)
    trigger = FirnTableHealthTrigger(
        table="db.events",
        conditions={"data_files": ">= 100", "snapshots": ">= 2"},
        match="any",
        firn_conn_id=CONN_ID,
        poll_interval=0.05,
    )
    (event,) = run_trigger(trigger, 1, 30)
    assert event["status"] == "success"
    assert event["met"] == ["snapshots >= 2"]


def test_a_missing_table_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_table(firn_connection(tmp_path, monkeypatch))
    trigger = FirnTableHealthTrigger(
        table="db.nope", conditions={"data_files": ">= 1"}, firn_conn_id=CONN_ID, poll_interval=0.05
    )
    (event,) = run_trigger(trigger, 1, 30)
    assert event["status"] == "error"
    assert event["error"] == "NoSuchTable"
    assert "db.nope" in event["message"]
    assert CONN_ID in event["message"]


def test_a_missing_connection_is_one_clear_error() -> None:
    trigger = FirnTableHealthTrigger(
        table="db.events",
        conditions={"data_files": ">= 1"},
        firn_conn_id="firn_not_defined",
        poll_interval=0.05,
    )
    (event,) = run_trigger(trigger, 1, 30)
    assert event["status"] == "error"
    assert event["error"] == "FirnConnectionNotFound"
    assert "'firn_not_defined' is not defined" in event["message"]


def test_conditions_that_can_never_hold_end_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_table(firn_connection(tmp_path, monkeypatch), format_version=2)
    trigger = FirnTableHealthTrigger(
        table="db.events", conditions={"root_data_files": ">= 200"}, firn_conn_id=CONN_ID, poll_interval=0.05
    )
    (event,) = run_trigger(trigger, 1, 30)
    assert event["status"] == "error"
    assert event["error"] == "ValidationError"
    assert "format version 2" in event["message"]
    assert "root_data_files" in event["message"]
