"""Iceberg types <-> Spark SQL types, and Arrow batches between Firn's and Spark's layouts.

Firn maps Iceberg to Arrow (``firn.io.arrow_schema``); PySpark maps Spark types to Arrow
(``pyspark.sql.pandas.types.to_arrow_schema``). This module picks, for every Iceberg type,
the Spark type whose Arrow form carries the same values, and converts the few columns whose
Arrow forms differ.

=====================  =====================  ==================================================
Iceberg                Spark                  notes
=====================  =====================  ==================================================
boolean, int, long     boolean, int, bigint
float, double          float, double
decimal(P, S)          decimal(P, S)
date                   date
time                   time(6)                Spark 4.1+ TIME (nanoseconds in Arrow; exact)
timestamp              timestamp_ntz          wall-clock time stays without zone
timestamptz            timestamp              an instant (UTC in Arrow)
timestamp_ns           timestamp_ntz          read truncated to microseconds (Spark's unit)
timestamptz_ns         timestamp              read truncated to microseconds
string                 string
uuid                   string                 canonical ``8-4-4-4-12`` lower-case text; writes
                                              take that text (any case, hyphens optional) or
                                              16 bytes of binary
fixed[L]               binary                 writes check the length
binary                 binary
unknown (v3)           void                   always null
struct / list / map    struct / array / map   element / value nullability from ``required``
variant, geometry,     —                      Unsupported (no Arrow mapping in Firn yet)
geography
=====================  =====================  ==================================================

Required Iceberg fields become non-nullable Spark fields.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from firn.errors import Unsupported, ValidationError
from firn.io.arrow_schema import cast_to_schema, is_list_like, list_parts, null_mask, storage
from firn.spec import types as it
from firn.spec.schema import Schema

# Spark's Arrow timestamps are in UTC (PySpark converts with timezone="UTC" for data sources).
SPARK_ARROW_TIMEZONE = "UTC"


def spark_type(t: it.IcebergType, column: str) -> st.DataType:
    """The Spark type holding values of Iceberg type ``t`` (see the module table)."""
    if isinstance(t, it.StructType):
        return st.StructType([spark_field(f, f"{column}.{f.name}") for f in t.fields])
    if isinstance(t, it.ListType):
        return st.ArrayType(
            spark_type(t.element_type, f"{column}.element"), containsNull=not t.element_required
        )
    if isinstance(t, it.MapType):
        return st.MapType(
            spark_type(t.key_type, f"{column}.key"),
            spark_type(t.value_type, f"{column}.value"),
            valueContainsNull=not t.value_required,
        )
    simple = _PRIMITIVES.get(type(t))
    if simple is not None:
        return simple
    if isinstance(t, it.DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, it.FixedType):
        return st.BinaryType()
    if isinstance(t, it.TimeType):
        return st.TimeType(6)
    raise Unsupported(f"column {column!r}: Iceberg type {t} has no Spark mapping in Firn")


_PRIMITIVES: dict[type, st.DataType] = {
    it.BooleanType: st.BooleanType(),
    it.IntegerType: st.IntegerType(),
    it.LongType: st.LongType(),
    it.FloatType: st.FloatType(),
    it.DoubleType: st.DoubleType(),
    it.DateType: st.DateType(),
    it.TimestampType: st.TimestampNTZType(),
    it.TimestampNanoType: st.TimestampNTZType(),
    it.TimestamptzType: st.TimestampType(),
    it.TimestamptzNanoType: st.TimestampType(),
    it.StringType: st.StringType(),
    it.UUIDType: st.StringType(),
    it.BinaryType: st.BinaryType(),
    it.UnknownType: st.NullType(),
}


def spark_field(f: it.NestedField, column: str | None = None) -> st.StructField:
    """The Spark field of an Iceberg field (nullable unless required)."""
    return st.StructField(f.name, spark_type(f.field_type, column or f.name), nullable=not f.required)


def spark_schema(schema: Schema) -> st.StructType:
    """The Spark schema of an Iceberg schema."""
    return st.StructType([spark_field(f) for f in schema.fields])


def spark_arrow_schema(struct: st.StructType) -> pa.Schema:
    """The Arrow schema Spark exchanges batches of ``struct`` in."""
    return to_arrow_schema(struct, timezone=SPARK_ARROW_TIMEZONE)


def _has_uuid(t: it.IcebergType) -> bool:
    if isinstance(t, it.UUIDType):
        return True
    if isinstance(t, it.StructType):
        return any(_has_uuid(f.field_type) for f in t.fields)
    if isinstance(t, it.ListType):
        return _has_uuid(t.element_type)
    if isinstance(t, it.MapType):
        return _has_uuid(t.key_type) or _has_uuid(t.value_type)
    return False


# -- Firn -> Spark ------------------------------------------------------------------------------------
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HYPHENS = (8, 12, 16, 20)  # positions of the hyphens in the 32 hex digits (RFC 9562 text form)


def uuid_text(arr: pa.Array) -> pa.Array:
    """Canonical text of 16-byte UUIDs (``uuid`` extension or ``fixed_size_binary(16)``)."""
    raw = storage(arr)
    n = len(raw)
    if n == 0:
        return pa.array([], pa.string())
    values = raw.fill_null(b"\0" * 16) if raw.null_count else raw
    data = np.frombuffer(values.buffers()[1], dtype=np.uint8, count=(values.offset + n) * 16)
    data = data[values.offset * 16 :].reshape(n, 16)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[data >> 4]
    digits[:, 1::2] = _HEX[data & 15]
    text = np.insert(digits, _HYPHENS, ord("-"), axis=1)
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    out = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text.tobytes()))
    if raw.null_count:
        out = pc.if_else(raw.is_null(), pa.scalar(None, pa.string()), out)
    return out


def _to_spark_array(arr: pa.Array, t: it.IcebergType, target: pa.DataType) -> pa.Array:
    if not _has_uuid(t):
        # safe=False: nanosecond timestamps truncate to Spark's microseconds (module table).
        return arr.cast(target, safe=False)
    if isinstance(t, it.UUIDType):
        return uuid_text(arr)
    if isinstance(t, it.StructType):
        children = [
            _to_spark_array(arr.field(i), f.field_type, target.field(i).type) for i, f in enumerate(t.fields)
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=null_mask(arr))
    if isinstance(t, it.ListType):
        offsets, values = list_parts(arr)
        elements = _to_spark_array(values, t.element_type, target.value_type)
        return pa.ListArray.from_arrays(offsets, elements, type=target, mask=null_mask(arr))
    assert isinstance(t, it.MapType)
    offsets, entries = list_parts(arr)
    keys = _to_spark_array(entries.field(0), t.key_type, target.key_type)
    items = _to_spark_array(entries.field(1), t.value_type, target.item_type)
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=null_mask(arr))


def to_spark_batch(batch: pa.RecordBatch, types: list[it.IcebergType], target: pa.Schema) -> pa.RecordBatch:
    """``batch`` (Firn's Arrow layout, columns of ``types`` in order) in Spark's ``target``."""
    if batch.schema.equals(target):
        return batch
    arrays = [_to_spark_array(batch.column(i), t, target.field(i).type) for i, t in enumerate(types)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


# -- Spark -> Firn ------------------------------------------------------------------------------------
def uuid_bytes(arr: pa.Array, column: str) -> pa.Array:
    """16-byte UUIDs from text (any case, hyphens optional) or from binary of 16 bytes."""
    if pa.types.is_fixed_size_binary(arr.type) or isinstance(arr.type, pa.UuidType):
        return arr
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        try:
            return arr.cast(pa.binary(16))
        except pa.ArrowInvalid as e:
            raise ValidationError(f"column {column!r}: a uuid written as binary must be 16 bytes: {e}") from e
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise ValidationError(f"column {column!r}: cannot write Arrow type {arr.type} to Iceberg type uuid")
    n = len(arr)
    text = pc.utf8_lower(pc.replace_substring(arr.fill_null("0" * 32), "-", ""))
    try:
        fixed = text.cast(pa.binary()).cast(pa.binary(32))
    except pa.ArrowInvalid:
        fixed = None
    nibbles = np.full(256, 255, dtype=np.uint8)
    nibbles[_HEX] = np.arange(16, dtype=np.uint8)
    values = np.empty(0, dtype=np.uint8)
    if fixed is not None and n:
        digits = np.frombuffer(fixed.buffers()[1], dtype=np.uint8, count=(fixed.offset + n) * 32)
        values = nibbles[digits[fixed.offset * 32 :]]
    if fixed is None or (values == 255).any():
        bad = next((v for v in arr.to_pylist() if v is not None and not _is_uuid_text(v)), "?")
        raise ValidationError(f"column {column!r}: {bad!r} is not a UUID")
    pairs = values.reshape(n, 16, 2)
    packed = (pairs[:, :, 0] << 4) | pairs[:, :, 1]
    out = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(packed.tobytes())])
    if arr.null_count:
        out = pc.if_else(arr.is_null(), pa.scalar(None, pa.binary(16)), out)
    return out


def _is_uuid_text(value: str) -> bool:
    digits = value.replace("-", "")
    return len(digits) == 32 and all(c in "0123456789abcdefABCDEF" for c in digits)


def _from_spark_array(arr: pa.Array, t: it.IcebergType, column: str) -> pa.Array:
    if isinstance(t, it.UUIDType):
        return uuid_bytes(arr, column)
    if isinstance(t, it.StructType) and pa.types.is_struct(arr.type):
        names = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        wanted = {f.name: f for f in t.fields}
        children, fields = [], []
        for name, i in names.items():
            child = arr.field(i)
            f = wanted.get(name)
            if f is not None and _has_uuid(f.field_type):
                child = _from_spark_array(child, f.field_type, f"{column}.{name}")
            children.append(child)
            fields.append(pa.field(name, child.type, arr.type.field(i).nullable))
        return pa.StructArray.from_arrays(children, fields=fields, mask=null_mask(arr))
    if isinstance(t, it.ListType) and is_list_like(arr.type):
        offsets, values = list_parts(arr)
        elements = _from_spark_array(values, t.element_type, f"{column}.element")
        return pa.ListArray.from_arrays(offsets, elements, mask=null_mask(arr))
    if isinstance(t, it.MapType) and pa.types.is_map(arr.type):
        offsets, entries = list_parts(arr)
        keys = _from_spark_array(entries.field(0), t.key_type, f"{column}.key")
        items = _from_spark_array(entries.field(1), t.value_type, f"{column}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, mask=null_mask(arr))
    return arr  # a mismatch is reported by cast_to_schema


def from_spark_table(data: pa.Table, schema: Schema) -> pa.Table:
    """Spark's Arrow data conformed to ``schema`` for writing (uuid text parsed; the rest
    validated and cast by ``firn.io.arrow_schema.cast_to_schema``)."""
    fields = {f.name: f for f in schema.fields}
    columns = []
    for name in data.column_names:
        col = data.column(name)
        f = fields.get(name)
        if f is not None and _has_uuid(f.field_type):
            col = pa.chunked_array(
                [_from_spark_array(c, f.field_type, name) for c in col.chunks]
                or [_from_spark_array(pa.array([], col.type), f.field_type, name)]
            )
        columns.append(col)
    return cast_to_schema(pa.table(columns, names=data.column_names), schema)


def check_write_schema(struct: st.StructType, schema: Schema, table: str) -> None:
    """Raise ``ValidationError`` (before anything is written) when data of Spark schema
    ``struct`` cannot be written to ``schema``: a missing required column without a write
    default, a column the table does not have, or a type that does not convert. Nulls in
    required columns can only be found in the data; the write tasks check them."""
    empty = spark_arrow_schema(struct).empty_table()
    try:
        from_spark_table(empty, schema)
    except ValidationError as e:
        raise ValidationError(f"cannot write this DataFrame to {table}: {e}") from None


__all__ = [
    "SPARK_ARROW_TIMEZONE",
    "check_write_schema",
    "from_spark_table",
    "spark_arrow_schema",
    "spark_field",
    "spark_schema",
    "spark_type",
    "to_spark_batch",
    "uuid_bytes",
    "uuid_text",
]
