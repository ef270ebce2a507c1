"""What one v1-v3 snapshot changed: the ADDED and DELETED entries, stamped with the snapshot's
id, in the manifests that snapshot wrote."""

from __future__ import annotations

from firn.core.legacy.reader import read_manifests_parallel, snapshot_manifests
from firn.core.tree_types import SnapshotChanges
from firn.io.base import FileIO
from firn.spec.content import DataFile, EntryStatus, ManifestContent
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata


def legacy_snapshot_changes(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> SnapshotChanges:
    sid = snapshot.snapshot_id
    own = [m for m in snapshot_manifests(io, snapshot) if m.added_snapshot_id == sid]
    added_data: list[DataFile] = []
    removed_data: list[DataFile] = []
    added_deletes: list[DataFile] = []
    removed_deletes: list[DataFile] = []
    seqs: dict[str, int] = {}
    read = read_manifests_parallel(io, own, metadata, metadata.schema(), include_deleted=True)
    for m, entries in zip(own, read):
        is_data = m.content is ManifestContent.DATA
        for e in entries:
            if e.snapshot_id != sid or e.status is EntryStatus.EXISTING:
                continue
            if e.sequence_number is not None:
                seqs[e.data_file.file_key] = e.sequence_number
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
        sequence_numbers=seqs,
    )


__all__ = ["legacy_snapshot_changes"]
