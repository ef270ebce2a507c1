"""The ``(from, to]`` ranges of incremental and changelog reads (``firn.core.snapshot_range``):
exclusive start, inclusive end, by id or by time, and a clear error for every range that
cannot be read (unknown or expired ends, a start that is not an ancestor, expired history)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.snapshot_range import resolve_range
from firn.errors import NotFound, ValidationError
from firn.spec.snapshots import Snapshot
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import soon_ms

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path)
    c.create_namespace("db")
    yield c
    c.close()


def _table(catalog: SqlCatalog, version: int = 2) -> Table:
    return catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": str(version)})


def _commit(t: Table, *ids: int) -> Snapshot:
    time.sleep(0.003)  # distinct commit times, so timestamps name one snapshot each
    snap = t.append(pa.table({"id": list(ids)}, schema=SCHEMA))
    assert snap is not None
    return snap


def _ids(snaps: tuple[Snapshot, ...]) -> list[int]:
    return [s.snapshot_id for s in snaps]


def test_range_is_exclusive_start_inclusive_end(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1, s2, s3, s4 = (_commit(t, i) for i in range(4))
    r = resolve_range(t.metadata, t.name, from_snapshot_id=s1.snapshot_id, to_snapshot_id=s3.snapshot_id)
    assert _ids(r.snapshots) == [s2.snapshot_id, s3.snapshot_id]
    assert (r.from_snapshot_id, r.to_snapshot_id) == (s1.snapshot_id, s3.snapshot_id)
    # Defaults: from the table's first snapshot, to the current one.
    assert _ids(resolve_range(t.metadata, t.name).snapshots) == [s.snapshot_id for s in (s1, s2, s3, s4)]
    assert resolve_range(t.metadata, t.name).from_snapshot_id is None
    assert _ids(resolve_range(t.metadata, t.name, from_snapshot_id=s3.snapshot_id).snapshots) == [
        s4.snapshot_id
    ]
    # An empty range: from == to.
    same = resolve_range(t.metadata, t.name, from_snapshot_id=s4.snapshot_id)
    assert same.is_empty and same.to_snapshot_id == s4.snapshot_id


def test_range_by_time_resolves_like_as_of(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1, s2, s3 = (_commit(t, i) for i in range(3))
    # from_timestamp at s1's commit time: s1 is the state then, so the range starts after it.
    r = resolve_range(t.metadata, t.name, from_timestamp=s1.timestamp_ms, to_timestamp=s2.timestamp_ms)
    assert _ids(r.snapshots) == [s2.snapshot_id]
    assert r.from_snapshot_id == t.snapshot_as_of(s1.timestamp_ms).snapshot_id
    assert r.to_snapshot_id == t.snapshot_as_of(s2.timestamp_ms).snapshot_id
    # One millisecond before s1: the whole history (the table did not exist yet).
    r = resolve_range(t.metadata, t.name, from_timestamp=s1.timestamp_ms - 1)
    assert r.from_snapshot_id is None and _ids(r.snapshots) == [s.snapshot_id for s in (s1, s2, s3)]
    # ISO-8601 text works as for as_of.
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s3.timestamp_ms // 1000 + 1)) + "Z"
    assert resolve_range(t.metadata, t.name, from_snapshot_id=s2.snapshot_id, to_timestamp=iso).snapshots[
        -1
    ] == t.metadata.snapshot(s3.snapshot_id)


def test_range_ends_given_twice_or_backwards_are_refused(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1, s2 = _commit(t, 1), _commit(t, 2)
    with pytest.raises(ValidationError, match="from_snapshot_id or from_timestamp, not both"):
        resolve_range(t.metadata, t.name, from_snapshot_id=s1.snapshot_id, from_timestamp=s1.timestamp_ms)
    with pytest.raises(ValidationError, match="to_snapshot_id or to_timestamp, not both"):
        resolve_range(t.metadata, t.name, to_snapshot_id=s2.snapshot_id, to_timestamp=s2.timestamp_ms)
    with pytest.raises(ValidationError, match="is after to_timestamp"):
        resolve_range(t.metadata, t.name, from_timestamp=s2.timestamp_ms, to_timestamp=s1.timestamp_ms)
    with pytest.raises(
        ValidationError, match=f"snapshot {s2.snapshot_id} is newer than snapshot {s1.snapshot_id}"
    ):
        resolve_range(t.metadata, t.name, from_snapshot_id=s2.snapshot_id, to_snapshot_id=s1.snapshot_id)
    with pytest.raises(ValidationError, match="must be a snapshot id"):
        resolve_range(t.metadata, t.name, from_snapshot_id="1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="to_timestamp must be"):
        resolve_range(t.metadata, t.name, to_timestamp="yesterday")


def test_unknown_end_and_empty_table(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    assert resolve_range(t.metadata, t.name).is_empty
    with pytest.raises(NotFound, match="has no snapshots, so none with id 42"):
        resolve_range(t.metadata, t.name, from_snapshot_id=42)
    s1 = _commit(t, 1)
    with pytest.raises(NotFound, match="no snapshot 42 to end the range at"):
        resolve_range(t.metadata, t.name, to_snapshot_id=42)
    with pytest.raises(NotFound, match="no snapshot at or before to_timestamp"):
        resolve_range(t.metadata, t.name, to_timestamp=s1.timestamp_ms - 1000)
    with pytest.raises(NotFound, match="never a snapshot of this history"):
        resolve_range(t.metadata, t.name, from_snapshot_id=42)


def test_start_that_was_rolled_back_or_is_on_another_branch(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1 = _commit(t, 1)
    s2 = _commit(t, 2)
    t.manage_snapshots().rollback_to(s1.snapshot_id).commit()
    s3 = _commit(t, 3)
    with pytest.raises(
        ValidationError,
        match=f"snapshot {s2.snapshot_id} is not an ancestor of snapshot {s3.snapshot_id}.*rolled back",
    ):
        resolve_range(t.metadata, t.name, from_snapshot_id=s2.snapshot_id)
    t.manage_snapshots().create_branch("dev", s3.snapshot_id).commit()
    dev = t.append(pa.table({"id": [9]}, schema=SCHEMA), branch="dev")
    assert dev is not None
    s4 = _commit(t, 4)
    with pytest.raises(ValidationError, match="another branch"):
        resolve_range(t.metadata, t.name, from_snapshot_id=dev.snapshot_id, to_snapshot_id=s4.snapshot_id)
    # The branch's own history reads, ending at its head.
    r = resolve_range(t.metadata, t.name, from_snapshot_id=s3.snapshot_id, to_snapshot_id=dev.snapshot_id)
    assert _ids(r.snapshots) == [dev.snapshot_id]


def test_expired_start_and_expired_history(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1, s2, s3, s4 = (_commit(t, i) for i in range(4))
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
    assert t.snapshot_by_id(s2.snapshot_id) is None and t.snapshot_by_id(s3.snapshot_id) is not None
    # The start itself expired, every snapshot after it recorded: readable (Java allows it).
    r = resolve_range(t.metadata, t.name, from_snapshot_id=s2.snapshot_id)
    assert _ids(r.snapshots) == [s3.snapshot_id, s4.snapshot_id]
    # Older than that: the changes between are gone.
    with pytest.raises(NotFound, match=f"recorded history of table db.t starts at snapshot {s3.snapshot_id}"):
        resolve_range(t.metadata, t.name, from_snapshot_id=s1.snapshot_id)
    with pytest.raises(NotFound, match=f"pass from_snapshot_id={s2.snapshot_id}"):
        resolve_range(t.metadata, t.name)
    with pytest.raises(NotFound, match="no longer recorded"):
        resolve_range(t.metadata, t.name, from_timestamp=s2.timestamp_ms - 1)
    # A time at or after the oldest recorded snapshot is fine.
    r = resolve_range(t.metadata, t.name, from_timestamp=s3.timestamp_ms)
    assert _ids(r.snapshots) == [s4.snapshot_id]
    with pytest.raises(NotFound, match=f"no snapshot {s1.snapshot_id} to end the range at"):
        resolve_range(t.metadata, t.name, to_snapshot_id=s1.snapshot_id)


def test_range_lists_operations(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1 = _commit(t, 1, 2, 3)
    _commit(t, 4)
    t.delete("id = 1")
    t.maintenance.rewrite_data_files(rewrite_all=True).run()
    r = resolve_range(t.metadata, t.name, from_snapshot_id=s1.snapshot_id)
    assert [s.summary.operation.value for s in r.snapshots] == ["append", "overwrite", "replace"]
    assert [s.summary.operation.value for s in r.appends] == ["append"]
    assert [s.summary.operation.value for s in r.data_changes] == ["append", "overwrite"]
    as_dict = r.to_dict()
    assert as_dict["from_snapshot_id"] == s1.snapshot_id
    assert as_dict["to_snapshot_id"] == t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    listed = as_dict["snapshots"]
    assert isinstance(listed, list)
    assert [e["operation"] for e in listed] == ["append", "overwrite", "replace"]


def test_table_changes_uses_the_same_range_rules(catalog: SqlCatalog) -> None:
    t = _table(catalog)
    s1, s2 = _commit(t, 1), _commit(t, 2)
    t.manage_snapshots().rollback_to(s1.snapshot_id).commit()
    _commit(t, 3)
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.changes(s2.snapshot_id)
    assert [c.snapshot_id for c in t.changes(None, s1.snapshot_id)] == [s1.snapshot_id]
