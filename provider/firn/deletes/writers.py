"""Writing row-level delete files (spec "Delete Formats").

* :func:`write_position_delete_files` — v2 position delete files: Parquet with ``file_path``
  (2147483546) and ``pos`` (2147483545), rows sorted by path then position, full metrics for
  both columns (so a file covering one data file is recognizable from its ``file_path``
  bounds, as Java's ``ContentFileUtil.referencedDataFile`` does), ``referenced_data_file``
  set when every row targets one data file. One file per partition (Java's default
  ``write.delete.granularity=partition``). Position delete files are not allowed in v3+.
* :func:`write_equality_delete_files` — equality delete files (v2+): Parquet with the table's
  field ids, ``content=EQUALITY_DELETES`` and ``equality_ids``; one file per partition tuple of
  the rows (an unpartitioned spec makes the deletes global).
* :func:`write_deletion_vectors` — v3 DVs: one Puffin file with one ``deletion-vector-v1`` blob
  per data file, described by delete-manifest entries as Java's ``BaseDVFileWriter`` does
  (notes §2 "v3 DV entry").

Every writer only writes files; committing them (``table.row_delta()``) is separate.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from firn.deletes.bitmap import PositionBitmap, PositionsLike
from firn.deletes.dv import write_dv_puffin
from firn.errors import ValidationError
from firn.io.arrow_partitions import partition_rows
from firn.io.arrow_schema import cast_to_schema
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.io.parquet import write_parquet_file
from firn.spec.content import DataFile, FileContent, FileFormat, PartitionTuple
from firn.spec.deletion_scope import DeletionScope
from firn.spec.field_ids import DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID
from firn.spec.locations import DefaultLocationProvider
from firn.spec.partitioning import PartitionSpec
from firn.spec.properties import METRICS_MODE_COLUMN_PREFIX, TableProperties
from firn.spec.schema import Schema
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import LONG, STRING, DoubleType, FloatType, NestedField, PrimitiveType, StructType
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS, MIN_FORMAT_VERSION_ROW_LEVEL_DELETES

# Spec "Position Delete Files": the file_position_delete struct (without the optional ``row``).
POSITION_DELETE_FILE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
    NestedField(DELETE_FILE_POS_ID, "pos", LONG, True),
)

# One data file and the positions to delete in it.
PositionDeletes = tuple[DataFile, PositionsLike | PositionBitmap]


def referenced_data_file_of(delete_file: DataFile) -> str | None:
    """The single data file a position delete file or DV applies to (None: partition-scoped).

    ``referenced_data_file`` when set; otherwise equal ``file_path`` lower and upper bounds
    (full metrics, as this module writes them) identify a file-scoped v2 position delete file.
    """
    if delete_file.content is not FileContent.POSITION_DELETES:
        return None
    if delete_file.referenced_data_file is not None:
        return delete_file.referenced_data_file
    lo = (delete_file.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (delete_file.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lo is not None and lo == hi:
        try:
            return lo.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _location(metadata: TableMetadata, spec: PartitionSpec, partition: PartitionTuple, name: str) -> str:
    path = spec.partition_path(partition, metadata.schema()) if spec.fields else None
    return DefaultLocationProvider.for_table(metadata).new_data_location(name, path)


def _as_sorted_positions(positions: PositionsLike | PositionBitmap) -> np.ndarray:
    if isinstance(positions, PositionBitmap):
        return positions.to_array()
    # PositionBitmap validates the range and deduplicates and sorts in C.
    return PositionBitmap.from_positions(positions).to_array()


def _check_positions(data_file: DataFile, positions: np.ndarray) -> None:
    if len(positions) and int(positions[-1]) >= data_file.record_count:
        raise ValidationError(
            f"row position {int(positions[-1])} is past the end of {data_file.file_path} "
            f"({data_file.record_count} rows)"
        )


def _merge_by_file(deletes: Iterable[PositionDeletes]) -> dict[str, tuple[DataFile, PositionBitmap]]:
    """Positions per data file (a file named twice gets the union), in first-seen order."""
    out: dict[str, tuple[DataFile, PositionBitmap]] = {}
    for data_file, positions in deletes:
        if data_file.content is not FileContent.DATA:
            raise ValidationError(
                f"{data_file.file_path} is a delete file; position deletes target data files"
            )
        bitmap = (
            positions.copy()
            if isinstance(positions, PositionBitmap)
            else PositionBitmap.from_positions(positions)
        )
        prev = out.get(data_file.file_path)
        if prev is not None:
            if (prev[0].spec_id, prev[0].partition) != (data_file.spec_id, data_file.partition):
                raise ValidationError(
                    f"data file {data_file.file_path} was given with two different partitions"
                )
            prev[1].update(bitmap)
        else:
            out[data_file.file_path] = (data_file, bitmap)
    return {path: v for path, v in out.items() if v[1]}


# -- v2 position delete files ---------------------------------------------------------------------
def _position_properties(properties: TableProperties) -> TableProperties:
    # Java MetricsConfig.forPositionDelete: full metrics for file_path and pos, so readers can
    # tell a file-scoped delete file from its bounds and prune by position.
    full = {f"{METRICS_MODE_COLUMN_PREFIX}{f.name}": "full" for f in POSITION_DELETE_FILE_SCHEMA.fields}
    return TableProperties.parse({**properties.raw, **full})


def write_position_delete_file(
    io: FileIO,
    location: str,
    positions_by_file: Mapping[str, PositionsLike | PositionBitmap],
    properties: TableProperties,
    *,
    spec_id: int,
    partition: PartitionTuple,
) -> DataFile:
    """Write one position delete file at ``location`` and return its manifest ``data_file``.

    Rows are sorted by ``file_path`` then ``pos`` (spec "Position Delete Files"); the paths
    must all belong to the partition ``(spec_id, partition)``, the delete file's scope.
    """
    paths = sorted(positions_by_file)
    if not paths:
        raise ValidationError("a position delete file needs at least one position")
    arrays = [_as_sorted_positions(positions_by_file[p]) for p in paths]
    counts = np.array([len(a) for a in arrays], dtype=np.int64)
    if not counts.sum():
        raise ValidationError("a position delete file needs at least one position")
    path_index = np.repeat(np.arange(len(paths), dtype=np.int32), counts)
    rows = pa.table(
        {
            "file_path": pa.array(paths, pa.string()).take(pa.array(path_index)),
            "pos": pa.array(np.concatenate(arrays), pa.int64()),
        }
    )
    result = write_parquet_file(
        io, location, rows, POSITION_DELETE_FILE_SCHEMA, _position_properties(properties)
    )
    f = result.to_data_file(partition=partition, spec_id=spec_id, content=FileContent.POSITION_DELETES)
    # sort_order_id is null for position deletes (spec "Manifests"); referenced_data_file lets
    # readers and commits treat a single-file delete file as file-scoped.
    return f.evolve(sort_order_id=None, referenced_data_file=paths[0] if len(paths) == 1 else None)


def write_position_delete_files(
    io: FileIO, metadata: TableMetadata, deletes: Iterable[PositionDeletes]
) -> list[DataFile]:
    """Write v2 position delete files for ``(data file, positions)`` pairs, one per partition.

    Only for format version 2: v1 has no row-level deletes, and v3+ must use deletion vectors
    (spec "Delete Formats": position delete files must not be added to v3 tables).
    Positions must be within each data file's ``record_count``.
    """
    v = metadata.format_version
    if v < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        raise ValidationError(f"format version {v} has no row-level deletes; upgrade the table to v2+")
    if v >= MIN_FORMAT_VERSION_DELETION_VECTORS:
        raise ValidationError(
            f"format version {v} does not allow new position delete files; write deletion vectors"
        )
    groups: dict[tuple[int, PartitionTuple], dict[str, PositionBitmap]] = {}
    for path, (data_file, bitmap) in _merge_by_file(deletes).items():
        _check_positions(data_file, bitmap.to_array())
        groups.setdefault((data_file.spec_id, data_file.partition), {})[path] = bitmap
    write_id = uuid.uuid4()
    written: list[DataFile] = []
    try:
        for n, ((spec_id, partition), by_file) in enumerate(groups.items()):
            spec = metadata.spec_by_id(spec_id)
            location = _location(metadata, spec, partition, f"{write_id}-{n:05d}-deletes.parquet")
            written.append(
                write_position_delete_file(
                    io, location, by_file, metadata.table_properties, spec_id=spec_id, partition=partition
                )
            )
    except BaseException:
        delete_quietly(
            io,
            DeletionScope.for_written(metadata.location, metadata),
            [f.file_path for f in written],
            "delete",
        )
        raise
    return written


# -- equality delete files ---------------------------------------------------------------------------
def _equality_ids(schema: Schema, columns: Sequence[str | int]) -> tuple[int, ...]:
    ids: list[int] = []
    for c in columns:
        f = schema.find_field(c)
        if not isinstance(f.field_type, PrimitiveType) or isinstance(f.field_type, FloatType | DoubleType):
            # Spec "Equality Delete Files": the restrictions of identifier fields apply.
            raise ValidationError(
                f"equality delete column {f.name!r} must be a primitive other than float/double, "
                f"not {f.field_type}"
            )
        parent = schema.parent_id(f.field_id)
        while parent is not None:
            if not isinstance(schema.find_field(parent).field_type, StructType):
                raise ValidationError(f"equality delete column {f.name!r} cannot be nested in a list or map")
            parent = schema.parent_id(parent)
        if f.field_id in ids:
            raise ValidationError(f"equality delete column {f.name!r} was given twice")
        ids.append(f.field_id)
    if not ids:
        raise ValidationError("equality deletes need at least one equality column")
    return tuple(ids)


def write_equality_delete_files(
    io: FileIO,
    metadata: TableMetadata,
    rows: pa.Table,
    equality_columns: Sequence[str | int],
    *,
    spec: PartitionSpec | None = None,
) -> list[DataFile]:
    """Write equality delete files (v2+) deleting every row equal to one of ``rows`` on the
    ``equality_columns`` (names or field ids); ``null`` matches ``null``.

    ``rows`` may hold any top-level table columns (all are written, with the table's field ids);
    it must hold the equality columns and, for a partitioned ``spec`` (default: the table's
    default spec), the partition source columns: one file is written per partition tuple. A
    delete file written with an unpartitioned spec applies to every partition (spec "Scan
    Planning": a global equality delete).
    """
    v = metadata.format_version
    if v < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        raise ValidationError(f"format version {v} has no row-level deletes; upgrade the table to v2+")
    if isinstance(rows, pa.RecordBatch):
        rows = pa.Table.from_batches([rows])
    schema = metadata.schema()
    spec = spec if spec is not None else metadata.spec()
    ids = _equality_ids(schema, equality_columns)
    wanted = set(ids) | {pf.source_id for pf in spec.fields}
    for name in rows.column_names:
        f = schema.find_field_or_none(name)
        if f is None or schema.parent_id(f.field_id) is not None:
            raise ValidationError(f"equality delete rows have column {name!r}, which is not a table column")
        wanted.add(f.field_id)
    top = {_top_level(schema, fid) for fid in wanted}
    file_schema = schema.select_ids(top)
    missing = [f.name for f in file_schema.fields if f.name not in rows.column_names]
    if missing:
        raise ValidationError(f"equality delete rows are missing column(s) {missing}")
    if rows.num_rows == 0:
        return []
    data = cast_to_schema(rows, file_schema)
    write_id = uuid.uuid4()
    written: list[DataFile] = []
    try:
        for n, (partition, group) in enumerate(partition_rows(data, file_schema, spec)):
            location = _location(metadata, spec, partition, f"{write_id}-{n:05d}-eq-deletes.parquet")
            result = write_parquet_file(io, location, group, file_schema, metadata.table_properties)
            written.append(
                result.to_data_file(
                    partition=partition,
                    spec_id=spec.spec_id,
                    content=FileContent.EQUALITY_DELETES,
                    equality_ids=ids,
                )
            )
    except BaseException:
        delete_quietly(
            io,
            DeletionScope.for_written(metadata.location, metadata),
            [f.file_path for f in written],
            "delete",
        )
        raise
    return written


def _top_level(schema: Schema, field_id: int) -> int:
    cur = field_id
    while (parent := schema.parent_id(cur)) is not None:
        cur = parent
    return cur


# -- v3 deletion vectors -------------------------------------------------------------------------------
def write_deletion_vectors(
    io: FileIO,
    metadata: TableMetadata,
    deletes: Iterable[PositionDeletes],
    *,
    location: str | None = None,
) -> list[DataFile]:
    """Write one Puffin file holding a DV per data file and return the DVs' manifest entries.

    Each entry (notes §2 "v3 DV entry"): ``content=POSITION_DELETES``, ``file_format=PUFFIN``,
    ``file_path``/``file_size_in_bytes`` of the Puffin file, ``referenced_data_file``,
    ``content_offset``/``content_size_in_bytes`` exactly the blob's, ``record_count`` = the
    cardinality, and the data file's spec and partition. The positions given are written as is:
    merging a file's earlier deletes (spec: one DV per data file) is the caller's job
    (``firn.core.actions.merge_on_read``).
    """
    v = metadata.format_version
    if v < MIN_FORMAT_VERSION_DELETION_VECTORS:
        raise ValidationError(
            f"deletion vectors need format version {MIN_FORMAT_VERSION_DELETION_VECTORS}+, table is v{v}"
        )
    by_file = _merge_by_file(deletes)
    if not by_file:
        return []
    for data_file, bitmap in by_file.values():
        top = bitmap.max_position()
        if top is not None:
            _check_positions(data_file, np.array([top]))
    if location is None:
        location = _location(metadata, PartitionSpec(0, ()), (), f"{uuid.uuid4()}-dv.puffin")
    dv_file = write_dv_puffin(io.new_output(location), [(p, b) for p, (_, b) in by_file.items()])
    out = []
    for dv in dv_file.dvs:
        data_file = by_file[dv.referenced_data_file][0]
        out.append(
            DataFile(
                content=FileContent.POSITION_DELETES,
                file_path=dv_file.location,
                file_format=FileFormat.PUFFIN,
                partition=data_file.partition,
                record_count=dv.cardinality,
                file_size_in_bytes=dv_file.file_size_in_bytes,
                spec_id=data_file.spec_id,
                referenced_data_file=dv.referenced_data_file,
                content_offset=dv.offset,
                content_size_in_bytes=dv.length,
            )
        )
    return out


__all__ = [
    "POSITION_DELETE_FILE_SCHEMA",
    "PositionDeletes",
    "referenced_data_file_of",
    "write_deletion_vectors",
    "write_equality_delete_files",
    "write_position_delete_file",
    "write_position_delete_files",
]
