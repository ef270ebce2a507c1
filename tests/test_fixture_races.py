"""The race evidence of ``tests/fixtures/races.py`` can fail: a serial run, or one without a
retried commit, is refused; overlapping spans of two writers are found."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.races import TimedCommit, assert_raced, overlapping, retries, timed_commit


def _c(worker: int, started: float, ended: float, attempts: int = 1) -> TimedCommit:
    return TimedCommit(
        worker, snapshot_id=int(started * 1000), attempts=attempts, started=started, ended=ended
    )


def test_serial_commits_do_not_overlap() -> None:
    serial = [_c(0, 0.0, 1.0), _c(0, 1.0, 2.0), _c(1, 2.0, 3.0, attempts=2), _c(2, 3.5, 4.0)]
    assert overlapping(serial) is None
    assert retries(serial) == 1
    with pytest.raises(AssertionError, match="one after the other"):
        assert_raced(serial)


def test_overlap_of_two_workers_is_found_even_behind_another_span() -> None:
    # Worker 1's long commit overlaps worker 0's second one; worker 0's spans touch only each other.
    commits = [_c(0, 0.0, 1.0), _c(1, 0.5, 5.0, attempts=3), _c(0, 1.0, 2.0)]
    pair = overlapping(commits)
    assert pair is not None and {pair[0].worker, pair[1].worker} == {0, 1}
    assert_raced(commits)


def test_no_retry_is_no_race() -> None:
    with pytest.raises(AssertionError, match="never contended"):
        assert_raced([_c(0, 0.0, 2.0), _c(1, 1.0, 3.0)])


def test_timed_commit_records_the_commit(tmp_path: Path) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    table = catalog.create_table("db.t", schema=schema)
    stale = catalog.load_table("db.t")
    first = timed_commit(0, lambda tx: tx.append(pa.table({"id": [1]}, schema=schema)), table)
    # ``stale`` still holds the empty table: its commit loses one race, then lands.
    second = timed_commit(1, lambda tx: tx.append(pa.table({"id": [2]}, schema=schema)), stale)
    assert (first.attempts, second.attempts) == (1, 2)
    assert first.started <= first.ended <= second.started <= second.ended
    assert catalog.load_table("db.t").current_snapshot().snapshot_id == second.snapshot_id  # type: ignore[union-attr]
    catalog.close()


def test_a_refused_attempt_counts_as_a_lost_race_and_as_work_in_flight() -> None:
    refused = TimedCommit(1, snapshot_id=None, attempts=1, started=0.5, ended=0.9)
    commits = [_c(0, 0.0, 1.0), refused, _c(1, 1.0, 2.0)]
    assert retries(commits) == 1
    assert overlapping(commits) == (commits[0], refused)
    assert_raced(commits)
