"""One factory for the two metadata trees: a snapshot with a root manifest (V4) is read,
planned and written by ``firn.core.v4``; one with a manifest list (v1-v3) by
``firn.core.legacy``. Everything above the trees goes through here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from firn.core.legacy.planning import legacy_delete_entries, plan_legacy
from firn.core.legacy.snapshot_changes import legacy_snapshot_changes
from firn.core.legacy.writer import LegacyTreeWriter
from firn.core.planning import FileScanTask
from firn.core.tree_types import SnapshotChanges, TreeWriter
from firn.core.v4.planning import plan_root, root_delete_entries
from firn.core.v4.snapshot_changes import root_snapshot_changes
from firn.core.v4.writer import RootTreeWriter
from firn.errors import ValidationError
from firn.expressions import BooleanExpression
from firn.io.base import FileIO
from firn.spec.content import ManifestEntry
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.core.producer import SnapshotProducer


def tree_writer_for(metadata: TableMetadata, producer: SnapshotProducer) -> TreeWriter:
    """The writer of the metadata tree of ``producer``'s next snapshot."""
    if metadata.uses_root_manifest:
        return RootTreeWriter(producer)
    return LegacyTreeWriter(producer)


def plan_snapshot(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    schema: Schema,
    row_filter: BooleanExpression,
    *,
    case_sensitive: bool = True,
) -> Sequence[FileScanTask]:
    """The scan tasks of ``snapshot``'s live data files matching ``row_filter``."""
    if snapshot.root_manifest is not None:
        return plan_root(io, metadata, snapshot, schema, row_filter, case_sensitive=case_sensitive)
    return plan_legacy(io, metadata, snapshot, schema, row_filter, case_sensitive=case_sensitive)


def live_delete_entries(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestEntry]:
    """Every delete file live in ``snapshot``, as entries carrying their sequence numbers."""
    if snapshot.root_manifest is not None:
        return root_delete_entries(io, metadata, snapshot)
    return legacy_delete_entries(io, metadata, snapshot)


def snapshot_changes(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> SnapshotChanges:
    """The files ``snapshot`` added and removed relative to its parent (for V4, read from its
    root alone, in work proportional to the change)."""
    if snapshot.root_manifest is not None:
        return root_snapshot_changes(io, metadata, snapshot)
    return legacy_snapshot_changes(io, metadata, snapshot)


def snapshots_between(
    metadata: TableMetadata, from_snapshot_id: int | None, to_snapshot_id: int
) -> list[Snapshot]:
    """The validation history of a commit: the ancestors of ``to`` after ``from``, oldest first.

    ``from`` (the snapshot an operation was planned on) may itself have been expired: as in
    Iceberg Java (``MergingSnapshotProducer.validationHistory``), the history is complete when
    the oldest retained ancestor of ``to`` has ``from`` as its parent, since every snapshot
    committed after ``from`` is still recorded. Otherwise ``ValidationError`` names the cause:
    ``from`` was rolled back out of the branch, or the history after it was expired."""
    chain = metadata.ancestors_of(to_snapshot_id)
    out: list[Snapshot] = []
    for s in chain:
        if s.snapshot_id == from_snapshot_id:
            return list(reversed(out))
        out.append(s)
    if from_snapshot_id is None:
        return list(reversed(out))
    oldest = chain[-1] if chain else None
    if oldest is not None and oldest.parent_snapshot_id == from_snapshot_id:
        return list(reversed(out))  # ``from`` expired, everything after it retained
    raise ValidationError(_history_gap(metadata, from_snapshot_id, to_snapshot_id, oldest))


def _history_gap(
    metadata: TableMetadata, from_snapshot_id: int, to_snapshot_id: int, oldest: Snapshot | None
) -> str:
    """Why the history between ``from`` and ``to`` cannot be validated (the real cause)."""
    if metadata.snapshot_by_id(from_snapshot_id) is not None:
        return (
            f"snapshot {from_snapshot_id} is no longer an ancestor of snapshot {to_snapshot_id}: "
            "the branch was rolled back or replaced past it"
        )
    if oldest is None or oldest.parent_snapshot_id is None:
        return (
            f"snapshot {from_snapshot_id} is not in the history of snapshot {to_snapshot_id}: it was "
            "rolled back out of the branch (and has since been expired)"
        )
    return (
        f"snapshot {from_snapshot_id} was expired together with the history after it: the retained "
        f"history of snapshot {to_snapshot_id} starts at snapshot {oldest.snapshot_id}, whose parent "
        f"{oldest.parent_snapshot_id} is not {from_snapshot_id}, so the commits in between cannot be "
        "validated"
    )


__all__ = ["live_delete_entries", "plan_snapshot", "snapshot_changes", "snapshots_between", "tree_writer_for"]
