"""Arrow-level edits of V4 content entries shared by commits and flushes.

Status changes, aggregated stats for manifest entries, and writing a leaf manifest together
with the root entry that points at it (seed 004: "A manifest file entry gets aggregated stats
of its data file contents").
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.metadata_io import metadata_dir
from firn.core.v4.reader import status_np
from firn.io.base import FileIO
from firn.manifests.v4_io import ManifestKind, write_v4_manifest
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec import values
from firn.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestStats,
)
from firn.spec.table_metadata import TableMetadata
from firn.util.arrow_chunks import single_array


def set_version_info(
    table: pa.Table,
    mask: np.ndarray,
    *,
    status: EntryStatus | None = None,
    snapshot_id: int | None = None,
) -> pa.Table:
    """Set status and/or snapshot id on the rows selected by ``mask``."""
    if table.num_rows == 0 or not mask.any():
        return table
    vi = single_array(table.column("version_info"))
    m = pa.array(mask)
    children = [vi.field(i) for i in range(vi.type.num_fields)]
    if status is not None:
        current = children[0]
        if current.null_count == 0:  # status is required: a NumPy select, no kernel call
            children[0] = pa.array(
                np.where(mask, np.int32(int(status)), current.to_numpy(zero_copy_only=False)), pa.int32()
            )
        else:
            children[0] = pc.if_else(m, pa.scalar(int(status), pa.int32()), current)
    if snapshot_id is not None:
        children[1] = pc.if_else(m, pa.scalar(snapshot_id, pa.int64()), children[1])
    new_vi = pa.StructArray.from_arrays(children, fields=list(vi.type))
    return table.set_column(table.schema.get_field_index("version_info"), "version_info", new_vi)


def root_for_next_snapshot(root: pa.Table) -> pa.Table:
    """A new snapshot's view of its parent's root: DELETED entries dropped (they appear only in
    the snapshot that deletes) and ADDED entries become EXISTING (seed 004)."""
    if root.num_rows == 0:
        return root
    status = status_np(root)
    deleted = status == int(EntryStatus.DELETED)
    if deleted.any():
        root = root.filter(pa.array(~deleted))
        status = status[~deleted]
    return set_version_info(root, status == int(EntryStatus.ADDED), status=EntryStatus.EXISTING)


def _aggregate(leaf: pa.Table, layout: V4Layout) -> dict[str, dict[int, Any]]:
    """Aggregated column stats of a leaf's live entries; a stat is null if any entry lacks it."""
    out: dict[str, dict[int, Any]] = {"lower": {}, "upper": {}, "vc": {}, "nc": {}, "nan": {}}
    if "content_stats" not in leaf.column_names or leaf.num_rows == 0:
        return out
    stats = leaf.column("content_stats")
    for col in layout.stats:
        struct = pc.struct_field(stats, col.name)
        lower = pc.struct_field(struct, "lower_bound")
        upper = pc.struct_field(struct, "upper_bound")
        vc = pc.struct_field(struct, "value_count")
        nc = pc.struct_field(struct, "null_value_count")
        if vc.null_count == 0:
            out["vc"][col.field_id] = pc.sum(vc).as_py()
        if nc.null_count == 0:
            out["nc"][col.field_id] = pc.sum(nc).as_py()
        if col.has_nan:
            nan = pc.struct_field(struct, "nan_value_count")
            if nan.null_count == 0:
                out["nan"][col.field_id] = pc.sum(nan).as_py()
        # Entries with only nulls (or NaNs) have no bounds; they do not widen the range.
        has_values = pc.fill_null(pc.less(nc, vc), True)
        if pc.all(pc.or_(pc.invert(has_values), pc.is_valid(lower))).as_py():
            lo = pc.min(lower)
            if lo.is_valid:
                out["lower"][col.field_id] = _internal(col.iceberg_type, lo)
        if pc.all(pc.or_(pc.invert(has_values), pc.is_valid(upper))).as_py():
            hi = pc.max(upper)
            if hi.is_valid:
                out["upper"][col.field_id] = _internal(col.iceberg_type, hi)
    return out


def _internal(t: Any, scalar: pa.Scalar) -> Any:
    from firn.manifests.v4_layout import storage_to_internal, to_internal_storage

    arr = to_internal_storage(pa.array([scalar.as_py()], scalar.type))
    return storage_to_internal(t, arr[0].as_py())


