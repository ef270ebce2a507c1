"""The snapshot range of an incremental or changelog read: ``(from, to]`` along one line of history.

A range is given by its ends, each as a snapshot id or as a time:

* ``from`` is **exclusive**: the range holds the snapshots committed *after* it. By time,
  ``from_timestamp=t`` starts after the newest ancestor of ``to`` committed at or before
  ``t`` (the state ``scan(as_of=t)`` reads on a linear history), so the range holds the
  ancestors committed after ``t``. Without a start the range goes back to the table's first
  snapshot.
* ``to`` is **inclusive**: ``to_snapshot_id``, or ``to_timestamp=t`` for the snapshot current
  at ``t`` (exactly as ``as_of=t``); by default the current snapshot of ``main``.

These are Iceberg's ``start-snapshot-id`` / ``end-snapshot-id`` / ``start-timestamp`` /
``end-timestamp`` read options (Java ``IncrementalScan.fromSnapshotExclusive`` /
``toSnapshot``). ``from`` must be an ancestor of ``to``: a snapshot on another branch or one
rolled back out of ``to``'s history is refused. ``from`` may itself have been expired as long
as every snapshot of the range is still in the metadata (it is the parent of the oldest
retained ancestor), as Java allows: the range's changes are all still recorded (a changelog
still refuses it when the range's first snapshot removed files, whose rows only the expired
snapshot's files held: ``firn.core.changelog``). A range that
reaches into expired history, whose changes are no longer recorded, is refused with the
snapshot where the recorded history starts, never silently shortened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from firn.errors import NotFound, ValidationError
from firn.spec.snapshots import Operation, Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import TimestampLike, to_timestamp_ms


@dataclass(frozen=True)
class SnapshotRange:
    """The snapshots ``(from_snapshot_id, to_snapshot_id]`` of one line of history, oldest first.

    ``from_snapshot_id`` is None when the range starts at the table's first snapshot;
    ``to_snapshot_id`` is None only for a table without snapshots (an empty range)."""

    from_snapshot_id: int | None
    to_snapshot_id: int | None
    snapshots: tuple[Snapshot, ...]

    @property
    def snapshot_ids(self) -> tuple[int, ...]:
        """The ids of the range's snapshots, oldest first."""
        return tuple(s.snapshot_id for s in self.snapshots)

    @property
    def is_empty(self) -> bool:
        return not self.snapshots

    @property
    def appends(self) -> tuple[Snapshot, ...]:
        """The ``append`` snapshots: what an incremental append scan reads."""
        return tuple(s for s in self.snapshots if s.summary.operation is Operation.APPEND)

    @property
    def data_changes(self) -> tuple[Snapshot, ...]:
        """The snapshots that may change rows (all but ``replace``: compaction, delete and
        manifest rewrites and root flushes change no data): what a changelog reads, in the
        order of their ``_change_ordinal``."""
        return tuple(s for s in self.snapshots if s.summary.operation is not Operation.REPLACE)

    def to_dict(self) -> dict[str, object]:
        """JSON-serializable form: the ends and each snapshot's id, operation and time."""
        return {
            "from_snapshot_id": self.from_snapshot_id,
            "to_snapshot_id": self.to_snapshot_id,
            "snapshots": [
                {
                    "snapshot_id": s.snapshot_id,
                    "operation": s.summary.operation.value,
                    "timestamp_ms": s.timestamp_ms,
                }
                for s in self.snapshots
            ],
        }


