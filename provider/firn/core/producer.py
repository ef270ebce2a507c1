"""Snapshot producers: the shared core of every commit that creates a snapshot.

An operation (append, overwrite, delete, row delta, replace, ...) records the files it adds
and removes; :class:`SnapshotProducer.apply` turns them into a new snapshot on top of a base.
The format-specific part — writing manifests and a manifest list (v1-v3) or a root manifest
(v4) — is delegated to a *tree writer* (``firn.core.legacy.writer`` / ``firn.core.v4``).
Conflict validation (isolation levels) is a hook subclasses override.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from firn.core.commit import CommitContext
from firn.core.tree_types import PendingFiles, TreeWriter
from firn.core.trees import tree_writer_for
from firn.core.updates import (
    AddSnapshot,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
)
from firn.errors import ValidationError
from firn.spec import summary as S
from firn.spec.content import FileContent
from firn.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot, Summary, new_snapshot_id
from firn.spec.table_metadata import TableMetadata, now_ms
from firn.spec.versions import MIN_FORMAT_VERSION_ROW_LINEAGE


def _add_count(totals: dict[str, int], key: str, value: int) -> None:
    totals[key] = totals.get(key, 0) + value


def file_summary(changes: PendingFiles) -> dict[str, int]:
    """Appendix F metrics for the added and removed files."""
    s: dict[str, int] = {}
    for f in changes.added_data:
        _add_count(s, S.ADDED_DATA_FILES, 1)
        _add_count(s, S.ADDED_RECORDS, f.record_count)
        _add_count(s, S.ADDED_FILES_SIZE, f.file_size_in_bytes)
    for f in changes.removed_data:
        _add_count(s, S.DELETED_DATA_FILES, 1)
        _add_count(s, S.DELETED_RECORDS, f.record_count)
        _add_count(s, S.REMOVED_FILES_SIZE, f.file_size_in_bytes)
    for f in changes.added_deletes:
        _add_count(s, S.ADDED_DELETE_FILES, 1)
        _add_count(s, S.ADDED_FILES_SIZE, f.file_size_in_bytes)
        if f.content is FileContent.EQUALITY_DELETES:
            _add_count(s, S.ADDED_EQUALITY_DELETE_FILES, 1)
            _add_count(s, S.ADDED_EQUALITY_DELETES, f.record_count)
        else:
            _add_count(s, S.ADDED_DVS if f.is_dv else S.ADDED_POSITION_DELETE_FILES, 1)
            _add_count(s, S.ADDED_POSITION_DELETES, f.record_count)
    for f in changes.removed_deletes:
        _add_count(s, S.REMOVED_DELETE_FILES, 1)
        _add_count(s, S.REMOVED_FILES_SIZE, f.file_size_in_bytes)
        if f.content is FileContent.EQUALITY_DELETES:
            _add_count(s, S.REMOVED_EQUALITY_DELETE_FILES, 1)
            _add_count(s, S.REMOVED_EQUALITY_DELETES, f.record_count)
        else:
            _add_count(s, S.REMOVED_DVS if f.is_dv else S.REMOVED_POSITION_DELETE_FILES, 1)
            _add_count(s, S.REMOVED_POSITION_DELETES, f.record_count)
    return s


def build_summary(
    operation: Operation,
    changes: PendingFiles,
    parent: Snapshot | None,
    extra: Mapping[str, str],
    properties: Mapping[str, str],
) -> Summary:
    counts = file_summary(changes)
    props: dict[str, str] = {k: str(v) for k, v in counts.items()}
    partitions = {
        (f.spec_id, f.partition)
        for f in (
            *changes.added_data,
            *changes.removed_data,
            *changes.added_deletes,
            *changes.removed_deletes,
        )
    }
    props[S.CHANGED_PARTITION_COUNT] = str(len(partitions))
    for total, plus, minus in S.TOTALS:
        if parent is None:
            previous: int | None = 0
        else:
            raw = parent.summary.get(total)
            previous = int(raw) if raw is not None and raw.lstrip("-").isdigit() else None
        if previous is not None:
            props[total] = str(max(0, previous + counts.get(plus, 0) - counts.get(minus, 0)))
    props.update(extra)
    props.update(properties)
    return Summary(operation, MappingProxyType(props))


class SnapshotProducer:
    """Base of every action that commits a new snapshot."""

    operation: Operation = Operation.APPEND

    def __init__(
        self,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        stage_only: bool = False,
        written_files: Sequence[str] = (),
    ) -> None:
        self.branch = branch
        self.snapshot_properties = dict(snapshot_properties or {})
        # Stage the snapshot without moving any ref (write-audit-publish; Java ``stageOnly``):
        # it is added to the table and can later be cherry-picked onto main.
        self.stage_only = stage_only
        # Data and delete files written before the commit (deleted if it fails).
        self._written = tuple(written_files)
        # V4: compact existing manifests during this commit (seed 004 "Manifest Compaction").
        self.compact_manifests = False
        self.snapshot_id = new_snapshot_id()
        self._tree: TreeWriter | None = None
        self._tree_version: int | None = None

    # -- hooks for subclasses --------------------------------------------------------------------
    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        """The files this operation adds and removes, computed against ``base``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def validate(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> None:
        """Conflict validation against concurrent commits; raise ``ValidationConflict``."""

    def operation_for(self, changes: PendingFiles) -> Operation:
        return self.operation

    def make_tree_writer(self, base: TableMetadata) -> TreeWriter:
        """The tree writer for ``base``'s format version (maintenance actions override it)."""
        return tree_writer_for(base, self)

    # -- the action protocol -----------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        target = base.refs.get(self.branch)
        if target is not None and not target.is_branch:
            # Spec "Snapshot References": tags label one snapshot; only branches take commits.
            raise ValidationError(f"cannot commit to {self.branch!r}: it is a tag, and tags are immutable")
        parent = base.snapshot_for_ref(self.branch)
        if self.branch != MAIN_BRANCH and base.refs.get(self.branch) is None:
            # Committing to a new branch starts it from main's current snapshot (Java behaviour).
            parent = base.current_snapshot()
        while base.snapshot_by_id(self.snapshot_id) is not None:
            self.snapshot_id = new_snapshot_id()
        self.validate(base, parent, ctx)
        changes = self.changes(base, parent, ctx)
        if self._tree is None or self._tree_version != base.format_version:
            self._tree = self.make_tree_writer(base)
            self._tree_version = base.format_version
        sequence_number = base.next_sequence_number()
        result = self._tree.write(base, parent, changes, self.snapshot_id, sequence_number, ctx)
        summary = build_summary(
            self.operation_for(changes), changes, parent, result.summary_extra, self.snapshot_properties
        )
        lineage = base.format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent is not None else None,
            sequence_number=sequence_number,
            timestamp_ms=max(now_ms(), base.last_updated_ms),
            summary=summary,
            manifest_list=result.manifest_list,
            root_manifest=result.root_manifest,
            schema_id=base.current_schema_id,
            first_row_id=(base.next_row_id or 0) if lineage else None,
            added_rows=(result.added_rows or 0) if lineage else None,
        )
        if self.stage_only:
            return [AddSnapshot(snapshot)], [AssertTableUUID(base.table_uuid)]
        existing_ref = base.refs.get(self.branch)
        updates: list[TableUpdate] = [
            AddSnapshot(snapshot),
            SetSnapshotRef(
                self.branch,
                snapshot.snapshot_id,
                RefType.BRANCH,
                existing_ref.min_snapshots_to_keep if existing_ref else None,
                existing_ref.max_snapshot_age_ms if existing_ref else None,
                existing_ref.max_ref_age_ms if existing_ref else None,
            ),
        ]
        current_ref = base.ref(self.branch)
        requirements: list[TableRequirement] = [
            AssertTableUUID(base.table_uuid),
            AssertRefSnapshotId(self.branch, current_ref.snapshot_id if current_ref is not None else None),
        ]
        return updates, requirements

    def files_in_use(self) -> set[str]:
        return self._tree.files_in_use() if self._tree is not None else set()

    def written_files(self) -> Sequence[str]:
        return self._written


__all__ = [
    "SnapshotProducer",
    "build_summary",
    "file_summary",
]
