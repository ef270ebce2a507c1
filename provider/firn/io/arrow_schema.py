"""Iceberg schemas and values <-> Arrow (spec: "Schemas and Data Types", Appendix A "Parquet").

Every Arrow field Firn builds carries its Iceberg field id as ``PARQUET:field_id`` metadata --
on top-level columns, struct children, list elements and map keys/values -- so that pyarrow's
Parquet writer stores the ids that Appendix A requires ("Column IDs are required to be stored
as field IDs on the parquet schema").

Type decisions:

* ``string`` maps to ``pa.string()`` (32-bit offsets) by default. Batches are bounded by the
  reader's batch size, so 2 GiB per array is not a practical limit, and ``string`` is what most
  consumers (pandas, Spark Arrow transfer, DuckDB) expect. ``large_types=True`` gives
  ``large_string``/``large_binary``/``large_list`` (what PyIceberg produces); both are accepted
  on input everywhere.
* ``uuid`` maps to Arrow's canonical ``arrow.uuid`` extension type (``pa.uuid()``). pyarrow
  (>= 20) writes it as ``fixed_len_byte_array(16)`` annotated with the Parquet ``UUID``
  logical type, exactly as Appendix A asks, and PyIceberg reads ``uuid`` columns as
  ``pa.uuid()`` too. Plain ``fixed_size_binary(16)`` input is accepted for ``uuid`` columns.
* ``unknown`` (v3) maps to ``pa.null()``; such columns are never stored in data files.
"""

from __future__ import annotations

import uuid as uuid_mod
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.errors import Unsupported, ValidationError
from firn.spec.arrow_types import primitive_arrow_type
from firn.spec.name_mapping import LIST_ELEMENT_NAME, MAP_KEY_NAME, MAP_VALUE_NAME, MappedField, NameMapping
from firn.spec.schema import Schema, assign_fresh_ids
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
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

# The key pyarrow's Parquet reader/writer uses for Parquet field ids.
FIELD_ID_KEY = b"PARQUET:field_id"
# Field docs travel with the Arrow schema for readers that show them; Parquet ignores them.
DOC_KEY = b"doc"
UTC = "UTC"


# ---------------------------------------------------------------------------------------------
# Iceberg -> Arrow
# ---------------------------------------------------------------------------------------------
def _field_metadata(field_id: int, doc: str | None = None) -> dict[bytes, bytes]:
    md = {FIELD_ID_KEY: str(field_id).encode()}
    if doc:
        md[DOC_KEY] = doc.encode()
    return md


def _primitive_to_arrow(t: PrimitiveType, large: bool) -> pa.DataType:
    at = primitive_arrow_type(t, large=large, uuid_extension=True)
    if at is None:
        raise Unsupported(f"values of Iceberg type {t} cannot be converted to Arrow")
    return at


def type_to_arrow(t: IcebergType, *, large_types: bool = False) -> pa.DataType:
    """The Arrow type for an Iceberg type; nested children carry ``PARQUET:field_id``."""
    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f, large_types=large_types) for f in t.fields])
    if isinstance(t, ListType):
        element = pa.field(
            LIST_ELEMENT_NAME,
            type_to_arrow(t.element_type, large_types=large_types),
            nullable=not t.element_required,
            metadata=_field_metadata(t.element_id),
        )
        return pa.large_list(element) if large_types else pa.list_(element)
    if isinstance(t, MapType):
        key = pa.field(
            MAP_KEY_NAME,
            type_to_arrow(t.key_type, large_types=large_types),
            nullable=False,
            metadata=_field_metadata(t.key_id),
        )
        value = pa.field(
            MAP_VALUE_NAME,
            type_to_arrow(t.value_type, large_types=large_types),
            nullable=not t.value_required,
            metadata=_field_metadata(t.value_id),
        )
        return pa.map_(key, value)
    if isinstance(t, PrimitiveType):
        return _primitive_to_arrow(t, large_types)
    raise Unsupported(f"Iceberg type {t} cannot be converted to Arrow")


