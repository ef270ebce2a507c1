"""Applying deletes at read time, vectorized (issue: "never a Python loop per row").

Position deletes (DVs and v2 position delete files) become one :class:`PositionBitmap` per
data file and then a boolean keep-mask indexed by each batch's ``_pos`` column. Equality
deletes are a null-safe anti-join on the equality columns (``pyarrow.compute.is_in`` for one
column, a hash join otherwise). Parsed delete files are cached by location: partition-scoped
position files and equality files usually apply to many data files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.deletes.bitmap import PositionBitmap
from firn.deletes.dv import read_dv
from firn.errors import InvalidMetadata
from firn.io.base import FileIO
from firn.spec.content import DataFile, FileContent
from firn.spec.field_ids import DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID
from firn.spec.schema import Schema
from firn.spec.types import LONG, STRING, NestedField
from firn.util.arrow_chunks import single_array
from firn.util.lru import LRUCache

if TYPE_CHECKING:
    from firn.spec.name_mapping import NameMapping

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
    NestedField(DELETE_FILE_POS_ID, "pos", LONG, True),
)


# Parsed delete files by location (64 of each kind).
_position_files: LRUCache[pa.Table] = LRUCache(64)
_equality_files: LRUCache[pa.Table] = LRUCache(64)


def clear_delete_caches() -> None:
    """Forget cached position and equality delete files (files are immutable; this is for
    tests and for freeing memory)."""
    _position_files.clear()
    _equality_files.clear()


def _position_file_table(io: FileIO, delete_file: DataFile) -> pa.Table:
    cached = _position_files.get(delete_file.file_path)
    if cached is not None:
        return cached
    from firn.io.parquet_read import read_parquet_table

    table = read_parquet_table(io, delete_file.file_path, projected=POSITION_DELETE_SCHEMA)
    # Both columns are required by the spec; a null or negative position would otherwise fail
    # (or be misread) far from the file.
    pos = table.column("pos")
    if table.column("file_path").null_count or pos.null_count:
        raise InvalidMetadata(
            "position delete file has null file_path or pos values", location=delete_file.file_path
        )
    if len(pos) and pc.min(pos).as_py() < 0:
        raise InvalidMetadata("position delete file has negative positions", location=delete_file.file_path)
    _position_files.put(delete_file.file_path, table)
    return table


def referenced_paths(io: FileIO, delete_file: DataFile) -> set[str]:
    """The data file paths a v2 position delete file names (its ``file_path`` column)."""
    return set(pc.unique(_position_file_table(io, delete_file).column("file_path")).to_pylist())


def load_positions(
    io: FileIO, data_file: DataFile, delete_files: Sequence[DataFile]
) -> PositionBitmap | None:
    """Union of the DV and position-delete positions that apply to ``data_file`` (None: none)."""
    bitmap: PositionBitmap | None = None
    for f in delete_files:
        if f.content is not FileContent.POSITION_DELETES:
            continue
        if f.is_dv:
            if f.content_offset is None or f.content_size_in_bytes is None:
                raise InvalidMetadata(f"deletion vector {f.file_path} has no content offset/size")
            dv = read_dv(
                io.new_input(f.file_path),
                f.content_offset,
                f.content_size_in_bytes,
                expected_cardinality=f.record_count,
            )
            bitmap = dv if bitmap is None else bitmap | dv
            continue
        table = _position_file_table(io, f)
        if f.referenced_data_file == data_file.file_path:
            positions = table.column("pos")
        else:
            positions = table.column("pos").filter(pc.equal(table.column("file_path"), data_file.file_path))
        arr = single_array(positions).to_numpy()
        if len(arr):
            new = PositionBitmap.from_positions(arr)
            bitmap = new if bitmap is None else bitmap | new
    return bitmap


# 64M rows (a 64 MB mask) before batches show the file is really that long.
_INITIAL_MASK_CAP = 1 << 26


class PositionDeleteFilter:
    """Keep-masks for the batches of one data file, from its deleted positions.

    The file's deleted-row mask is built once (one C export of the bitmap), not per batch;
    a batch whose ``_pos`` values are contiguous (no row filter dropped rows before it) takes
    a slice of it, other batches gather by position.
    """

    def __init__(self, bitmap: PositionBitmap, num_rows: int) -> None:
        self._bitmap = bitmap
        top = bitmap.max_position()
        self._top = -1 if top is None else top
        # Rows past the last deleted position are never deleted, and ``num_rows`` comes from
        # the manifest's record_count, which damage can make huge: the mask covers at most
        # both, and at most _INITIAL_MASK_CAP rows until batches actually reach further.
        size = min(max(num_rows, 0), self._top + 1, _INITIAL_MASK_CAP)
        self._deleted = bitmap.deleted_mask(size)

    def keep_mask(self, positions: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
        """True for rows to keep (None: keep every row) of a batch with these ``_pos`` values."""
        pos = single_array(positions).to_numpy()
        if not len(pos):
            return None
        # Positions within a batch are increasing (rows are read in file order and filtering
        # keeps the order): the last one is the largest, and the span test means "contiguous".
        first, last = int(pos[0]), int(pos[-1])
        if first > self._top:
            return None
        n = len(self._deleted)
        if last >= n and n <= self._top:
            # The batch reaches past the mask (the manifest's record_count understated the
            # file, or the cap): grow it, by doubling, never past rows actually read.
            self._deleted = self._bitmap.deleted_mask(min(max(last + 1, 2 * n), self._top + 1))
            n = len(self._deleted)
        if last - first + 1 == len(pos):
            deleted = self._deleted[first : last + 1]
            if len(deleted) < len(pos):  # the tail of the batch is past the last deleted row
                deleted = np.concatenate([deleted, np.zeros(len(pos) - len(deleted), dtype=np.bool_)])
        else:
            deleted = np.zeros(len(pos), dtype=np.bool_)
            inside = pos < n
            deleted[inside] = self._deleted[pos[inside]]
        if not deleted.any():
            return None
        return ~deleted


class EqualityDeletes:
    """The equality deletes applying to one data file, grouped by their equality field ids."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        delete_files: Sequence[DataFile],
        name_mapping: NameMapping | None = None,
    ) -> None:
        self._groups: dict[tuple[int, ...], list[pa.Table]] = {}
        self._schema = schema
        for f in delete_files:
            if f.content is not FileContent.EQUALITY_DELETES:
                continue
            ids = tuple(f.equality_ids or ())
            if not ids:
                raise InvalidMetadata(f"equality delete file {f.file_path} has no equality_ids")
            self._groups.setdefault(ids, []).append(self._load(io, f, ids, name_mapping))

    def _load(
        self, io: FileIO, f: DataFile, ids: tuple[int, ...], name_mapping: NameMapping | None
    ) -> pa.Table:
        key = f"{f.file_path}|{','.join(map(str, ids))}"
        cached = _equality_files.get(key)
        if cached is not None:
            return cached
        from firn.io.parquet_read import read_parquet_table

        fields = []
        for fid in ids:
            field = self._schema.find_field_or_none(fid)
            if field is None:
                raise InvalidMetadata(
                    f"equality delete file {f.file_path} uses field id {fid}, which is not in the table schema"
                )
            fields.append(NestedField(fid, f"_eq_{fid}", field.field_type, False))
        table = read_parquet_table(io, f.file_path, projected=Schema(*fields), name_mapping=name_mapping)
        _equality_files.put(key, table)
        return table

    @property
    def is_empty(self) -> bool:
        return not self._groups

    def required_field_ids(self) -> set[int]:
        return {fid for ids in self._groups for fid in ids}

    def keep_mask(self, data: pa.Table | pa.RecordBatch, names_by_id: dict[int, str]) -> pa.Array | None:
        """Rows of ``data`` no equality delete removes (None: keep all)."""
        keep: pa.Array | None = None
        for ids, tables in self._groups.items():
            deletes = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            if deletes.num_rows == 0:
                continue
            cols = [data.column(names_by_id[fid]) for fid in ids]
            if len(ids) == 1:
                hit = pc.is_in(cols[0], value_set=deletes.column(0), skip_nulls=False)
            else:
                hit = _multi_key_hits(cols, [deletes.column(i) for i in range(len(ids))])
            group_keep = pc.invert(pc.fill_null(hit, False))
            keep = group_keep if keep is None else pc.and_(keep, group_keep)
        return keep


