"""The commit loop: multi-action transactions, retries after lost races (two Table objects on
one catalog), the retry budget (commit.retry.*), backoff, and cleanup of failed attempts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import firn.core.commit as transaction_module
from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.commit import _backoff_ms
from firn.core.metadata_io import parse_metadata_version
from firn.errors import CommitConflict, CommitStateUnknown, FirnError, NotFound, ValidationConflict
from firn.manifests.cache import clear_caches
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog, make_sqlite_catalog
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.tables import events, make_events_table


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


@pytest.fixture
def memory() -> InMemoryCatalog:
    return make_memory_catalog()


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Backoff without waiting; records (attempt, min-wait, max-wait) of every retry."""
    calls: list[tuple[int, int, int]] = []

    def backoff(attempt: int, min_ms: int, max_ms: int) -> float:
        calls.append((attempt, min_ms, max_ms))
        return 0.0

    monkeypatch.setattr(transaction_module, "_backoff_ms", backoff)
    return calls


def _files(catalog: BaseCatalog, table: Table) -> set[str]:
    return {f.location for f in catalog.io.list_prefix(table.location)}


def _ids(catalog: BaseCatalog) -> list[int]:
    return sorted(catalog.load_table("db.events").scan().to_arrow().column("id").to_pylist())


def test_several_actions_commit_as_one_metadata_version(memory: InMemoryCatalog) -> None:
    table = make_events_table(memory, 2)
    table.append(events(2))
    version = parse_metadata_version(table.metadata_location)
    with table.transaction() as txn:
        txn.update_schema().add_column("note", StringType())
        txn.append(events(3, start=10))
    assert parse_metadata_version(table.metadata_location) == version + 1
    assert table.schema().find_field("note") is not None and len(table.snapshots()) == 2
    assert _ids(memory) == [0, 1, 10, 11, 12]
    with pytest.raises(FirnError, match="already been committed"):
        txn.commit()
    with pytest.raises(FirnError, match="already been committed"):
        txn.update_schema()


def test_transaction_left_with_an_exception_commits_nothing(memory: InMemoryCatalog) -> None:
    table = make_events_table(memory, 2)
    location = table.metadata_location
    with pytest.raises(RuntimeError), table.transaction() as txn:
        txn.update_schema().add_column("note", StringType())
        raise RuntimeError("changed my mind")
    assert table.metadata_location == location and memory.load_table("db.events").schema().schema_id == 0


def test_stale_writer_retries_and_both_commits_land(sqlite: SqlCatalog, no_sleep: list[Any]) -> None:
    t1 = make_events_table(sqlite, 2, partition_spec=[("region", "identity")])
    t2 = sqlite.load_table("db.events")
    t1.append(events(4))
    planned = t2.transaction().append(events(2, start=100))  # t2's base is now stale
    result = planned.commit()
    assert result.attempts == 2 and len(no_sleep) == 1
    head = sqlite.load_table("db.events").current_snapshot()
    assert head is not None and head.summary.get("total-records") == "6"
    assert head.parent_snapshot_id == t1.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert _ids(sqlite) == [0, 1, 2, 3, 100, 101]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_base_expired_under_a_stale_writer_is_a_lost_race(
    sqlite: SqlCatalog, version: int, no_sleep: list[Any]
) -> None:
    """A writer planned on snapshot S1; meanwhile another writer committed S2 and an expiry
    (retain_last=1) removed S1 and its manifest list. Reading that base is a lost race: the
    commit retries on the refreshed table (it used to fail with NotFound: issue 25's finding
    under racing writers)."""
    t1 = make_events_table(sqlite, version)
    t1.append(events(2))
    stale = sqlite.load_table("db.events")
    t1.append(events(2, start=10))
    t1.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    gone = stale.current_snapshot()
    assert gone is not None and sqlite.load_table("db.events").snapshot_by_id(gone.snapshot_id) is None
    clear_caches()  # as another process would be: nothing of S1 is cached
    result = stale.transaction().append(events(2, start=100)).commit()
    assert result.attempts == 2 and len(no_sleep) == 1
    assert _ids(sqlite) == [0, 1, 10, 11, 100, 101]


