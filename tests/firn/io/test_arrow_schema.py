"""Iceberg <-> Arrow schemas, field ids, and conforming user data for writes."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from firn.errors import Unsupported, ValidationError
from firn.io.arrow_schema import (
    FIELD_ID_KEY,
    arrow_scalar_to_internal,
    cast_to_schema,
    constant_array,
    field_id_of,
    schema_from_arrow,
    schema_to_arrow,
    type_to_arrow,
)
from firn.spec.name_mapping import parse_name_mapping
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
    MapType,
    NestedField,
    StructType,
    VariantType,
)

PRIMITIVES: list[tuple[IcebergType, pa.DataType]] = [
    (BOOLEAN, pa.bool_()),
    (INT, pa.int32()),
    (LONG, pa.int64()),
    (FLOAT, pa.float32()),
    (DOUBLE, pa.float64()),
    (DecimalType(9, 2), pa.decimal128(9, 2)),
    (DecimalType(38, 10), pa.decimal128(38, 10)),
    (DATE, pa.date32()),
    (TIME, pa.time64("us")),
    (TIMESTAMP, pa.timestamp("us")),
    (TIMESTAMPTZ, pa.timestamp("us", tz="UTC")),
    (TIMESTAMP_NS, pa.timestamp("ns")),
    (TIMESTAMPTZ_NS, pa.timestamp("ns", tz="UTC")),
    (STRING, pa.string()),
    (UUID, pa.uuid()),
    (FixedType(7), pa.binary(7)),
    (BINARY, pa.binary()),
    (UNKNOWN, pa.null()),
]


def nested_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, required=True, doc="row id"),
        NestedField(
            2,
            "point",
            StructType(NestedField(3, "x", DOUBLE, required=True), NestedField(4, "y", DOUBLE)),
        ),
        NestedField(5, "tags", ListType(6, STRING, element_required=False)),
        NestedField(
            7,
            "props",
            MapType(8, STRING, 9, StructType(NestedField(10, "v", INT), NestedField(11, "w", UUID)), True),
            required=True,
        ),
        NestedField(12, "matrix", ListType(13, ListType(14, DOUBLE, True), True)),
    )


def all_field_ids(fields: list[pa.Field]) -> list[int | None]:
    out: list[int | None] = []
    for f in fields:
        out.append(field_id_of(f))
        t = f.type
        if pa.types.is_struct(t):
            out.extend(all_field_ids([t.field(i) for i in range(t.num_fields)]))
        elif pa.types.is_map(t):
            out.extend(all_field_ids([t.key_field, t.item_field]))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            out.extend(all_field_ids([t.value_field]))
    return out


@pytest.mark.parametrize(("iceberg", "arrow"), PRIMITIVES, ids=lambda v: str(v))
def test_primitive_round_trip(iceberg: IcebergType, arrow: pa.DataType) -> None:
    schema = Schema(NestedField(1, "c", iceberg, required=False), NestedField(2, "r", INT, required=True))
    a = schema_to_arrow(schema)
    assert a.field("c").type == arrow
    assert a.field("c").nullable is True
    assert a.field("r").nullable is False
    assert a.field("c").metadata[FIELD_ID_KEY] == b"1"
    assert schema_from_arrow(a) == schema


def test_nested_round_trip_has_ids_everywhere() -> None:
    schema = nested_schema()
    a = schema_to_arrow(schema)
    assert all_field_ids(list(a)) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert a.field("tags").type.value_field.nullable is True
    assert a.field("matrix").type.value_field.nullable is False
    assert a.field("props").type.key_field.nullable is False
    back = schema_from_arrow(a)
    assert back == schema
    assert back.find_field(1).doc == "row id"


def test_large_types_option() -> None:
    a = schema_to_arrow(nested_schema(), large_types=True)
    assert a.field("tags").type == type_to_arrow(ListType(6, STRING, False), large_types=True)
    assert pa.types.is_large_list(a.field("tags").type)
    assert pa.types.is_large_string(a.field("tags").type.value_type)
    assert schema_from_arrow(a) == nested_schema()


@pytest.mark.parametrize(
    ("arrow", "iceberg"),
    [
        (pa.large_string(), STRING),
        (pa.string_view(), STRING),
        (pa.large_binary(), BINARY),
        (pa.dictionary(pa.int32(), pa.string()), STRING),
        (pa.int8(), INT),
        (pa.uint16(), INT),
        (pa.uint32(), LONG),
        (pa.float16(), FLOAT),
        (pa.date64(), DATE),
        (pa.time32("ms"), TIME),
        (pa.timestamp("s"), TIMESTAMP),
        (pa.timestamp("ms"), TIMESTAMP),
        (pa.timestamp("ms", tz="Europe/Paris"), TIMESTAMPTZ),
        (pa.timestamp("ns"), TIMESTAMP_NS),
        (pa.timestamp("ns", tz="+00:00"), TIMESTAMPTZ_NS),
        (pa.binary(16), FixedType(16)),
        (pa.null(), UNKNOWN),
    ],
    ids=str,
)
def test_arrow_variants_map_to_iceberg(arrow: pa.DataType, iceberg: IcebergType) -> None:
    schema = schema_from_arrow(pa.schema([pa.field("c", arrow)]))
    assert schema.find_type("c") == iceberg


def test_large_list_and_fixed_size_list_are_lists() -> None:
    a = pa.schema([pa.field("l", pa.large_list(pa.int64())), pa.field("f", pa.list_(pa.int32(), 3))])
    s = schema_from_arrow(a)
    assert isinstance(s.find_type("l"), ListType)
    assert isinstance(s.find_type("f"), ListType)
    assert s.find_type("f.element") == INT


def test_fresh_ids_are_assigned_level_by_level_without_ids() -> None:
    a = pa.schema(
        [
            pa.field("a", pa.int32(), nullable=False),
            pa.field("s", pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.list_(pa.string()))])),
            pa.field("b", pa.map_(pa.string(), pa.float64())),
        ]
    )
    s = schema_from_arrow(a)
    assert [s.find_field(n).field_id for n in ("a", "s", "b")] == [1, 2, 3]
    # Java's fresh-id order: all fields of a struct first, then each field's children in turn.
    assert s.find_field("s.x").field_id == 4
    assert s.find_field("s.y").field_id == 5
    assert s.find_field("s.y.element").field_id == 6
    assert s.find_field("b.key").field_id == 7
    assert s.find_field("b.value").field_id == 8
    assert s.find_field("a").required is True


def test_partial_ids_get_fresh_ids() -> None:
    a = pa.schema([pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"10"}), pa.field("b", pa.int32())])
    s = schema_from_arrow(a)
    assert [f.field_id for f in s.fields] == [1, 2]


def test_name_mapping_assigns_ids_and_drops_unmapped() -> None:
    a = pa.schema(
        [
            pa.field("record_id", pa.int64()),
            pa.field("location", pa.struct([pa.field("lat", pa.float64()), pa.field("alt", pa.float64())])),
            pa.field("extra", pa.string()),
        ]
    )
    mapping = parse_name_mapping(
        '[{"field-id": 1, "names": ["id", "record_id"]},'
        ' {"field-id": 3, "names": ["location"], "fields": [{"field-id": 4, "names": ["latitude", "lat"]}]}]'
    )
    s = schema_from_arrow(a, name_mapping=mapping)
    assert s.column_names == ["record_id", "location"]
    assert s.find_field("record_id").field_id == 1
    assert s.find_field("location.lat").field_id == 4
    assert s.find_field_or_none("location.alt") is None


def test_duplicate_field_ids_are_rejected() -> None:
    md = {FIELD_ID_KEY: b"1"}
    a = pa.schema([pa.field("a", pa.int32(), metadata=md), pa.field("b", pa.int32(), metadata=md)])
    with pytest.raises(ValidationError, match="duplicate field id 1"):
        schema_from_arrow(a)


@pytest.mark.parametrize(
    ("field", "column"),
    [
        (pa.field("d", pa.duration("s")), "d"),
        (pa.field("u", pa.uint64()), "u"),
        (pa.field("s", pa.struct([pa.field("iv", pa.month_day_nano_interval())])), "s.iv"),
        (pa.field("big", pa.decimal256(50, 2)), "big"),
    ],
)
def test_unsupported_arrow_types_name_the_column(field: pa.Field, column: str) -> None:
    with pytest.raises(Unsupported, match=f"column '{column}'"):
        schema_from_arrow(pa.schema([field]))


def test_variant_cannot_become_arrow() -> None:
    with pytest.raises(Unsupported, match="column 'v'"):
        schema_to_arrow(Schema(NestedField(1, "v", VariantType())))


# -- conforming data for writes -----------------------------------------------------------------


def simple_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "x", DOUBLE),
        NestedField(3, "ts", TIMESTAMP),
        NestedField(4, "name", STRING),
    )


def test_cast_applies_safe_widening_and_adds_ids() -> None:
    t = pa.table(
        {
            "name": pa.array(["a", "b"], pa.large_string()),
            "id": pa.array([1, 2], pa.int32()),
            "x": pa.array([1.5, None], pa.float32()),
            "ts": pa.array([1, 2], pa.timestamp("ms")),
        }
    )
    out = cast_to_schema(t, simple_schema())
    assert out.schema.equals(schema_to_arrow(simple_schema()), check_metadata=True)
    assert out.column("id").to_pylist() == [1, 2]
    assert out.column("ts").cast(pa.int64()).to_pylist() == [1000, 2000]
    assert out.column("name").to_pylist() == ["a", "b"]


def test_cast_rejects_lossy_timestamp_and_overflow() -> None:
    t = pa.table({"id": [1], "ts": pa.array([1_500], pa.timestamp("ns"))})
    with pytest.raises(ValidationError, match="'ts'"):
        cast_to_schema(t, simple_schema())
    s = Schema(NestedField(1, "i", INT, required=True))
    with pytest.raises(ValidationError, match="'i'"):
        cast_to_schema(pa.table({"i": pa.array([2**40])}), s)
    # In-range int64 values are fine for an int column.
    assert cast_to_schema(pa.table({"i": pa.array([7])}), s).column("i").type == pa.int32()


def test_cast_missing_required_extra_and_incompatible_columns() -> None:
    with pytest.raises(ValidationError, match="required column 'id' is missing"):
        cast_to_schema(pa.table({"x": [1.0]}), simple_schema())
    with pytest.raises(ValidationError, match=r"not in the table schema: \['zzz'\]"):
        cast_to_schema(pa.table({"id": [1], "zzz": [1]}), simple_schema())
    with pytest.raises(ValidationError, match="column 'x': cannot write Arrow type string"):
        cast_to_schema(pa.table({"id": [1], "x": ["1.0"]}), simple_schema())
    with pytest.raises(ValidationError, match="column 'id' is required but 1 values are null"):
        cast_to_schema(pa.table({"id": pa.array([1, None], pa.int64())}), simple_schema())
    with pytest.raises(ValidationError, match="'ts'"):
        cast_to_schema(
            pa.table({"id": [1], "ts": pa.array([1], pa.timestamp("us", tz="UTC"))}), simple_schema()
        )


def test_missing_optional_columns_get_nulls_or_write_default() -> None:
    schema = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "status", STRING, write_default="new"),
        NestedField(3, "x", DOUBLE),
        NestedField(4, "level", INT, required=True, initial_default=0, write_default=3),
    )
    out = cast_to_schema(pa.table({"id": [1, 2]}), schema)
    assert out.column_names == ["id", "status", "x", "level"]
    assert out.column("status").to_pylist() == ["new", "new"]
    assert out.column("x").to_pylist() == [None, None]
    assert out.column("level").to_pylist() == [3, 3]


def test_nested_required_checks() -> None:
    schema = nested_schema()
    point_t = pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])
    props = pa.array([[("k", {"v": 1, "w": None})]] * 2, pa.map_(pa.string(), pa.struct([("v", pa.int32())])))
    ok = pa.table(
        {
            "id": [1, 2],
            "point": pa.array([{"x": 1.0, "y": None}, None], point_t),
            "props": props,
        }
    )
    out = cast_to_schema(ok, schema)
    # x is required, but only where the point struct itself is present.
    assert out.column("point").to_pylist() == [{"x": 1.0, "y": None}, None]
    # A missing optional struct child is filled with nulls.
    assert out.column("props").to_pylist()[0] == [("k", {"v": 1, "w": None})]
    bad = ok.set_column(1, "point", pa.array([{"x": None, "y": 1.0}, None], point_t))
    with pytest.raises(ValidationError, match=r"'point\.x' is required"):
        cast_to_schema(bad, schema)
    bad_matrix = ok.append_column("matrix", pa.array([[[1.0, None]], None], pa.list_(pa.list_(pa.float64()))))
    with pytest.raises(ValidationError, match=r"'matrix\.element' is required"):
        cast_to_schema(bad_matrix, schema)
    extra_child = ok.set_column(
        1,
        "point",
        pa.array([{"x": 1.0, "z": 2.0}, None], pa.struct([("x", pa.float64()), ("z", pa.float64())])),
    )
    with pytest.raises(
        ValidationError, match=r"'point' has fields that are not in the table schema: \['z'\]"
    ):
        cast_to_schema(extra_child, schema)


def test_cast_nested_promotions_and_uuid_from_fixed() -> None:
    schema = nested_schema()
    u = uuid.uuid4()
    t = pa.table(
        {
            "id": [1],
            "props": pa.array(
                [[("k", {"v": 1, "w": u.bytes})]],
                pa.map_(pa.large_string(), pa.struct([("v", pa.int16()), ("w", pa.binary(16))])),
            ),
            "matrix": pa.array([[[1.0, 2.0]]], pa.large_list(pa.list_(pa.float32()))),
            "tags": pa.array([["a", None]], pa.list_(pa.string_view())),
        }
    )
    out = cast_to_schema(t, schema)
    assert out.schema.equals(schema_to_arrow(schema), check_metadata=True)
    row = out.to_pylist()[0]
    assert row["props"] == [("k", {"v": 1, "w": u})]
    assert row["matrix"] == [[1.0, 2.0]]
    assert row["tags"] == ["a", None]


def test_cast_decodes_dictionaries_and_sliced_input() -> None:
    t = pa.table(
        {"id": pa.array(range(10), pa.int64()), "name": pa.array(list("abcdefghij")).dictionary_encode()}
    )
    out = cast_to_schema(t.slice(3, 4), simple_schema())
    assert out.column("name").type == pa.string()
    assert out.column("name").to_pylist() == list("defg")
    lists = pa.array([[1], None, [2, 3], [4]], pa.list_(pa.float64())).slice(1)
    s = Schema(NestedField(1, "l", ListType(2, DOUBLE, True)))
    assert cast_to_schema(pa.table({"l": lists}), s).column("l").to_pylist() == [None, [2.0, 3.0], [4.0]]


def test_doubles_narrow_to_float_only_without_loss() -> None:
    s = Schema(NestedField(1, "f", FLOAT))
    exact = pa.table({"f": pa.array([1.5, None, float("nan"), -0.0, float("inf")])})
    out = cast_to_schema(exact, s).column("f")
    assert out.type == pa.float32()
    assert out.to_pylist()[:2] == [1.5, None] and math.isnan(out.to_pylist()[2])
    with pytest.raises(ValidationError, match=r"'f'.*precision"):
        cast_to_schema(pa.table({"f": [0.1]}), s)


def test_all_null_columns_fit_any_optional_type() -> None:
    s = Schema(
        NestedField(1, "id", LONG, required=True), NestedField(2, "st", StructType(NestedField(3, "a", INT)))
    )
    out = cast_to_schema(pa.table({"id": [1, 2], "st": [None, None]}), s)
    assert out.column("st").to_pylist() == [None, None]
    with pytest.raises(ValidationError, match="'id' is required"):
        cast_to_schema(pa.table({"id": [None]}), s)


def test_unknown_columns_must_be_null() -> None:
    s = Schema(NestedField(1, "u", UNKNOWN))
    assert cast_to_schema(pa.table({"u": pa.nulls(2)}), s).column("u").type == pa.null()
    with pytest.raises(ValidationError, match="unknown"):
        cast_to_schema(pa.table({"u": [1, 2]}), s)


def test_constant_arrays_and_struct_defaults() -> None:
    assert constant_array(DATE, 19000, 2).to_pylist() == [dt.date(2022, 1, 8)] * 2
    assert constant_array(DecimalType(5, 2), Decimal("1.25"), 1).to_pylist() == [Decimal("1.25")]
    u = uuid.uuid4()
    assert constant_array(UUID, u, 2).to_pylist() == [u, u]
    assert constant_array(STRING, None, 3).null_count == 3
    point = StructType(
        NestedField(3, "x", INT, initial_default=0), NestedField(4, "y", INT, initial_default=5)
    )
    # Spec "Default values": {} means each child takes its own default.
    assert constant_array(point, {}, 1).to_pylist() == [{"x": 0, "y": 5}]
    assert constant_array(point, {3: 7}, 1).to_pylist() == [{"x": 7, "y": 5}]
    assert constant_array(ListType(5, LONG), [1, 2], 2).to_pylist() == [[1, 2], [1, 2]]


@pytest.mark.parametrize(
    ("t", "scalar", "expected"),
    [
        (DATE, pa.scalar(dt.date(2024, 1, 2)), 19724),
        (TIME, pa.scalar(5, pa.time64("us")), 5),
        (TIMESTAMPTZ, pa.scalar(123, pa.timestamp("us", tz="UTC")), 123),
        (TIMESTAMP_NS, pa.scalar(123, pa.timestamp("ns")), 123),
        (DATE, pa.scalar(3, pa.int32()), 3),
        (STRING, pa.scalar("héllo"), "héllo"),
        (UUID, pa.scalar(b"\x01" * 16, pa.binary(16)), uuid.UUID(bytes=b"\x01" * 16)),
        (LONG, pa.scalar(None, pa.int64()), None),
    ],
)
def test_arrow_scalar_to_internal(t: IcebergType, scalar: pa.Scalar, expected: object) -> None:
    assert arrow_scalar_to_internal(t, scalar) == expected


def test_required_struct_children_null_only_under_null_structs_are_writable(tmp_path: Any) -> None:
    # Engines such as Spark leave a null struct's children null; Parquet needs values there.
    import pyarrow.parquet as pq

    from firn.spec.types import DecimalType, ListType, NestedField, StringType, StructType, UUIDType

    inner = StructType(
        NestedField(2, "name", StringType(), True),
        NestedField(3, "l", ListType(4, StringType(), True), True),
        NestedField(5, "u", UUIDType(), True),
        NestedField(6, "d", DecimalType(3, 1), True),
    )
    schema = Schema(NestedField(1, "s", inner, False))
    children = [
        pa.array([None, "x"]),
        pa.array([None, ["a"]]),
        pa.array([None, b"a" * 16], pa.binary(16)),
        pa.array([None, Decimal("1.5")], pa.decimal128(3, 1)),
    ]
    s = pa.StructArray.from_arrays(children, names=["name", "l", "u", "d"], mask=pa.array([True, False]))
    assert s.field(0).null_count == 1
    out = cast_to_schema(pa.table({"s": s}), schema)
    pq.write_table(out, tmp_path / "f.parquet")
    assert pq.read_table(tmp_path / "f.parquet").column("s").to_pylist() == [
        None,
        {"name": "x", "l": ["a"], "u": uuid.UUID(bytes=b"a" * 16), "d": Decimal("1.5")},
    ]
    present = pa.StructArray.from_arrays(children, names=["name", "l", "u", "d"])
    with pytest.raises(ValidationError, match=r"'s\.name' is required but 1 values are null"):
        cast_to_schema(pa.table({"s": present}), schema)
