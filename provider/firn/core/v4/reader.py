"""Loading the V4 metadata tree of a snapshot: its root, leaves (with inheritance) and the
bitmaps of manifest DVs.

* A snapshot written by V4 has a root manifest. A snapshot of an upgraded v2/v3 table has a
  manifest list instead; its entries become root entries pointing at the legacy Avro
  manifests (seed 004 "Upgrade"), computed on the fly until the first V4 commit writes them.
* Leaf entries that are ADDED with null version info inherit snapshot id and sequence numbers
  from their manifest's root entry; data entries with null ``first_row_id`` get
  ``manifest.first_row_id`` + the rows of earlier such entries (spec "First Row ID Inheritance").
* A manifest DV is a bitmap of leaf *ordinals* (row positions, counting every entry of the
  leaf file). Inline ones are 32-bit portable roaring bitmaps (what seed 004's size table
  measures); large ones live in Puffin as ``deletion-vector-v1`` blobs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from firn.errors import InvalidMetadata
from firn.io.base import FileIO
from firn.manifests.v4_io import conform, read_v4_manifest
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestStats,
)
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.arrow_chunks import bool_np, single_array, struct_child_np

ROOT = "root"  # origin "manifest" of entries that live in the root itself
# Leaf reads mix GIL-bound footer parsing with GIL-free decoding; more threads than cores
# only add contention for local files (bench/README.md, issue 10, has the figures).
MAX_LEAF_THREADS = min(8, max(2, os.cpu_count() or 2))

LIVE_STATUS = (int(EntryStatus.EXISTING), int(EntryStatus.ADDED))


def empty_root(layout: V4Layout) -> pa.Table:
    return layout.arrow_schema.empty_table()


def status_of(table: pa.Table) -> pa.ChunkedArray:
    return pc.struct_field(table.column("version_info"), "status")


def live_mask(table: pa.Table) -> pa.ChunkedArray:
    return pc.not_equal(status_of(table), int(EntryStatus.DELETED))


def status_np(table: pa.Table) -> np.ndarray:
    """Entry statuses as a NumPy array. Commits work on roots of a few to a few thousand
    entries, where a NumPy comparison costs microseconds and an Arrow kernel call tens of
    them; ``version_info`` is required, so there are no struct-level nulls to propagate."""
    col = table.column("version_info")
    if col.null_count:
        raise InvalidMetadata("a manifest entry has no version_info")
    return struct_child_np(col, 0, np.int32)


def live_np(table: pa.Table) -> np.ndarray:
    """:func:`live_mask` as a NumPy bool array."""
    return status_np(table) != int(EntryStatus.DELETED)


def legacy_root(io: FileIO, md: TableMetadata, snapshot: Snapshot) -> pa.Table:
    """Root entries for a v1-v3 snapshot's manifest list (the upgrade path)."""
    from firn.core.legacy.reader import snapshot_manifests

    layout = V4Layout.for_metadata(md)
    entries = [legacy_manifest_entry(m) for m in snapshot_manifests(io, snapshot)]
    return layout.to_arrow(entries, specs_partition_ids(md))


def legacy_manifest_entry(m: ManifestFile) -> ManifestEntry:
    content = FileContent.DATA_MANIFEST if m.content is ManifestContent.DATA else FileContent.DELETE_MANIFEST
    counts = [m.added_files_count, m.existing_files_count, m.deleted_files_count]
    f = DataFile(
        content=content,
        file_path=m.manifest_path,
        file_format=FileFormat.AVRO,
        partition=(),
        record_count=sum(c or 0 for c in counts),
        file_size_in_bytes=m.manifest_length,
        spec_id=m.partition_spec_id,
        first_row_id=m.first_row_id,
    )
    seq = m.sequence_number or 0
    stats = ManifestStats(
        m.added_files_count or 0,
        m.existing_files_count or 0,
        m.deleted_files_count or 0,
        m.added_rows_count or 0,
        m.existing_rows_count or 0,
        m.deleted_rows_count or 0,
        m.min_sequence_number,
    )
    # Converting a manifest-list entry changes no data: it is EXISTING (seed 004).
    return ManifestEntry(EntryStatus.EXISTING, m.added_snapshot_id, seq, seq, f, manifest_stats=stats)