def test_a_file_missing_from_a_base_that_did_not_move_is_not_found(
    sqlite: SqlCatalog, no_sleep: list[Any]
) -> None:
    """Only a base the table moved past counts as a lost race: a manifest list missing from
    the current base (deleted by hand here) is a NotFound, not a retry."""
    t1 = make_events_table(sqlite, 2)
    t1.append(events(2))
    head = t1.current_snapshot()
    assert head is not None
    Path(head.manifest_list.removeprefix("file:")).unlink()
    clear_caches()
    with pytest.raises(NotFound, match="file not found"):
        t1.append(events(1, start=100))
    assert no_sleep == []


@pytest.mark.parametrize("version", [1, 2, 3])
def test_racing_table_objects_keep_a_linear_history(
    sqlite: SqlCatalog, version: int, no_sleep: list[Any]
) -> None:
    writers = [make_events_table(sqlite, version)] + [sqlite.load_table("db.events") for _ in range(2)]
    for i in range(9):
        writers[i % 3].append(events(1, start=i))  # each writer is stale on most of its commits
    table = sqlite.load_table("db.events")
    chain = table.metadata.ancestors_of(table.metadata.current_snapshot_id)
    assert len(chain) == len(table.snapshots()) == 9
    assert _ids(sqlite) == list(range(9))
    if version >= 2:
        assert [s.sequence_number for s in reversed(chain)] == list(range(1, 10))
    if version == 3:
        assert table.metadata.next_row_id == 9
        assert sorted(table.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()) == list(
            range(9)
        )


def test_lost_races_do_not_spend_num_retries(
    sqlite: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_sleep: list[Any]
) -> None:
    make_events_table(sqlite, 2, properties={"commit.retry.num-retries": "0"})
    competitor = sqlite.load_table("db.events")
    other_catalog = make_sqlite_catalog(tmp_path)  # the stale writer's own connection
    stale = other_catalog.load_table("db.events")
    planned = stale.transaction().append(events(1, start=500))
    swap = other_catalog.swap_metadata_location
    wins = iter(range(6))

    def commit_table(identifier: Any, expected: str, new: str, metadata: Any) -> None:
        # Another writer's commit lands just before each of the first six swaps.
        if (i := next(wins, None)) is not None:
            competitor.refresh().append(events(1, start=i))
        swap(identifier, expected, new, metadata)

    monkeypatch.setattr(other_catalog, "swap_metadata_location", commit_table)
    result = planned.commit()
    assert result.attempts == 7  # six lost races, then success, despite num-retries=0
    assert len(no_sleep) == 6
    assert _ids(sqlite) == [0, 1, 2, 3, 4, 5, 500]
    other_catalog.close()


def _failing_swaps(
    catalog: BaseCatalog, monkeypatch: pytest.MonkeyPatch, error: Callable[[], Exception]
) -> list[str]:
    """Make every catalog swap fail with ``error()`` without moving the pointer."""
    attempted: list[str] = []

    def commit_table(identifier: Any, expected: str, new: str, metadata: Any) -> None:
        attempted.append(new)
        raise error()

    monkeypatch.setattr(catalog, "swap_metadata_location", commit_table)
    return attempted


def test_conflicts_without_progress_spend_num_retries_and_clean_up(
    memory: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch, no_sleep: list[Any]
) -> None:
    table = make_events_table(
        memory,
        2,
        properties={
            "commit.retry.num-retries": "2",
            "commit.retry.min-wait-ms": "7",
            "commit.retry.max-wait-ms": "50",
        },
    )
    table.append(events(2))
    before = _files(memory, table)
    location = table.metadata_location
    attempted = _failing_swaps(memory, monkeypatch, lambda: CommitConflict("database is locked"))
    with pytest.raises(CommitConflict, match=r"failed after 3 attempts.*database is locked"):
        table.append(events(3, start=10))
    assert len(attempted) == 3
    assert no_sleep == [(1, 7, 50), (2, 7, 50)]
    # Every file of the failed commit is gone: data file, manifests, manifest lists, metadata.
    assert _files(memory, table) == before
    assert table.metadata_location == location == memory.load_metadata_location("db.events")


