"""Parquet data files: writing with field ids and metrics, registering existing files, reading.

Writing (:func:`write_parquet_file`) follows Appendix A "Parquet": every column carries its
Iceberg field id, lists use the 3-level representation, decimals with precision <= 18 are stored
as ``int32``/``int64``, ``uuid`` as ``fixed_len_byte_array(16)`` with the ``UUID`` logical type,
``time`` as ``TIME_MICROS`` with ``adjustToUtc=false``, and ``unknown`` columns are omitted.
Codec, level, row-group and page sizes come from the table properties.

Reading lives in :mod:`firn.io.parquet_read`, metrics in :mod:`firn.io.parquet_metrics`; both
are re-exported here so callers import one module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from firn.errors import FirnError, InvalidMetadata, ValidationError
from firn.io.arrow_schema import apply_name_mapping, cast_to_schema, has_field_ids
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.io.parquet_metrics import (
    FileMetrics,
    MetricsMode,
    add_column_sizes,
    column_metrics_modes,
    metrics_from_arrow,
    metrics_from_footer,
    parse_metrics_mode,
    split_offsets,
)
from firn.io.parquet_read import check_file_schema, read_parquet, read_parquet_table
from firn.spec.content import DataFile, FileContent, FileFormat, PartitionTuple
from firn.spec.deletion_scope import DeletionScope
from firn.spec.name_mapping import NameMapping, parse_name_mapping
from firn.spec.properties import TableProperties
from firn.spec.schema import Schema
from firn.spec.sorting import SortOrder
from firn.spec.types import StructType, UnknownType

# pyarrow's spelling of the Iceberg codec names (``write.parquet.compression-codec``).
_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}


@dataclass(frozen=True, slots=True)
class ParquetWriteResult:
    """A Parquet data file as a manifest records it: size, rows, split offsets and metrics.

    Also returned by :func:`metrics_from_parquet_footer` for files written elsewhere.
    """

    location: str
    file_size_in_bytes: int
    record_count: int
    split_offsets: tuple[int, ...]
    metrics: FileMetrics

    def to_data_file(
        self,
        *,
        partition: PartitionTuple = (),
        spec_id: int = 0,
        sort_order_id: int | None = None,
        content: FileContent = FileContent.DATA,
        equality_ids: Sequence[int] | None = None,
    ) -> DataFile:
        """The manifest ``data_file`` for this file."""
        m = self.metrics
        return DataFile(
            content=content,
            file_path=self.location,
            file_format=FileFormat.PARQUET,
            partition=tuple(partition),
            record_count=self.record_count,
            file_size_in_bytes=self.file_size_in_bytes,
            spec_id=spec_id,
            column_sizes=dict(m.column_sizes),
            value_counts=dict(m.value_counts),
            null_value_counts=dict(m.null_value_counts),
            nan_value_counts=dict(m.nan_value_counts),
            lower_bounds=dict(m.lower_bounds),
            upper_bounds=dict(m.upper_bounds),
            split_offsets=self.split_offsets or None,
            equality_ids=tuple(equality_ids) if equality_ids is not None else None,
            sort_order_id=sort_order_id,
        )


def _drop_unknown(table: pa.Table, schema: Schema) -> tuple[pa.Table, Schema]:
    """Appendix A: ``unknown`` columns are omitted from data files (top level and in structs)."""

    def has_unknown(t: Any) -> bool:
        return isinstance(t, UnknownType) or (
            isinstance(t, StructType) and any(has_unknown(f.field_type) for f in t.fields)
        )

    if not any(has_unknown(f.field_type) for f in schema.fields):
        return table, schema

    def prune_type(t: StructType) -> StructType:
        return StructType(
            *(
                f.with_type(prune_type(f.field_type)) if isinstance(f.field_type, StructType) else f
                for f in t.fields
                if not isinstance(f.field_type, UnknownType)
            )
        )

    def prune_array(arr: pa.Array, t: StructType) -> pa.Array:
        children, fields = [], []
        for i, f in enumerate(t.fields):
            if isinstance(f.field_type, UnknownType):
                continue
            child = arr.field(i)
            if isinstance(f.field_type, StructType):
                child = prune_array(child, f.field_type)
            children.append(child)
            fields.append(
                pa.field(
                    arr.type.field(i).name, child.type, arr.type.field(i).nullable, arr.type.field(i).metadata
                )
            )
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)

    columns, fields = [], []
    for f, af in zip(schema.fields, table.schema):
        if isinstance(f.field_type, UnknownType):
            continue
        col = table.column(f.name)
        if isinstance(f.field_type, StructType) and has_unknown(f.field_type):
            st = f.field_type
            col = pa.chunked_array([prune_array(c, st) for c in col.chunks])
            af = af.with_type(col.type)
        columns.append(col)
        fields.append(af)
    pruned = prune_type(schema.as_struct())
    return pa.Table.from_arrays(columns, schema=pa.schema(fields)), Schema(*pruned.fields)


def _writer_options(properties: TableProperties) -> dict[str, Any]:
    options: dict[str, Any] = {
        "compression": _CODECS.get(properties.parquet_compression, properties.parquet_compression),
        "data_page_size": properties.parquet_page_size_bytes,
        # Appendix A: decimal(P <= 9) as int32, P <= 18 as int64.
        "store_decimal_as_integer": True,
        # Appendix A: 3-level lists named list/element.
        "use_compliant_nested_type": True,
        "write_statistics": True,
        # A CRC-32 in every page header, as parquet-mr (so Iceberg Java and Spark) writes by
        # default: readers that verify it (Firn's own) turn a damaged page into an error
        # instead of wrong values. Costs 4 B per page and a few % of CPU (bench/README.md).
        "write_page_checksum": True,
    }
    if properties.parquet_compression_level is not None and options["compression"] != "none":
        options["compression_level"] = properties.parquet_compression_level
    return options


def _rows_per_group(table: pa.Table, properties: TableProperties) -> int:
    # pyarrow sizes row groups in rows; estimate from the in-memory width of a row.
    if table.num_rows == 0:
        return 1
    bytes_per_row = max(1.0, table.nbytes / table.num_rows)
    return max(1, int(properties.parquet_row_group_size_bytes // bytes_per_row))


def write_parquet_file(
    io: FileIO,
    location: str,
    table: pa.Table,
    schema: Schema,
    properties: TableProperties,
    *,
    sort_order: SortOrder | None = None,
) -> ParquetWriteResult:
    """Write ``table`` as one Parquet data file and return its size, offsets and metrics.

    ``table`` is validated and cast to ``schema`` first (see
    :func:`~firn.io.arrow_schema.cast_to_schema`; cheap when it already conforms). Metrics are
    computed from the Arrow data under the table's metrics modes; ``sort_order`` gives sorted
    columns at least ``truncate(16)``, as Java does. A partial file is deleted if writing fails.
    """
    data = cast_to_schema(table, schema)
    data, file_schema = _drop_unknown(data, schema)
    modes = column_metrics_modes(schema, properties, sort_order=sort_order)
    metrics = metrics_from_arrow(data, file_schema, modes)
    collector: list[pq.FileMetaData] = []
    out = io.new_output(location).open_arrow()
    try:
        try:
            writer = pq.ParquetWriter(
                out, data.schema, metadata_collector=collector, **_writer_options(properties)
            )
            writer.write_table(data, row_group_size=_rows_per_group(data, properties))
            writer.close()
            size = out.tell()
        finally:
            out.close()
    except BaseException as e:
        # Best-effort cleanup of the partial file this call created (its own directory is the
        # only place it may delete in); the original error is what matters.
        parent = location.rstrip("/").rpartition("/")[0]
        delete_quietly(io, DeletionScope.build(location, [parent]), [location], "partial Parquet")
        if isinstance(e, pa.ArrowException) and not isinstance(e, OSError):
            raise ValidationError(f"{location}: writing Parquet failed: {e}") from e
        if isinstance(e, OSError):
            # The store refused or lost the upload (on S3 it may surface only when the stream
            # closes, e.g. a missing bucket): a failed write, naming the file.
            raise FirnError(f"{location}: write failed: {e}") from e
        raise
    footer = collector[0]
    return ParquetWriteResult(
        location=location,
        file_size_in_bytes=size,
        record_count=data.num_rows,
        split_offsets=split_offsets(footer),
        metrics=add_column_sizes(metrics, footer, data.schema, modes),
    )


def metrics_from_parquet_footer(
    io: FileIO,
    location: str,
    schema: Schema,
    properties: TableProperties,
    *,
    name_mapping: NameMapping | None = None,
    sort_order: SortOrder | None = None,
) -> ParquetWriteResult:
    """Describe an existing Parquet file (``add_files``) from its footer alone.

    Field ids come from the file; a file without them needs ``name_mapping`` (or the table's
    ``schema.name-mapping.default``), else :class:`~firn.errors.ValidationError` naming the file.
    Bounds come from row-group statistics; NaN counts are not in a footer and are left out.
    A column whose type cannot be read as the table's raises :class:`~firn.errors.InvalidMetadata`.
    """
    in_file = io.new_input(location)
    with in_file.open_arrow() as f:
        try:
            pf = pq.ParquetFile(f)
            metadata = pf.metadata
            arrow_schema = pf.schema_arrow
        except pa.ArrowException as e:
            raise InvalidMetadata(f"not a readable Parquet file: {e}", location=location) from e
        size = f.size()
    if not has_field_ids(arrow_schema, require_all=False):
        if name_mapping is None and properties.name_mapping_json is not None:
            name_mapping = parse_name_mapping(properties.name_mapping_json)
        if name_mapping is None:
            raise ValidationError(
                f"{location}: Parquet file has no Iceberg field ids; set the table property "
                "'schema.name-mapping.default' or pass a name mapping to register it"
            )
        arrow_schema = apply_name_mapping(arrow_schema, name_mapping)
    # A column no scan could read as the table's type must not be registered at all.
    check_file_schema(location, arrow_schema, schema)
    modes = column_metrics_modes(schema, properties, sort_order=sort_order)
    metrics = metrics_from_footer(metadata, schema, modes, arrow_schema=arrow_schema)
    return ParquetWriteResult(
        location=location,
        file_size_in_bytes=size,
        record_count=metadata.num_rows,
        split_offsets=split_offsets(metadata),
        metrics=metrics,
    )


__all__ = [
    "FileMetrics",
    "MetricsMode",
    "ParquetWriteResult",
    "column_metrics_modes",
    "metrics_from_parquet_footer",
    "parse_metrics_mode",
    "read_parquet",
    "read_parquet_table",
    "write_parquet_file",
]