def root_table(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> pa.Table:
    """The snapshot's root entries in the current layout (empty for no snapshot)."""
    layout = V4Layout.for_metadata(md)
    if snapshot is None:
        return empty_root(layout)
    if snapshot.root_manifest is not None:
        return conform(read_v4_manifest(io, snapshot.root_manifest, expected="root"), layout)
    if snapshot.manifest_list is not None:
        return legacy_root(io, md, snapshot)
    raise InvalidMetadata(f"snapshot {snapshot.snapshot_id} has neither a root manifest nor a manifest list")


@dataclass(frozen=True, slots=True)
class ManifestRef:
    """A live manifest entry of the root: what is needed to read and inherit from it."""

    location: str
    content: FileContent
    file_format: FileFormat
    spec_id: int
    snapshot_id: int | None
    sequence_number: int | None
    first_row_id: int | None
    record_count: int
    file_size_in_bytes: int
    referenced_file: str | None
    row: int  # position in the root table

    def as_manifest_file(self) -> ManifestFile:
        return ManifestFile(
            manifest_path=self.location,
            manifest_length=self.file_size_in_bytes,
            partition_spec_id=self.spec_id,
            content=ManifestContent.DATA
            if self.content is FileContent.DATA_MANIFEST
            else ManifestContent.DELETES,
            sequence_number=self.sequence_number,
            min_sequence_number=self.sequence_number,
            added_snapshot_id=self.snapshot_id,
            first_row_id=self.first_row_id,
        )


def manifest_refs(root: pa.Table, rows: pa.Array | None = None) -> list[ManifestRef]:
    """The live data/delete manifest entries of ``root`` (optionally only at ``rows``)."""
    ct = root.column("content_type")
    manifests = pa.array([int(FileContent.DATA_MANIFEST), int(FileContent.DELETE_MANIFEST)], pa.int32())
    idx = np.nonzero(bool_np(pc.and_(live_mask(root), pc.is_in(ct, manifests))))[0]
    if rows is not None:
        idx = np.intersect1d(idx, np.asarray(rows))
    if len(idx) == 0:
        return []
    sub = root.take(pa.array(idx))
    vi = sub.column("version_info")
    cols = {
        "location": sub.column("location").to_pylist(),
        "content": sub.column("content_type").to_pylist(),
        "format": sub.column("file_format").to_pylist(),
        "spec": sub.column("partition_spec_id").to_pylist(),
        "sid": pc.struct_field(vi, "snapshot_id").to_pylist(),
        "seq": pc.struct_field(vi, "sequence_number").to_pylist(),
        "frid": sub.column("first_row_id").to_pylist(),
        "rc": sub.column("record_count").to_pylist(),
        "size": sub.column("file_size_in_bytes").to_pylist(),
        "ref": sub.column("referenced_file").to_pylist(),
    }
    return [
        ManifestRef(
            cols["location"][i],
            FileContent(cols["content"][i]),
            FileFormat.parse(cols["format"][i]),
            cols["spec"][i],
            cols["sid"][i],
            cols["seq"][i],
            cols["frid"][i],
            cols["rc"][i],
            cols["size"][i] or 0,
            cols["ref"][i],
            int(idx[i]),
        )
        for i in range(len(idx))
    ]


def _legacy_leaf(io: FileIO, md: TableMetadata, ref: ManifestRef) -> pa.Table:
    """A v1-v3 Avro manifest referenced from a V4 root, as content entries (every entry kept,
    so ordinals match positions in the file)."""
    from firn.core.planning import partition_type_or_none
    from firn.manifests.manifest import read_manifest

    spec = md.specs.get(ref.spec_id)
    ptype = partition_type_or_none(spec, md.schema()) if spec is not None else None
    entries = read_manifest(
        io.new_input(ref.location), ref.as_manifest_file(), partition_type=ptype, include_deleted=True
    )
    layout = V4Layout.for_metadata(md)
    return layout.to_arrow(entries, specs_partition_ids(md))


def read_leaf(
    io: FileIO, md: TableMetadata, ref: ManifestRef, columns: Sequence[str] | None = None
) -> pa.Table:
    """A leaf manifest's entries (current layout) with version info and row ids inherited.

    With ``columns`` (see :func:`read_v4_manifest`) the other columns come back null."""
    layout = V4Layout.for_metadata(md)
    if ref.file_format is FileFormat.AVRO:
        # Legacy manifests already apply their own inheritance when read.
        return _legacy_leaf(io, md, ref)
    expected = "data" if ref.content is FileContent.DATA_MANIFEST else "delete"
    table = read_v4_manifest(io, ref.location, expected=expected, columns=columns)  # type: ignore[arg-type]
    return inherit(conform(table, layout), ref)


def inherit(leaf: pa.Table, ref: ManifestRef) -> pa.Table:
    """Fill null version info of ADDED entries and null data ``first_row_id``s from ``ref``."""
    vi = leaf.column("version_info")
    status = pc.struct_field(vi, "status")
    added = pc.equal(status, int(EntryStatus.ADDED))
    # A leaf written for one commit's new files is all ADDED: then every null is filled (one
    # kernel instead of three per field).
    all_added = added.null_count == 0 and pc.all(added).as_py()

    def fill(name: str, value: int | None) -> pa.Array:
        col = pc.struct_field(vi, name)
        if value is None or col.null_count == 0:
            return col
        if all_added:
            return pc.fill_null(col, pa.scalar(value, pa.int64()))
        return pc.if_else(pc.and_(added, pc.is_null(col)), pa.scalar(value, pa.int64()), col)

    new_vi = pa.StructArray.from_arrays(
        [
            single_array(status),
            single_array(fill("snapshot_id", ref.snapshot_id)),
            single_array(fill("sequence_number", ref.sequence_number)),
            single_array(fill("file_sequence_number", ref.sequence_number)),
        ],
        fields=list(leaf.schema.field("version_info").type),
    )
    leaf = leaf.set_column(leaf.schema.get_field_index("version_info"), "version_info", new_vi)
    frid = leaf.column("first_row_id")
    if ref.content is FileContent.DATA_MANIFEST and ref.first_row_id is not None and frid.null_count:
        needs = bool_np(pc.is_null(frid))
        counts = np.where(needs, leaf.column("record_count").to_numpy(), 0)
        starts = ref.first_row_id + np.cumsum(counts) - counts
        filled = pc.if_else(pa.array(needs), pa.array(starts, pa.int64()), frid)
        leaf = leaf.set_column(leaf.schema.get_field_index("first_row_id"), "first_row_id", filled)
    return leaf


def read_leaves(
    io: FileIO,
    md: TableMetadata,
    refs: Sequence[ManifestRef],
    columns: Mapping[FileContent, Sequence[str]] | None = None,
) -> list[pa.Table]:
    """Read leaves in parallel (pyarrow releases the GIL while decoding); ``columns`` maps a
    manifest content type to the columns to read from such leaves (default: all)."""

    def one(r: ManifestRef) -> pa.Table:
        return read_leaf(io, md, r, columns.get(r.content) if columns is not None else None)

    if len(refs) <= 1:
        return [one(r) for r in refs]
    with ThreadPoolExecutor(max_workers=min(MAX_LEAF_THREADS, len(refs))) as pool:
        return list(pool.map(one, refs))


@dataclass(frozen=True)
class LeafBatch:
    """Many leaves read as one table: ``leaf[i]`` is the index (into the refs) of row ``i``'s
    leaf, ``ordinal[i]`` its position in that leaf's file, ``starts[k]`` leaf ``k``'s first row."""

    table: pa.Table
    leaf: np.ndarray
    ordinal: np.ndarray
    starts: np.ndarray


def read_leaves_batched(
    io: FileIO,
    md: TableMetadata,
    refs: Sequence[ManifestRef],
    columns: Sequence[str] | None = None,
) -> LeafBatch:
    """Read leaves in parallel and concatenate them, then apply inheritance once over all
    rows. Per-leaf Python work is only the read itself, so planning a thousand leaves costs a
    thousand Parquet reads plus a handful of vectorized passes (DESIGN: no per-entry loop).
    With ``columns`` the batch holds only those (:meth:`V4Layout.projected_schema`)."""
    layout = V4Layout.for_metadata(md)

    def one(r: ManifestRef) -> pa.Table:
        if r.file_format is FileFormat.AVRO:
            return conform(_legacy_leaf(io, md, r), layout, columns)  # inherited while decoding
        expected = "data" if r.content is FileContent.DATA_MANIFEST else "delete"
        return conform(read_v4_manifest(io, r.location, expected=expected, columns=columns), layout, columns)  # type: ignore[arg-type]

    if not refs:
        empty = (layout.arrow_schema if columns is None else layout.projected_schema(columns)).empty_table()
        z = np.zeros(0, dtype=np.int64)
        return LeafBatch(empty, z, z, z)
    if len(refs) == 1:
        tables = [one(refs[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_LEAF_THREADS, len(refs))) as pool:
            tables = list(pool.map(one, refs))
    lengths = np.fromiter((t.num_rows for t in tables), dtype=np.int64, count=len(tables))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    leaf = np.repeat(np.arange(len(refs), dtype=np.int64), lengths)
    ordinal = np.arange(int(lengths.sum()), dtype=np.int64) - starts[leaf]
    big = pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0]
    return LeafBatch(_inherit_batched(big, refs, leaf, starts), leaf, ordinal, starts)


def _per_row(values: list[int | None], leaf: np.ndarray) -> pa.Array:
    vals = np.array([v if v is not None else 0 for v in values], dtype=np.int64)[leaf]
    mask = np.array([v is None for v in values], dtype=bool)[leaf]
    return pa.array(vals, pa.int64(), mask=mask)


def _inherit_batched(
    big: pa.Table, refs: Sequence[ManifestRef], leaf: np.ndarray, starts: np.ndarray
) -> pa.Table:
    """:func:`inherit` for many leaves at once (values come from each row's manifest entry)."""
    if big.num_rows == 0:
        return big
    vi = single_array(big.column("version_info"))
    status = vi.field(0)
    added = pc.equal(status, int(EntryStatus.ADDED))
    children = [status]
    for i, values in (
        (1, [r.snapshot_id for r in refs]),
        (2, [r.sequence_number for r in refs]),
        (3, [r.sequence_number for r in refs]),
    ):
        col = vi.field(i)
        if col.null_count:
            col = pc.if_else(pc.and_(added, pc.is_null(col)), _per_row(values, leaf), col)
        children.append(col)
    big = big.set_column(
        big.schema.get_field_index("version_info"),
        "version_info",
        pa.StructArray.from_arrays(children, fields=list(vi.type), mask=vi.is_null()),
    )
    frid = big.column("first_row_id")
    if frid.null_count:
        base = np.array(
            [
                r.first_row_id
                if r.first_row_id is not None and r.content is FileContent.DATA_MANIFEST
                else -1
                for r in refs
            ],
            dtype=np.int64,
        )
        needs = bool_np(pc.is_null(frid)) & (base[leaf] >= 0)
        if needs.any():
            counts = np.where(needs, big.column("record_count").to_numpy(), 0)
            cs = np.cumsum(counts)
            # Rows reserved by earlier leaves; the appended total serves empty trailing leaves,
            # whose start is the row count (they have no rows, so their value is unused).
            before_leaf = np.append(cs - counts, cs[-1])[starts]
            first = base[leaf] + (cs - counts) - before_leaf[leaf]
            filled = pc.if_else(pa.array(needs), pa.array(first, pa.int64()), frid)
            big = big.set_column(big.schema.get_field_index("first_row_id"), "first_row_id", filled)
    return big


def mdv_keep_batched(
    mdvs: dict[str, tuple[int, BitMap]], refs: Sequence[ManifestRef], batch: LeafBatch
) -> np.ndarray:
    """Keep-mask over a batch: entries not removed by their leaf's manifest DV."""
    keep = np.ones(batch.table.num_rows, dtype=bool)
    lengths = np.diff(np.append(batch.starts, batch.table.num_rows))
    for k, ref in enumerate(refs):
        found = mdvs.get(ref.location)
        if found is None or not len(found[1]):
            continue
        ords = np.asarray(found[1].to_array(), dtype=np.int64)
        if ords[-1] >= lengths[k]:
            raise InvalidMetadata(
                f"manifest DV removes ordinal {ords[-1]} of {ref.location}, which has {lengths[k]} entries"
            )
        keep[batch.starts[k] + ords] = False
    return keep


# -- manifest DVs ------------------------------------------------------------------------------------
def decode_mdv(io: FileIO, row: dict[str, object]) -> BitMap:
    """The ordinals a manifest DV root entry removes from its leaf."""
    dv = row.get("deletion_vector") or {}
    assert isinstance(dv, dict)
    inline = dv.get("inline_content")
    where = f"manifest DV for {row.get('referenced_file')}"
    if inline is not None:
        try:
            return BitMap.deserialize(inline)
        except Exception as e:
            raise InvalidMetadata(f"{where}: corrupt inline roaring bitmap ({e})") from e
    location = row.get("location")
    offset, size = dv.get("offset"), dv.get("size_in_bytes")
    if not isinstance(location, str) or offset is None or size is None:
        raise InvalidMetadata(f"{where}: neither inline content nor a Puffin location/offset/size")
    from firn.deletes.dv import read_dv

    bitmap = read_dv(io.new_input(location), int(offset), int(size))
    positions = bitmap.to_array()
    if len(positions) and positions[-1] >= 2**32:
        raise InvalidMetadata(f"{where}: ordinal {positions[-1]} out of range")
    return BitMap(positions.astype(np.uint32))


def live_mdvs(io: FileIO, root: pa.Table) -> dict[str, tuple[int, BitMap]]:
    """Live manifest DVs by target leaf location: (root row, bitmap)."""
    if root.num_rows == 0:
        return {}
    ct = root.column("content_type").to_numpy()
    idx = np.nonzero(live_np(root) & (ct == int(FileContent.MANIFEST_DV)))[0]
    out: dict[str, tuple[int, BitMap]] = {}
    if len(idx) == 0:
        return out
    rows = root.select(["location", "deletion_vector", "referenced_file"]).take(pa.array(idx)).to_pylist()
    for i, row in zip(idx, rows):
        target = row["referenced_file"]
        if target in out:
            raise InvalidMetadata(f"more than one live manifest DV for leaf {target}")
        out[target] = (int(i), decode_mdv(io, row))
    return out


def mdv_keep_mask(bitmap: BitMap | None, num_rows: int) -> np.ndarray:
    keep = np.ones(num_rows, dtype=bool)
    if bitmap is not None and len(bitmap):
        ords = np.asarray(bitmap.to_array(), dtype=np.int64)
        if ords[-1] >= num_rows:
            raise InvalidMetadata(f"manifest DV removes ordinal {ords[-1]} of a leaf with {num_rows} entries")
        keep[ords] = False
    return keep


__all__ = [
    "LIVE_STATUS",
    "ROOT",
    "ManifestRef",
    "decode_mdv",
    "empty_root",
    "inherit",
    "legacy_manifest_entry",
    "legacy_root",
    "live_mask",
    "live_mdvs",
    "manifest_refs",
    "mdv_keep_mask",
    "read_leaf",
    "read_leaves",
    "root_table",
    "status_of",
]
