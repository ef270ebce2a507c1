"""Following explicit row positions through a concurrent rewrite (``delete_rows_at``).

A row delta names rows by ``(data file, position)``. When a concurrent ``replace`` commit (a
compaction) rewrote that file, the rows live on at other positions of other files. On tables
with row lineage (v3+, spec "Row Lineage") every row keeps its ``_row_id`` through a rewrite,
so a position of the old file maps to the position of the row with the same ``_row_id`` in
the branch head's files. Without lineage (v2, or rows older than an upgrade), positions
cannot be followed and the caller refuses the change, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_task
from firn.deletes.bitmap import PositionBitmap
from firn.errors import FirnError
from firn.io.base import FileIO
from firn.spec.content import DataFile
from firn.spec.table_metadata import TableMetadata


def _lineage_plan(md: TableMetadata) -> ReadPlan:
    schema = md.schema()
    names = tuple(f.name for f in schema.fields)
    return ReadPlan(
        table_schema=schema,
        projection=schema,
        metadata_columns=("_pos", "_row_id"),
        output_order=(*names, "_pos", "_row_id"),
        specs=dict(md.specs),
    )


def _read(io: FileIO, f: DataFile, plan: ReadPlan) -> pa.Table:
    return pa.Table.from_batches(list(read_task(io, FileScanTask(f, 0), plan)), schema=plan.output_schema)


def remap_positions(
    io: FileIO,
    md: TableMetadata,
    moved: Mapping[str, tuple[DataFile, PositionBitmap]],
    candidates: list[DataFile],
) -> dict[str, PositionBitmap] | str:
    """Where the rows at ``moved``'s positions (old data file and positions, by path) are now,
    among ``candidates`` (the live data files that may hold them): new positions by data file
    path, or why they cannot be followed. Rows found nowhere were deleted (a rewrite drops
    deleted rows) and need no delete."""
    if not md.tracks_row_lineage:
        return f"format version {md.format_version} keeps no row lineage (_row_id) to follow rows by"
    plan = _lineage_plan(md)
    wanted: list[pa.Array] = []
    for path, (old, positions) in moved.items():
        try:
            rows = _read(io, old, plan)
        except FirnError as e:
            return f"the rewritten file {path} cannot be read to find its rows' _row_id ({e})"
        ids = rows.column("_row_id").filter(pa.array(positions.deleted_mask(rows.num_rows)))
        if ids.null_count:
            return f"rows of {path} have no _row_id (written before the table had row lineage)"
        wanted.append(ids.combine_chunks())
    if not wanted:
        return {}
    value_set = pa.concat_arrays(wanted)
    out: dict[str, PositionBitmap] = {}
    for f in candidates:
        try:
            rows = _read(io, f, plan)
        except FirnError as e:
            return f"{f.file_path} cannot be read to find the moved rows ({e})"
        hit = pc.fill_null(pc.is_in(rows.column("_row_id"), value_set=value_set), False)
        pos = rows.column("_pos").filter(hit).to_numpy()
        if len(pos):
            out[f.file_path] = PositionBitmap.from_positions(np.asarray(pos, dtype=np.int64))
    return out


__all__ = ["remap_positions"]