def field_to_arrow(f: NestedField, *, large_types: bool = False) -> pa.Field:
    """An Arrow field named like ``f`` with its id (and doc) as metadata; required -> not null."""
    try:
        arrow_type = type_to_arrow(f.field_type, large_types=large_types)
    except Unsupported as e:
        raise Unsupported(f"column {f.name!r}: {e}") from None
    return pa.field(f.name, arrow_type, nullable=not f.required, metadata=_field_metadata(f.field_id, f.doc))


def schema_to_arrow(schema: Schema, *, large_types: bool = False) -> pa.Schema:
    """The Arrow schema of an Iceberg schema, with ``PARQUET:field_id`` on every field."""
    return pa.schema([field_to_arrow(f, large_types=large_types) for f in schema.fields])


# ---------------------------------------------------------------------------------------------
# Arrow -> Iceberg
# ---------------------------------------------------------------------------------------------
def field_id_of(field: pa.Field) -> int | None:
    """The ``PARQUET:field_id`` of an Arrow field, or None."""
    md = field.metadata
    if not md:
        return None
    raw = md.get(FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _children(dt: pa.DataType) -> list[pa.Field]:
    """Child fields of a nested Arrow type (struct fields, list element, map key and value)."""
    if pa.types.is_struct(dt):
        return [dt.field(i) for i in range(dt.num_fields)]
    if pa.types.is_map(dt):
        return [dt.key_field, dt.item_field]
    if is_list_like(dt):
        return [dt.value_field]
    return []


def is_list_like(dt: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dt)
        or pa.types.is_large_list(dt)
        or pa.types.is_fixed_size_list(dt)
        or pa.types.is_list_view(dt)
        or pa.types.is_large_list_view(dt)
    )


def _all_fields(fields: Sequence[pa.Field]) -> list[pa.Field]:
    out: list[pa.Field] = []
    for f in fields:
        out.append(f)
        out.extend(_all_fields(_children(f.type)))
    return out


def has_field_ids(arrow_schema: pa.Schema, *, require_all: bool = True) -> bool:
    """Whether every (or, with ``require_all=False``, any) field carries a field id."""
    ids = [field_id_of(f) is not None for f in _all_fields(list(arrow_schema))]
    return all(ids) if require_all else any(ids)


def apply_name_mapping(arrow_schema: pa.Schema, mapping: NameMapping) -> pa.Schema:
    """Replace field ids with those of ``mapping`` (spec "Column Projection").

    Fields the mapping does not cover, or maps without ``field-id``, lose any id they had, so
    readers treat them as absent. List elements are looked up as ``element`` and map entries as
    ``key``/``value`` whatever the writer named them in the file.
    """

    def remap(f: pa.Field, mapped: MappedField | None) -> pa.Field:
        dt = f.type
        if pa.types.is_struct(dt):
            kids = [remap(c, mapped.child(c.name) if mapped else None) for c in _children(dt)]
            dt = pa.struct(kids)
        elif pa.types.is_map(dt):
            k = remap(dt.key_field, mapped.child(MAP_KEY_NAME) if mapped else None)
            v = remap(dt.item_field, mapped.child(MAP_VALUE_NAME) if mapped else None)
            dt = pa.map_(k, v)
        elif pa.types.is_list(dt) or pa.types.is_large_list(dt) or pa.types.is_fixed_size_list(dt):
            e = remap(dt.value_field, mapped.child(LIST_ELEMENT_NAME) if mapped else None)
            if pa.types.is_large_list(dt):
                dt = pa.large_list(e)
            else:
                dt = pa.list_(e, dt.list_size) if pa.types.is_fixed_size_list(dt) else pa.list_(e)
        md = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
        if mapped is not None and mapped.field_id is not None:
            md[FIELD_ID_KEY] = str(mapped.field_id).encode()
        return pa.field(f.name, dt, nullable=f.nullable, metadata=md or None)

    return pa.schema([remap(f, mapping.child(f.name)) for f in arrow_schema], metadata=arrow_schema.metadata)


