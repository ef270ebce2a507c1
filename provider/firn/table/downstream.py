"""Exactly-once downstream tables: process a source table's commits in ranges, once each.

A pipeline that maintains a *target* table from a *source* table's changes records, in the
snapshot summary of each target commit, the last source snapshot that commit covers, under
``firn.source.<source table>.snapshot-id`` (as Iceberg's streaming writers record their
checkpoint in the snapshot summary, e.g. Flink's ``flink.max-committed-checkpoint-id``). The
target's data and its progress then land in one atomic commit, and the next run reads the
progress back from the target:

1. :func:`plan_increment` reads the target's recorded source snapshot ``r`` and returns the
   source range ``(r, end]`` (``end``: a given snapshot, e.g. the one a commit event names, or
   the source's current one);
2. the caller reads that range (``source.changelog(...)`` / ``source.scan(from_snapshot_id=...)``
   or ``firn.spark.read_changes``) and computes the target's change;
3. :func:`commit_increment` commits it with the progress in the summary, refusing (with
   :class:`~firn.errors.ValidationConflict`, never retried) when another run recorded progress
   since step 1.

So an event is only a wake-up and the target table is the truth: a retried task, a duplicate
event or a crash between the commit and its acknowledgement finds the range already recorded
and processes nothing twice, and no range is skipped, because each run starts where the last
commit ended. A range made only of ``replace`` commits (compaction, delete and manifest
rewrites, root flushes) changes no rows: :attr:`Increment.maintenance_only` lets the caller
skip it (nothing is committed; the next data range starts at the same place).

Maintenance on the target keeps the record: ``replace`` commits carry no progress, so
:func:`recorded_source_snapshot` walks the target's history back to the newest commit that
does. On ``main`` the commit also sets the record as a table property of the same name, read
only when expiry has removed every commit that carried it; without either the record is gone
and it raises rather than start again from the beginning.

The source must keep the snapshots of a pending range until it is processed: a range that
reaches into the source's expired history is refused (``resolve_range``), never shortened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firn.core.commit import SimpleAction
from firn.core.snapshot_range import SnapshotRange, resolve_range
from firn.core.updates import TableRequirement, TableUpdate
from firn.errors import InvalidMetadata, ValidationConflict, ValidationError
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.core.transaction import Transaction
    from firn.spec.snapshots import Snapshot
    from firn.table.table import Table

SOURCE_SNAPSHOT_KEY_PREFIX = "firn.source."
SOURCE_SNAPSHOT_KEY_SUFFIX = ".snapshot-id"


def source_snapshot_key(source: str) -> str:
    """The target snapshot-summary key recording progress on ``source`` (``"db.events"``):
    ``firn.source.db.events.snapshot-id``."""
    if not isinstance(source, str) or not source.strip():
        raise ValidationError(f"the source table name must be a non-empty string, got {source!r}")
    return f"{SOURCE_SNAPSHOT_KEY_PREFIX}{source}{SOURCE_SNAPSHOT_KEY_SUFFIX}"


def _recorded(metadata: TableMetadata, target: str, key: str, branch: str) -> int | None:
    head = metadata.ref(branch)
    if head is None:
        return None
    chain = metadata.ancestors_of(head.snapshot_id)
    for snapshot in chain:
        value = snapshot.summary.get(key)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                raise InvalidMetadata(
                    f"table {target} snapshot {snapshot.snapshot_id}: summary {key}={value!r} "
                    "is not a snapshot id"
                ) from None
    if chain and chain[-1].parent_snapshot_id is not None:
        kept = metadata.properties.get(key) if branch == MAIN_BRANCH else None
        if kept is not None:
            # Expiry removed the commits that carried the record; the table property written
            # with the latest one (commit_increment) still holds it.
            try:
                return int(kept)
            except ValueError:
                raise InvalidMetadata(
                    f"table {target}: property {key}={kept!r} is not a snapshot id"
                ) from None
        raise InvalidMetadata(
            f"table {target} records no {key} in the history still held (back to snapshot "
            f"{chain[-1].snapshot_id}, whose parent {chain[-1].parent_snapshot_id} was expired): "
            "the progress was expired with it; restore it with a commit carrying the key, or "
            "rebuild the table from the source"
        )
    return None


def recorded_source_snapshot(target: Table, source: str, *, branch: str = MAIN_BRANCH) -> int | None:
    """The last ``source`` snapshot that ``target``'s ``branch`` has processed, from the newest
    commit on its history that recorded one (or, once expiry removed them all, the table
    property of the same name on ``main``); None when none ever did (nothing processed yet).

    :class:`~firn.errors.InvalidMetadata` when the record was expired with the history
    that held it and no property keeps it, or is not a snapshot id."""
    return _recorded(target.metadata, target.name, source_snapshot_key(source), branch)


@dataclass(frozen=True)
class Increment:
    """The source range one run processes into a target: ``(from_snapshot_id, to_snapshot_id]``.

    ``from_snapshot_id`` is the target's recorded progress (None: from the source's first
    snapshot), ``target_snapshot_id`` the target's branch head it was read from."""

    source: str
    target: str
    branch: str
    range: SnapshotRange
    target_snapshot_id: int | None

    @property
    def from_snapshot_id(self) -> int | None:
        return self.range.from_snapshot_id

    @property
    def to_snapshot_id(self) -> int | None:
        return self.range.to_snapshot_id

    @property
    def is_empty(self) -> bool:
        """Nothing new: the range was already processed (or the source has no snapshots)."""
        return self.range.is_empty

    @property
    def operations(self) -> tuple[str, ...]:
        """The snapshot operations in the range, sorted."""
        return tuple(sorted({s.summary.operation.value for s in self.range.snapshots}))

    @property
    def maintenance_only(self) -> bool:
        """Every commit of a non-empty range is a ``replace`` (no row changed): skip it."""
        return not self.is_empty and not self.range.data_changes

    @property
    def snapshot_properties(self) -> dict[str, str]:
        """The summary properties the target commit of this range carries."""
        if self.to_snapshot_id is None:
            raise ValidationError(f"source {self.source} has no snapshots: there is nothing to record")
        return {source_snapshot_key(self.source): str(self.to_snapshot_id)}

    def to_dict(self) -> dict[str, object]:
        """JSON-serializable form (XCom)."""
        return {
            "source": self.source,
            "target": self.target,
            "branch": self.branch,
            "from_snapshot_id": self.from_snapshot_id,
            "to_snapshot_id": self.to_snapshot_id,
            "target_snapshot_id": self.target_snapshot_id,
            "snapshot_ids": list(self.range.snapshot_ids),
            "operations": list(self.operations),
            "maintenance_only": self.maintenance_only,
        }


