"""Which commits come after a watermark, on real tables: by snapshot id, by time, on branches,
after rollbacks and expiry; and the watermark parsers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn.spec.snapshots import Snapshot
from firn.table.table import Table
from firn_airflow.triggers.snapshots import (
    check_poll_interval,
    check_table_name,
    matching,
    parse_operations,
    parse_snapshot_id,
    parse_timestamp_ms,
    snapshot_payload,
    snapshots_after,
)
from tests.firn_airflow.triggers.support import commit, create_table, firn_connection, rows

pytestmark = pytest.mark.airflow


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Table:
    return create_table(firn_connection(tmp_path, monkeypatch), commits=0)


def ids(snapshots: list[Snapshot]) -> list[int]:
    return [s.snapshot_id for s in snapshots]


def test_after_a_snapshot_id_on_the_branch(table: Table) -> None:
    c1, c2 = commit(table), commit(table, start=10)
    table.delete("id >= 10")  # the whole second file: a "delete" commit
    c3 = table.current_snapshot().snapshot_id
    assert ids(snapshots_after(table, branch="main", after_snapshot_id=c1)) == [c2, c3]
    assert ids(snapshots_after(table, branch="main", after_snapshot_id=c3)) == []
    assert ids(snapshots_after(table, branch="main")) == [c1, c2, c3]
    deletes = matching(snapshots_after(table, branch="main", after_snapshot_id=c1), ("delete",))
    assert ids(deletes) == [c3]
    assert ids(matching(snapshots_after(table, branch="main"), ("append",))) == [c1, c2]


def test_after_a_commit_time(table: Table) -> None:
    c1, c2, c3 = commit(table), commit(table), commit(table)
    t1 = table.snapshot_by_id(c1).timestamp_ms
    assert ids(snapshots_after(table, branch="main", after_timestamp_ms=t1)) == [c2, c3]
    assert ids(snapshots_after(table, branch="main", after_timestamp_ms=t1 - 1)) == [c1, c2, c3]
    assert (
        snapshots_after(table, branch="main", after_timestamp_ms=table.snapshot_by_id(c3).timestamp_ms) == []
    )
    with pytest.raises(ValidationError, match="not both"):
        snapshots_after(table, branch="main", after_snapshot_id=c1, after_timestamp_ms=t1)


def test_branches_are_separate(table: Table) -> None:
    c1 = commit(table)
    table.manage_snapshots().create_branch("audit", c1).commit()
    audit = table.append(rows(1), branch="audit").snapshot_id
    assert ids(snapshots_after(table, branch="audit", after_snapshot_id=c1)) == [audit]
    assert snapshots_after(table, branch="main", after_snapshot_id=c1) == []
    assert snapshots_after(table, branch="missing") == []


def test_a_rollback_is_not_a_new_commit(table: Table) -> None:
    c1, c2 = commit(table), commit(table)
    table.manage_snapshots().rollback_to(c1).commit()
    # c2 is off main's history now: compared by time, c1 is older, so nothing is new.
    assert snapshots_after(table, branch="main", after_snapshot_id=c2) == []
    c3 = commit(table)
    assert ids(snapshots_after(table, branch="main", after_snapshot_id=c2)) == [c3]


def test_an_expired_watermark_counts_everything_left(table: Table) -> None:
    c1, c2, c3 = commit(table), commit(table), commit(table)
    table.maintenance.expire_snapshots(snapshot_ids=[c1]).run()
    table.refresh()
    assert table.snapshot_by_id(c1) is None
    assert ids(snapshots_after(table, branch="main", after_snapshot_id=c1)) == [c2, c3]


def test_payload_is_json_ready(table: Table) -> None:
    c1 = commit(table)
    payload = snapshot_payload("db.events", "main", table.snapshot_by_id(c1))
    assert payload["snapshot_id"] == c1
    assert payload["parent_snapshot_id"] is None
    assert payload["operation"] == "append"
    assert payload["summary"]["added-records"] == "2"
    assert payload["summary"]["operation"] == "append"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        (1714521600000, 1714521600000),
        ("1714521600000", 1714521600000),
        ("2024-05-01T00:00:00+00:00", 1714521600000),
        ("2024-05-01T00:00:00Z", 1714521600000),
        ("2024-05-01 02:00:00+02:00", 1714521600000),
        ("2024-05-01T00:00:00", 1714521600000),  # naive: UTC
        (dt.datetime(2024, 5, 1, tzinfo=dt.UTC), 1714521600000),
        (dt.date(2024, 5, 1), 1714521600000),
    ],
)
def test_timestamps(value: object, expected: int | None) -> None:
    assert parse_timestamp_ms(value) == expected


@pytest.mark.parametrize("value", ["yesterday", True, [1]])
def test_bad_timestamps(value: object) -> None:
    with pytest.raises(ValidationError, match="after_timestamp"):
        parse_timestamp_ms(value)


def test_other_parsers() -> None:
    assert parse_snapshot_id("42") == 42
    assert parse_snapshot_id(None) is None
    with pytest.raises(ValidationError, match="after_snapshot_id"):
        parse_snapshot_id("abc")
    assert parse_operations(None) is None
    assert parse_operations("delete") == ("delete",)
    assert parse_operations(["overwrite", "append", "append"]) == ("append", "overwrite")
    with pytest.raises(ValidationError, match=r"unknown snapshot operation 'merge'.*append, replace"):
        parse_operations("merge")
    with pytest.raises(ValidationError, match="empty"):
        parse_operations([])
    assert check_table_name("a.b.c") == "a.b.c"
    for bad in ("events", "db.", ".t", 3):
        with pytest.raises(ValidationError, match="table"):
            check_table_name(bad)
    with pytest.raises(ValidationError, match="poll_interval"):
        check_poll_interval(-1)
