"""Flushing the V4 root into leaf manifests (seed 004 "Optional Affinity", "Manifest Compaction").

A flush changes no table data, so everything it writes is EXISTING:

* root data files move into new data manifests (``commit.leaf.target-entries`` per leaf);
* root DVs and equality deletes move into delete manifests — DVs *affiliated* with the data
  manifest that holds their data file when it is known (root ``referenced_file``);
* manifest DVs are folded: the target leaf is rewritten without the removed entries and the
  manifest DV disappears (a leaf whose entries are all removed just disappears).

Each category is flushed when it exceeds its ``commit.root.*`` threshold (or always with
``force``). Replaced root entries are simply absent from the new root — compaction is not a
data change, so it leaves no DELETED entries behind (seed 004's compaction example).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from firn.core.commit import CommitContext
from firn.core.v4.entries import set_version_info, write_leaf
from firn.core.v4.reader import (
    ManifestRef,
    live_mask,
    live_mdvs,
    live_np,
    manifest_refs,
    mdv_keep_mask,
    read_leaf,
    read_leaves,
)
from firn.io.base import FileIO
from firn.manifests.v4_io import ManifestKind
from firn.spec.content import EntryStatus, FileContent
from firn.spec.table_metadata import TableMetadata
from firn.util.arrow_chunks import bool_np


@dataclass(frozen=True)
class RootCounts:
    """Live entries of a root by kind (what ``table.health()`` and flush thresholds watch)."""

    data_files: int
    delete_vectors: int
    equality_deletes: int
    data_manifests: int
    delete_manifests: int
    manifest_dvs: int
    bytes_in_memory: int

    @property
    def delete_files(self) -> int:
        return self.delete_vectors + self.equality_deletes


def root_counts(root: pa.Table) -> RootCounts:
    if root.num_rows == 0:
        return RootCounts(0, 0, 0, 0, 0, 0, 0)
    ct = root.column("content_type").to_numpy()[live_np(root)]
    c = np.bincount(ct, minlength=6)
    return RootCounts(int(c[0]), int(c[1]), int(c[2]), int(c[3]), int(c[4]), int(c[5]), int(root.nbytes))


@dataclass(frozen=True)
class FlushDecision:
    move_data: bool
    move_deletes: bool
    fold_manifest_dvs: bool

    @property
    def any(self) -> bool:
        return self.move_data or self.move_deletes or self.fold_manifest_dvs


def flush_decision(counts: RootCounts, md: TableMetadata, *, force: bool, factor: int = 1) -> FlushDecision:
    p = md.table_properties
    if force:
        return FlushDecision(counts.data_files > 0, counts.delete_files > 0, counts.manifest_dvs > 0)
    too_big = counts.bytes_in_memory > p.root_max_bytes * factor
    return FlushDecision(
        counts.data_files > 0 and (too_big or counts.data_files > p.root_max_data_files * factor),
        counts.delete_files > 0 and (too_big or counts.delete_files > p.root_max_delete_vectors * factor),
        counts.manifest_dvs > 0 and (too_big or counts.manifest_dvs > p.root_max_manifest_dvs * factor),
    )


@dataclass
class FlushStats:
    data_files_moved: int = 0
    delete_files_moved: int = 0
    manifest_dvs_folded: int = 0
    entries_rewritten: int = 0
    leaves: list[str] = field(default_factory=list)
    bytes_written: int = 0

    @property
    def entries_moved(self) -> int:
        return self.data_files_moved + self.delete_files_moved


def _chunks(table: pa.Table, size: int) -> Iterable[pa.Table]:
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size)


def _existing(table: pa.Table) -> pa.Table:
    return set_version_info(table, np.ones(table.num_rows, dtype=bool), status=EntryStatus.EXISTING)


def _surviving(leaf: pa.Table, bitmap: BitMap | None) -> pa.Table:
    """A leaf's live entries that its manifest DV (if any) does not remove, as EXISTING."""
    keep = mdv_keep_mask(bitmap, leaf.num_rows) & bool_np(live_mask(leaf))
    return _existing(leaf.filter(pa.array(keep)))


@dataclass
class _LeafWriter:
    """Writes the EXISTING leaves of one flush or compaction (seed 004: no net change) and
    collects their root entries and the stats."""

    io: FileIO
    md: TableMetadata
    ctx: CommitContext
    snapshot_id: int
    sequence_number: int
    stats: FlushStats
    root_rows: list[pa.Table] = field(default_factory=list)

    def write(self, leaf: pa.Table, kind: ManifestKind, referenced: str | None = None) -> str:
        location, row = write_leaf(
            self.io,
            self.md,
            leaf,
            kind,
            status=EntryStatus.EXISTING,
            snapshot_id=self.snapshot_id,
            sequence_number=self.sequence_number,
            written=self.ctx.written,
            referenced_file=referenced,
        )
        self.stats.leaves.append(location)
        self.stats.bytes_written += int(row.column("file_size_in_bytes")[0].as_py() or 0)
        self.root_rows.append(row)
        return location

    def write_chunked(
        self, rows: pa.Table, kind: ManifestKind, referenced: str | None = None
    ) -> list[tuple[str, pa.Table]]:
        """``rows`` as leaves of up to ``commit.leaf.target-entries``: (location, entries) each."""
        target = self.md.table_properties.leaf_target_entries
        return [(self.write(chunk, kind, referenced), chunk) for chunk in _chunks(rows, target)]


