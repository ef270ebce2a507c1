"""The snapshot range each event reports (``from_snapshot_id``, ``to_snapshot_id``, the
operations in it, ``maintenance_only``): the commit trigger's events tile the branch's history
whatever they filter out, the new-snapshot sensor's event covers everything after its
watermark, and each range reads back through ``table.scan``/``table.changelog``."""

from __future__ import annotations

from pathlib import Path

import pytest

from firn.table.table import Table
from firn_airflow.triggers import FirnCommitTrigger, FirnNewSnapshotTrigger
from firn_airflow.triggers.commit import poll_commits
from firn_airflow.triggers.new_snapshot import find_new_snapshot
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import range_payload
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    commit,
    create_table,
    firn_connection,
    run_trigger,
    watch_polls,
)

pytestmark = pytest.mark.airflow


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Table:
    return create_table(firn_connection(tmp_path, monkeypatch), commits=1)


def history(table: Table) -> list[int]:
    """After the first append: append, compaction (replace), append, delete; all snapshot ids."""
    commit(table, start=10)
    table.refresh().maintenance.rewrite_data_files(rewrite_all=True).run()
    commit(table.refresh(), start=20)
    table.refresh().delete("id >= 20")
    return [
        s.snapshot_id for s in table.refresh().metadata.ancestors_of(table.current_snapshot().snapshot_id)
    ][::-1]  # type: ignore[union-attr]


def ranges(events: list[dict[str, object]]) -> list[tuple[object, object, object, object]]:
    return [
        (e["from_snapshot_id"], e["to_snapshot_id"], e["operations"], e["maintenance_only"]) for e in events
    ]


def test_commit_events_tile_the_history(table: Table) -> None:
    s0, s1, s2, s3, s4 = history(table)
    reader = TableReader(CONN_ID, "db.events")
    try:
        every = poll_commits(reader, branch="main", watermark=s0, operations=None)
        assert ranges(every.events) == [
            (s0, s1, ["append"], False),
            (s1, s2, ["replace"], True),
            (s2, s3, ["append"], False),
            (s3, s4, ["delete"], False),
        ]
        # Filtered out, the compaction belongs to the next event's range, listed in it.
        data = poll_commits(reader, branch="main", watermark=s0, operations=("append", "delete", "overwrite"))
        assert ranges(data.events) == [
            (s0, s1, ["append"], False),
            (s1, s3, ["append", "replace"], False),
            (s3, s4, ["delete"], False),
        ]
        assert [e["snapshot_id"] for e in data.events] == [s1, s3, s4]
    finally:
        reader.close()
    # Each range reads back: the rows the second event's appends added.
    second = data.events[1]
    appended = table.scan(
        from_snapshot_id=second["from_snapshot_id"], to_snapshot_id=second["to_snapshot_id"]
    )
    assert sorted(appended.to_arrow()["id"].to_pylist()) == [20, 21]
    changes = table.changelog(
        from_snapshot_id=second["to_snapshot_id"], to_snapshot_id=data.events[2]["to_snapshot_id"]
    )
    assert sorted(changes.to_arrow()["_change_type"].to_pylist()) == ["DELETE", "DELETE"]


def test_new_snapshot_event_covers_everything_after_the_watermark(table: Table) -> None:
    _, s1, s2, s3, _ = history(table)
    reader = TableReader(CONN_ID, "db.events")
    try:
        found = find_new_snapshot(
            reader, branch="main", after_snapshot_id=s1, after_timestamp_ms=None, operations=("append",)
        )
        only_compaction = find_new_snapshot(
            reader, branch="main", after_snapshot_id=s1, after_timestamp_ms=None, operations=("replace",)
        )
    finally:
        reader.close()
    assert found is not None and only_compaction is not None
    # The newest append after s1 is s3; the range is (s1, s3], the compaction in it.
    assert (found["snapshot_id"], found["new_snapshots"]) == (s3, 1)
    assert ranges([found]) == [(s1, s3, ["append", "replace"], False)]
    assert ranges([only_compaction]) == [(s1, s2, ["replace"], True)]


def test_the_first_snapshot_range_starts_at_none(table: Table) -> None:
    first = table.snapshots()[0]
    assert range_payload([first]) == {
        "from_snapshot_id": None,
        "to_snapshot_id": first.snapshot_id,
        "operations": ["append"],
        "maintenance_only": False,
    }
    with pytest.raises(ValueError, match="at least one snapshot"):
        range_payload([])


def test_the_triggers_events_carry_the_range(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    s0, s1, s2, s3, s4 = history(table)
    commit_trigger = FirnCommitTrigger(
        table="db.events",
        firn_conn_id=CONN_ID,
        poll_interval=0.02,
        last_seen_snapshot_id=s0,
        operation="append",
    )
    events = run_trigger(commit_trigger, 2, polls=watch_polls(monkeypatch), quiet_polls=1)
    assert ranges(events) == [(s0, s1, ["append"], False), (s1, s3, ["append", "replace"], False)]
    sensor_trigger = FirnNewSnapshotTrigger(
        table="db.events", firn_conn_id=CONN_ID, poll_interval=0.02, after_snapshot_id=s2
    )
    (event,) = run_trigger(sensor_trigger, 1)
    assert event["status"] == "success"
    assert ranges([event["snapshot"]]) == [(s2, s4, ["append", "delete"], False)]