def primitive_from_arrow(dt: pa.DataType, column: str) -> PrimitiveType:
    """The Iceberg primitive for an Arrow type; :class:`Unsupported` (naming ``column``) if none."""
    if pa.types.is_dictionary(dt):
        return primitive_from_arrow(dt.value_type, column)
    if isinstance(dt, pa.UuidType):
        return UUID
    if pa.types.is_boolean(dt):
        return BOOLEAN
    if pa.types.is_integer(dt):
        # Unsigned 32-bit values do not fit an Iceberg int; unsigned 64-bit ones may not fit a long.
        if dt in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
            return INT
        if dt in (pa.int64(), pa.uint32()):
            return LONG
    elif pa.types.is_float16(dt) or pa.types.is_float32(dt):
        return FLOAT
    elif pa.types.is_float64(dt):
        return DOUBLE
    elif pa.types.is_decimal(dt):
        if dt.precision <= 38:
            return DecimalType(dt.precision, dt.scale)
    elif pa.types.is_date(dt):
        return DATE
    elif pa.types.is_time(dt):
        return TIME
    elif pa.types.is_timestamp(dt):
        if dt.unit == "ns":
            return TIMESTAMPTZ_NS if dt.tz is not None else TIMESTAMP_NS
        return TIMESTAMPTZ if dt.tz is not None else TIMESTAMP
    elif pa.types.is_string(dt) or pa.types.is_large_string(dt) or pa.types.is_string_view(dt):
        return STRING
    elif pa.types.is_binary(dt) or pa.types.is_large_binary(dt) or pa.types.is_binary_view(dt):
        return BINARY
    elif pa.types.is_fixed_size_binary(dt):
        return FixedType(dt.byte_width)
    elif pa.types.is_null(dt):
        return UNKNOWN
    raise Unsupported(f"column {column!r}: Arrow type {dt} has no Iceberg equivalent")


_IdFor = Callable[[pa.Field, str], int | None]


def _type_from_arrow(dt: pa.DataType, column: str, id_for: _IdFor) -> IcebergType | None:
    """Convert a (possibly nested) Arrow type; None if a needed child has no id."""
    if pa.types.is_struct(dt):
        fields = [_field_from_arrow(c, f"{column}.{c.name}", id_for) for c in _children(dt)]
        return StructType(*(f for f in fields if f is not None))
    if pa.types.is_map(dt):
        kid = id_for(dt.key_field, f"{column}.{MAP_KEY_NAME}")
        vid = id_for(dt.item_field, f"{column}.{MAP_VALUE_NAME}")
        kt = _type_from_arrow(dt.key_type, f"{column}.{MAP_KEY_NAME}", id_for)
        vt = _type_from_arrow(dt.item_type, f"{column}.{MAP_VALUE_NAME}", id_for)
        if kid is None or vid is None or kt is None or vt is None:
            return None
        return MapType(kid, kt, vid, vt, not dt.item_field.nullable)
    if is_list_like(dt):
        ef = dt.value_field
        eid = id_for(ef, f"{column}.{LIST_ELEMENT_NAME}")
        et = _type_from_arrow(ef.type, f"{column}.{LIST_ELEMENT_NAME}", id_for)
        if eid is None or et is None:
            return None
        return ListType(eid, et, not ef.nullable)
    return primitive_from_arrow(dt, column)


def _field_from_arrow(f: pa.Field, column: str, id_for: _IdFor) -> NestedField | None:
    fid = id_for(f, column)
    if fid is None:
        return None
    t = _type_from_arrow(f.type, column, id_for)
    if t is None:
        return None
    doc = (f.metadata or {}).get(DOC_KEY)
    return NestedField(fid, f.name, t, required=not f.nullable, doc=doc.decode() if doc else None)