def _follow_renamed(rows: pa.Table, renamed: dict[str, str | None]) -> pa.Table:
    """Delete manifests affiliated with a rewritten data manifest follow it (``renamed``: old
    leaf -> new leaf, None when the old leaf is gone or split)."""
    if not renamed:
        return rows
    values = rows.column("referenced_file").to_pylist()
    dm = pc.equal(rows.column("content_type"), int(FileContent.DELETE_MANIFEST)).to_pylist()
    fixed = [renamed.get(v, v) if d and v in renamed else v for v, d in zip(values, dm)]
    return rows.set_column(
        rows.schema.get_field_index("referenced_file"), "referenced_file", pa.array(fixed, pa.string())
    )


def flush_root_table(
    io: FileIO,
    md: TableMetadata,
    root: pa.Table,
    ctx: CommitContext,
    snapshot_id: int,
    sequence_number: int,
    *,
    force: bool,
    affiliate: bool,
    decision: FlushDecision | None = None,
) -> tuple[pa.Table, FlushStats]:
    """Flush ``root`` (a carried-over root: no entries ADDED by this snapshot) into leaves."""
    stats = FlushStats()
    if decision is None:
        decision = flush_decision(root_counts(root), md, force=force)
    if not decision.any:
        return root, stats
    out = _LeafWriter(io, md, ctx, snapshot_id, sequence_number, stats)
    ct = root.column("content_type").to_numpy()
    live = bool_np(live_mask(root))
    drop = np.zeros(root.num_rows, dtype=bool)
    moved_leaf_of: dict[str, str] = {}  # data file path -> new leaf location
    renamed: dict[str, str | None] = {}  # old leaf -> rewritten leaf (None: gone)
    if decision.fold_manifest_dvs:
        _fold_manifest_dvs(out, root, drop, renamed, moved_leaf_of)
    if decision.move_data:
        sel = live & (ct == int(FileContent.DATA))
        drop |= sel
        rows = _existing(root.filter(pa.array(sel)))
        stats.data_files_moved += rows.num_rows
        for loc, chunk in out.write_chunked(rows, "data"):
            moved_leaf_of.update(dict.fromkeys(chunk.column("location").to_pylist(), loc))
    if decision.move_deletes:
        sel = live & np.isin(ct, [int(FileContent.POSITION_DELETES), int(FileContent.EQUALITY_DELETES)])
        drop |= sel
        _move_deletes(out, root, sel, drop, moved_leaf_of, affiliate)
    rest = _follow_renamed(root.filter(pa.array(~drop)), renamed)
    return pa.concat_tables([rest, *out.root_rows]), stats


def _fold_manifest_dvs(
    out: _LeafWriter,
    root: pa.Table,
    drop: np.ndarray,
    renamed: dict[str, str | None],
    moved_leaf_of: dict[str, str],
) -> None:
    """Rewrite every leaf that has a live manifest DV without the entries it removes; the
    manifest DV and the old leaf leave the root (a leaf with nothing left just disappears)."""
    stats = out.stats
    refs = {r.location: r for r in manifest_refs(root)}
    for leaf_loc, (mdv_row, bitmap) in live_mdvs(out.io, root).items():
        ref = refs.get(leaf_loc)
        drop[mdv_row] = True
        stats.manifest_dvs_folded += 1
        if ref is None:
            continue  # a manifest DV for a leaf no longer in the root is dangling
        drop[ref.row] = True
        kept = _surviving(read_leaf(out.io, out.md, ref), bitmap)
        if kept.num_rows == 0:
            renamed[leaf_loc] = None
            continue
        kind: ManifestKind = "data" if ref.content is FileContent.DATA_MANIFEST else "delete"
        stats.entries_rewritten += kept.num_rows
        written = out.write_chunked(kept, kind, ref.referenced_file)
        renamed[leaf_loc] = written[0][0]
        if kind == "data":
            for loc, chunk in written:
                moved_leaf_of.update(dict.fromkeys(chunk.column("location").to_pylist(), loc))