def test_total_timeout_bounds_lost_races(sqlite: SqlCatalog, no_sleep: list[Any]) -> None:
    make_events_table(sqlite, 2, properties={"commit.retry.total-timeout-ms": "0"})
    stale = sqlite.load_table("db.events")
    planned = stale.transaction().append(events(1, start=5))
    sqlite.load_table("db.events").append(events(1))
    with pytest.raises(CommitConflict, match="1 lost to concurrent commits"):
        planned.commit()
    assert no_sleep == [] and _ids(sqlite) == [0]


def test_commit_state_unknown_keeps_the_attempts_files(
    memory: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_events_table(memory, 2)
    before = _files(memory, table)
    attempted = _failing_swaps(
        memory, monkeypatch, lambda: CommitStateUnknown("connection lost during COMMIT")
    )
    with pytest.raises(CommitStateUnknown):
        table.append(events(2))
    new = _files(memory, table) - before
    assert attempted[0] in new  # the metadata file may be referenced: kept
    assert any(p.endswith(".parquet") for p in new) and any("/snap-" in p for p in new)


def test_other_catalog_errors_are_not_retried_and_clean_up(
    memory: InMemoryCatalog, monkeypatch: pytest.MonkeyPatch, no_sleep: list[Any]
) -> None:
    table = make_events_table(memory, 2)
    before = _files(memory, table)
    attempted = _failing_swaps(memory, monkeypatch, lambda: FirnError("catalog exploded"))
    with pytest.raises(FirnError, match="catalog exploded"):
        table.append(events(2))
    assert len(attempted) == 1 and no_sleep == []
    assert _files(memory, table) == before


def test_validation_conflicts_are_not_retried(memory: InMemoryCatalog, no_sleep: list[Any]) -> None:
    table = make_events_table(memory, 2)
    stale = table.update_schema().add_column("a", StringType())
    memory.load_table("db.events").update_schema().add_column("b", StringType()).commit()
    # The first attempt loses the race; the retry re-validates on the fresh base and stops.
    with pytest.raises(ValidationConflict, match="changed concurrently"):
        stale.commit()
    assert len(no_sleep) == 1


def test_retry_reuses_the_data_manifest_of_the_first_attempt(sqlite: SqlCatalog, no_sleep: list[Any]) -> None:
    make_events_table(sqlite, 2, properties={"commit.manifest-merge.enabled": "false"})
    stale = sqlite.load_table("db.events")
    planned = stale.transaction().append(events(2, start=10))
    sqlite.load_table("db.events").append(events(1))
    before = _files(sqlite, stale)
    planned.commit()
    new = _files(sqlite, stale) - before
    manifests = [p for p in new if p.endswith(".avro") and "/snap-" not in p]
    lists = [p for p in new if "/snap-" in p]
    # The new data manifest was written once; the failed attempt's manifest list was removed.
    assert len(manifests) == 1 and len(lists) == 1
    assert lists[0] == stale.current_snapshot().manifest_list  # type: ignore[union-attr]


@pytest.mark.parametrize("attempt", [1, 2, 5, 40])
def test_backoff_is_full_jitter_within_the_exponential_cap(attempt: int) -> None:
    cap = min(60_000, 100 * 2 ** (attempt - 1))
    waits = [_backoff_ms(attempt, 100, 60_000) for _ in range(200)]
    assert all(0 <= w <= cap for w in waits)
    assert max(waits) > cap / 2 and min(waits) < cap / 2  # spread over the window
