"""V4 commits (seed 004 "Commit Procedure"): one new root manifest per snapshot.

Starting from the parent's root (or the legacy manifest list on the first commit after an
upgrade), an attempt:

1. carries entries over — DELETED ones dropped, ADDED ones now EXISTING;
2. removes files: a root entry becomes DELETED in this snapshot; a file in a leaf is removed
   by adding (or extending) the leaf's *manifest DV* — the leaf is never rewritten with a net
   change to table state, and the old manifest DV, if any, is marked DELETED;
3. adds files: small changes as ADDED root entries (the common single-file commit writes
   exactly one root manifest and the metadata file), larger ones through a new leaf manifest
   with an ADDED root entry;
4. assigns v3+ first row ids to new data entries and data manifests;
5. flushes the root into leaves synchronously only above a hard cap (``commit.root.*``
   thresholds times ``commit.root.writer-flush-factor``), with EXISTING outputs only;
6. writes the root.

Leaf manifests written for new files are reused by retries (their entries inherit version
info from the root entry), so a retry writes only the root again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from firn.core.commit import CommitContext
from firn.core.metadata_io import metadata_dir
from firn.core.tree_types import PendingFiles, TreeResult
from firn.core.v4.entries import entries_table, leaf_location, root_for_next_snapshot, set_version_info
from firn.core.v4.reader import (
    ManifestRef,
    live_mask,
    live_mdvs,
    manifest_refs,
    mdv_keep_mask,
    read_leaves,
    root_table,
    status_np,
)
from firn.errors import ValidationConflict
from firn.manifests.v4_io import ManifestKind, write_v4_manifest
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec import summary as S
from firn.spec.content import (
    FILE_KEY_SEPARATOR,
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestEntry,
)
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.arrow_chunks import bool_np, single_array

if TYPE_CHECKING:
    from firn.core.producer import SnapshotProducer


def entry_keys(table: pa.Table) -> pa.ChunkedArray:
    """:attr:`DataFile.file_key` of every entry of a content-entry table, vectorized: the
    location, joined to the DV offset where there is one."""
    location = pc.fill_null(table.column("location"), "")
    offsets = pc.cast(pc.struct_field(table.column("deletion_vector"), "offset"), pa.string())
    # The join is null where the offset is null; those entries are keyed by location alone.
    return pc.coalesce(pc.binary_join_element_wise(location, offsets, FILE_KEY_SEPARATOR), location)


def root_location(md: TableMetadata, snapshot_id: int, attempt: int) -> str:
    import uuid

    return f"{metadata_dir(md)}/root-{snapshot_id}-{attempt}-{uuid.uuid4()}.parquet"


class RootTreeWriter:
    """Writes the root manifest (and new leaves) of one snapshot producer, across attempts."""

    def __init__(self, producer: SnapshotProducer) -> None:
        self.producer = producer
        self._new_leaves: dict[tuple[str, int], tuple[str, pa.Table]] = {}
        self._in_use: set[str] = set()

    # -- locating removed files -------------------------------------------------------------------
    def _locate(
        self,
        io: object,
        md: TableMetadata,
        root: pa.Table,
        removed: dict[str, DataFile],
        origins: dict[str, tuple[str, int]],
        manifest_kind: FileContent,
        mdvs: dict[str, tuple[int, BitMap]],
    ) -> tuple[np.ndarray, dict[str, list[int]]]:
        """Find removed files: a mask of root rows, and ordinals per leaf location."""
        file_types = (
            [int(FileContent.DATA)]
            if manifest_kind is FileContent.DATA_MANIFEST
            else [int(FileContent.POSITION_DELETES), int(FileContent.EQUALITY_DELETES)]
        )
        live = bool_np(live_mask(root))
        # Several DVs share one Puffin file: entries are identified by location *and* blob offset.
        root_keys = entry_keys(root)
        at_root = (
            bool_np(
                pc.and_(
                    pc.is_in(root.column("content_type"), pa.array(file_types, pa.int32())),
                    pc.is_in(root_keys, pa.array(list(removed), pa.string())),
                )
            )
            & live
        )
        found = set(root_keys.filter(pa.array(at_root)).to_pylist())
        remaining = {p for p in removed if p not in found}
        by_leaf: dict[str, list[int]] = {}
        if not remaining:
            return at_root, by_leaf
        refs = {r.location: r for r in manifest_refs(root) if r.content is manifest_kind}
        # Fast path: planning told us where each file lives (work proportional to the change).
        for path in list(remaining):
            origin = (
                origins.get(removed[path].file_path) if manifest_kind is FileContent.DATA_MANIFEST else None
            )
            if origin is None or origin[0] not in refs:
                continue
            leaf, ordinal = origin
            bitmap = mdvs.get(leaf, (0, None))[1]
            if bitmap is not None and ordinal in bitmap:
                continue  # already removed by a concurrent commit: verified below
            by_leaf.setdefault(leaf, []).append(ordinal)
            remaining.discard(path)
        if remaining:
            # Search the live leaves of the right kind (cached, read in parallel).
            candidates = list(refs.values())
            tables = read_leaves(io, md, candidates)  # type: ignore[arg-type]
            want = pa.array(sorted(remaining), pa.string())
            for ref, leaf in zip(candidates, tables):
                keep = mdv_keep_mask(mdvs.get(ref.location, (0, None))[1], leaf.num_rows)
                leaf_keys = entry_keys(leaf)
                hit = bool_np(pc.is_in(leaf_keys, want)) & keep & bool_np(live_mask(leaf))
                if hit.any():
                    ords = np.nonzero(hit)[0]
                    for o in ords:
                        remaining.discard(leaf_keys[int(o)].as_py())
                    by_leaf.setdefault(ref.location, []).extend(int(o) for o in ords)
        if remaining:
            sample = sorted(remaining)[0]
            raise ValidationConflict(
                f"cannot remove {len(remaining)} file(s) that are no longer in the table (removed by a "
                f"concurrent commit?), e.g. {sample}"
            )
        return at_root, by_leaf

    # -- manifest DVs ---------------------------------------------------------------------------------
    def _manifest_dvs(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        root: pa.Table,
        by_leaf: dict[str, list[int]],
        mdvs: dict[str, tuple[int, BitMap]],
        snapshot_id: int,
        sequence_number: int,
    ) -> tuple[pa.Table, list[ManifestEntry]]:
        """Extend or add one manifest DV per touched leaf; the previous one becomes DELETED."""
        props = md.table_properties
        refs = {r.location: r for r in manifest_refs(root)}
        replaced = np.zeros(root.num_rows, dtype=bool)
        new: list[ManifestEntry] = []
        for leaf, ordinals in sorted(by_leaf.items()):
            ref = refs[leaf]
            bitmap = BitMap(ordinals)
            old = mdvs.get(leaf)
            if old is not None:
                if bitmap & old[1]:
                    raise ValidationConflict(f"entries of {leaf} were already removed by a concurrent commit")
                bitmap |= old[1]
                replaced[old[0]] = True
            if bitmap.max() >= ref.record_count:
                raise ValidationConflict(
                    f"manifest DV ordinal {bitmap.max()} is beyond {leaf}'s {ref.record_count} entries"
                )
            bitmap.run_optimize()
            new.append(
                self._mdv_entry(
                    md, ctx, ref, bitmap, snapshot_id, sequence_number, props.manifest_dv_inline_max_bytes
                )
            )
        root = set_version_info(root, replaced, status=EntryStatus.DELETED, snapshot_id=snapshot_id)
        return root, new

    def _mdv_entry(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        ref: ManifestRef,
        bitmap: BitMap,
        snapshot_id: int,
        sequence_number: int,
        inline_max: int,
    ) -> ManifestEntry:
        data = bitmap.serialize()
        if len(data) <= inline_max:
            f = DataFile(
                FileContent.MANIFEST_DV,
                "",
                FileFormat.PUFFIN,
                (),
                len(bitmap),
                0,
                spec_id=ref.spec_id,
                referenced_data_file=ref.location,
            )
            return ManifestEntry(
                EntryStatus.ADDED, snapshot_id, sequence_number, sequence_number, f, inline_content=data
            )
        # Large manifest DVs go to Puffin as deletion-vector-v1 blobs (seed 004 "inline or Puffin").
        import uuid

        from firn.deletes.bitmap import PositionBitmap
        from firn.deletes.dv import write_dv_puffin

        location = f"{metadata_dir(md)}/mdv-{uuid.uuid4()}.puffin"
        ctx.written.append(location)
        dv_file = write_dv_puffin(
            ctx.io.new_output(location),
            [(ref.location, PositionBitmap.from_positions(np.asarray(bitmap.to_array(), dtype=np.int64)))],
        )
        self._in_use.add(location)
        blob = dv_file.dvs[0]
        f = DataFile(
            FileContent.MANIFEST_DV,
            location,
            FileFormat.PUFFIN,
            (),
            len(bitmap),
            dv_file.file_size_in_bytes,
            spec_id=ref.spec_id,
            referenced_data_file=ref.location,
            content_offset=blob.offset,
            content_size_in_bytes=blob.length,
        )
        return ManifestEntry(EntryStatus.ADDED, snapshot_id, sequence_number, sequence_number, f)

    # -- additions ------------------------------------------------------------------------------------
    def _new_leaf(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        files: Sequence[DataFile],
        kind: ManifestKind,
        data_sequence_number: int | None,
        snapshot_id: int,
    ) -> tuple[str, pa.Table]:
        """A leaf for this commit's new files, written once and reused by retries. Its entries
        are ADDED with null version info, inherited from the root entry."""
        key = (kind, len(files))
        cached = self._new_leaves.get(key)
        if cached is not None:
            return cached
        entries = [ManifestEntry(EntryStatus.ADDED, None, data_sequence_number, None, f) for f in files]
        leaf = entries_table(md, entries)
        location = leaf_location(md, kind)
        ctx.written.append(location)
        size = write_v4_manifest(ctx.io, location, leaf, kind)
        result = (location, leaf.append_column("__size", pa.array([size] * leaf.num_rows, pa.int64())))
        self._new_leaves[key] = result
        return result

    def _additions(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
    ) -> list[pa.Table]:
        from firn.core.v4.entries import manifest_entry_for_leaf

        layout = V4Layout.for_metadata(md)
        props = md.table_properties
        threshold = props.root_max_added_files
        out: list[pa.Table] = []
        data_seq = changes.data_sequence_number
        kinds: tuple[tuple[list[DataFile], ManifestKind], ...] = (
            (changes.added_data, "data"),
            (changes.added_deletes, "delete"),
        )
        for files, kind in kinds:
            if not files:
                continue
            if len(files) <= threshold:
                entries = [
                    ManifestEntry(
                        EntryStatus.ADDED,
                        snapshot_id,
                        data_seq if (data_seq is not None and kind == "data") else sequence_number,
                        sequence_number,
                        f,
                    )
                    for f in files
                ]
                out.append(entries_table(md, entries))
                continue
            location, leaf = self._new_leaf(
                md, ctx, files, kind, data_seq if kind == "data" else None, snapshot_id
            )
            self._in_use.add(location)
            size = int(leaf.column("__size")[0].as_py())
            leaf = leaf.drop_columns(["__size"])
            # For stats and counts the leaf entries are ADDED with this snapshot's numbers.
            spec_ids = pc.unique(leaf.column("partition_spec_id")).to_pylist()
            entry = manifest_entry_for_leaf(
                leaf.set_column(
                    leaf.schema.get_field_index("version_info"),
                    "version_info",
                    _explicit_vi(leaf, sequence_number),
                ),
                layout,
                location=location,
                size=size,
                kind=kind,
                status=EntryStatus.ADDED,
                snapshot_id=snapshot_id,
                sequence_number=sequence_number,
                spec_id=spec_ids[0] if len(spec_ids) == 1 else md.default_spec_id,
            )
            out.append(layout.to_arrow([entry], specs_partition_ids(md)))
        return out

    # -- the tree ---------------------------------------------------------------------------------------
    def write(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
        ctx: CommitContext,
    ) -> TreeResult:
        md = base
        self._in_use = set()
        root = root_for_next_snapshot(root_table(ctx.io, md, parent))
        extra: dict[str, str] = {}
        if getattr(self.producer, "compact_manifests", False):
            from firn.core.v4.flush import compact_manifests

            # Seed 004: compaction during a commit uses only pre-existing entries (EXISTING
            # outputs, no net change), so it runs before this commit's own changes.
            root, cstats = compact_manifests(ctx.io, md, root, ctx, snapshot_id, sequence_number)
            self._in_use |= set(cstats.leaves)
            extra[S.MANIFESTS_COMPACTED_ENTRIES] = str(cstats.entries_rewritten)
        root, new_tables = self._removals(md, ctx, root, changes, snapshot_id, sequence_number)
        new_tables.extend(self._additions(md, ctx, changes, snapshot_id, sequence_number))
        added = (
            pa.concat_tables([t for t in new_tables if t.num_rows])
            if any(t.num_rows for t in new_tables)
            else None
        )
        added_rows = None
        if md.tracks_row_lineage and added is not None:
            added, added_rows = _assign_row_ids(added, md.next_row_id or 0)
        elif md.tracks_row_lineage:
            added_rows = 0
        root = self._flush_above_cap(md, ctx, root, added, snapshot_id, sequence_number, extra)
        if added is not None:
            root = pa.concat_tables([root, added])
        location = root_location(md, snapshot_id, ctx.attempt)
        ctx.written.append(location)
        size = write_v4_manifest(ctx.io, location, root, "root")
        self._in_use.add(location)
        extra[S.ROOT_MANIFEST_SIZE] = str(size)
        extra[S.ROOT_ENTRIES] = str(root.num_rows)
        return TreeResult(root_manifest=location, added_rows=added_rows, summary_extra=extra)

    def _removals(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        root: pa.Table,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
    ) -> tuple[pa.Table, list[pa.Table]]:
        """Mark removed root entries DELETED, and add or extend the manifest DVs of leaves
        holding removed files; returns the root and the new manifest DV entries."""
        mdvs = live_mdvs(ctx.io, root)
        removed_mask = np.zeros(root.num_rows, dtype=bool)
        by_leaf: dict[str, list[int]] = {}
        for removed, kind in (
            ({f.file_key: f for f in changes.removed_data}, FileContent.DATA_MANIFEST),
            ({f.file_key: f for f in changes.removed_deletes}, FileContent.DELETE_MANIFEST),
        ):
            if not removed:
                continue
            mask, leaves = self._locate(ctx.io, md, root, removed, changes.origins, kind, mdvs)
            removed_mask |= mask
            for leaf, ords in leaves.items():
                by_leaf.setdefault(leaf, []).extend(ords)
        root = set_version_info(root, removed_mask, status=EntryStatus.DELETED, snapshot_id=snapshot_id)
        if not by_leaf:
            return root, []
        root, mdv_entries = self._manifest_dvs(md, ctx, root, by_leaf, mdvs, snapshot_id, sequence_number)
        return root, [entries_table(md, mdv_entries)]

    def _flush_above_cap(
        self,
        md: TableMetadata,
        ctx: CommitContext,
        root: pa.Table,
        added: pa.Table | None,
        snapshot_id: int,
        sequence_number: int,
        extra: dict[str, str],
    ) -> pa.Table:
        """Writers flush synchronously only above a hard cap (the root thresholds times
        ``commit.root.writer-flush-factor``), judged on the root this commit would write;
        flushing moves pre-existing (EXISTING) entries only."""
        from firn.core.v4.flush import flush_decision, flush_root_table, root_counts

        after = pa.concat_tables([root, added]) if added is not None else root
        decision = flush_decision(
            root_counts(after), md, force=False, factor=md.table_properties.root_writer_flush_factor
        )
        if not decision.any:
            return root
        root, stats = flush_root_table(
            ctx.io,
            md,
            root,
            ctx,
            snapshot_id,
            sequence_number,
            force=False,
            affiliate=False,
            decision=decision,
        )
        self._in_use |= set(stats.leaves)
        extra[S.ROOT_FLUSHED_ENTRIES] = str(stats.entries_moved)
        return root

    def files_in_use(self) -> set[str]:
        return set(self._in_use)


def _explicit_vi(leaf: pa.Table, sequence_number: int) -> pa.StructArray:
    vi = single_array(leaf.column("version_info"))
    seq = pc.fill_null(vi.field(2), sequence_number)
    fseq = pc.fill_null(vi.field(3), sequence_number)
    return pa.StructArray.from_arrays([vi.field(0), vi.field(1), seq, fseq], fields=list(vi.type))


def _assign_row_ids(added: pa.Table, next_row_id: int) -> tuple[pa.Table, int]:
    """Spec "First Row ID Assignment": new data entries and data manifests without a first
    row id get consecutive ranges (a manifest reserves its added + existing rows)."""
    ct = added.column("content_type").to_numpy()
    frid = added.column("first_row_id")
    needs = (
        np.isin(ct, [int(FileContent.DATA), int(FileContent.DATA_MANIFEST)])
        & bool_np(frid.is_null())
        & (status_np(added) != int(EntryStatus.DELETED))
    )
    if not needs.any():
        return added, 0
    counts = added.column("record_count").to_numpy().copy()
    is_manifest = (ct == int(FileContent.DATA_MANIFEST)) & needs
    if is_manifest.any():
        ms = added.column("manifest_stats")
        manifest_rows = np.nan_to_num(
            pc.add(pc.struct_field(ms, "added_rows_count"), pc.struct_field(ms, "existing_rows_count"))
            .to_numpy(zero_copy_only=False)
            .astype(float)
        ).astype(np.int64)
        counts[is_manifest] = manifest_rows[is_manifest]
    counts = np.where(needs, counts, 0)
    starts = next_row_id + np.cumsum(counts) - counts
    new = pc.if_else(pa.array(needs), pa.array(starts, pa.int64()), frid)
    added = added.set_column(added.schema.get_field_index("first_row_id"), "first_row_id", new)
    return added, int(counts.sum())


__all__ = ["RootTreeWriter", "root_location"]