def _move_deletes(
    out: _LeafWriter,
    root: pa.Table,
    sel: np.ndarray,
    drop: np.ndarray,
    moved_leaf_of: dict[str, str],
    affiliate: bool,
) -> None:
    """Root DVs and equality deletes (``sel``) into delete manifests; a DV goes with the data
    manifest that holds its data file when that is known (seed 004 "Optional Affinity")."""
    rows = _existing(root.filter(pa.array(sel)))
    out.stats.delete_files_moved += rows.num_rows
    leaf_of = dict(moved_leaf_of)
    if affiliate:
        leaf_of.update(_data_leaf_index(out.io, out.md, root, drop, rows))
    groups: dict[str | None, list[int]] = {}
    refs_col = rows.column("referenced_file").to_pylist()
    cts = rows.column("content_type").to_pylist()
    for i, (ref_file, c) in enumerate(zip(refs_col, cts)):
        key = leaf_of.get(ref_file) if c == int(FileContent.POSITION_DELETES) and ref_file else None
        groups.setdefault(key, []).append(i)
    for key, idx in groups.items():
        out.write_chunked(rows.take(pa.array(idx)), "delete", key)


def compact_manifests(
    io: FileIO,
    md: TableMetadata,
    root: pa.Table,
    ctx: CommitContext,
    snapshot_id: int,
    sequence_number: int,
) -> tuple[pa.Table, FlushStats]:
    """Manifest compaction during a commit (seed 004 "Manifest Compaction"): merge every
    existing data manifest, with its existing manifest DV applied, into new EXISTING leaves of
    up to ``commit.leaf.target-entries``; fold existing manifest DVs of delete manifests into
    rewritten delete manifests. Only pre-existing entries take part (call this on a
    carried-over root before the commit's own changes), so there is no net change."""
    stats = FlushStats()
    refs = manifest_refs(root)
    mdvs = live_mdvs(io, root)
    data_refs = [r for r in refs if r.content is FileContent.DATA_MANIFEST]
    delete_refs = [r for r in refs if r.content is FileContent.DELETE_MANIFEST and r.location in mdvs]
    if len(data_refs) < 2 and not mdvs:
        return root, stats
    out = _LeafWriter(io, md, ctx, snapshot_id, sequence_number, stats)
    drop = np.zeros(root.num_rows, dtype=bool)

    def bitmap_of(ref: ManifestRef) -> BitMap | None:
        found = mdvs.get(ref.location)
        return found[1] if found is not None else None

    renamed: dict[str, str | None] = {}
    if len(data_refs) >= 2 or any(r.location in mdvs for r in data_refs):
        merged = [
            _surviving(leaf, bitmap_of(r)) for r, leaf in zip(data_refs, read_leaves(io, md, data_refs))
        ]
        for r in data_refs:
            drop[r.row] = True
            if r.location in mdvs:
                drop[mdvs[r.location][0]] = True
                stats.manifest_dvs_folded += 1
        rows = pa.concat_tables(merged) if merged else None
        locations = []
        if rows is not None and rows.num_rows:
            stats.entries_rewritten += rows.num_rows
            locations = [loc for loc, _ in out.write_chunked(rows, "data")]
        for r in data_refs:
            renamed[r.location] = locations[0] if len(locations) == 1 else None
    for r, leaf in zip(delete_refs, read_leaves(io, md, delete_refs)):
        drop[r.row] = True
        drop[mdvs[r.location][0]] = True
        stats.manifest_dvs_folded += 1
        rows = _surviving(leaf, bitmap_of(r))
        if rows.num_rows:
            stats.entries_rewritten += rows.num_rows
            ref_file = renamed.get(r.referenced_file, r.referenced_file) if r.referenced_file else None
            out.write_chunked(rows, "delete", ref_file)
    rest = _follow_renamed(root.filter(pa.array(~drop)), renamed)
    return pa.concat_tables([rest, *out.root_rows]), stats


def _data_leaf_index(
    io: FileIO, md: TableMetadata, root: pa.Table, dropped: np.ndarray, deletes: pa.Table
) -> dict[str, str]:
    """Which live data manifest holds each data file a DV refers to (reads data leaves)."""
    wanted = {p for p in deletes.column("referenced_file").to_pylist() if p}
    if not wanted:
        return {}
    refs = [r for r in manifest_refs(root) if r.content is FileContent.DATA_MANIFEST and not dropped[r.row]]
    out: dict[str, str] = {}
    want = pa.array(sorted(wanted), pa.string())
    for ref, leaf in zip(refs, read_leaves(io, md, refs)):
        hit = pc.is_in(leaf.column("location"), want)
        for path in leaf.column("location").filter(hit).to_pylist():
            out[path] = ref.location
    return out


__all__ = [
    "FlushDecision",
    "FlushStats",
    "RootCounts",
    "compact_manifests",
    "flush_decision",
    "flush_root_table",
    "root_counts",
]