def resolve_range(
    metadata: TableMetadata,
    table_name: str,
    *,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    from_timestamp: TimestampLike | None = None,
    to_timestamp: TimestampLike | None = None,
) -> SnapshotRange:
    """The range ``(from, to]`` (see the module docstring); ``NotFound`` or ``ValidationError``
    naming the cause when it cannot be read: an unknown or expired end, a start that is not an
    ancestor of the end, or a range reaching into expired history."""
    if from_snapshot_id is not None and from_timestamp is not None:
        raise ValidationError("give the range's start as from_snapshot_id or from_timestamp, not both")
    if to_snapshot_id is not None and to_timestamp is not None:
        raise ValidationError("give the range's end as to_snapshot_id or to_timestamp, not both")
    for name, value in (("from_snapshot_id", from_snapshot_id), ("to_snapshot_id", to_snapshot_id)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValidationError(f"{name} must be a snapshot id (an integer), got {value!r}")
    from_ms = to_timestamp_ms(from_timestamp, what="from_timestamp") if from_timestamp is not None else None
    to_ms = to_timestamp_ms(to_timestamp, what="to_timestamp") if to_timestamp is not None else None
    if from_ms is not None and to_ms is not None and from_ms > to_ms:
        raise ValidationError(f"from_timestamp {from_ms} ms is after to_timestamp {to_ms} ms")

    end = _end(metadata, table_name, to_snapshot_id, to_ms)
    if end is None:
        if from_snapshot_id is not None:
            raise NotFound(f"table {table_name} has no snapshots, so none with id {from_snapshot_id}")
        return SnapshotRange(None, None, ())
    chain = metadata.ancestors_of(end.snapshot_id)  # newest first, stops at an expired parent
    if from_ms is not None:
        start = _start_at(metadata, table_name, chain, from_ms)
    elif from_snapshot_id is not None:
        start = from_snapshot_id
    else:
        start = _table_start(table_name, chain)
    return SnapshotRange(start, end.snapshot_id, _between(metadata, table_name, chain, start))


def _end(
    metadata: TableMetadata, table_name: str, snapshot_id: int | None, at_ms: int | None
) -> Snapshot | None:
    if snapshot_id is not None:
        snap = metadata.snapshot_by_id(snapshot_id)
        if snap is None:
            raise NotFound(
                f"table {table_name} has no snapshot {snapshot_id} to end the range at (expired, or "
                "never a snapshot of this table)"
            )
        return snap
    if at_ms is not None:
        snap = metadata.snapshot_as_of(at_ms)
        if snap is None:
            first = metadata.snapshot_log[0].timestamp_ms if metadata.snapshot_log else None
            raise NotFound(
                f"table {table_name} has no snapshot at or before to_timestamp {at_ms} ms"
                + (f"; its recorded history starts at {first} ms" if first is not None else "")
            )
        return snap
    return metadata.current_snapshot()


def _expired_history(table_name: str, oldest: Snapshot) -> str:
    return (
        f"the recorded history of table {table_name} starts at snapshot {oldest.snapshot_id} "
        f"(committed at {oldest.timestamp_ms} ms): its parent {oldest.parent_snapshot_id} and "
        "everything before it have been expired"
    )


def _table_start(table_name: str, chain: Sequence[Snapshot]) -> int | None:
    """No start given: from the table's first snapshot, which must still be recorded."""
    oldest = chain[-1]
    if oldest.parent_snapshot_id is None:
        return None
    raise NotFound(
        f"cannot read the changes since the table was created: {_expired_history(table_name, oldest)}; "
        f"pass from_snapshot_id={oldest.parent_snapshot_id} to read the changes still recorded"
    )


def _start_at(metadata: TableMetadata, table_name: str, chain: Sequence[Snapshot], at_ms: int) -> int | None:
    """The exclusive start for ``from_timestamp``: the newest ancestor committed at or before it."""
    for s in chain:
        if s.timestamp_ms <= at_ms:
            return s.snapshot_id
    oldest = chain[-1]
    if oldest.parent_snapshot_id is None:
        return None  # the table's whole history is after the timestamp
    raise NotFound(
        f"cannot read the changes after {at_ms} ms: {_expired_history(table_name, oldest)}, so the "
        f"changes between {at_ms} ms and {oldest.timestamp_ms} ms are no longer recorded"
    )


def _between(
    metadata: TableMetadata, table_name: str, chain: Sequence[Snapshot], start: int | None
) -> tuple[Snapshot, ...]:
    end = chain[0]
    out: list[Snapshot] = []
    for s in chain:
        if s.snapshot_id == start:
            return tuple(reversed(out))
        out.append(s)
    oldest = chain[-1]
    if start is None and oldest.parent_snapshot_id is None:
        return tuple(reversed(out))
    if start is not None and start == oldest.parent_snapshot_id:
        # The start itself is expired, but every snapshot after it is recorded (Java allows this:
        # its end is a "parent ancestor" of the range).
        return tuple(reversed(out))
    known = metadata.snapshot_by_id(start) if start is not None else None
    if known is not None:
        if any(s.snapshot_id == end.snapshot_id for s in metadata.ancestors_of(start)):
            raise ValidationError(
                f"snapshot {start} is newer than snapshot {end.snapshot_id} (it descends from it): "
                "the range's start must be an ancestor of its end"
            )
        raise ValidationError(
            f"snapshot {start} is not an ancestor of snapshot {end.snapshot_id} in table {table_name}: "
            "it is on another branch, or was rolled back out of this history"
        )
    if oldest.parent_snapshot_id is not None:
        raise NotFound(
            f"snapshot {start} is not in table {table_name}'s metadata, and the range cannot start "
            f"before the recorded history: {_expired_history(table_name, oldest)}"
        )
    raise NotFound(
        f"table {table_name} has no snapshot {start}, and none of the ancestors of snapshot "
        f"{end.snapshot_id} has it as parent (never a snapshot of this history)"
    )


__all__ = ["SnapshotRange", "resolve_range"]