def _is_ancestor(metadata: TableMetadata, ancestor: int, of: int) -> bool:
    return any(s.snapshot_id == ancestor for s in metadata.ancestors_of(of))


def plan_increment(
    source: Table,
    target: Table,
    *,
    to_snapshot_id: int | None = None,
    branch: str = MAIN_BRANCH,
) -> Increment:
    """The source range ``target`` has yet to process: (its recorded progress, ``to_snapshot_id``
    or the source's current snapshot].

    A ``to_snapshot_id`` the target has already processed (a duplicate or late event, its
    snapshot possibly expired since while the recorded one is not) gives an empty range. A recorded snapshot that is no longer an ancestor of the end (the source was
    rolled back past it) or whose range reaches into expired history raises a
    :class:`~firn.errors.FirnError` naming the cause; a range is never shortened silently."""
    recorded = recorded_source_snapshot(target, source.name, branch=branch)
    head = target.metadata.ref(branch)
    target_head = head.snapshot_id if head is not None else None
    end = to_snapshot_id
    if end is None:
        current = source.current_snapshot()
        end = current.snapshot_id if current is not None else None
    if recorded is not None and end is not None:
        known_end = source.snapshot_by_id(end) is not None
        if not known_end and source.snapshot_by_id(recorded) is not None:
            # A late event whose snapshot has been expired since: expiry keeps the newest
            # snapshots, so it is older than the recorded one, which is still there.
            return Increment(
                source.name, target.name, branch, SnapshotRange(recorded, recorded, ()), target_head
            )
        if recorded == end or _is_ancestor(source.metadata, end, recorded):
            # Already processed up to (or past) the end: nothing to do.
            return Increment(
                source.name, target.name, branch, SnapshotRange(recorded, recorded, ()), target_head
            )
        if not _is_ancestor(source.metadata, recorded, end) and source.snapshot_by_id(recorded) is not None:
            raise ValidationError(
                f"table {target.name} processed {source.name} up to snapshot {recorded}, which is "
                f"not an ancestor of snapshot {end}: {source.name} was rolled back or reset; "
                "rebuild the target or record a new starting point"
            )
    if end is None:
        return Increment(source.name, target.name, branch, SnapshotRange(recorded, None, ()), target_head)
    rng = resolve_range(source.metadata, source.name, from_snapshot_id=recorded, to_snapshot_id=end)
    return Increment(source.name, target.name, branch, rng, target_head)


def commit_increment(
    target: Table,
    increment: Increment,
    write: Callable[[Transaction, Mapping[str, str]], object],
) -> Snapshot | None:
    """Commit ``increment``'s result to ``target`` with its progress, as one snapshot.

    ``write(tx, snapshot_properties)`` stages the target's change, passing the properties to
    the write (``tx.overwrite(data, snapshot_properties=props)``, ``tx.append(...)``, ...).
    The commit checks, on the table as it is then, that the target's recorded progress is
    still ``increment.from_snapshot_id``; if another run recorded progress meanwhile it raises
    :class:`~firn.errors.ValidationConflict` and commits nothing (its written files deleted).
    Returns the new target snapshot."""
    if increment.target != target.name:
        raise ValidationError(f"increment for {increment.target} cannot be committed to {target.name}")
    if increment.is_empty:
        raise ValidationError(
            f"increment of {increment.source} into {increment.target} is empty: nothing to commit"
        )
    key = source_snapshot_key(increment.source)

    def check(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        now = _recorded(base, target.name, key, increment.branch)
        if now != increment.from_snapshot_id:
            raise ValidationConflict(
                f"table {target.name} recorded {increment.source} up to snapshot {now} since this "
                f"run planned the range ({increment.from_snapshot_id}, {increment.to_snapshot_id}]: "
                "another run processed it; nothing was committed"
            )
        return [], []

    with target.transaction() as tx:
        tx.add_action(SimpleAction(check))
        write(tx, increment.snapshot_properties)
        if increment.branch == MAIN_BRANCH:
            # A copy of the record that survives the target's own maintenance: compaction
            # (replace) commits carry no record, and expiry may remove every commit that did.
            tx.set_properties(increment.snapshot_properties)
        result = tx.commit()
    snapshot = result.snapshot
    if snapshot is None or snapshot.summary.get(key) != str(increment.to_snapshot_id):
        raise ValidationError(
            f"the write committed to {target.name} did not record {key} in its snapshot summary: "
            "pass the snapshot_properties given to write() to the write"
        )
    return snapshot


__all__ = [
    "SOURCE_SNAPSHOT_KEY_PREFIX",
    "SOURCE_SNAPSHOT_KEY_SUFFIX",
    "Increment",
    "commit_increment",
    "plan_increment",
    "recorded_source_snapshot",
    "source_snapshot_key",
]
