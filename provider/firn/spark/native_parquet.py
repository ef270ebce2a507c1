"""Whether Spark's own Parquet reader reads a data file exactly as Firn does, and how.

``firn.spark.read`` hands delete-free data files to ``spark.read.parquet``. This module looks
at one file's footer and returns either a :class:`NativeLayout` (the schema to ask Spark for
and the casts that turn it into the scan's columns) or the reason Firn must read the file.

Columns are matched as Firn matches them, by field id (or, for files written without ids, by
the table's name mapping), and Spark is then asked for them **by their names in the file**,
with the file's own physical types; a ``cast`` afterwards renames (struct fields by position)
and widens (int -> long, float -> double, decimal precision). Fields the file lacks are asked
for under a name the file does not use, which Spark reads as null, as Firn does. Spark's
``spark.sql.parquet.fieldId.read.enabled`` is not relied on: Spark reads that conf when a
query first runs, not when the DataFrame is made, and with it on Spark 4.2 still prunes row
groups by *name* for pushed filters, which drops matching rows after two columns swap names.
Asking by the file's names keeps reads and pushed filters on the same columns in either mode.

A file goes to Firn when, for a projected field:

* its Parquet type is not one Spark reads as the value Firn reads: only booleans, 32/64-bit
  signed ints, floats, doubles, decimals, dates, microsecond timestamps (UTC-adjusted for
  ``timestamptz``, not for ``timestamp``), UTF-8 strings, plain binary and fixed-length binary
  are; INT96, millisecond/nanosecond timestamps, unsigned or narrow ints, binary read as
  string (Firn accepts those, converting) are not;
* the file lacks it and Firn would not read null: an identity partition value (Firn fills it
  from the partition tuple), an ``initial-default``, a required field;
* a struct has none of its projected fields in the file (Spark reads the struct as null, Firn
  reads the struct's own nulls);
* names at one level collide ignoring case (Spark's default resolution would refuse them), or
  an id appears twice;
* the file was written by Spark before 3.0 or in its legacy calendar mode (Spark would rebase
  its dates and timestamps; Firn reads them as stored);

or when the file has no field ids and the table no name mapping (Firn refuses such a file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as st

from firn.io.arrow_schema import apply_name_mapping, field_id_of, has_field_ids
from firn.io.base import FileIO
from firn.spark.typemap import spark_type
from firn.spec import types as it
from firn.spec.name_mapping import NameMapping
from firn.spec.schema import Schema

# Spark's footer keys (org.apache.spark.sql.execution.datasources.DataSourceUtils / package object).
SPARK_VERSION_KEY = b"org.apache.spark.version"
SPARK_LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
SPARK_LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
PLACEHOLDER_PREFIX = "__firn_absent_"


class NotNative(Exception):
    """Spark's reader would not read this file as Firn does (the message says why)."""


@dataclass(frozen=True)
class NativeColumn:
    """One output column: read as ``read_name`` and cast to ``target`` (None: no cast needed)."""

    read_name: str
    name: str
    target: st.DataType | None


@dataclass(frozen=True)
class NativeLayout:
    """How Spark reads one file: the schema to ask for and the columns to make of it. Files
    with equal layouts are read by one ``spark.read.parquet`` call."""

    read_schema: st.StructType
    columns: tuple[NativeColumn, ...]
    key: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        casts = [(c.read_name, c.name, c.target.json() if c.target else None) for c in self.columns]
        object.__setattr__(self, "key", json.dumps([self.read_schema.json(), casts]))


@dataclass(frozen=True)
class Footer:
    """What routing needs of a Parquet footer: the Arrow schema, the Parquet leaf columns (in
    the Arrow schema's leaf order) and the key-value metadata."""

    arrow_schema: pa.Schema
    leaves: tuple[pq.ColumnSchema, ...]
    key_value: Mapping[bytes, bytes]


def read_footer(io: FileIO, location: str) -> Footer:
    """The footer of the Parquet file at ``location`` (one ranged read through ``io``)."""
    nf = io.new_input(location).open_arrow()
    try:
        pf = pq.ParquetFile(nf)
        md = pf.metadata
        leaves = tuple(md.schema.column(i) for i in range(md.num_columns))
        return Footer(pf.schema_arrow, leaves, dict(md.metadata or {}))
    finally:
        nf.close()


