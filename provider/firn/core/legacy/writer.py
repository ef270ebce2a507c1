"""The v1-v3 metadata tree of a new snapshot: manifests plus a manifest list.

Per attempt: new files go into new manifests (written once and reused by retries, since
sequence numbers are inherited rather than baked in); manifests holding removed files are
rewritten with DELETED entries; small manifests are merged as Iceberg Java's merge append
does (``commit.manifest.min-count-to-merge`` / ``commit.manifest.target-size-bytes``); then a
manifest list is written with this attempt's sequence number and (v3) first row ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from firn.core.commit import CommitContext
from firn.core.legacy.reader import snapshot_manifests
from firn.core.metadata_io import metadata_dir
from firn.core.tree_types import PendingFiles, TreeResult
from firn.errors import ValidationConflict
from firn.manifests.manifest import read_manifest, write_manifest
from firn.manifests.manifest_list import write_manifest_list
from firn.spec import summary as S
from firn.spec import values
from firn.spec.content import (
    DataFile,
    EntryStatus,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import DoubleType, FloatType, StructType

if TYPE_CHECKING:
    from firn.core.producer import SnapshotProducer


def _summary_may_contain(
    manifest: ManifestFile, partition: tuple[object, ...], types: Sequence[object]
) -> bool:
    """Whether a manifest's partition summaries admit a partition tuple (spec element 508)."""
    summaries = manifest.partitions
    if not summaries or len(summaries) != len(partition):
        return True
    for value, summary, t in zip(partition, summaries, types):
        if value is None:
            if not summary.contains_null:
                return False
            continue
        if isinstance(value, float) and value != value:
            if summary.contains_nan is False:
                return False
            continue
        if summary.lower_bound is None or summary.upper_bound is None:
            # Only nulls (or NaNs) in this field.
            return False
        try:
            lower = values.from_bytes(t, summary.lower_bound)  # type: ignore[arg-type]
            upper = values.from_bytes(t, summary.upper_bound)  # type: ignore[arg-type]
            if isinstance(t, FloatType | DoubleType):
                if not (lower <= value <= upper):
                    return False
            elif not (lower <= value <= upper):
                return False
        except TypeError:
            return True
    return True


def _ptype(base: TableMetadata, spec_id: int) -> StructType | None:
    from firn.core.planning import partition_type_or_none

    spec = base.specs.get(spec_id)
    return partition_type_or_none(spec, base.schema()) if spec is not None else None


