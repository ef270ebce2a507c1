"""Which commits of a branch came after a watermark, and how a commit is reported.

Shared by :class:`~firn_airflow.triggers.new_snapshot.FirnNewSnapshotTrigger`, the
:class:`~firn_airflow.triggers.commit.FirnCommitTrigger` and the sensors' poke mode, so all
three agree on what "a new commit" is.

A watermark is a snapshot id or a commit time (epoch milliseconds). The new commits are the
branch head and its ancestors back to, not including, the watermark:

* a snapshot-id watermark on the branch's history ends the walk where it is met;
* one that is in the table but not on the branch's history (the branch was rolled back or
  reset, or the id belongs to another branch) is compared by commit time instead;
* one that is no longer in the table was expired; expiry keeps a branch's newest snapshots,
  so every snapshot still on the branch's history is newer than it;
* a time watermark ends the walk at the first snapshot committed at or before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from firn.errors import ValidationError
from firn.spec.snapshots import Operation
from firn.util.timestamps import to_timestamp_ms

if TYPE_CHECKING:
    from firn.spec.snapshots import Snapshot
    from firn.table.table import Table

OPERATIONS: tuple[str, ...] = tuple(op.value for op in Operation)


def check_table_name(table: object) -> str:
    """``table`` if it looks like ``"<namespace>.<table>"``; otherwise a :class:`ValidationError`."""
    if not isinstance(table, str):
        raise ValidationError(f"table must be a string '<namespace>.<table>', got {type(table).__name__}")
    parts = table.split(".")
    if len(parts) < 2 or any(not p.strip() for p in parts):
        raise ValidationError(f"table name {table!r} must be '<namespace>.<table>', e.g. 'db.events'")
    return table


def check_branch(branch: object) -> str:
    """A non-empty branch (or tag) name."""
    if not isinstance(branch, str) or not branch.strip():
        raise ValidationError(f"branch must be a non-empty string, got {branch!r}")
    return branch


def check_poll_interval(poll_interval: object) -> float:
    """A non-negative number of seconds."""
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, int | float) or poll_interval < 0:
        raise ValidationError(
            f"poll_interval must be a non-negative number of seconds, got {poll_interval!r}"
        )
    return float(poll_interval)


def parse_operations(operation: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """``None`` (any operation) or the snapshot operations to wait for, checked and sorted."""
    if operation is None:
        return None
    names = [operation] if isinstance(operation, str) else list(operation)
    if not names:
        raise ValidationError(f"operation is empty: give one of {', '.join(OPERATIONS)}, or None for any")
    for name in names:
        if name not in OPERATIONS:
            raise ValidationError(f"unknown snapshot operation {name!r}; valid: {', '.join(OPERATIONS)}")
    return tuple(sorted(set(names)))


def parse_snapshot_id(value: object, *, what: str = "after_snapshot_id") -> int | None:
    """A snapshot id from an int or a rendered template (``"123"``); None stays None."""
    if value is None or value == "" or value == "None":
        return None
    if isinstance(value, bool):
        raise ValidationError(f"{what} must be a snapshot id (an integer), got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"{what} must be a snapshot id (an integer), got {value!r}")


def parse_timestamp_ms(value: object, *, what: str = "after_timestamp") -> int | None:
    """Epoch milliseconds from a datetime, an ISO-8601 string or epoch milliseconds.

    Naive datetimes are taken as UTC (Airflow's own times are UTC). None stays None.
    """
    if value is None or value == "" or value == "None":
        return None
    return to_timestamp_ms(value, what=what)


def branch_head(table: Table, branch: str) -> Snapshot | None:
    """The snapshot ``branch`` points at (None if the branch does not exist yet)."""
    return table.snapshot_by_name(branch)


def snapshots_after(
    table: Table,
    *,
    branch: str,
    after_snapshot_id: int | None = None,
    after_timestamp_ms: int | None = None,
) -> list[Snapshot]:
    """The branch's commits after the watermark, oldest first (see the module docstring).

    Without a watermark every snapshot on the branch's history counts.
    """
    if after_snapshot_id is not None and after_timestamp_ms is not None:
        raise ValidationError("give after_snapshot_id or after_timestamp, not both")
    head = branch_head(table, branch)
    if head is None:
        return []
    newer: list[Snapshot] = []
    reached = False
    for snapshot in table.metadata.ancestors_of(head.snapshot_id):
        if after_snapshot_id is not None and snapshot.snapshot_id == after_snapshot_id:
            reached = True
            break
        if after_timestamp_ms is not None and snapshot.timestamp_ms <= after_timestamp_ms:
            break
        newer.append(snapshot)
    if after_snapshot_id is not None and not reached:
        watermark = table.snapshot_by_id(after_snapshot_id)
        if watermark is not None:  # off the branch's history: compare commit times
            newer = [s for s in newer if s.timestamp_ms > watermark.timestamp_ms]
    newer.reverse()
    return newer


def matching(snapshots: Sequence[Snapshot], operations: Sequence[str] | None) -> list[Snapshot]:
    """The snapshots whose operation is one of ``operations`` (all when None)."""
    if operations is None:
        return list(snapshots)
    return [s for s in snapshots if s.operation.value in operations]


def range_payload(snapshots: Sequence[Snapshot]) -> dict[str, Any]:
    """The snapshot range of consecutive commits (oldest first) as event fields.

    ``from_snapshot_id`` (exclusive: the oldest commit's parent, None for a table's first
    snapshot) and ``to_snapshot_id`` (inclusive: the newest), the range's ``operations``
    (sorted, each once) and ``maintenance_only``: every commit is a ``replace`` (compaction,
    delete or manifest rewrites, root flushes), so no row changed. These are the ends
    ``table.scan(from_snapshot_id=..., to_snapshot_id=...)`` and ``table.changelog(...)`` take.
    """
    if not snapshots:
        raise ValidationError("a commit range needs at least one snapshot")
    operations = sorted({s.operation.value for s in snapshots})
    return {
        "from_snapshot_id": snapshots[0].parent_snapshot_id,
        "to_snapshot_id": snapshots[-1].snapshot_id,
        "operations": operations,
        "maintenance_only": operations == [Operation.REPLACE.value],
    }


def snapshot_payload(table: str, branch: str, snapshot: Snapshot) -> dict[str, Any]:
    """A commit as JSON: identity, operation, time and the snapshot summary."""
    return {
        "table": table,
        "branch": branch,
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number,
        "timestamp_ms": snapshot.timestamp_ms,
        "operation": snapshot.operation.value,
        "summary": snapshot.summary.to_dict(),
    }


__all__ = [
    "OPERATIONS",
    "branch_head",
    "check_branch",
    "check_poll_interval",
    "check_table_name",
    "matching",
    "parse_operations",
    "parse_snapshot_id",
    "parse_timestamp_ms",
    "range_payload",
    "snapshot_payload",
    "snapshots_after",
]
