"""What each snapshot changed: files added and removed (used by conflict validation and
``table.changes()``).

For v1-v3 snapshots the changes are the ADDED and DELETED entries, stamped with the snapshot's
id, in the manifests that snapshot wrote. For V4 snapshots they come from the root manifest
alone (``firn.core.v4.snapshot_changes``), in work proportional to the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.spec.content import DataFile, EntryStatus, ManifestContent
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata


@dataclass(frozen=True)
class SnapshotChanges:
    """Files one snapshot added and removed, with sequence numbers of the added ones."""

    snapshot_id: int
    sequence_number: int
    operation: str
    added_data_files: tuple[DataFile, ...] = ()
    removed_data_files: tuple[DataFile, ...] = ()
    added_delete_files: tuple[DataFile, ...] = ()
    removed_delete_files: tuple[DataFile, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def added_dvs(self) -> tuple[DataFile, ...]:
        return tuple(f for f in self.added_delete_files if f.is_dv)

    @property
    def removed_dvs(self) -> tuple[DataFile, ...]:
        return tuple(f for f in self.removed_delete_files if f.is_dv)


def legacy_snapshot_changes(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> SnapshotChanges:
    from firn.core.legacy.writer import snapshot_manifests
    from firn.core.planning import read_manifests_parallel

    sid = snapshot.snapshot_id
    own = [m for m in snapshot_manifests(io, snapshot) if m.added_snapshot_id == sid]
    added_data: list[DataFile] = []
    removed_data: list[DataFile] = []
    added_deletes: list[DataFile] = []
    removed_deletes: list[DataFile] = []
    read = read_manifests_parallel(io, own, metadata, metadata.schema(), include_deleted=True)
    for m, entries in zip(own, read):
        is_data = m.content is ManifestContent.DATA
        for e in entries:
            if e.snapshot_id != sid:
                continue
            if e.status is EntryStatus.ADDED:
                (added_data if is_data else added_deletes).append(e.data_file)
            elif e.status is EntryStatus.DELETED:
                (removed_data if is_data else removed_deletes).append(e.data_file)
    return SnapshotChanges(
        sid,
        snapshot.sequence_number,
        snapshot.summary.operation.value,
        tuple(added_data),
        tuple(removed_data),
        tuple(added_deletes),
        tuple(removed_deletes),
    )


def snapshot_changes(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> SnapshotChanges:
    """The files ``snapshot`` added and removed relative to its parent."""
    if snapshot.root_manifest is not None:
        from firn.core.v4.snapshot_changes import root_snapshot_changes

        return root_snapshot_changes(io, metadata, snapshot)
    return legacy_snapshot_changes(io, metadata, snapshot)


def snapshots_between(
    metadata: TableMetadata, from_snapshot_id: int | None, to_snapshot_id: int
) -> list[Snapshot]:
    """Ancestors of ``to`` back to (excluding) ``from``, oldest first; ``from`` must be an ancestor."""
    chain = metadata.ancestors_of(to_snapshot_id)
    out: list[Snapshot] = []
    for s in chain:
        if s.snapshot_id == from_snapshot_id:
            return list(reversed(out))
        out.append(s)
    if from_snapshot_id is None:
        return list(reversed(out))
    raise ValidationError(f"snapshot {from_snapshot_id} is not an ancestor of {to_snapshot_id}")


__all__ = ["SnapshotChanges", "legacy_snapshot_changes", "snapshot_changes", "snapshots_between"]
