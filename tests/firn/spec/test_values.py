"""Single values: Appendix D binary and JSON, user-value conversion, bound truncation, order."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from firn.errors import InvalidMetadata, Unsupported, ValidationError
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
    VARIANT,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from firn.spec.values import (
    compare,
    decimal_from_unscaled,
    from_bytes,
    from_json,
    is_nan,
    sort_key,
    to_bytes,
    to_internal,
    to_json,
    to_python,
    truncate_lower_bound,
    truncate_upper_bound,
)

TEST_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
TS_MICROS = 1510871468123456  # 2017-11-16T22:31:08.123456
TS_NANOS = 1510871468123456789  # 2017-11-16T22:31:08.123456789

# --- Appendix D binary ----------------------------------------------------------------------

BINARY_CASES: list[tuple[IcebergType, Any, str]] = [
    (BOOLEAN, False, "00"),
    (BOOLEAN, True, "01"),
    (INT, 34, "22000000"),
    (INT, -1, "ffffffff"),
    (LONG, 34, "2200000000000000"),
    (LONG, -(2**63), "0000000000000080"),
    (FLOAT, 1.0, "0000803f"),
    (FLOAT, -0.0, "00000080"),
    (DOUBLE, 1.0, "000000000000f03f"),
    (DATE, 17486, "4e440000"),
    (DATE, -1, "ffffffff"),
    (TIME, 81068123456, "406509e012000000"),
    (TIMESTAMP, TS_MICROS, TS_MICROS.to_bytes(8, "little").hex()),
    (TIMESTAMPTZ, -1, "ffffffffffffffff"),
    (TIMESTAMP_NS, TS_NANOS, TS_NANOS.to_bytes(8, "little").hex()),
    (TIMESTAMPTZ_NS, TS_NANOS, TS_NANOS.to_bytes(8, "little").hex()),
    (STRING, "iceberg", b"iceberg".hex()),
    (STRING, "", ""),
    (STRING, "日本", "e697a5e69cac"),
    # Appendix B note 4: F7 9C 3E 09 67 7C 4B BD A4 79 3F 34 9C B7 85 E7.
    (UUID, TEST_UUID, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\x03", "00010203"),
    (BINARY, b"\x00\x01\x02\xff", "000102ff"),
    (BINARY, b"", ""),
    # Decimals: minimal two's-complement big-endian of the unscaled value.
    (DecimalType(4, 2), Decimal("14.20"), "058c"),
    (DecimalType(9, 2), Decimal("0.00"), "00"),
    (DecimalType(9, 2), Decimal("-0.01"), "ff"),
    (DecimalType(9, 0), Decimal("127"), "7f"),
    (DecimalType(9, 0), Decimal("128"), "0080"),
    (DecimalType(9, 0), Decimal("-128"), "80"),
    (DecimalType(9, 0), Decimal("-129"), "ff7f"),
    (
        DecimalType(38, 0),
        Decimal(10**38 - 1),
        (10**38 - 1).to_bytes(17, "big", signed=True).lstrip(b"\x00").hex(),
    ),
]


@pytest.mark.parametrize(("t", "value", "hexed"), BINARY_CASES, ids=lambda x: str(x)[:20])
def test_binary_round_trip(t: IcebergType, value: Any, hexed: str) -> None:
    assert to_bytes(t, value).hex() == hexed
    back = from_bytes(t, bytes.fromhex(hexed))
    assert back == value and type(back) is type(value)
    if isinstance(t, FloatType | DoubleType):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_decimal_decoding_keeps_scale() -> None:
    got = from_bytes(DecimalType(38, 10), bytes.fromhex("058c"))
    assert got == Decimal("0.0000001420") and got.as_tuple().exponent == -10
    # 38-digit values must not be rounded by the default 28-digit decimal context.
    big = Decimal("1234567890123456789012345678.9012345678")
    assert from_bytes(DecimalType(38, 10), to_bytes(DecimalType(38, 10), big)) == big


def test_boolean_nonzero_byte_is_true() -> None:
    assert from_bytes(BOOLEAN, b"\x02") is True


@pytest.mark.parametrize(
    ("t", "data", "expected"),
    [
        # The length tells which type wrote the bound (spec "Schema Evolution" promotions).
        (LONG, struct.pack("<i", -34), -34),
        (LONG, struct.pack("<q", 2**40), 2**40),
        (DOUBLE, struct.pack("<f", 1.5), 1.5),
        (DOUBLE, struct.pack("<f", 0.1), float(np.float32(0.1))),
        (TIMESTAMP, struct.pack("<i", 17486), 17486 * 86_400_000_000),
        (TIMESTAMP, struct.pack("<i", -1), -86_400_000_000),
        (TIMESTAMP_NS, struct.pack("<i", 17486), 17486 * 86_400_000_000_000),
        (DecimalType(20, 2), bytes.fromhex("058c"), Decimal("14.20")),
    ],
)
def test_promotion_inferred_from_length(t: IcebergType, data: bytes, expected: Any) -> None:
    assert from_bytes(t, data) == expected


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (BOOLEAN, b""),
        (BOOLEAN, b"\x00\x00"),
        (INT, b"\x00" * 8),
        (INT, b"\x00" * 3),
        (DATE, b"\x00" * 8),
        (LONG, b"\x00" * 5),
        (FLOAT, b"\x00" * 8),
        (DOUBLE, b"\x00" * 2),
        (TIME, b"\x00" * 4),
        (TIMESTAMPTZ, b"\x00" * 4),  # date -> timestamptz is not a valid promotion
        (TIMESTAMPTZ_NS, b"\x00" * 4),
        (TIMESTAMP, b"\x00" * 7),
        (UUID, b"\x00" * 15),
        (FixedType(4), b"\x00" * 5),
        (DecimalType(9, 2), b""),
        (STRING, b"\xff\xfe"),
    ],
)
def test_bad_binary_raises_invalid_metadata(t: IcebergType, data: bytes) -> None:
    with pytest.raises(InvalidMetadata):
        from_bytes(t, data)


@pytest.mark.parametrize(
    "t",
    [UNKNOWN, VARIANT, GeometryType(), ListType(1, INT), MapType(1, STRING, 2, INT), StructType()],
    ids=str,
)
def test_binary_unsupported_types(t: IcebergType) -> None:
    with pytest.raises(Unsupported):
        to_bytes(t, 1)
    with pytest.raises(Unsupported):
        from_bytes(t, b"\x01")


@pytest.mark.parametrize(
    ("t", "value"),
    [(INT, 2**31), (LONG, 2**63), (DATE, "x"), (DecimalType(9, 2), Decimal("1.234")), (UUID, b"short")],
)
def test_to_bytes_rejects_bad_values(t: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError):
        to_bytes(t, value)


# --- Appendix D JSON ------------------------------------------------------------------------

NESTED = StructType(
    NestedField(1, "id", INT, True),
    NestedField(2, "name", STRING),
    NestedField(3, "tags", ListType(4, STRING)),
)

# (type, internal value, JSON) — the examples of the Appendix D JSON table and more.
JSON_CASES: list[tuple[IcebergType, Any, Any]] = [
    (BOOLEAN, True, True),
    (INT, 34, 34),
    (LONG, 34, 34),
    (FLOAT, 1.0, 1.0),
    (FLOAT, float(np.float32(0.1)), 0.1),  # float32 written with its shortest digits
    (DOUBLE, 1.0, 1.0),
    (DOUBLE, -0.0, -0.0),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"),
    (DecimalType(9, 0), Decimal("14"), "14"),
    (DecimalType(9, 7), Decimal("0.0000001"), "0.0000001"),  # plain digits, never 1E-7
    (DecimalType(9, -20), decimal_from_unscaled(2, -20), "2E+20"),
    (DATE, 17486, "2017-11-16"),
    (DATE, -719528, "0000-01-01"),
    (TIME, 81068123456, "22:31:08.123456"),
    (TIME, 81068000000, "22:31:08"),
    (TIMESTAMP, TS_MICROS, "2017-11-16T22:31:08.123456"),
    (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
    (TIMESTAMPTZ, TS_MICROS, "2017-11-16T22:31:08.123456+00:00"),
    (TIMESTAMP_NS, TS_NANOS, "2017-11-16T22:31:08.123456789"),
    (TIMESTAMPTZ_NS, TS_NANOS, "2017-11-16T22:31:08.123456789+00:00"),
    (STRING, "iceberg", "iceberg"),
    (UUID, TEST_UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
    (BINARY, b"\x00\x01\x02\xff", "000102ff"),
    (NESTED, {1: 1, 2: "bar", 3: None}, {"1": 1, "2": "bar"}),
    (NESTED, {1: 1, 2: None, 3: ["a", "b"]}, {"1": 1, "3": ["a", "b"]}),
    (ListType(1, INT), [1, 2, 3], [1, 2, 3]),
    (MapType(1, STRING, 2, INT), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
    (MapType(1, DATE, 2, ListType(3, LONG)), {0: [1]}, {"keys": ["1970-01-01"], "values": [[1]]}),
]


@pytest.mark.parametrize(("t", "value", "js"), JSON_CASES, ids=lambda x: str(x)[:24])
def test_json_round_trip(t: IcebergType, value: Any, js: Any) -> None:
    assert to_json(t, value) == js
    text = json.dumps(to_json(t, value))
    assert from_json(t, json.loads(text)) == value


def test_json_null() -> None:
    assert to_json(LONG, None) is None and from_json(LONG, None) is None
    assert to_json(UNKNOWN, None) is None and from_json(UNKNOWN, None) is None


def test_json_non_finite_floats() -> None:
    assert to_json(DOUBLE, float("nan")) == "NaN"
    assert to_json(FLOAT, float("-inf")) == "-Infinity"
    assert math.isnan(from_json(DOUBLE, "NaN"))
    assert from_json(DOUBLE, "Infinity") == math.inf


@pytest.mark.parametrize(
    ("t", "js", "expected"),
    [
        # Readers accept every UTC spelling and any number of fraction digits.
        (TIMESTAMPTZ, "2017-11-16T22:31:08Z", 1510871468000000),
        (TIMESTAMPTZ, "2017-11-16T22:31:08.1-00:00", 1510871468100000),
        (TIMESTAMPTZ_NS, "2017-11-16T22:31:08.000000001+00:00", 1510871468000000001),
        (TIMESTAMP, "2017-11-16T22:31", 1510871460000000),
        (TIME, "22:31", 81060000000),
        (DecimalType(9, 2), "14.2", Decimal("14.20")),
        (FixedType(2), "00FF", b"\x00\xff"),
        (UUID, "F79C3E09-677C-4BBD-A479-3F349CB785E7", TEST_UUID),
        (FLOAT, 3, 3.0),
        (DOUBLE, 3, 3.0),
        (StructType(NestedField(1, "a", INT)), {}, {1: None}),
    ],
)
def test_json_lenient_inputs(t: IcebergType, js: Any, expected: Any) -> None:
    assert from_json(t, js) == expected


@pytest.mark.parametrize(
    ("t", "js"),
    [
        (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00"),  # must be +00:00
        (TIMESTAMPTZ, "2017-11-16T22:31:08"),  # must have a zone
        (TIMESTAMP, "2017-11-16T22:31:08+00:00"),  # must not have a zone
        (TIMESTAMP, "2017-11-16T22:31:08.0000001"),  # sub-µs digits
        (DATE, "2017-02-30"),
        (DATE, "20171116"),
        (TIME, "24:00:00"),
        (BOOLEAN, "true"),
        (INT, True),
        (INT, 2**31),
        (INT, 1.5),
        (LONG, "34"),
        (FLOAT, 1e300),
        (DOUBLE, "x"),
        (DecimalType(9, 2), 14.2),
        (DecimalType(9, 2), "14.205"),
        (DecimalType(9, 2), "abc"),
        (STRING, 5),
        (UUID, "not-a-uuid"),
        (FixedType(4), "0001"),
        (BINARY, "0g"),
        (UNKNOWN, 1),
        (ListType(1, INT), {"1": 1}),
        (MapType(1, INT, 2, INT), {"keys": [1], "values": []}),
        (MapType(1, INT, 2, INT), [1, 2]),
        (NESTED, [1, "x"]),
    ],
)
def test_json_invalid_raises_invalid_metadata(t: IcebergType, js: Any) -> None:
    with pytest.raises(InvalidMetadata):
        from_json(t, js)


def test_json_unsupported_and_invalid_values() -> None:
    with pytest.raises(Unsupported):
        to_json(VARIANT, {"a": 1})
    with pytest.raises(Unsupported):
        from_json(GeometryType(), "POINT (30 10)")
    with pytest.raises(ValidationError):
        to_json(UNKNOWN, 1)
    with pytest.raises(ValidationError):
        to_json(DecimalType(9, 2), Decimal("1.234"))


def test_json_struct_accepts_positional_and_named_values() -> None:
    assert to_json(NESTED, (1, "x", None)) == {"1": 1, "2": "x"}
    assert to_json(NESTED, {"id": 1, "name": "x"}) == {"1": 1, "2": "x"}


# --- property round trips --------------------------------------------------------------------


def _strategy(t: IcebergType) -> st.SearchStrategy[Any]:
    if t == BOOLEAN:
        return st.booleans()
    if t in (INT, DATE):
        return st.integers(min_value=-(2**31), max_value=2**31 - 1)
    if t in (LONG, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return st.integers(min_value=-(2**63), max_value=2**63 - 1)
    if t == TIME:
        return st.integers(min_value=0, max_value=86_400_000_000 - 1)
    if t == FLOAT:
        return st.floats(width=32, allow_nan=False)
    if t == DOUBLE:
        return st.floats(allow_nan=False)
    if t == STRING:
        return st.text()
    if t == UUID:
        return st.uuids()
    if t == BINARY:
        return st.binary()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    assert isinstance(t, DecimalType)
    bound = 10**t.precision - 1
    return st.integers(min_value=-bound, max_value=bound).map(lambda u: decimal_from_unscaled(u, t.scale))


ROUND_TRIP_TYPES: list[IcebergType] = [
    BOOLEAN,
    INT,
    LONG,
    FLOAT,
    DOUBLE,
    DATE,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    TIMESTAMP_NS,
    TIMESTAMPTZ_NS,
    STRING,
    UUID,
    BINARY,
    FixedType(3),
    DecimalType(9, 2),
    DecimalType(38, 0),
    DecimalType(38, 38),
    DecimalType(5, -3),
]


@pytest.mark.parametrize("t", ROUND_TRIP_TYPES, ids=str)
@given(data=st.data())
def test_property_round_trips(t: IcebergType, data: st.DataObject) -> None:
    value = data.draw(_strategy(t))
    assert from_bytes(t, to_bytes(t, value)) == value
    assert from_json(t, json.loads(json.dumps(to_json(t, value)))) == value
    assert to_internal(t, to_python(t, value)) == value if _python_representable(t, value) else True


def _python_representable(t: IcebergType, value: Any) -> bool:
    # Python's datetime covers years 1..9999 at µs precision only.
    if t == DATE:
        return -719162 <= value <= 2932896
    if t in (TIMESTAMP, TIMESTAMPTZ):
        return -62135596800000000 <= value < 253402300800000000
    if t in (TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return value % 1000 == 0
    return True


# --- user values → internal -----------------------------------------------------------------

UTC = dt.UTC
PST = dt.timezone(dt.timedelta(hours=-8))


@pytest.mark.parametrize(
    ("t", "user", "expected"),
    [
        (BOOLEAN, np.bool_(True), True),
        (BOOLEAN, " FALSE ", False),
        (INT, np.int16(-3), -3),
        (LONG, np.int64(2**40), 2**40),
        (LONG, "34", 34),
        (FLOAT, 0.1, float(np.float32(0.1))),
        (FLOAT, np.float32(1.5), 1.5),
        (DOUBLE, 2, 2.0),
        (DOUBLE, "NaN", math.nan),
        (DecimalType(9, 2), Decimal("14.2"), Decimal("14.20")),
        (DecimalType(9, 2), "14.2", Decimal("14.20")),
        (DecimalType(9, 2), 14, Decimal("14.00")),
        (DecimalType(9, 2), 0.1, Decimal("0.10")),
        (DecimalType(9, 2), Decimal("1.000"), Decimal("1.00")),
        (DATE, dt.date(2017, 11, 16), 17486),
        (DATE, dt.date(1, 1, 1), -719162),
        (DATE, "1969-12-31", -1),
        (DATE, dt.datetime(2017, 11, 16), 17486),
        (DATE, np.datetime64("2017-11-16"), 17486),
        (DATE, np.datetime64("1969-12-31T23:00", "m"), -1),
        (DATE, 17486, 17486),
        (TIME, dt.time(22, 31, 8), 81068000000),
        (TIME, "22:31:08.5", 81068500000),
        (TIME, dt.timedelta(hours=1), 3_600_000_000),
        (TIME, np.timedelta64(1, "s"), 1_000_000),
        (TIMESTAMP, dt.datetime(2017, 11, 16, 22, 31, 8, 123456), TS_MICROS),
        (TIMESTAMP, "2017-11-16 22:31:08.123456", TS_MICROS),
        (TIMESTAMP, dt.date(2017, 11, 16), 17486 * 86_400_000_000),
        (TIMESTAMP, np.datetime64("2017-11-16T22:31:08.123456000", "ns"), TS_MICROS),
        (TIMESTAMP, np.datetime64(-1, "ms"), -1000),
        (TIMESTAMP, TS_MICROS, TS_MICROS),
        (TIMESTAMPTZ, dt.datetime(2017, 11, 16, 14, 31, 8, 123456, tzinfo=PST), TS_MICROS),
        (TIMESTAMPTZ, dt.datetime(2017, 11, 16, 22, 31, 8, 123456), TS_MICROS),  # naive means UTC
        (TIMESTAMPTZ, "2017-11-16T14:31:08.123456-08:00", TS_MICROS),
        (TIMESTAMPTZ, "2017-11-16T22:31:08.123456", TS_MICROS),
        (TIMESTAMP_NS, "2017-11-16T22:31:08.123456789", TS_NANOS),
        (TIMESTAMP_NS, np.datetime64(TS_NANOS, "ns"), TS_NANOS),
        (TIMESTAMP_NS, dt.datetime(2017, 11, 16, 22, 31, 8, 123456), TS_NANOS - 789),
        (TIMESTAMPTZ_NS, dt.datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=UTC), TS_NANOS - 789),
        (TIMESTAMPTZ_NS, "2017-11-16T14:31:08.123456789-08:00", TS_NANOS),
        (STRING, np.str_("x"), "x"),
        (UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", TEST_UUID),
        (UUID, TEST_UUID.bytes, TEST_UUID),
        (UUID, TEST_UUID, TEST_UUID),
        (FixedType(2), bytearray(b"ab"), b"ab"),
        (BINARY, memoryview(b"ab"), b"ab"),
        (UNKNOWN, None, None),
        (NESTED, {"id": np.int32(1), "name": "x"}, {1: 1, 2: "x", 3: None}),
        (NESTED, (1, "x", ("a",)), {1: 1, 2: "x", 3: ["a"]}),
        (MapType(1, STRING, 2, DATE), {"a": dt.date(1970, 1, 2)}, {"a": 1}),
    ],
    ids=lambda x: type(x).__name__ if isinstance(x, memoryview) else str(x)[:30],
)
def test_to_internal(t: IcebergType, user: Any, expected: Any) -> None:
    got = to_internal(t, user)
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected and type(got) is type(expected)
    if isinstance(expected, Decimal):
        assert got.as_tuple().exponent == -t.scale  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("t", "user"),
    [
        (BOOLEAN, 1),
        (INT, 2**31),
        (INT, True),
        (INT, 1.5),
        (LONG, "x"),
        (FLOAT, 1e40),
        (FLOAT, "abc"),
        (DecimalType(4, 2), Decimal("100.00")),  # 5 digits in a precision-4 column
        (DecimalType(9, 2), Decimal("1.005")),  # would need rounding
        (DecimalType(9, 2), Decimal("NaN")),
        (DecimalType(9, 2), "1,5"),
        (DATE, "2017-13-01"),
        (DATE, dt.datetime(2017, 11, 16, 1)),
        (DATE, np.datetime64("NaT")),
        (TIME, "25:00"),
        (TIME, 86_400_000_000),
        (TIME, dt.time(1, tzinfo=UTC)),
        (TIMESTAMP, dt.datetime(2017, 1, 1, tzinfo=UTC)),  # zoned value for a zoneless column
        (TIMESTAMP, "2017-01-01T00:00:00+01:00"),
        (TIMESTAMP, "2017-01-01T00:00:00.0000001"),
        (TIMESTAMP, 2**63),
        (TIMESTAMP, 1.5),
        (STRING, b"x"),
        (UUID, "xyz"),
        (FixedType(3), b"ab"),
        (BINARY, "ab"),
        (UNKNOWN, 1),
        (ListType(1, INT), "abc"),
        (MapType(1, INT, 2, INT), [1, 2]),
        (NESTED, (1,)),
    ],
    ids=lambda x: str(x)[:30],
)
def test_to_internal_rejects(t: IcebergType, user: Any) -> None:
    with pytest.raises(ValidationError) as info:
        to_internal(t, user)
    # The message names the type so users can find the bad value.
    assert str(t) in str(info.value)


def test_to_internal_unsupported_types() -> None:
    with pytest.raises(Unsupported):
        to_internal(VARIANT, {"a": 1})
    assert to_internal(VARIANT, None) is None


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (DATE, 17486, dt.date(2017, 11, 16)),
        (DATE, -1, dt.date(1969, 12, 31)),
        (TIME, 81068123456, dt.time(22, 31, 8, 123456)),
        (TIMESTAMP, TS_MICROS, dt.datetime(2017, 11, 16, 22, 31, 8, 123456)),
        (TIMESTAMPTZ, TS_MICROS, dt.datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=UTC)),
        (TIMESTAMP_NS, TS_NANOS, dt.datetime(2017, 11, 16, 22, 31, 8, 123456)),
        (TIMESTAMPTZ_NS, -1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        (DecimalType(9, 2), Decimal("1.00"), Decimal("1.00")),
        (UUID, TEST_UUID, TEST_UUID),
        (NESTED, {1: 1, 2: None, 3: [0]}, {"id": 1, "name": None, "tags": [0]}),
        (MapType(1, DATE, 2, TIME), {0: 0}, {dt.date(1970, 1, 1): dt.time()}),
        (LONG, None, None),
    ],
)
def test_to_python(t: IcebergType, value: Any, expected: Any) -> None:
    got = to_python(t, value)
    assert got == expected
    if isinstance(expected, dt.datetime):
        assert got.tzinfo == expected.tzinfo


def test_to_python_out_of_datetime_range() -> None:
    with pytest.raises(ValidationError):
        to_python(DATE, 10**7)


# --- bound truncation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "width", "lower", "upper"),
    [
        ("iceberg", 3, "ice", "icf"),
        ("ice", 3, "ice", "ice"),
        ("ic", 3, "ic", "ic"),
        ("", 1, "", ""),
        # Code points, not UTF-16 units or bytes.
        ("\U0001f600\U0001f600\U0001f600", 2, "\U0001f600\U0001f600", "\U0001f600\U0001f601"),
        ("日本語テキスト", 3, "日本語", "日本" + chr(ord("語") + 1)),
        # The max code point cannot grow: increment the one before it instead.
        ("a\U0010ffff\U0010ffffz", 3, "a\U0010ffff\U0010ffff", "b"),
        ("\U0010ffff\U0010ffffz", 2, "\U0010ffff\U0010ffff", None),
        # U+D7FF + 1 would be a surrogate: jump to U+E000.
        ("a\ud7ffz", 2, "a\ud7ff", "a\ue000"),
    ],
)
def test_string_bound_truncation(value: str, width: int, lower: str, upper: str | None) -> None:
    assert truncate_lower_bound(STRING, value, width) == lower
    assert truncate_upper_bound(STRING, value, width) == upper


@pytest.mark.parametrize(
    ("value", "width", "lower", "upper"),
    [
        (b"\x01\x02\x03\x04", 2, b"\x01\x02", b"\x01\x03"),
        (b"\x01\xff\x03", 2, b"\x01\xff", b"\x02"),  # carry: drop the 0xFF byte
        (b"\x01\x02", 2, b"\x01\x02", b"\x01\x02"),
        (b"\xff\xff\x00", 2, b"\xff\xff", None),
        (b"", 4, b"", b""),
    ],
)
def test_binary_bound_truncation(value: bytes, width: int, lower: bytes, upper: bytes | None) -> None:
    assert truncate_lower_bound(BINARY, value, width) == lower
    assert truncate_upper_bound(BINARY, value, width) == upper


def test_fixed_bounds_truncate_like_binary() -> None:
    # Iceberg Java's metrics truncate FIXED with the binary rules; readers accept short bounds.
    assert truncate_lower_bound(FixedType(4), b"\x01\x02\x03\x04", 2) == b"\x01\x02"
    assert truncate_upper_bound(FixedType(4), b"\x01\x02\x03\x04", 2) == b"\x01\x03"
    assert truncate_upper_bound(FixedType(4), b"\xff\xff\xff\xff", 2) is None
    assert from_bytes(FixedType(4), b"\x01\x03") == b"\x01\x03"


def test_bound_truncation_leaves_other_types() -> None:
    assert truncate_lower_bound(LONG, 123456, 1) == 123456
    assert truncate_upper_bound(UUID, TEST_UUID, 2) == TEST_UUID
    assert truncate_upper_bound(STRING, None, 2) is None
    with pytest.raises(ValidationError):
        truncate_lower_bound(STRING, "abc", 0)
    with pytest.raises(ValidationError):
        truncate_upper_bound(BINARY, b"abc", -1)


_VALID_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)


@given(value=_VALID_TEXT, width=st.integers(min_value=1, max_value=8))
def test_string_bounds_bracket_the_value(value: str, width: int) -> None:
    lower = truncate_lower_bound(STRING, value, width)
    upper = truncate_upper_bound(STRING, value, width)
    assert len(lower) <= width and lower.encode() <= value.encode()
    if upper is not None:
        assert len(upper) <= width and upper.encode() >= value.encode()
        upper.encode("utf-8")  # valid UTF-8: no surrogates produced
    else:
        assert all(ord(c) == 0x10FFFF for c in value[:width])


@given(value=st.binary(max_size=20), width=st.integers(min_value=1, max_value=8))
def test_binary_bounds_bracket_the_value(value: bytes, width: int) -> None:
    lower = truncate_lower_bound(BINARY, value, width)
    upper = truncate_upper_bound(BINARY, value, width)
    assert len(lower) <= width and lower <= value
    if upper is None:
        assert value[:width] == b"\xff" * width
    else:
        assert len(upper) <= width and upper >= value


# --- ordering -------------------------------------------------------------------------------


def test_float_total_order() -> None:
    key = sort_key(DOUBLE)
    ordered = [-math.inf, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, math.inf, math.nan]
    assert sorted(reversed(ordered), key=key)[:-1] == ordered[:-1]
    assert key(-0.0) < key(0.0)
    assert (
        compare(FLOAT, -0.0, 0.0) == -1 and compare(FLOAT, 1.0, 1.0) == 0 and compare(DOUBLE, 2.0, 1.0) == 1
    )
    assert is_nan(float("nan")) and not is_nan(1.0) and not is_nan(None)


@given(a=_VALID_TEXT, b=_VALID_TEXT)
def test_string_order_is_utf8_byte_order(a: str, b: str) -> None:
    assert compare(STRING, a, b) == (a.encode() > b.encode()) - (a.encode() < b.encode())


def test_other_orders() -> None:
    assert compare(BINARY, b"\x01", b"\xff") == -1
    assert compare(UUID, uuid.UUID(int=1), uuid.UUID(int=2**127)) == -1  # unsigned, not Java's signed
    assert compare(DecimalType(9, 2), Decimal("1.50"), Decimal("1.05")) == 1
    assert compare(BOOLEAN, False, True) == -1
    with pytest.raises(Unsupported):
        sort_key(ListType(1, INT))
    with pytest.raises(Unsupported):
        sort_key(VARIANT)