def _multi_key_hits(
    data_cols: Sequence[pa.Array | pa.ChunkedArray], delete_cols: Sequence[pa.ChunkedArray]
) -> pa.Array:
    """Null-safe multi-column membership via a semi join on (null flag, filled value) keys."""
    n = len(data_cols[0])
    left: dict[str, object] = {"__row": pa.array(np.arange(n, dtype=np.int64))}
    right: dict[str, object] = {}
    keys: list[str] = []
    for i, (dc, rc) in enumerate(zip(data_cols, delete_cols)):
        for name, lc, rcol in ((f"k{i}", dc, rc),):
            left[f"{name}_null"] = pc.is_null(lc)
            right[f"{name}_null"] = pc.is_null(rcol)
            filler = _zero_of(lc.type)
            left[f"{name}_v"] = pc.fill_null(lc, filler)
            right[f"{name}_v"] = pc.fill_null(rcol, filler)
            keys += [f"{name}_null", f"{name}_v"]
    lt = pa.table(left)
    rt = pa.table(right).group_by(keys).aggregate([])
    joined = lt.join(rt, keys=keys, join_type="left semi")
    hits = np.zeros(n, dtype=bool)
    hits[joined.column("__row").to_numpy()] = True
    return pa.array(hits)


def _zero_of(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", type=t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", type=t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\x00" * t.byte_width, type=t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, type=t)
    if pa.types.is_decimal(t):
        return pa.scalar(0, type=pa.int64()).cast(t)
    return pa.scalar(0, type=pa.int64()).cast(t)


__all__ = [
    "POSITION_DELETE_SCHEMA",
    "EqualityDeletes",
    "PositionDeleteFilter",
    "clear_delete_caches",
    "load_positions",
    "referenced_paths",
]