def schema_from_arrow(arrow_schema: pa.Schema, *, name_mapping: NameMapping | None = None) -> Schema:
    """The Iceberg schema of an Arrow schema.

    Field ids come from ``PARQUET:field_id`` when every field (including list elements and map
    keys/values) has one. Otherwise, with ``name_mapping`` the mapped ids are used and unmapped
    fields are left out (spec "Column Projection": they cannot be addressed by id); without a
    mapping, fresh ids are assigned as Java does for a new table. Unsupported Arrow types raise
    :class:`~firn.errors.Unsupported` naming the column.
    """
    if has_field_ids(arrow_schema):
        return _build_schema(arrow_schema, lambda f, _c: field_id_of(f))
    if name_mapping is not None:
        mapped = apply_name_mapping(arrow_schema, name_mapping)
        return _build_schema(mapped, lambda f, _c: field_id_of(f))
    counter = iter(range(1, 1 << 31))
    provisional = _build_schema(arrow_schema, lambda _f, _c: next(counter))
    return assign_fresh_ids(provisional)[0]


def _build_schema(arrow_schema: pa.Schema, id_for: _IdFor) -> Schema:
    fields = [_field_from_arrow(f, f.name, id_for) for f in arrow_schema]
    schema = Schema(*(f for f in fields if f is not None))
    _ = schema.field_ids  # builds the index, which rejects duplicate ids
    return schema


# ---------------------------------------------------------------------------------------------
# Array helpers shared by the writer, the reader and the metrics code
# ---------------------------------------------------------------------------------------------
def list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``(offsets, values)`` of a list or map array with offsets rebased to start at 0 (int32).

    For a map the values are the ``struct<key, value>`` entries. Slices are honoured.
    """
    if (
        pa.types.is_fixed_size_list(arr.type)
        or pa.types.is_list_view(arr.type)
        or pa.types.is_large_list_view(arr.type)
    ):
        arr = arr.cast(pa.list_(arr.type.value_field))
    offsets = arr.offsets
    start = offsets[0].as_py()
    end = offsets[len(offsets) - 1].as_py()
    values = arr.values.slice(start, end - start)
    if start != 0 or offsets.offset != 0 or not pa.types.is_int32(offsets.type):
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type)).cast(pa.int32())
    return offsets, values


def flat_values(arr: pa.Array) -> pa.Array:
    """The values of every non-null list (or entries of every non-null map), in order."""
    if pa.types.is_map(arr.type):
        arr = arr.cast(
            pa.list_(
                pa.field("entries", pa.struct([arr.type.key_field, arr.type.item_field]), nullable=False)
            )
        )
    elif not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        arr = arr.cast(pa.list_(arr.type.value_field))
    return pc.list_flatten(arr)


def null_mask(arr: pa.Array) -> pa.Array | None:
    """A boolean "is null" mask for rebuilding nested arrays, or None when nothing is null."""
    return arr.is_null() if arr.null_count else None


def storage(arr: pa.Array) -> pa.Array:
    """Unwrap extension arrays (``uuid``) to their storage."""
    return arr.storage if isinstance(arr, pa.ExtensionArray) else arr


# ---------------------------------------------------------------------------------------------
# Internal values (see firn.spec.values) <-> Arrow
# ---------------------------------------------------------------------------------------------
def arrow_scalar_to_internal(t: IcebergType, scalar: pa.Scalar) -> Any:
    """Convert an Arrow scalar of an Iceberg primitive column to Firn's internal value."""
    if not scalar.is_valid:
        return None
    if isinstance(scalar, pa.ExtensionScalar):
        scalar = scalar.value
    dt = scalar.type
    if isinstance(
        t, DateType | TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType
    ):
        if pa.types.is_integer(dt):
            return scalar.as_py()
        return scalar.cast(pa.int32() if pa.types.is_date32(dt) else pa.int64()).as_py()
    value = scalar.as_py()
    if isinstance(t, UUIDType):
        return uuid_mod.UUID(bytes=bytes(value)) if not isinstance(value, uuid_mod.UUID) else value
    return value


