"""Shared schema and data-file builders for the expression tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firn.spec import values
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.schema import Schema
from firn.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "i", INT),
    NestedField(3, "name", STRING),
    NestedField(4, "x", DOUBLE),
    NestedField(5, "f", FLOAT),
    NestedField(6, "price", DecimalType(9, 2)),
    NestedField(7, "d", DATE),
    NestedField(8, "ts", TIMESTAMP),
    NestedField(9, "tstz", TIMESTAMPTZ),
    NestedField(10, "tsns", TIMESTAMP_NS),
    NestedField(11, "tstzns", TIMESTAMPTZ_NS),
    NestedField(12, "t", TIME),
    NestedField(13, "u", UUID),
    NestedField(14, "fx", FixedType(3)),
    NestedField(15, "bin", BINARY),
    NestedField(16, "flag", BOOLEAN),
    NestedField(17, "gone", UNKNOWN),
    NestedField(
        18,
        "addr",
        StructType(NestedField(19, "city", STRING, required=True), NestedField(20, "zip", INT)),
        required=False,
    ),
    NestedField(21, "req_struct", StructType(NestedField(22, "code", INT, required=True)), required=True),
    NestedField(23, "tags", ListType(24, STRING)),
    NestedField(25, "Mixed Case", INT),
)


def types_by_id(schema: Schema = SCHEMA) -> dict[int, IcebergType]:
    return {f.field_id: f.field_type for f in schema.primitive_fields()}


def data_file(
    *,
    record_count: int = 10,
    value_counts: Mapping[int, int] | None = None,
    null_counts: Mapping[int, int] | None = None,
    nan_counts: Mapping[int, int] | None = None,
    lower: Mapping[int, Any] | None = None,
    upper: Mapping[int, Any] | None = None,
    schema: Schema = SCHEMA,
    partition: tuple[Any, ...] = (),
) -> DataFile:
    """A DataFile whose bounds are given as internal values and encoded with Appendix D."""
    types = types_by_id(schema)
    return DataFile(
        content=FileContent.DATA,
        file_path="s3://bucket/data/file.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=record_count,
        file_size_in_bytes=1024,
        value_counts=value_counts,
        null_value_counts=null_counts,
        nan_value_counts=nan_counts,
        lower_bounds={fid: values.to_bytes(types[fid], v) for fid, v in lower.items()}
        if lower is not None
        else None,
        upper_bounds={fid: values.to_bytes(types[fid], v) for fid, v in upper.items()}
        if upper is not None
        else None,
    )
