"""What the two metadata trees (v1-v3 manifests and lists; V4 root and leaves) exchange with
the rest of the core: the file changes a commit stages, what a tree writer produced, and what
one snapshot changed when read back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from firn.core.commit import CommitContext
from firn.spec.content import DataFile
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata


@dataclass
class PendingFiles:
    """The file-level changes of one snapshot."""

    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    removed_data: list[DataFile] = field(default_factory=list)
    removed_deletes: list[DataFile] = field(default_factory=list)
    # Data files added with an explicit data sequence number (compaction keeps the starting one).
    data_sequence_number: int | None = None
    # V4: where removed files live (manifest location, ordinal), from planning; lets a commit
    # target a leaf entry with a manifest DV without searching the tree.
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.added_data or self.added_deletes or self.removed_data or self.removed_deletes)


@dataclass(frozen=True, slots=True)
class TreeResult:
    """What a tree writer produced for one attempt."""

    manifest_list: str | None = None
    root_manifest: str | None = None
    # v3+ row lineage: the rows assigned ids by this snapshot.
    added_rows: int | None = None
    # Metrics of the metadata work for the summary (manifests-created/kept/replaced...).
    summary_extra: Mapping[str, str] = field(default_factory=dict)
    files_written: tuple[str, ...] = ()


class TreeWriter(Protocol):
    """Writes the metadata tree (manifests + list, or root manifest) of a new snapshot."""

    def write(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
        ctx: CommitContext,
    ) -> TreeResult: ...

    def files_in_use(self) -> set[str]: ...


@dataclass(frozen=True)
class SnapshotChanges:
    """Files one snapshot added and removed.

    ``sequence_numbers`` maps each of those files' ``file_key`` to its data sequence number
    (the snapshot's own for the files it added, unless a compaction kept older ones; the
    number a removed file had while it was live), which decides which deletes apply to it."""

    snapshot_id: int
    sequence_number: int
    operation: str
    added_data_files: tuple[DataFile, ...] = ()
    removed_data_files: tuple[DataFile, ...] = ()
    added_delete_files: tuple[DataFile, ...] = ()
    removed_delete_files: tuple[DataFile, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)
    sequence_numbers: Mapping[str, int] = field(default_factory=dict)

    def data_sequence_number(self, f: DataFile) -> int:
        """The data sequence number of one of the files this snapshot added or removed."""
        return self.sequence_numbers.get(f.file_key, self.sequence_number)

    @property
    def added_dvs(self) -> tuple[DataFile, ...]:
        return tuple(f for f in self.added_delete_files if f.is_dv)

    @property
    def removed_dvs(self) -> tuple[DataFile, ...]:
        return tuple(f for f in self.removed_delete_files if f.is_dv)


__all__ = ["PendingFiles", "SnapshotChanges", "TreeResult", "TreeWriter"]