def nullable(t: st.DataType) -> st.DataType:
    """``t`` with every field, element and value nullable (what Spark's file sources read)."""
    if isinstance(t, st.StructType):
        return st.StructType([st.StructField(f.name, nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, st.ArrayType):
        return st.ArrayType(nullable(t.elementType), True)
    if isinstance(t, st.MapType):
        return st.MapType(nullable(t.keyType), nullable(t.valueType), True)
    return t


def projection_problem(schema: Schema) -> str | None:
    """Why no file can be read natively for this projection (a type Spark reads differently
    from Firn, names equal ignoring case), or None."""

    def visit(fields: Sequence[it.NestedField], prefix: str) -> str | None:
        lowered = [f.name.lower() for f in fields]
        if len(set(lowered)) != len(lowered):
            return f"column names under {prefix or 'the table'} differ only in case"
        for f in fields:
            problem = type_problem(f.field_type, f"{prefix}{f.name}")
            if problem:
                return problem
        return None

    def type_problem(t: it.IcebergType, column: str) -> str | None:
        if isinstance(t, it.StructType):
            return visit(t.fields, f"{column}.")
        if isinstance(t, it.ListType):
            return type_problem(t.element_type, f"{column}.element")
        if isinstance(t, it.MapType):
            return type_problem(t.key_type, f"{column}.key") or type_problem(t.value_type, f"{column}.value")
        if isinstance(t, _NATIVE_TYPES):
            return None
        return f"column {column!r} is {t}, which Spark's Parquet reader does not read as Firn does"

    return visit(schema.fields, "")


_NATIVE_TYPES = (
    it.BooleanType,
    it.IntegerType,
    it.LongType,
    it.FloatType,
    it.DoubleType,
    it.DecimalType,
    it.DateType,
    it.TimestampType,
    it.TimestamptzType,
    it.StringType,
    it.BinaryType,
    it.FixedType,
)


def _legacy_spark(key_value: Mapping[bytes, bytes]) -> bool:
    if SPARK_LEGACY_DATETIME_KEY in key_value or SPARK_LEGACY_INT96_KEY in key_value:
        return True
    version = key_value.get(SPARK_VERSION_KEY)
    if version is None:
        return False
    try:
        major = int(version.decode().split(".")[0])
    except (UnicodeDecodeError, ValueError):
        return True  # unknown: Spark would compare the text; do not guess
    return major < 3


def _leaf_type(col: pq.ColumnSchema) -> st.DataType | None:
    """The Spark type Spark reads this Parquet leaf as, exactly, or None for leaves routed to Firn."""
    physical = col.physical_type
    logical = json.loads(col.logical_type.to_json())
    kind = logical.get("Type", "None")
    if kind == "Decimal" and physical in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"):
        return st.DecimalType(int(logical["precision"]), int(logical["scale"]))
    if kind == "Int":
        width, signed = int(logical.get("bitWidth", 0)), bool(logical.get("isSigned", False))
        if signed and (physical, width) == ("INT32", 32):
            return st.IntegerType()
        if signed and (physical, width) == ("INT64", 64):
            return st.LongType()
        return None
    if kind == "Timestamp":
        if physical != "INT64" or logical.get("timeUnit") != "microseconds":
            return None
        return st.TimestampType() if logical.get("isAdjustedToUTC") else st.TimestampNTZType()
    if kind == "Date":
        return st.DateType() if physical == "INT32" else None
    if kind == "String":
        return st.StringType() if physical == "BYTE_ARRAY" else None
    if kind != "None":
        return None
    return {
        "BOOLEAN": st.BooleanType(),
        "INT32": st.IntegerType(),
        "INT64": st.LongType(),
        "FLOAT": st.FloatType(),
        "DOUBLE": st.DoubleType(),
        "BYTE_ARRAY": st.BinaryType(),
        "FIXED_LEN_BYTE_ARRAY": st.BinaryType(),
    }.get(physical)


def _fits(t: it.IcebergType, read: st.DataType, col: pq.ColumnSchema) -> bool:
    """Whether a leaf Spark reads as ``read`` holds Iceberg ``t``'s values exactly (equal, or
    widened exactly by a Spark cast)."""
    if isinstance(t, it.LongType):
        return isinstance(read, st.LongType | st.IntegerType)
    if isinstance(t, it.DoubleType):
        return isinstance(read, st.DoubleType | st.FloatType)
    if isinstance(t, it.DecimalType):
        return isinstance(read, st.DecimalType) and read.scale == t.scale and read.precision <= t.precision
    if isinstance(t, it.BinaryType):
        return col.physical_type == "BYTE_ARRAY" and isinstance(read, st.BinaryType)
    if isinstance(t, it.FixedType):
        return (
            col.physical_type == "FIXED_LEN_BYTE_ARRAY"
            and col.length == t.length
            and isinstance(read, st.BinaryType)
        )
    return read == spark_type(t, "")


@dataclass
class _Node:
    field: pa.Field
    field_id: int | None
    leaf: int  # the first Parquet leaf column under this field
    children: list[_Node]


def _nodes(schema: pa.Schema) -> list[_Node]:
    counter = [0]

    def build(f: pa.Field) -> _Node:
        t = f.type
        first = counter[0]
        if pa.types.is_struct(t):
            kids = [build(t.field(i)) for i in range(t.num_fields)]
        elif pa.types.is_map(t):
            kids = [build(t.key_field), build(t.item_field)]
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            kids = [build(t.value_field)]
        else:
            counter[0] += 1
            kids = []
        return _Node(f, field_id_of(f), first, kids)

    return [build(f) for f in schema]


class _Layout:
    """Builds one file's read schema, raising ``NotNative`` with the reason."""

    def __init__(self, footer: Footer, constants: frozenset[int]) -> None:
        self.footer = footer
        self.constants = constants

    def level(
        self, fields: Sequence[it.NestedField], nodes: list[_Node], where: str
    ) -> tuple[list[st.StructField], int]:
        """The read fields for ``fields`` among the file's ``nodes``, and how many are in the file."""
        by_id: dict[int, _Node] = {}
        for n in nodes:
            if n.field_id is not None:
                if n.field_id in by_id:
                    raise NotNative(f"field id {n.field_id} appears twice in {where or 'the file'}")
                by_id[n.field_id] = n
        taken = {n.field.name.lower() for n in nodes}
        if len(taken) != len(nodes):
            raise NotNative(f"names in {where or 'the file'} differ only in case")
        out = []
        present = 0
        for f in fields:
            column = f"{where}.{f.name}" if where else f.name
            node = by_id.get(f.field_id)
            if node is None:
                out.append(self.absent(f, taken, column))
            else:
                present += 1
                out.append(st.StructField(node.field.name, self.read_type(f, node, column), True))
        return out, present

    def absent(self, f: it.NestedField, taken: set[str], column: str) -> st.StructField:
        if f.field_id in self.constants:
            raise NotNative(f"identity partition column {column!r} is not stored in the file")
        if f.initial_default is not None:
            raise NotNative(f"column {column!r} is not in the file and has an initial default")
        if f.required:
            raise NotNative(f"required column {column!r} is not in the file")
        name = f"{PLACEHOLDER_PREFIX}{f.field_id}"
        while name.lower() in taken:
            name += "_"
        taken.add(name.lower())
        # Asked for under a name the file does not have: Spark reads nulls.
        return st.StructField(name, nullable(spark_type(f.field_type, column)), True)

    def read_type(self, f: it.NestedField, node: _Node, column: str) -> st.DataType:
        t = f.field_type
        ft = node.field.type
        if isinstance(t, it.StructType):
            if not pa.types.is_struct(ft):
                raise NotNative(f"column {column!r} is {ft} in the file, not a struct")
            fields, present = self.level(t.fields, node.children, column)
            if not present:
                raise NotNative(f"struct {column!r} has none of its projected fields in the file")
            return st.StructType(fields)
        if isinstance(t, it.ListType):
            if not (pa.types.is_list(ft) or pa.types.is_large_list(ft)):
                raise NotNative(f"column {column!r} is {ft} in the file, not a list")
            return st.ArrayType(self.read_type(t.element_field, node.children[0], f"{column}.element"), True)
        if isinstance(t, it.MapType):
            if not pa.types.is_map(ft):
                raise NotNative(f"column {column!r} is {ft} in the file, not a map")
            key = self.read_type(t.key_field, node.children[0], f"{column}.key")
            return st.MapType(key, self.read_type(t.value_field, node.children[1], f"{column}.value"), True)
        if node.children:
            raise NotNative(f"column {column!r} is {ft} in the file, not {t}")
        col = self.footer.leaves[node.leaf]
        read = _leaf_type(col)
        if read is None or not _fits(t, read, col):
            logical = col.logical_type.type
            raise NotNative(
                f"column {column!r} ({t}) is Parquet {col.physical_type}"
                f"{'' if logical == 'NONE' else f' ({logical})'} in the file"
            )
        return read


def native_layout(
    footer: Footer,
    projection: Schema,
    *,
    identity_source_ids: frozenset[int] = frozenset(),
    name_mapping: NameMapping | None = None,
) -> NativeLayout:
    """How Spark reads the file with ``footer`` as ``projection`` (top-level fields in output
    order), or ``NotNative`` saying why it cannot. ``identity_source_ids`` are the fields whose
    values the file's partition tuple holds (identity transforms of its spec)."""
    if _legacy_spark(footer.key_value):
        raise NotNative("written by Spark before 3.0 or in its legacy calendar mode")
    arrow_schema = footer.arrow_schema
    if not has_field_ids(arrow_schema, require_all=False):
        if name_mapping is None:
            raise NotNative("the file has no field ids and the table no name mapping")
        arrow_schema = apply_name_mapping(arrow_schema, name_mapping)
    layout = _Layout(footer, identity_source_ids)
    read_fields, _ = layout.level(projection.fields, _nodes(arrow_schema), "")
    columns = []
    for f, rf in zip(projection.fields, read_fields):
        target = nullable(spark_type(f.field_type, f.name))
        columns.append(NativeColumn(rf.name, f.name, None if rf.dataType == target else target))
    return NativeLayout(st.StructType(read_fields), tuple(columns))


__all__ = [
    "Footer",
    "NativeColumn",
    "NativeLayout",
    "NotNative",
    "native_layout",
    "nullable",
    "projection_problem",
    "read_footer",
]
