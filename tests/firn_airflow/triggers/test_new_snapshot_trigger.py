"""FirnNewSnapshotTrigger: arguments, serialize() round trip, and waiting on a real SQLite catalog."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn_airflow.triggers import FirnNewSnapshotTrigger
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    assert_round_trip,
    collect_while,
    commit,
    create_table,
    firn_connection,
    head,
    run_trigger,
    watch_polls,
)

pytestmark = pytest.mark.airflow


def test_serialize_round_trip() -> None:
    trigger = FirnNewSnapshotTrigger(
        table="db.events",
        firn_conn_id="firn_prod",
        branch="audit",
        after_snapshot_id=123,
        operation=["delete", "overwrite"],
        poll_interval=7,
    )
    assert assert_round_trip(trigger) == {
        "table": "db.events",
        "firn_conn_id": "firn_prod",
        "branch": "audit",
        "after_snapshot_id": 123,
        "after_timestamp_ms": None,
        "operation": ["delete", "overwrite"],
        "poll_interval": 7.0,
    }
    by_time = FirnNewSnapshotTrigger(table="db.events", after_timestamp_ms=1714521600000)
    assert assert_round_trip(by_time)["after_timestamp_ms"] == 1714521600000


@pytest.mark.parametrize(
    ("kwargs", "wanted"),
    [
        ({"after_snapshot_id": 1, "after_timestamp_ms": 2}, "not both"),
        ({"operation": "merge"}, "unknown snapshot operation 'merge'"),
        ({"branch": ""}, "branch"),
        ({"after_snapshot_id": "x"}, "after_snapshot_id"),
        ({"table": "events"}, "'<namespace>.<table>'"),
    ],
)
def test_arguments_are_checked(kwargs: dict[str, object], wanted: str) -> None:
    with pytest.raises(ValidationError, match=wanted):
        FirnNewSnapshotTrigger(**{"table": "db.events", **kwargs})  # type: ignore[arg-type]


def test_waits_for_a_commit_after_the_watermark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=2)
    watermark = head(table)
    trigger = FirnNewSnapshotTrigger(
        table="db.events", firn_conn_id=CONN_ID, after_snapshot_id=watermark, poll_interval=0.05
    )
    new: list[int] = []
    before, events = asyncio.run(
        collect_while(trigger, 1, 60, lambda: new.append(commit(table)), polls=watch_polls(monkeypatch))
    )
    assert before == []
    (event,) = events
    assert event["status"] == "success"
    snapshot = event["snapshot"]
    assert snapshot["snapshot_id"] == new[0]
    assert snapshot["parent_snapshot_id"] == watermark
    assert snapshot["operation"] == "append"
    assert snapshot["new_snapshots"] == 1
    assert snapshot["summary"]["added-data-files"] == "1"


def test_only_the_wanted_operation_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    watermark = head(table)
    trigger = FirnNewSnapshotTrigger(
        table="db.events",
        firn_conn_id=CONN_ID,
        after_snapshot_id=watermark,
        operation="delete",
        poll_interval=0.05,
    )

    polls = watch_polls(monkeypatch)

    def append_then_delete() -> None:
        polls.wait_for_head(commit(table, start=100))  # a poll sees the append alone
        table.delete("id >= 100")

    before, events = asyncio.run(collect_while(trigger, 1, 60, append_then_delete, polls=polls))
    assert before == []
    (event,) = events
    snapshot = event["snapshot"]
    assert snapshot["operation"] == "delete"
    assert snapshot["snapshot_id"] == head(table)
    assert snapshot["new_snapshots"] == 1


def test_a_missing_table_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_table(firn_connection(tmp_path, monkeypatch))
    (event,) = run_trigger(
        FirnNewSnapshotTrigger(table="db.gone", firn_conn_id=CONN_ID, poll_interval=0.05), 1, 30
    )
    assert event["status"] == "error"
    assert event["error"] == "NoSuchTable"
    assert "db.gone" in event["message"]
