"""Carrying deletes that landed during a compaction over to the files it wrote.

A compaction group reads its input files' live rows at planning time and writes them into new
files. A writer's merge-on-read delete committed meanwhile names rows of the *input* files by
position (a DV on v3+, a position delete file on v2). Java drops the whole rewrite; Firn maps
those rows to where the group wrote them and commits the same deletes against the new files,
in the compaction's own ``replace`` snapshot (DVs on v3+, position delete files on v2).

The row mapping:

* v3+ (spec "Row Lineage"): every row keeps its ``_row_id`` through the rewrite, so a deleted
  input row is the output row with the same ``_row_id``.
* v2, and rows written before a table was upgraded (no ``_row_id``): no row identity is
  stored, so a deleted input row is matched to an output row with the same values in every
  column, each output row used once. Rows with equal values are interchangeable in a table
  (a multiset of rows), so deleting any one of them deletes "that" row.

Either way only positions that were live when the group was rewritten count: the positions
of the deletes the rewrite applied are left out (a v3 DV repeats every earlier position).
When the mapping cannot be made (an input or output that cannot be read), the caller drops
the group with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_task
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap
from firn.deletes.writers import write_deletion_vectors, write_position_delete_files
from firn.errors import FirnError
from firn.io.base import FileIO
from firn.spec.content import DataFile
from firn.spec.name_mapping import parse_name_mapping
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS


@dataclass(frozen=True)
class CarriedDeletes:
    """The delete files that re-state concurrent deletes on a group's outputs, and how many rows."""

    added_deletes: tuple[DataFile, ...]
    rows: int

    @property
    def written(self) -> list[str]:
        return sorted({f.file_path for f in self.added_deletes})


def _plan(md: TableMetadata, lineage: bool) -> ReadPlan:
    schema = md.schema()
    text = md.table_properties.name_mapping_json
    meta = ("_pos", "_row_id") if lineage else ("_pos",)
    columns = tuple(f.name for f in schema.fields)
    return ReadPlan(
        table_schema=schema,
        projection=schema,
        metadata_columns=meta,
        output_order=(*columns, *meta),
        specs=dict(md.specs),
        name_mapping=parse_name_mapping(text) if text else None,
    )


def _read_all(io: FileIO, f: DataFile, plan: ReadPlan) -> pa.Table:
    batches = list(read_task(io, FileScanTask(f, 0), plan))
    return pa.Table.from_batches(batches, schema=plan.output_schema)


def carry_over(
    io: FileIO,
    md: TableMetadata,
    deletes: Mapping[str, Sequence[DataFile]],
    rewritten: Mapping[str, DataFile],
    outputs: Sequence[DataFile],
    applied: Mapping[str, Sequence[DataFile]] | None = None,
) -> CarriedDeletes | str:
    """Re-state ``deletes`` (delete files by the rewritten data file they apply to) on
    ``outputs``; returns the written delete files, or why it cannot be done. ``applied``: the
    delete files the rewrite already applied to each input (their positions are left out: a
    DV repeats every earlier position, and those rows were not rewritten)."""
    lineage = md.tracks_row_lineage
    plan = _plan(md, lineage)
    wanted: list[pa.Table] = []
    for path, files in deletes.items():
        source = rewritten[path]
        positions = load_positions(io, source, files)
        if not positions:
            continue
        try:
            rows = _read_all(io, source, plan)
        except FirnError as e:
            return f"cannot read {path} to carry its concurrent deletes over: {e}"
        mask = positions.deleted_mask(rows.num_rows)
        earlier = load_positions(io, source, (applied or {}).get(path, ()))
        if earlier is not None:
            mask &= ~earlier.deleted_mask(rows.num_rows)
        wanted.append(rows.filter(pa.array(mask)).drop_columns(["_pos"]))
    if not wanted:
        return CarriedDeletes((), 0)
    targets = pa.concat_tables(wanted)
    if lineage and targets.column("_row_id").null_count:
        # Rows written before row lineage (a table upgraded from v2): follow them by value.
        lineage = False
        plan = _plan(md, lineage)
        targets = targets.drop_columns(["_row_id"])
    found: list[tuple[DataFile, PositionBitmap]] = []
    carried = 0
    if lineage:
        ids = targets.column("_row_id")
    else:
        need = Counter(_keys(targets))
    for out in outputs:
        try:
            rows = _read_all(io, out, plan)
        except FirnError as e:
            return f"cannot read rewritten file {out.file_path} to carry deletes over: {e}"
        if lineage:
            hit = pc.fill_null(pc.is_in(rows.column("_row_id"), value_set=ids), False)
            pos = rows.column("_pos").filter(hit).to_numpy()
        else:
            pos = _match_values(rows, need)
        if len(pos):
            found.append((out, PositionBitmap.from_positions(pos)))
            carried += len(pos)
    if not found:
        return CarriedDeletes((), 0)
    if md.format_version >= MIN_FORMAT_VERSION_DELETION_VECTORS:
        added = write_deletion_vectors(io, md, found)
    else:
        added = write_position_delete_files(io, md, found)
    return CarriedDeletes(tuple(added), carried)


def _freeze(value: object) -> object:
    """A hashable form of a row value (structs and maps read as dicts, lists as lists)."""
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _keys(rows: pa.Table) -> list[tuple[object, ...]]:
    cols = [c for c in rows.column_names if c != "_pos"]
    values = [[_freeze(v) for v in rows.column(c).to_pylist()] for c in cols]
    return list(zip(*values, strict=True))


def _match_values(rows: pa.Table, need: Counter[tuple[object, ...]]) -> np.ndarray:
    """Positions of output rows equal to rows still in ``need`` (each used once; ``need`` is
    decremented). The first column narrows the candidates before whole rows are compared."""
    if not need or rows.num_rows == 0:
        return np.array([], dtype=np.int64)
    first = rows.column_names[0]
    firsts = pa.array([k[0] for k in need], type=rows.schema.field(first).type)
    candidate = pc.fill_null(pc.is_in(rows.column(first), value_set=firsts), False)
    if any(k[0] is None for k in need):
        candidate = pc.or_(candidate, pc.is_null(rows.column(first)))
    cands = rows.filter(candidate)
    out: list[int] = []
    for key, pos in zip(_keys(cands), cands.column("_pos").to_pylist(), strict=True):
        if need.get(key, 0) > 0:
            need[key] -= 1
            out.append(pos)
    return np.array(out, dtype=np.int64)


__all__ = ["CarriedDeletes", "carry_over"]
