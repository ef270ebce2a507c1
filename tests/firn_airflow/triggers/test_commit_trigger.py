"""FirnCommitTrigger on a real SQLite catalog: silent while unchanged, one event per commit,
waiting for a missing table, surviving outages, and its watermark.

No step waits a guessed time: each waits for what the trigger did (``support.PollLog``): its
first poll before the first commit, a poll that saw a commit before the next one, a number
of quiet polls before "silent" is concluded. Deadlines only bound a hang."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from firn.errors import NoSuchNamespace, NoSuchTable, ValidationError
from firn_airflow.triggers import FirnCommitTrigger
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    PollLog,
    assert_round_trip,
    collect_while,
    commit,
    create_table,
    firn_connection,
    head,
    rows,
    run_trigger,
    set_connection,
    watch_polls,
)

pytestmark = pytest.mark.airflow


def commits(
    trigger: FirnCommitTrigger, action: Any, expected: int, polls: PollLog
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the trigger, do ``action`` once its first poll is over, and collect the events:
    ``expected`` of them (60 s at most) plus any that follow within two more polls."""
    return asyncio.run(collect_while(trigger, expected, 60, action, polls=polls))


def chain(events: list[dict[str, Any]]) -> list[tuple[int | None, int]]:
    return [(e["previous_snapshot_id"], e["snapshot_id"]) for e in events]


def test_serialize_round_trip_and_event_trigger_hash() -> None:
    from airflow.triggers.base import BaseEventTrigger

    trigger = FirnCommitTrigger(
        table="db.events", firn_conn_id="firn_prod", branch="main", poll_interval=15, operation="append"
    )
    kwargs = assert_round_trip(trigger)
    assert kwargs == {
        "table": "db.events",
        "firn_conn_id": "firn_prod",
        "branch": "main",
        "poll_interval": 15.0,
        "operation": ["append"],
        "last_seen_snapshot_id": None,
    }
    # Watchers are deduplicated by this hash: equal arguments, equal triggers.
    again = FirnCommitTrigger(**kwargs)
    assert BaseEventTrigger.hash(*trigger.serialize()) == BaseEventTrigger.hash(*again.serialize())
    assert isinstance(trigger, BaseEventTrigger)


@pytest.mark.parametrize(
    ("kwargs", "wanted"),
    [
        ({"table": "events"}, "'<namespace>.<table>'"),
        ({"branch": " "}, "branch"),
        ({"operation": ["append", "compact"]}, "unknown snapshot operation 'compact'"),
        ({"poll_interval": "often"}, "poll_interval"),
        ({"last_seen_snapshot_id": "latest"}, "last_seen_snapshot_id"),
    ],
)
def test_arguments_are_checked(kwargs: dict[str, object], wanted: str) -> None:
    with pytest.raises(ValidationError, match=wanted):
        FirnCommitTrigger(**{"table": "db.events", **kwargs})  # type: ignore[arg-type]


def test_silent_while_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=3)
    polls = watch_polls(monkeypatch)
    # No watermark: what is there when it starts is not news (five polls, no event).
    unwatched = FirnCommitTrigger(table="db.events", firn_conn_id=CONN_ID, poll_interval=0.02)
    assert run_trigger(unwatched, 0, polls=polls, quiet_polls=5) == []
    # The head already reported: nothing either.
    seen = FirnCommitTrigger(
        table="db.events", firn_conn_id=CONN_ID, poll_interval=0.02, last_seen_snapshot_id=head(table)
    )
    before = polls.count
    assert run_trigger(seen, 0, polls=polls, quiet_polls=5) == []
    assert polls.count >= before + 5


def test_one_event_per_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    start = head(table)
    new: list[int] = []

    polls = watch_polls(monkeypatch)

    def three_commits() -> None:
        new.append(commit(table))
        polls.wait_for_head(new[0])  # a poll sees this one alone; the next two may land in one poll
        new.append(commit(table))
        new.append(commit(table))

    trigger = FirnCommitTrigger(table="db.events", firn_conn_id=CONN_ID, poll_interval=0.05)
    before, events = commits(trigger, three_commits, 3, polls)
    assert before == []
    assert chain(events) == [(start, new[0]), (new[0], new[1]), (new[1], new[2])]
    first = events[0]
    assert first["table"] == "db.events"
    assert first["branch"] == "main"
    assert first["operation"] == "append"
    assert first["summary"]["added-records"] == "2"
    assert first["timestamp_ms"] == table.snapshot_by_id(new[0]).timestamp_ms