def _to_arrow_py(t: IcebergType, value: Any) -> Any:
    """An internal value in the Python form ``pa.array`` accepts for ``type_to_arrow(t)``."""
    if value is None:
        return None
    if isinstance(t, UUIDType):
        return value.bytes if isinstance(value, uuid_mod.UUID) else bytes(value)
    if isinstance(t, DecimalType):
        return value if isinstance(value, Decimal) else Decimal(value)
    if isinstance(t, ListType):
        return [_to_arrow_py(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        items = value.items() if isinstance(value, dict) else zip(value["keys"], value["values"])
        return [(_to_arrow_py(t.key_type, k), _to_arrow_py(t.value_type, v)) for k, v in items]
    return value


def storage_type(dt: pa.DataType) -> pa.DataType:
    """The storage type of an extension type (``uuid``); other types unchanged."""
    return dt.storage_type if isinstance(dt, pa.BaseExtensionType) else dt


def constant_array(
    t: IcebergType,
    value: Any,
    length: int,
    *,
    arrow_type: pa.DataType | None = None,
    defaults: str = "initial",
) -> pa.Array:
    """``length`` copies of an internal value (nulls for None), typed ``type_to_arrow(t)``.

    A non-null struct value (spec "Default values": ``{}`` or a map of field id to value) is
    expanded with each child's ``initial_default`` (or ``write_default`` when ``defaults`` is
    ``"write"``) for children it does not set.
    """
    target = arrow_type if arrow_type is not None else type_to_arrow(t)
    if value is None:
        return pa.nulls(length, target)
    if isinstance(t, StructType):
        given = value if isinstance(value, dict) else {}
        children = []
        for f, af in zip(t.fields, target):
            if f.field_id in given:
                v = given[f.field_id]
            elif f.name in given:
                v = given[f.name]
            else:
                v = f.initial_default if defaults == "initial" else f.write_default
            children.append(constant_array(f.field_type, v, length, arrow_type=af.type, defaults=defaults))
        return pa.StructArray.from_arrays(children, fields=list(target))
    one = pa.array([_to_arrow_py(t, value)], type=storage_type(target))
    out = one.take(pa.array(np.zeros(length, dtype=np.int32)))
    if isinstance(target, pa.BaseExtensionType):
        out = pa.ExtensionArray.from_storage(target, out)
    return out


# ---------------------------------------------------------------------------------------------
# Conforming user data to a table schema for writing
# ---------------------------------------------------------------------------------------------
def _int_types() -> tuple[pa.DataType, ...]:
    return (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())


def _castable(t: PrimitiveType, src: pa.DataType) -> bool:
    """Whether ``src`` may be cast to ``t``'s Arrow type; the cast itself checks for data loss."""
    if isinstance(t, IntegerType | LongType):
        return src in _int_types()
    if isinstance(t, FloatType):
        return pa.types.is_floating(src)
    if isinstance(t, DoubleType):
        return pa.types.is_floating(src)
    if isinstance(t, DecimalType):
        return pa.types.is_decimal(src)
    if isinstance(t, DateType):
        return pa.types.is_date(src)
    if isinstance(t, TimeType):
        return pa.types.is_time(src)
    if isinstance(t, TimestampType | TimestampNanoType):
        # Naive and zoned timestamps mean different things (spec notes 1 and 2): never mix them.
        return pa.types.is_timestamp(src) and src.tz is None
    if isinstance(t, TimestamptzType | TimestamptzNanoType):
        return pa.types.is_timestamp(src) and src.tz is not None
    if isinstance(t, StringType):
        return pa.types.is_string(src) or pa.types.is_large_string(src) or pa.types.is_string_view(src)
    if isinstance(t, BinaryType):
        return (
            pa.types.is_binary(src)
            or pa.types.is_large_binary(src)
            or pa.types.is_binary_view(src)
            or pa.types.is_fixed_size_binary(src)
        )
    if isinstance(t, FixedType):
        return pa.types.is_fixed_size_binary(src) or pa.types.is_binary(src) or pa.types.is_large_binary(src)
    if isinstance(t, UUIDType):
        return isinstance(src, pa.UuidType) or (pa.types.is_fixed_size_binary(src) and src.byte_width == 16)
    return isinstance(t, BooleanType) and pa.types.is_boolean(src)


def _conform_primitive(arr: pa.Array, t: PrimitiveType, target: pa.DataType, column: str) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(t, UnknownType):
        if arr.null_count != len(arr):
            raise ValidationError(f"column {column!r} has type unknown, so every value must be null")
        return pa.nulls(len(arr), pa.null())
    if arr.type == target:
        return arr
    if not _castable(t, arr.type):
        raise ValidationError(f"column {column!r}: cannot write Arrow type {arr.type} to Iceberg type {t}")
    if isinstance(t, UUIDType):
        return pa.ExtensionArray.from_storage(pa.uuid(), storage(arr))
    if isinstance(t, FloatType) and pa.types.is_float64(arr.type):
        return _narrow_doubles(arr, column)
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(
            f"column {column!r}: cannot cast {arr.type} to {t} without losing data: {e}"
        ) from e


def _narrow_doubles(arr: pa.Array, column: str) -> pa.Array:
    # Arrow does not check double -> float casts; accept them only when every value survives
    # the round trip (e.g. Python floats that were float32 values to begin with).
    narrowed = arr.cast(pa.float32(), safe=False)
    back = narrowed.cast(pa.float64())
    same = pc.or_(pc.equal(back, arr), pc.and_(pc.is_nan(back), pc.is_nan(arr)))
    if pc.all(same).as_py() not in (True, None):
        raise ValidationError(f"column {column!r}: double values do not fit a float without losing precision")
    return narrowed


def _check_no_nulls(values: pa.Array, column: str, what: str) -> None:
    if values.null_count:
        raise ValidationError(f"column {column!r} is required but {values.null_count} {what} are null")


def _conform(arr: pa.Array, f: NestedField, target: pa.DataType, column: str) -> pa.Array:
    """Cast one array to the Arrow type of ``f`` (ids included); checks nested required fields."""
    t = f.field_type
    if pa.types.is_null(arr.type):
        # An all-null column (e.g. built from Python Nones) fits any type; required is checked by the caller.
        return pa.nulls(len(arr), target)
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise ValidationError(f"column {column!r}: expected a struct, got Arrow type {arr.type}")
        present = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        extra = sorted(set(present) - {c.name for c in t.fields})
        if extra:
            raise ValidationError(f"column {column!r} has fields that are not in the table schema: {extra}")
        valid = arr.is_valid() if arr.null_count else None
        children = []
        for child, child_target in zip(t.fields, target):
            path = f"{column}.{child.name}"
            if child.name in present:
                out = _conform(arr.field(present[child.name]), child, child_target.type, path)
            else:
                out = _default_for_missing(child, len(arr), child_target.type, path)
            if child.required and out.null_count:
                # Only rows where the struct itself is present must have the child.
                bad = out.null_count if valid is None else pc.sum(pc.and_(out.is_null(), valid)).as_py() or 0
                if bad:
                    raise ValidationError(f"column {path!r} is required but {bad} values are null")
                # Nulls only under null structs (as other engines, e.g. Spark, produce them):
                # Parquet cannot store nulls in a required column, so give those slots a value.
                out = _fill_masked_nulls(out)
            children.append(out)
        return pa.StructArray.from_arrays(children, fields=list(target), mask=null_mask(arr))
    if isinstance(t, ListType):
        if not is_list_like(arr.type):
            raise ValidationError(f"column {column!r}: expected a list, got Arrow type {arr.type}")
        offsets, values = list_parts(arr)
        if t.element_required:
            _check_no_nulls(flat_values(arr), column, "list elements")
        ef = t.element_field
        new_values = _conform(values, ef, target.value_type, f"{column}.{LIST_ELEMENT_NAME}")
        if pa.types.is_large_list(target):
            return pa.LargeListArray.from_arrays(
                offsets.cast(pa.int64()), new_values, type=target, mask=null_mask(arr)
            )
        return pa.ListArray.from_arrays(offsets, new_values, type=target, mask=null_mask(arr))
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise ValidationError(f"column {column!r}: expected a map, got Arrow type {arr.type}")
        offsets, entries = list_parts(arr)
        keys = _conform(entries.field(0), t.key_field, target.key_type, f"{column}.{MAP_KEY_NAME}")
        items = _conform(entries.field(1), t.value_field, target.item_type, f"{column}.{MAP_VALUE_NAME}")
        if keys.null_count:
            raise ValidationError(f"column {column!r}: map keys must not be null")
        if t.value_required:
            _check_no_nulls(flat_values(arr).field(1), column, "map values")
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=null_mask(arr))
    assert isinstance(t, PrimitiveType)
    return _conform_primitive(arr, t, target, column)


def _placeholder(t: pa.DataType) -> pa.Array:
    """A one-element array of ``t`` holding some non-null value (for slots no reader sees)."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _placeholder(t.storage_type))
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_placeholder(f.type) for f in t], fields=list(t))
    if is_list_like(t) or pa.types.is_map(t):
        return pa.array([[]], t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([b"\0" * t.byte_width], t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([b""], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([""], t)
    if pa.types.is_boolean(t):
        return pa.array([False], t)
    if pa.types.is_decimal(t):
        return pa.array([Decimal(0)], t)
    if pa.types.is_date32(t):
        return pa.array([0], pa.int32()).cast(t)
    return pa.array([0], pa.int64()).cast(t)


def _fill_masked_nulls(arr: pa.Array) -> pa.Array:
    n = len(arr)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    index = np.where(valid, np.arange(n), n)
    return pa.concat_arrays([arr, _placeholder(arr.type)]).take(pa.array(index))


def _default_for_missing(f: NestedField, length: int, target: pa.DataType, column: str) -> pa.Array:
    # Spec "Default values": omitting a known field is never allowed; the write default is
    # written instead, and a required field without one fails the write.
    if f.write_default is None and f.required:
        raise ValidationError(f"required column {column!r} is missing and has no write-default")
    return constant_array(f.field_type, f.write_default, length, arrow_type=target, defaults="write")


def cast_to_schema(data: pa.Table | pa.RecordBatch, schema: Schema, *, large_types: bool = False) -> pa.Table:
    """Validate and cast user data to ``schema`` for writing; the result has field ids.

    Columns are matched by name (nested struct fields too). Missing optional columns are filled
    with their ``write-default`` or nulls; missing required columns without a write default,
    extra columns, nulls in required columns and incompatible types raise
    :class:`~firn.errors.ValidationError` naming the column. Value-preserving casts are allowed
    (narrower ints, float -> double, timestamp units without loss, decimal widening, large and
    view string/binary/list variants, dictionary-encoded input, ``fixed[16]`` -> ``uuid``).
    """
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    target_schema = schema_to_arrow(schema, large_types=large_types)
    names = table.column_names
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise ValidationError(f"input has duplicate columns: {dupes}")
    extra = sorted(set(names) - set(schema.column_names))
    if extra:
        raise ValidationError(
            f"input has columns that are not in the table schema: {extra}; table columns are {schema.column_names}"
        )
    columns: list[pa.ChunkedArray] = []
    for f, af in zip(schema.fields, target_schema):
        if f.name in names:
            col = table.column(f.name)
            chunks = [_conform(c, f, af.type, f.name) for c in col.chunks]
            columns.append(pa.chunked_array(chunks, type=af.type))
        else:
            columns.append(
                pa.chunked_array([_default_for_missing(f, table.num_rows, af.type, f.name)], type=af.type)
            )
    out = pa.Table.from_arrays(columns, schema=target_schema)
    _check_required_top_level(out, schema)
    return out


def _check_required_top_level(table: pa.Table, schema: Schema) -> None:
    for f in schema.fields:
        if f.required:
            nulls = table.column(f.name).null_count
            if nulls:
                raise ValidationError(f"column {f.name!r} is required but {nulls} values are null")


__all__ = [
    "DOC_KEY",
    "FIELD_ID_KEY",
    "apply_name_mapping",
    "arrow_scalar_to_internal",
    "cast_to_schema",
    "constant_array",
    "field_id_of",
    "field_to_arrow",
    "flat_values",
    "has_field_ids",
    "is_list_like",
    "list_parts",
    "null_mask",
    "primitive_from_arrow",
    "schema_from_arrow",
    "schema_to_arrow",
    "storage",
    "storage_type",
    "type_to_arrow",
]
