"""Partition transforms: spec vectors, floors, human strings, parsing, Arrow == scalar."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firn.errors import Unsupported, ValidationError
from firn.spec.murmur3 import hash_value
from firn.spec.transforms import (
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    VOID,
    YEAR,
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)
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
    FixedType,
    GeometryType,
    IcebergType,
    ListType,
)
from firn.spec.values import decimal_from_unscaled, to_internal

INT_MAX = 2**31 - 1

# Spec Appendix B (and notes §5): (type, user value, expected 32-bit hash).
APPENDIX_B = [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (DecimalType(4, 2), Decimal("14.20"), -500754589),
    (DATE, "2017-11-16", -653330422),
    (TIME, "22:31:08", -662762989),
    (TIMESTAMP, "2017-11-16T22:31:08", -2047944441),
    (TIMESTAMP, "2017-11-16T22:31:08.000001", -1207196810),
    (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00", -2047944441),
    (TIMESTAMPTZ, "2017-11-16T14:31:08.000001-08:00", -1207196810),
    (TIMESTAMP_NS, "2017-11-16T22:31:08", -2047944441),
    (TIMESTAMP_NS, "2017-11-16T22:31:08.000001001", -1207196810),
    (TIMESTAMPTZ_NS, "2017-11-16T14:31:08-08:00", -2047944441),
    (TIMESTAMPTZ_NS, "2017-11-16T14:31:08.000001001-08:00", -1207196810),
    (STRING, "iceberg", 1210000089),
    (UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BINARY, b"\x00\x01\x02\x03", -188683207),
]


def _arrow_type(t: IcebergType) -> pa.DataType:
    simple: dict[IcebergType, pa.DataType] = {
        INT: pa.int32(),
        LONG: pa.int64(),
        DATE: pa.date32(),
        TIME: pa.time64("us"),
        TIMESTAMP: pa.timestamp("us"),
        TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
        TIMESTAMP_NS: pa.timestamp("ns"),
        TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC"),
        STRING: pa.string(),
        BINARY: pa.binary(),
        UUID: pa.binary(16),
        BOOLEAN: pa.bool_(),
        FLOAT: pa.float32(),
        DOUBLE: pa.float64(),
    }
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    return simple[t]


def arrow_of(t: IcebergType, values: list[Any]) -> pa.Array:
    """An Arrow array of internal values of type ``t`` (temporal ints viewed as their type)."""
    at = _arrow_type(t)
    if pa.types.is_temporal(at):
        storage = pa.int32() if at.bit_width == 32 else pa.int64()
        return pa.array(values, type=storage).view(at)
    if t == UUID:
        return pa.array([None if v is None else v.bytes for v in values], type=at)
    return pa.array(values, type=at)


def as_internal(result: pa.Array) -> list[Any]:
    """Arrow transform results as internal values (date32 as day counts)."""
    if pa.types.is_date32(result.type):
        return result.view(pa.int32()).to_pylist()
    if pa.types.is_temporal(result.type):
        return result.view(pa.int64()).to_pylist()
    return result.to_pylist()


# --- bucket ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "user", "expected"), APPENDIX_B, ids=lambda x: str(x))
def test_appendix_b_hash_vectors(t: IcebergType, user: Any, expected: int) -> None:
    value = to_internal(t, user)
    assert hash_value(t, value) == expected
    for n in (1, 16, 1000, INT_MAX):
        bucket = BucketTransform(n)
        assert bucket.apply(t, value) == (expected & INT_MAX) % n
        assert bucket.apply_arrow(t, arrow_of(t, [value, None])).to_pylist() == [
            (expected & INT_MAX) % n,
            None,
        ]


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (BOOLEAN, True, 1392991556),
        (FLOAT, 1.0, -142385009),
        (FLOAT, 0.0, 1669671676),
        (FLOAT, -0.0, 1669671676),
        (DOUBLE, 1.0, -142385009),
        (DOUBLE, 0.0, 1669671676),
        (DOUBLE, -0.0, 1669671676),
    ],
)
def test_appendix_b_non_bucket_hashes(t: IcebergType, value: Any, expected: int) -> None:
    assert hash_value(t, value) == expected


def test_nan_hash_is_canonical() -> None:
    import struct

    other_nan = struct.unpack("<d", struct.pack("<q", 0x7FF0000000000001))[0]
    assert (
        hash_value(DOUBLE, float("nan"))
        == hash_value(DOUBLE, other_nan)
        == hash_value(LONG, 0x7FF8000000000000)
    )


def test_unknown_hashes_to_null_and_variant_has_no_hash() -> None:
    assert hash_value(UNKNOWN, None) is None
    with pytest.raises(Unsupported):
        hash_value(VARIANT, {"a": 1})


@given(st.integers(min_value=-(2**31), max_value=INT_MAX))
def test_int_and_long_hash_alike(v: int) -> None:
    # Appendix B note 1: promotion int -> long must not move rows between buckets.
    assert hash_value(INT, v) == hash_value(LONG, v)


@given(st.floats(width=32, allow_nan=True))
def test_float_and_double_hash_alike(v: float) -> None:
    assert hash_value(FLOAT, v) == hash_value(DOUBLE, v)


def test_decimal_hash_ignores_scale() -> None:
    # Appendix B note 2: the unscaled value's bytes, not the scale, are hashed.
    assert hash_value(DecimalType(9, 2), Decimal("14.20")) == hash_value(DecimalType(9, 0), Decimal(1420))
    assert hash_value(DecimalType(9, 4), Decimal("0.1420")) == -500754589


def test_bucket_sources_and_result() -> None:
    b = BucketTransform(8)
    for t in (INT, LONG, DecimalType(9, 2), DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        assert b.can_transform(t)
        assert b.result_type(t) == INT
    for t in (STRING, UUID, FixedType(3), BINARY):
        assert b.can_transform(t)
    for t in (BOOLEAN, FLOAT, DOUBLE, UNKNOWN, VARIANT, GeometryType(), ListType(1, INT)):
        assert not b.can_transform(t)
    assert b.apply(LONG, None) is None
    assert not b.preserves_order
    with pytest.raises(ValidationError):
        b.apply_arrow(FLOAT, pa.array([1.0], pa.float32()))


@pytest.mark.parametrize("n", [0, -1])
def test_bucket_count_must_be_positive(n: int) -> None:
    with pytest.raises(ValidationError):
        BucketTransform(n)


# --- truncate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "width", "value", "expected"),
    [
        # Spec "Truncate Transform Details" examples.
        (INT, 10, 1, 0),
        (INT, 10, -1, -10),
        (LONG, 10, 1, 0),
        (LONG, 10, -1, -10),
        (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
        (STRING, 3, "iceberg", "ice"),
        (BINARY, 3, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03"),
        # Further cases: exact multiples, negative decimals, short values, code points.
        (INT, 10, 10, 10),
        (INT, 10, -10, -10),
        (LONG, 7, -15, -21),
        (DecimalType(9, 2), 50, Decimal("-0.05"), Decimal("-0.50")),
        (DecimalType(9, 0), 10, Decimal("-1"), Decimal("-10")),
        (STRING, 10, "ice", "ice"),
        (STRING, 2, "\U0001f600\U0001f600\U0001f600x", "\U0001f600\U0001f600"),
        (STRING, 3, "日本語テキスト", "日本語"),
        (BINARY, 10, b"\xff", b"\xff"),
    ],
)
def test_truncate(t: IcebergType, width: int, value: Any, expected: Any) -> None:
    tr = TruncateTransform(width)
    got = tr.apply(t, value)
    assert got == expected
    if isinstance(expected, Decimal):
        assert got.as_tuple().exponent == expected.as_tuple().exponent  # scale preserved
    assert as_internal(tr.apply_arrow(t, arrow_of(t, [value, None]))) == [expected, None]


def test_truncate_sources_and_result() -> None:
    tr = TruncateTransform(4)
    for t in (INT, LONG, DecimalType(9, 2), STRING, BINARY):
        assert tr.can_transform(t)
        assert tr.result_type(t) == t
    for t in (DATE, TIMESTAMP, UUID, FixedType(4), BOOLEAN, DOUBLE):
        assert not tr.can_transform(t)
    assert tr.preserves_order
    with pytest.raises(ValidationError):
        TruncateTransform(0)


# --- time transforms ------------------------------------------------------------------------


def _ts(text: str, t: IcebergType = TIMESTAMP) -> int:
    value: int = to_internal(t, text)
    return value


@pytest.mark.parametrize(
    ("t", "value", "year", "month", "day", "hour"),
    [
        (DATE, "2017-11-16", 47, 574, 17486, None),
        (DATE, "1970-01-01", 0, 0, 0, None),
        # Spec: floor before the epoch, so the last day of 1969 is year/month/day -1.
        (DATE, "1969-12-31", -1, -1, -1, None),
        (DATE, "1969-01-01", -1, -12, -365, None),
        (DATE, "1968-12-31", -2, -13, -366, None),
        (TIMESTAMP, "2017-11-16T22:31:08", 47, 574, 17486, 419686),
        (TIMESTAMP, "1970-01-01T00:00:00", 0, 0, 0, 0),
        (TIMESTAMP, "1969-12-31T23:59:59.999999", -1, -1, -1, -1),
        (TIMESTAMP, "1969-12-31T23:00:00", -1, -1, -1, -1),
        (TIMESTAMP, "1969-12-31T22:59:59.999999", -1, -1, -1, -2),
        (TIMESTAMP, "1969-01-01T00:00:00", -1, -12, -365, -8760),
        (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00", 47, 574, 17486, 419686),
        (TIMESTAMP_NS, "1969-12-31T23:59:59.999999999", -1, -1, -1, -1),
        (TIMESTAMP_NS, "2017-11-16T22:31:08.000000001", 47, 574, 17486, 419686),
        (TIMESTAMPTZ_NS, "1900-03-01T00:00:00", -70, -838, -25508, -612192),
    ],
)
def test_time_transforms(
    t: IcebergType, value: str, year: int, month: int, day: int, hour: int | None
) -> None:
    v = to_internal(t, value)
    expected: list[tuple[Transform, int | None]] = [(YEAR, year), (MONTH, month), (DAY, day)]
    if hour is not None:
        expected.append((HOUR, hour))
    for transform, want in expected:
        assert transform.apply(t, v) == want, transform
        assert as_internal(transform.apply_arrow(t, arrow_of(t, [v, None]))) == [want, None], transform


def test_time_transform_types() -> None:
    for t in (DATE, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        assert YEAR.can_transform(t) and MONTH.can_transform(t) and DAY.can_transform(t)
        assert YEAR.result_type(t) == INT and MONTH.result_type(t) == INT
        assert DAY.result_type(t) == DATE
    assert not HOUR.can_transform(DATE)
    assert HOUR.can_transform(TIMESTAMPTZ_NS) and HOUR.result_type(TIMESTAMP) == INT
    for t in (TIME, LONG, STRING):
        assert not YEAR.can_transform(t) and not DAY.can_transform(t) and not HOUR.can_transform(t)
    assert DAY.apply_arrow(DATE, pa.array([None], pa.date32())).type == pa.date32()
    assert YEAR.apply_arrow(TIMESTAMP, pa.array([None], pa.timestamp("us"))).type == pa.int32()
    with pytest.raises(ValidationError):
        HOUR.apply_arrow(DATE, pa.array([1], pa.date32()))


# --- identity, void, unknown ----------------------------------------------------------------


def test_identity() -> None:
    assert IDENTITY.apply(STRING, "x") == "x"
    assert IDENTITY.result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert IDENTITY.can_transform(UNKNOWN) and IDENTITY.can_transform(BOOLEAN)
    for t in (GeometryType(), VARIANT, ListType(1, INT)):
        assert not IDENTITY.can_transform(t)
    arr = pa.chunked_array([pa.array([1, None]), pa.array([3])])
    assert IDENTITY.apply_arrow(LONG, arr).to_pylist() == [1, None, 3]
    assert IDENTITY.is_identity and IDENTITY.preserves_order and not IDENTITY.is_void


def test_void() -> None:
    assert VOID.is_void and VOID.can_transform(VARIANT) and VOID.can_transform(ListType(1, INT))
    assert VOID.result_type(STRING) == STRING
    assert VOID.apply(LONG, 5) is None
    out = VOID.apply_arrow(LONG, pa.array([1, 2, None]))
    assert out.type == pa.int64() and out.to_pylist() == [None, None, None]
    assert VOID.to_human_string(LONG, None) == "null"


def test_unknown_transform() -> None:
    u = parse_transform("zorder(a, b)")
    assert isinstance(u, UnknownTransform) and str(u) == "zorder(a, b)"
    assert u.can_transform(LONG) and u.can_transform(VARIANT)
    assert u.result_type(LONG) == STRING
    with pytest.raises(Unsupported):
        u.apply(LONG, 1)
    with pytest.raises(Unsupported):
        u.apply_arrow(LONG, pa.array([1]))
    assert u == UnknownTransform("zorder(a, b)") and u != UnknownTransform("zorder(b, a)")
    assert not u.preserves_order and not u.is_void and not u.is_identity


# --- parsing, equality, ordering ------------------------------------------------------------


ALL_TRANSFORMS: list[Transform] = [
    IDENTITY,
    BucketTransform(16),
    TruncateTransform(10),
    YEAR,
    MONTH,
    DAY,
    HOUR,
    VOID,
    UnknownTransform("custom[3]"),
]


@pytest.mark.parametrize("transform", ALL_TRANSFORMS, ids=str)
def test_parse_str_round_trip(transform: Transform) -> None:
    assert parse_transform(str(transform)) == transform
    assert hash(parse_transform(str(transform))) == hash(transform)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        (" Identity ", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        (" bucket[ 16 ] ", BucketTransform(16)),
        ("BUCKET[16]", BucketTransform(16)),
        ("truncate[ 3]", TruncateTransform(3)),
        ("year", YearTransform()),
        ("MONTH", MonthTransform()),
        ("day\n", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
    ],
)
def test_parse_is_tolerant(text: str, expected: Transform) -> None:
    assert parse_transform(text) == expected


@pytest.mark.parametrize("text", ["bucket", "bucket[]", "bucket[x]", "days", "truncate(3)", "", "geohash[5]"])
def test_parse_unknown(text: str) -> None:
    t = parse_transform(text)
    assert isinstance(t, UnknownTransform) and str(t) == text


def test_parse_rejects_zero_parameters() -> None:
    with pytest.raises(ValidationError):
        parse_transform("bucket[0]")
    with pytest.raises(ValidationError):
        parse_transform("truncate[0]")


def test_equality_hash_repr_and_immutability() -> None:
    assert BucketTransform(16) == BucketTransform(16) != BucketTransform(8)
    assert BucketTransform(16) != TruncateTransform(16)
    assert YearTransform() == YEAR and YEAR != MONTH
    assert len({YEAR, YearTransform(), MONTH, BucketTransform(2), BucketTransform(2)}) == 3
    assert repr(BucketTransform(16)) == "BucketTransform(16)"
    assert repr(TruncateTransform(3)) == "TruncateTransform(3)"
    assert repr(DAY) == "DayTransform()"
    assert str(BucketTransform(16)) == "bucket[16]" and str(TruncateTransform(10)) == "truncate[10]"
    with pytest.raises(dataclasses.FrozenInstanceError):
        BucketTransform(16).num_buckets = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        YEAR.granularity = 9  # type: ignore[misc]


def test_pickle_round_trip() -> None:
    import pickle

    for t in ALL_TRANSFORMS:
        assert pickle.loads(pickle.dumps(t)) == t


def test_order_relations() -> None:
    assert HOUR.satisfies_order_of(DAY) and HOUR.satisfies_order_of(YEAR)
    assert DAY.satisfies_order_of(MONTH) and MONTH.satisfies_order_of(YEAR)
    assert not YEAR.satisfies_order_of(MONTH) and not DAY.satisfies_order_of(HOUR)
    assert YEAR.satisfies_order_of(YEAR)
    assert IDENTITY.satisfies_order_of(DAY) and IDENTITY.satisfies_order_of(TruncateTransform(3))
    assert not IDENTITY.satisfies_order_of(BucketTransform(4))
    assert BucketTransform(4).satisfies_order_of(BucketTransform(4))
    assert not BucketTransform(4).satisfies_order_of(BucketTransform(8))
    assert not DAY.satisfies_order_of(IDENTITY)
    assert {t.dedup_name for t in (YEAR, MONTH, DAY, HOUR)} == {"time"}
    assert BucketTransform(4).dedup_name == "bucket[4]"
    assert [t.preserves_order for t in ALL_TRANSFORMS] == [
        True,
        False,
        True,
        True,
        True,
        True,
        True,
        False,
        False,
    ]


# --- human strings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "source", "value", "expected"),
    [
        (YEAR, TIMESTAMP, 47, "2017"),
        (YEAR, DATE, -1, "1969"),
        (MONTH, TIMESTAMP, 574, "2017-11"),
        (MONTH, DATE, -1, "1969-12"),
        (MONTH, DATE, 0, "1970-01"),
        (DAY, TIMESTAMP, 17486, "2017-11-16"),
        (DAY, DATE, -1, "1969-12-31"),
        (HOUR, TIMESTAMP, 419686, "2017-11-16-22"),
        (HOUR, TIMESTAMPTZ, -1, "1969-12-31-23"),
        (BucketTransform(16), STRING, 3, "3"),
        (TruncateTransform(3), STRING, "ice", "ice"),
        (TruncateTransform(3), BINARY, b"\x01\x02\x03", "AQID"),
        (TruncateTransform(50), DecimalType(9, 2), Decimal("10.50"), "10.50"),
        (TruncateTransform(10), LONG, -10, "-10"),
        (IDENTITY, DATE, 17486, "2017-11-16"),
        (IDENTITY, TIME, 81068000000, "22:31:08"),
        (IDENTITY, TIME, 81060000000, "22:31"),
        (IDENTITY, TIME, 81068500000, "22:31:08.500"),
        (IDENTITY, TIME, 81068000001, "22:31:08.000001"),
        (IDENTITY, TIMESTAMP, 1510871468000001, "2017-11-16T22:31:08.000001"),
        (IDENTITY, TIMESTAMP, 1510871468000000, "2017-11-16T22:31:08"),
        (IDENTITY, TIMESTAMPTZ, 1510871468000000, "2017-11-16T22:31:08+00:00"),
        (IDENTITY, TIMESTAMPTZ, -1, "1969-12-31T23:59:59.999999+00:00"),
        (IDENTITY, TIMESTAMP_NS, 1510871468000001001, "2017-11-16T22:31:08.000001001"),
        (IDENTITY, TIMESTAMPTZ_NS, 1510871468000000000, "2017-11-16T22:31:08+00:00"),
        (IDENTITY, BINARY, b"\x00\x01\x02\x03", "AAECAw=="),
        (IDENTITY, FixedType(2), b"\xff\xfe", "//4="),
        (
            IDENTITY,
            UUID,
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
        ),
        (IDENTITY, BOOLEAN, True, "true"),
        (IDENTITY, LONG, 34, "34"),
        (IDENTITY, DecimalType(9, 2), Decimal("14.20"), "14.20"),
        (IDENTITY, DOUBLE, 1.0, "1.0"),
        (IDENTITY, DOUBLE, 1e10, "1.0E10"),
        (IDENTITY, DOUBLE, 1.5e-5, "1.5E-5"),
        (IDENTITY, DOUBLE, 1234567.5, "1234567.5"),
        (IDENTITY, DOUBLE, -0.0, "-0.0"),
        (IDENTITY, DOUBLE, float("nan"), "NaN"),
        (IDENTITY, DOUBLE, float("-inf"), "-Infinity"),
        (IDENTITY, FLOAT, to_internal(FLOAT, 0.1), "0.1"),
        (IDENTITY, STRING, "a/b", "a/b"),
        (VOID, LONG, None, "null"),
    ],
)
def test_human_strings(transform: Transform, source: IcebergType, value: Any, expected: str) -> None:
    # Java Transform.toHumanString conventions (notes §6).
    assert transform.to_human_string(source, value) == expected


@pytest.mark.parametrize("transform", ALL_TRANSFORMS, ids=str)
def test_human_string_of_null(transform: Transform) -> None:
    assert transform.to_human_string(LONG, None) == "null"


# --- Arrow == scalar on random data ----------------------------------------------------------

_I32 = st.integers(min_value=-(2**31), max_value=INT_MAX)
_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# About ±36,000 years, so that hour/month/year results fit Java's int.
_MICROS = st.integers(min_value=-(2**60), max_value=2**60)
_NANOS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_DAYS = st.integers(min_value=-3_000_000, max_value=3_000_000)
_TIME = st.integers(min_value=0, max_value=86_400_000_000 - 1)
_TEXT = st.text(max_size=40)
_BYTES = st.binary(max_size=300)
_UUIDS = st.uuids()


def _decimals(p: int, s: int) -> st.SearchStrategy[Decimal]:
    bound = 10**p - 1
    return st.integers(min_value=-bound, max_value=bound).map(lambda u: decimal_from_unscaled(u, s))


_CASES: list[tuple[Transform, IcebergType, st.SearchStrategy[Any]]] = [
    (BucketTransform(16), INT, _I32),
    (BucketTransform(7), LONG, _I64),
    (BucketTransform(100), DATE, _DAYS),
    (BucketTransform(5), TIME, _TIME),
    (BucketTransform(16), TIMESTAMP, _MICROS),
    (BucketTransform(16), TIMESTAMPTZ, _MICROS),
    (BucketTransform(16), TIMESTAMP_NS, _NANOS),
    (BucketTransform(16), TIMESTAMPTZ_NS, _NANOS),
    (BucketTransform(3), STRING, _TEXT),
    (BucketTransform(INT_MAX), BINARY, _BYTES),
    (BucketTransform(1024), UUID, _UUIDS),
    (BucketTransform(16), FixedType(5), st.binary(min_size=5, max_size=5)),
    (BucketTransform(16), DecimalType(9, 2), _decimals(9, 2)),
    (BucketTransform(16), DecimalType(38, 10), _decimals(38, 10)),
    (TruncateTransform(10), INT, _I32.filter(lambda v: v >= -(2**31) + 10)),
    (TruncateTransform(7), LONG, st.integers(min_value=-(2**62), max_value=2**62)),
    (TruncateTransform(50), DecimalType(9, 2), _decimals(9, 2)),
    (TruncateTransform(3), DecimalType(38, 4), _decimals(37, 4)),
    (TruncateTransform(3), STRING, _TEXT),
    (TruncateTransform(4), BINARY, _BYTES),
    (YEAR, DATE, _DAYS),
    (YEAR, TIMESTAMP, _MICROS),
    (YEAR, TIMESTAMPTZ_NS, _NANOS),
    (MONTH, DATE, _DAYS),
    (MONTH, TIMESTAMPTZ, _MICROS),
    (MONTH, TIMESTAMP_NS, _NANOS),
    (DAY, DATE, _DAYS),
    (DAY, TIMESTAMP, _MICROS),
    (DAY, TIMESTAMPTZ_NS, _NANOS),
    (HOUR, TIMESTAMP, st.integers(min_value=-(2**31) * 3_600_000_000, max_value=INT_MAX * 3_600_000_000)),
    (HOUR, TIMESTAMP_NS, _NANOS),
    (IDENTITY, LONG, _I64),
    (VOID, STRING, _TEXT),
]


@pytest.mark.parametrize(("transform", "source", "values"), _CASES, ids=[f"{c[0]}-{c[1]}" for c in _CASES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_apply_arrow_matches_apply(
    transform: Transform, source: IcebergType, values: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    items = data.draw(st.lists(st.one_of(st.none(), values), max_size=30))
    expected = [transform.apply(source, v) for v in items]
    arr = arrow_of(source, items)
    assert as_internal(transform.apply_arrow(source, arr)) == expected
    # Sliced arrays (non-zero offsets) and chunked arrays take the same path.
    if len(items) > 2:
        assert as_internal(transform.apply_arrow(source, arr.slice(1))) == expected[1:]
        chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2)])
        assert as_internal(transform.apply_arrow(source, chunked)) == expected


@pytest.mark.parametrize(
    ("arr", "source"),
    [
        (pa.array(["iceberg", None, "x"], pa.large_string()), STRING),
        (pa.array(["iceberg", None, "x"], pa.string_view()), STRING),
        (pa.array(["iceberg", None, "x"]).dictionary_encode(), STRING),
        (pa.array([b"\x00\x01\x02\x03", None], pa.large_binary()), BINARY),
        (pa.array([34, None], pa.int32()), LONG),  # a promoted int column
        (pa.array([34, None], pa.int16()), INT),
        (pa.array([1510871468000, None], pa.timestamp("ms")), TIMESTAMP),
        (pa.array([1510871468000001, None], pa.timestamp("us", tz="America/New_York")), TIMESTAMPTZ),
        (pa.array([17486, None], pa.date32()).cast(pa.date64()), DATE),
        (pa.array([81068000, None], pa.time32("ms")), TIME),
        (pa.array([uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes, None], pa.binary(16)), UUID),
    ],
    ids=lambda x: str(getattr(x, "type", x)),
)
def test_bucket_arrow_input_variants(arr: pa.Array, source: IcebergType) -> None:
    bucket = BucketTransform(1000)
    expected = [bucket.apply(source, to_internal(source, v)) for v in arr.to_pylist()]
    assert bucket.apply_arrow(source, arr).to_pylist() == expected
    assert None not in expected[:1]


def test_bucket_arrow_uuid_extension_type() -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    arr = pa.array([u.bytes, None], pa.uuid())
    assert BucketTransform(INT_MAX).apply_arrow(UUID, arr).to_pylist() == [1488055340, None]


def test_time_transforms_ignore_arrow_display_zone() -> None:
    # timestamptz values are UTC instants; the Arrow zone is display metadata only.
    micros = _ts("2017-12-31T23:30:00", TIMESTAMPTZ)
    arr = pa.array([micros], pa.timestamp("us", tz="Asia/Tokyo"))
    assert YEAR.apply_arrow(TIMESTAMPTZ, arr).to_pylist() == [47]
    assert HOUR.apply_arrow(TIMESTAMPTZ, arr).to_pylist() == [HOUR.apply(TIMESTAMPTZ, micros)]


def test_truncate_arrow_keeps_type_and_code_points() -> None:
    arr = pa.array(["\U0001f600\U0001f600\U0001f600x", "日本語テキスト", None], pa.large_string())
    out = TruncateTransform(2).apply_arrow(STRING, arr)
    assert out.type == pa.large_string()
    assert out.to_pylist() == ["\U0001f600\U0001f600", "日本", None]
    ints = TruncateTransform(10).apply_arrow(INT, pa.array([-1, 15, None], pa.int32()))
    assert ints.type == pa.int32() and ints.to_pylist() == [-10, 10, None]


def test_truncate_arrow_wide_decimals() -> None:
    t = DecimalType(38, 2)
    values = [
        Decimal("-999999999999999999999999999999999999.99"),
        Decimal("999999999999999999999999999999999999.99"),
        Decimal("-0.01"),
        Decimal("0.00"),
        None,
    ]
    arr = pa.array(values, pa.decimal128(38, 2))
    for width in (1, 7, 50, INT_MAX, 2**40):
        tr = TruncateTransform(width)
        assert tr.apply_arrow(t, arr).to_pylist() == [tr.apply(t, v) for v in values], width


def test_large_bucket_batch_matches_scalar() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    longs = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    texts = [
        "".join(chr(int(c)) for c in rng.integers(32, 0x3000, int(n))) for n in rng.integers(0, 120, 2000)
    ]
    texts[5] = "x" * 5000  # longer than the block-parallel limit
    b = BucketTransform(97)
    assert b.apply_arrow(LONG, pa.array(longs)).to_pylist() == [b.apply(LONG, int(v)) for v in longs]
    assert b.apply_arrow(STRING, pa.array(texts)).to_pylist() == [b.apply(STRING, s) for s in texts]


# --- cross-check against PyIceberg ------------------------------------------------------------


@pytest.mark.interop
@settings(max_examples=60, deadline=None)
@given(
    long=_I64,
    text=_TEXT,
    raw=_BYTES,
    micros=st.integers(min_value=-(2**50), max_value=2**50),
    days=st.integers(min_value=-700_000, max_value=2_900_000),
)
def test_matches_pyiceberg(long: int, text: str, raw: bytes, micros: int, days: int) -> None:
    from pyiceberg import transforms as pt
    from pyiceberg import types as ptypes

    checks: list[tuple[Callable[[Any], Any], Transform, IcebergType, Any]] = [
        (pt.BucketTransform(16).transform(ptypes.LongType()), BucketTransform(16), LONG, long),
        (pt.BucketTransform(16).transform(ptypes.StringType()), BucketTransform(16), STRING, text),
        (pt.BucketTransform(16).transform(ptypes.BinaryType()), BucketTransform(16), BINARY, raw),
        (pt.TruncateTransform(3).transform(ptypes.StringType()), TruncateTransform(3), STRING, text),
        (pt.TruncateTransform(10).transform(ptypes.LongType()), TruncateTransform(10), LONG, long),
        (pt.YearTransform().transform(ptypes.TimestampType()), YEAR, TIMESTAMP, micros),
        (pt.MonthTransform().transform(ptypes.TimestampType()), MONTH, TIMESTAMP, micros),
        (pt.DayTransform().transform(ptypes.TimestampType()), DAY, TIMESTAMP, micros),
        (pt.HourTransform().transform(ptypes.TimestampType()), HOUR, TIMESTAMP, micros),
        (pt.MonthTransform().transform(ptypes.DateType()), MONTH, DATE, days),
        (pt.YearTransform().transform(ptypes.DateType()), YEAR, DATE, days),
    ]
    for theirs, ours, source, value in checks:
        if isinstance(ours, TruncateTransform) and source == LONG and value < -(2**63) + 10:
            # Java wraps in long arithmetic at the very bottom of the range; PyIceberg does not.
            continue
        assert ours.apply(source, value) == theirs(value), (ours, source, value)


@pytest.mark.interop
def test_human_strings_match_pyiceberg_for_time_transforms() -> None:
    from pyiceberg import transforms as pt
    from pyiceberg import types as ptypes

    for value in (-100_000, -1, 0, 1, 47, 574, 419686):
        for theirs, ours in (
            (pt.YearTransform(), YEAR),
            (pt.MonthTransform(), MONTH),
            (pt.HourTransform(), HOUR),
        ):
            if ours is YEAR and not -1970 < value < 8000:
                continue
            if ours is MONTH and not -20_000 < value < 90_000:
                continue
            assert ours.to_human_string(TIMESTAMP, value) == theirs.to_human_string(
                ptypes.TimestampType(), value
            )
        if -700_000 < value < 2_900_000:
            assert DAY.to_human_string(DATE, value) == pt.DayTransform().to_human_string(
                ptypes.DateType(), value
            )
    assert dt.date(1970, 1, 1) + dt.timedelta(days=17486) == dt.date(2017, 11, 16)


def test_truncate_near_int_min_exact_in_python_wrapped_in_arrow_like_java() -> None:
    # Stored partition values come from the Arrow path, which wraps in int arithmetic as Java
    # does; the scalar path stays exact so inclusive projections never prune matching files.
    import pyarrow as pa

    from firn.spec.transforms import TruncateTransform
    from firn.spec.types import INT

    t = TruncateTransform(10)
    assert t.apply(INT, -(2**31)) == -(2**31) - 2
    assert t.apply_arrow(INT, pa.array([-(2**31)], pa.int32())).to_pylist() == [2147483646]
    assert t.apply(INT, -15) == -20 and t.apply_arrow(INT, pa.array([-15], pa.int32())).to_pylist() == [-20]