def test_commits_after_a_given_watermark_are_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=3)
    history = [s.snapshot_id for s in table.snapshots()]
    trigger = FirnCommitTrigger(
        table="db.events", firn_conn_id=CONN_ID, poll_interval=0.02, last_seen_snapshot_id=history[0]
    )
    # The two commits after it, then nothing more over two further polls.
    events = run_trigger(trigger, 2, polls=watch_polls(monkeypatch), quiet_polls=2)
    assert chain(events) == [(history[0], history[1]), (history[1], history[2])]


def test_only_the_wanted_operations_fire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    appended: list[int] = []
    polls = watch_polls(monkeypatch)

    def append_then_delete() -> None:
        appended.append(commit(table, start=100))
        polls.wait_for_head(appended[0])  # a poll sees the append alone
        table.delete("id >= 100")

    trigger = FirnCommitTrigger(
        table="db.events", firn_conn_id=CONN_ID, poll_interval=0.05, operation="delete"
    )
    _, events = commits(trigger, append_then_delete, 1, polls)
    # The append moved the watermark without an event; the delete's previous head is the append.
    assert chain(events) == [(appended[0], head(table))]
    assert events[0]["operation"] == "delete"


def test_waits_for_a_missing_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = firn_connection(tmp_path, monkeypatch)  # no namespace, no table yet
    made: list[int] = []

    def create_and_commit() -> None:
        made.append(head(create_table(catalog, "db.later", commits=1)))

    trigger = FirnCommitTrigger(table="db.later", firn_conn_id=CONN_ID, poll_interval=0.05)
    polls = watch_polls(monkeypatch)
    before, events = commits(trigger, create_and_commit, 1, polls)
    assert before == []  # polls of a missing namespace and table, no error
    assert all(isinstance(load, (NoSuchNamespace, NoSuchTable)) for load in polls.loads[:2])
    assert chain(events) == [(None, made[0])]


def test_survives_a_missing_connection_and_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = firn_connection(tmp_path, monkeypatch, set_env=False)
    table = create_table(catalog, commits=1)
    start = head(table)
    later: list[int] = []

    polls = watch_polls(monkeypatch)

    def define_connection_then_commit() -> None:
        set_connection(monkeypatch, tmp_path)
        polls.wait_for_head(start)  # a poll takes the head as the starting point
        later.append(commit(table))

    trigger = FirnCommitTrigger(table="db.events", firn_conn_id=CONN_ID, poll_interval=0.05)
    before, events = commits(trigger, define_connection_then_commit, 1, polls)
    assert before == []
    assert chain(events) == [(start, later[0])]


def test_a_rollback_is_reported_as_a_head_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=2)
    first, second = (s.snapshot_id for s in table.snapshots())

    def roll_back() -> None:
        table.manage_snapshots().rollback_to(first).commit()

    trigger = FirnCommitTrigger(table="db.events", firn_conn_id=CONN_ID, poll_interval=0.05)
    _, events = commits(trigger, roll_back, 1, watch_polls(monkeypatch))
    assert chain(events) == [(second, first)]


def test_watches_one_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    table.manage_snapshots().create_branch("audit").commit()
    on_audit: list[int] = []

    def commit_to_both() -> None:
        commit(table)  # main: not watched
        snapshot = table.append(rows(), branch="audit")
        assert snapshot is not None
        on_audit.append(snapshot.snapshot_id)

    trigger = FirnCommitTrigger(table="db.events", firn_conn_id=CONN_ID, branch="audit", poll_interval=0.05)
    _, events = commits(trigger, commit_to_both, 1, watch_polls(monkeypatch))
    assert [(e["branch"], e["snapshot_id"]) for e in events] == [("audit", on_audit[0])]