def manifest_entry_for_leaf(
    leaf: pa.Table,
    layout: V4Layout,
    *,
    location: str,
    size: int,
    kind: ManifestKind,
    status: EntryStatus,
    snapshot_id: int,
    sequence_number: int,
    spec_id: int,
    referenced_file: str | None = None,
) -> ManifestEntry:
    """The root entry for a leaf: manifest stats, aggregated column stats, explicit versions."""
    vi = leaf.column("version_info")
    st = single_array(pc.struct_field(vi, "status")).to_numpy(zero_copy_only=False)
    rows = leaf.column("record_count").to_numpy()
    is_data = kind == "data"
    seqs = pc.struct_field(vi, "sequence_number")
    live = st != int(EntryStatus.DELETED)
    live_seqs = pc.filter(seqs, pa.array(live))
    min_seq = pc.min(live_seqs).as_py() if len(live_seqs) and live_seqs.null_count == 0 else sequence_number
    # Delete manifests count delete records as rows (spec "Manifest Lists").
    stats = ManifestStats(
        added_files_count=int((st == int(EntryStatus.ADDED)).sum()),
        existing_files_count=int((st == int(EntryStatus.EXISTING)).sum()),
        deleted_files_count=int((st == int(EntryStatus.DELETED)).sum()),
        added_rows_count=int(rows[st == int(EntryStatus.ADDED)].sum()),
        existing_rows_count=int(rows[st == int(EntryStatus.EXISTING)].sum()),
        deleted_rows_count=int(rows[st == int(EntryStatus.DELETED)].sum()),
        min_sequence_number=min_seq,
    )
    agg = _aggregate(leaf.filter(pa.array(live)), layout)
    types = {c.field_id: c.iceberg_type for c in layout.stats}
    f = DataFile(
        content=FileContent.DATA_MANIFEST if is_data else FileContent.DELETE_MANIFEST,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=leaf.num_rows,
        file_size_in_bytes=size,
        spec_id=spec_id,
        value_counts=agg["vc"] or None,
        null_value_counts=agg["nc"] or None,
        nan_value_counts=agg["nan"] or None,
        lower_bounds={k: values.to_bytes(types[k], v) for k, v in agg["lower"].items()} or None,
        upper_bounds={k: values.to_bytes(types[k], v) for k, v in agg["upper"].items()} or None,
        referenced_data_file=referenced_file,
    )
    return ManifestEntry(status, snapshot_id, sequence_number, sequence_number, f, manifest_stats=stats)


def leaf_location(md: TableMetadata, kind: ManifestKind) -> str:
    return f"{metadata_dir(md)}/{uuid.uuid4()}-m-{kind}.parquet"


def write_leaf(
    io: FileIO,
    md: TableMetadata,
    leaf: pa.Table,
    kind: ManifestKind,
    *,
    status: EntryStatus,
    snapshot_id: int,
    sequence_number: int,
    written: list[str],
    referenced_file: str | None = None,
) -> tuple[str, pa.Table]:
    """Write ``leaf`` as a new leaf manifest; returns its location and its root entry (1 row)."""
    layout = V4Layout.for_metadata(md)
    location = leaf_location(md, kind)
    written.append(location)
    size = write_v4_manifest(io, location, leaf, kind)
    specs = pc.unique(leaf.column("partition_spec_id")).to_pylist() if leaf.num_rows else [md.default_spec_id]
    spec_id = specs[0] if len(specs) == 1 else md.default_spec_id
    entry = manifest_entry_for_leaf(
        leaf,
        layout,
        location=location,
        size=size,
        kind=kind,
        status=status,
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        spec_id=spec_id,
        referenced_file=referenced_file,
    )
    return location, layout.to_arrow([entry], specs_partition_ids(md))


def entries_table(md: TableMetadata, entries: list[ManifestEntry]) -> pa.Table:
    layout = V4Layout.for_metadata(md)
    return layout.to_arrow(entries, specs_partition_ids(md))


__all__ = [
    "root_for_next_snapshot",
    "entries_table",
    "leaf_location",
    "manifest_entry_for_leaf",
    "set_version_info",
    "write_leaf",
]