class LegacyTreeWriter:
    """Writes manifests and a manifest list for one snapshot producer, across attempts."""

    def __init__(self, producer: SnapshotProducer) -> None:
        self.producer = producer
        self._new_data: list[ManifestFile] | None = None
        self._new_deletes: list[ManifestFile] | None = None
        self._filtered: dict[tuple[str, frozenset[str]], tuple[ManifestFile, frozenset[str]]] = {}
        self._merged: dict[tuple[str, ...], ManifestFile] = {}
        self._in_use: set[str] = set()
        self._counter = 0

    # -- locations ---------------------------------------------------------------------------------
    def _manifest_location(self, base: TableMetadata) -> str:
        self._counter += 1
        return f"{metadata_dir(base)}/{uuid.uuid4()}-m{self._counter}.avro"

    def _list_location(self, base: TableMetadata, snapshot_id: int, attempt: int) -> str:
        return f"{metadata_dir(base)}/snap-{snapshot_id}-{attempt}-{uuid.uuid4()}.avro"

    # -- writing -----------------------------------------------------------------------------------
    def _write(
        self,
        base: TableMetadata,
        ctx: CommitContext,
        entries: Sequence[ManifestEntry],
        spec_id: int,
        content: ManifestContent,
    ) -> ManifestFile:
        location = self._manifest_location(base)
        ctx.written.append(location)
        return write_manifest(
            ctx.io.new_output(location),
            entries,
            spec=base.spec_by_id(spec_id),
            schema=base.schema(),
            format_version=base.format_version,
            content=content,
            snapshot_id=self.producer.snapshot_id,
        )

    def _new_manifests(
        self,
        base: TableMetadata,
        ctx: CommitContext,
        files: Iterable[DataFile],
        content: ManifestContent,
        data_sequence_number: int | None,
    ) -> list[ManifestFile]:
        by_spec: dict[int, list[ManifestEntry]] = {}
        for f in files:
            by_spec.setdefault(f.spec_id, []).append(
                ManifestEntry(EntryStatus.ADDED, self.producer.snapshot_id, data_sequence_number, None, f)
            )
        return [
            self._write(base, ctx, entries, spec_id, content) for spec_id, entries in sorted(by_spec.items())
        ]

    def _filter(
        self,
        base: TableMetadata,
        ctx: CommitContext,
        manifests: Sequence[ManifestFile],
        removed: dict[str, DataFile],
    ) -> tuple[list[ManifestFile], set[str], int]:
        """Rewrite manifests that hold removed files; returns (manifests, found paths, replaced count)."""
        if not removed:
            return list(manifests), set(), 0
        out: list[ManifestFile] = []
        found: set[str] = set()
        replaced = 0
        schema = base.schema()
        by_spec: dict[int, list[DataFile]] = {}
        for f in removed.values():
            by_spec.setdefault(f.spec_id, []).append(f)
        for m in manifests:
            candidates = by_spec.get(m.partition_spec_id, [])
            if m.partitions and candidates:
                try:
                    types = [
                        f.field_type
                        for f in base.spec_by_id(m.partition_spec_id).partition_type(schema).fields
                    ]
                    candidates = [f for f in candidates if _summary_may_contain(m, f.partition, types)]
                except Exception:  # a spec whose source column was dropped: don't prune
                    pass
            if not candidates:
                out.append(m)
                continue
            wanted = frozenset(f.file_key for f in candidates)
            cached = self._filtered.get((m.manifest_path, wanted))
            if cached is not None:
                new_m, hits = cached
                out.append(new_m)
                if new_m is not m:
                    replaced += 1
                    self._in_use.add(new_m.manifest_path)
                found |= hits
                continue
            entries = read_manifest(
                ctx.io.new_input(m.manifest_path), m, partition_type=_ptype(base, m.partition_spec_id)
            )
            hit_paths = frozenset(e.data_file.file_key for e in entries if e.data_file.file_key in wanted)
            if not hit_paths:
                self._filtered[(m.manifest_path, wanted)] = (m, hit_paths)
                out.append(m)
                continue
            rewritten = [
                ManifestEntry(
                    EntryStatus.DELETED if e.data_file.file_key in hit_paths else EntryStatus.EXISTING,
                    self.producer.snapshot_id if e.data_file.file_key in hit_paths else e.snapshot_id,
                    e.sequence_number,
                    e.file_sequence_number,
                    e.data_file,
                )
                for e in entries
            ]
            new_m = self._write(base, ctx, rewritten, m.partition_spec_id, m.content)
            self._filtered[(m.manifest_path, wanted)] = (new_m, hit_paths)
            self._in_use.add(new_m.manifest_path)
            out.append(new_m)
            found |= hit_paths
            replaced += 1
        return out, found, replaced

    def _merge(
        self, base: TableMetadata, ctx: CommitContext, manifests: list[ManifestFile], content: ManifestContent
    ) -> tuple[list[ManifestFile], int]:
        """Java's merge append (ManifestMergeManager): bin-pack per spec, merge full bins."""
        props = base.table_properties
        if not props.manifest_merge_enabled or len(manifests) < 2:
            return manifests, 0
        target = props.manifest_target_size_bytes
        min_count = props.manifest_min_merge_count
        first = manifests[0]
        groups: dict[int, list[ManifestFile]] = {}
        for m in manifests:
            groups.setdefault(m.partition_spec_id, []).append(m)
        out: list[ManifestFile] = []
        merged_count = 0
        for spec_id in sorted(groups, reverse=True):
            for bin_ in _pack_end(groups[spec_id], target):
                if len(bin_) == 1 or (first in bin_ and len(bin_) < min_count):
                    out.extend(bin_)
                    continue
                key = tuple(m.manifest_path for m in bin_)
                merged = self._merged.get(key)
                if merged is None:
                    merged = self._merge_bin(base, ctx, bin_, spec_id, content)
                    self._merged[key] = merged
                self._in_use.add(merged.manifest_path)
                out.append(merged)
                merged_count += len(bin_)
        return out, merged_count

    def _merge_bin(
        self,
        base: TableMetadata,
        ctx: CommitContext,
        bin_: Sequence[ManifestFile],
        spec_id: int,
        content: ManifestContent,
    ) -> ManifestFile:
        sid = self.producer.snapshot_id
        entries: list[ManifestEntry] = []
        for m in bin_:
            for e in read_manifest(
                ctx.io.new_input(m.manifest_path),
                m,
                partition_type=_ptype(base, spec_id),
                include_deleted=True,
            ):
                if e.status is EntryStatus.DELETED:
                    # Deletes are only carried in the snapshot that made them.
                    if e.snapshot_id == sid:
                        entries.append(e)
                elif e.status is EntryStatus.ADDED and e.snapshot_id == sid:
                    entries.append(e)
                else:
                    entries.append(
                        ManifestEntry(
                            EntryStatus.EXISTING,
                            e.snapshot_id,
                            e.sequence_number,
                            e.file_sequence_number,
                            e.data_file,
                        )
                    )
        return self._write(base, ctx, entries, spec_id, content)

    # -- the tree --------------------------------------------------------------------------------
    def write(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
        ctx: CommitContext,
    ) -> TreeResult:
        self._in_use = set()
        parent_manifests = snapshot_manifests(ctx.io, parent)
        if self._new_data is None:
            self._new_data = self._new_manifests(
                base, ctx, changes.added_data, ManifestContent.DATA, changes.data_sequence_number
            )
            self._new_deletes = self._new_manifests(
                base, ctx, changes.added_deletes, ManifestContent.DELETES, None
            )
        assert self._new_deletes is not None
        self._in_use |= {m.manifest_path for m in (*self._new_data, *self._new_deletes)}

        existing_data = [m for m in parent_manifests if m.content is ManifestContent.DATA]
        existing_deletes = [m for m in parent_manifests if m.content is ManifestContent.DELETES]
        removed_data = {f.file_key: f for f in changes.removed_data}
        removed_deletes = {f.file_key: f for f in changes.removed_deletes}
        data_kept, found_data, replaced_data = self._filter(base, ctx, existing_data, removed_data)
        delete_kept, found_deletes, replaced_deletes = self._filter(
            base, ctx, existing_deletes, removed_deletes
        )
        missing = (set(removed_data) - found_data) | (set(removed_deletes) - found_deletes)
        if missing:
            sample = ", ".join(sorted(missing)[:3])
            raise ValidationConflict(
                f"cannot remove {len(missing)} file(s) that are no longer in the table (removed by a "
                f"concurrent commit?): {sample}"
            )

        data_manifests, merged_data = self._merge(
            base, ctx, [*self._new_data, *data_kept], ManifestContent.DATA
        )
        delete_manifests, merged_deletes = self._merge(
            base, ctx, [*self._new_deletes, *delete_kept], ManifestContent.DELETES
        )
        manifests = [*data_manifests, *delete_manifests]

        list_location = self._list_location(base, snapshot_id, ctx.attempt)
        ctx.written.append(list_location)
        result = write_manifest_list(
            ctx.io.new_output(list_location),
            manifests,
            format_version=base.format_version,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            first_row_id=base.next_row_id,
        )
        self._in_use.add(list_location)
        added_rows = None
        if result.next_row_id is not None and base.next_row_id is not None:
            added_rows = result.next_row_id - base.next_row_id
        created = len(
            [m for m in manifests if m.manifest_path in self._in_use and m.manifest_path != list_location]
        )
        extra = {
            S.MANIFESTS_CREATED: str(created),
            S.MANIFESTS_KEPT: str(len(manifests) - created),
            S.MANIFESTS_REPLACED: str(replaced_data + replaced_deletes + merged_data + merged_deletes),
        }
        return TreeResult(manifest_list=list_location, added_rows=added_rows, summary_extra=extra)

    def files_in_use(self) -> set[str]:
        return set(self._in_use)


def _pack_end(items: Sequence[ManifestFile], target: int) -> list[list[ManifestFile]]:
    """Bin-pack from the end with lookback 1 (Java ``ListPacker.packEnd``): older manifests fill
    full bins; the bin with the newest manifests stays partial."""
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    size = 0
    for m in reversed(items):
        if current and size + m.manifest_length > target:
            bins.append(current)
            current, size = [], 0
        current.append(m)
        size += m.manifest_length
    if current:
        bins.append(current)
    return [list(reversed(b)) for b in reversed(bins)]


__all__ = ["LegacyTreeWriter"]
