from __future__ import annotations

import pytest

from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BoundLiteralPredicate,
    parse,
    partition_struct,
    project_inclusive,
    project_strict,
    to_string,
)
from firn.spec.partitioning import PartitionField, PartitionSpec
from firn.spec.transforms import (
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
)
from firn.spec.types import DATE, INT
from tests.firn.expressions.helpers import SCHEMA

SOURCE_IDS = {
    "id": 1,
    "i": 2,
    "name": 3,
    "x": 4,
    "price": 6,
    "d": 7,
    "ts": 8,
    "tstz": 9,
    "tsns": 10,
    "bin": 15,
    "addr.city": 19,
}


def spec_for(column: str, transform: Transform) -> PartitionSpec:
    return PartitionSpec(1, (PartitionField(SOURCE_IDS[column], 1000, transform, "p"),))


def incl(text: str, column: str, transform: Transform) -> str:
    return to_string(project_inclusive(parse(text), spec_for(column, transform), SCHEMA))


def strict(text: str, column: str, transform: Transform) -> str:
    return to_string(project_strict(parse(text), spec_for(column, transform), SCHEMA))


def check(column: str, transform: Transform, text: str, inclusive: str, strict_: str) -> None:
    assert incl(text, column, transform) == inclusive, f"inclusive {text}"
    assert strict(text, column, transform) == strict_, f"strict {text}"


IDENTITY = IdentityTransform()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i < 5", "p < 5"),
        ("i <= 5", "p <= 5"),
        ("i > 5", "p > 5"),
        ("i >= 5", "p >= 5"),
        ("i = 5", "p = 5"),
        ("i != 5", "p != 5"),
        ("i in (1, 2)", "p IN (1, 2)"),
        ("i not in (1, 2)", "p NOT IN (1, 2)"),
        ("i is null", "p IS NULL"),
        ("i is not null", "p IS NOT NULL"),
        ("not (i < 5)", "p >= 5 OR p IS NULL"),
    ],
)
def test_identity_projects_unchanged(text: str, expected: str) -> None:
    check("i", IDENTITY, text, expected, expected)


def test_identity_nan_and_strings() -> None:
    check("x", IDENTITY, "x is nan", "p IS NAN", "p IS NAN")
    check("x", IDENTITY, "x is not nan", "p IS NOT NAN", "p IS NOT NAN")
    check("name", IDENTITY, "name like 'ab%'", "p LIKE 'ab%'", "p LIKE 'ab%'")
    check("name", IDENTITY, "name not like 'ab%'", "p NOT LIKE 'ab%'", "p NOT LIKE 'ab%'")


def test_projection_is_bound_to_partition_fields() -> None:
    spec = spec_for("d", DayTransform())
    projected = project_inclusive(parse("d = '2024-01-02'"), spec, SCHEMA)
    assert isinstance(projected, BoundLiteralPredicate)
    assert projected.ref.field_id == 1000
    assert projected.ref.path == ("p",)
    assert projected.ref.field_type == DATE
    assert not projected.ref.never_null
    assert projected.literal == 19724
    assert partition_struct(spec, SCHEMA).fields[0].field_type == DATE


BUCKET = BucketTransform(16)


def test_bucket() -> None:
    # Spec Appendix B: hash(34L) = 2017239379, and 2017239379 % 16 == 3.
    check("id", BUCKET, "id = 34", "p = 3", "false")
    check("id", BUCKET, "id != 34", "true", "p != 3")
    check(
        "id",
        BUCKET,
        "id in (34, 35)",
        f"p IN ({', '.join(map(str, sorted({3, BUCKET.apply(SCHEMA.find_type(1), 35)})))})",
        "false",
    )
    check("id", BUCKET, "id not in (34, 34)", "true", "p != 3")
    for op in ("<", "<=", ">", ">="):
        check("id", BUCKET, f"id {op} 34", "true", "false")
    check("name", BUCKET, "name like 'ab%'", "true", "false")
    check("i", BUCKET, "i is null", "p IS NULL", "p IS NULL")
    check("i", BUCKET, "i is not null", "p IS NOT NULL", "p IS NOT NULL")
    # Spec Appendix B: hash("iceberg") = 1210000089; % 16 = 9.
    check("name", BUCKET, "name = 'iceberg'", "p = 9", "false")


TRUNC10 = TruncateTransform(10)


@pytest.mark.parametrize(
    ("text", "inclusive", "strict_"),
    [
        ("i < 5", "p <= 0", "p < 0"),
        ("i < 10", "p <= 0", "p < 10"),
        ("i < 0", "p <= -10", "p < 0"),
        ("i <= 5", "p <= 0", "p < 0"),
        ("i <= 9", "p <= 0", "p < 10"),
        ("i > 5", "p >= 0", "p > 0"),
        ("i > 9", "p >= 10", "p > 0"),
        ("i >= 10", "p >= 10", "p > 0"),
        ("i >= 11", "p >= 10", "p > 10"),
        ("i = 15", "p = 10", "false"),
        ("i = -1", "p = -10", "false"),
        ("i != 15", "true", "p != 10"),
        ("i in (1, 15, 17)", "p IN (0, 10)", "false"),
        ("i in (1, 5)", "p = 0", "false"),
        ("i not in (5, 15)", "true", "p NOT IN (0, 10)"),
        ("i is null", "p IS NULL", "p IS NULL"),
        # Range edges: v+1 / v-1 would leave the int range.
        ("i <= 2147483647", "p <= 2147483640", "p IS NOT NULL"),
        ("i >= -2147483648", "p >= -2147483650", "p IS NOT NULL"),
        ("i < -2147483648", "false", "p < -2147483650"),
        ("i > 2147483647", "false", "p > 2147483640"),
    ],
)
def test_truncate_integer(text: str, inclusive: str, strict_: str) -> None:
    check("i", TRUNC10, text, inclusive, strict_)


def test_truncate_decimal_uses_column_scale() -> None:
    t = TruncateTransform(50)  # 0.50 at scale 2 (spec example: 10.65 -> 10.50)
    check("price", t, "price = 10.65", "p = 10.50", "false")
    check("price", t, "price < 10.50", "p <= 10.00", "p < 10.50")
    check("price", t, "price <= 10.99", "p <= 10.50", "p < 11.00")
    check("price", t, "price > 10.49", "p >= 10.50", "p > 10.00")
    check("price", t, "price >= 10.50", "p >= 10.50", "p > 10.00")
    check("price", t, "price != 10.65", "true", "p != 10.50")


TRUNC3 = TruncateTransform(3)


@pytest.mark.parametrize(
    ("text", "inclusive", "strict_"),
    [
        ("name < 'abcd'", "p <= 'abc'", "p < 'abc'"),
        ("name <= 'abcd'", "p <= 'abc'", "p < 'abc'"),
        ("name > 'abcd'", "p >= 'abc'", "p > 'abc'"),
        ("name >= 'ab'", "p >= 'ab'", "p > 'ab'"),
        ("name = 'abcd'", "p = 'abc'", "false"),
        ("name = 'ab'", "p = 'ab'", "false"),
        ("name != 'abcd'", "true", "p != 'abc'"),
        ("name in ('abcd', 'abce', 'x')", "p IN ('abc', 'x')", "false"),
        ("name not in ('abcd', 'x')", "true", "p NOT IN ('abc', 'x')"),
        # starts_with is exact while the prefix fits in the width.
        ("name like 'ab%'", "p LIKE 'ab%'", "p LIKE 'ab%'"),
        ("name like 'abc%'", "p = 'abc'", "p = 'abc'"),
        ("name like 'abcd%'", "p = 'abc'", "false"),
        ("name not like 'ab%'", "p NOT LIKE 'ab%'", "p NOT LIKE 'ab%'"),
        ("name not like 'abc%'", "p != 'abc'", "p != 'abc'"),
        ("name not like 'abcd%'", "true", "p != 'abc'"),
        ("name is not null", "p IS NOT NULL", "p IS NOT NULL"),
        # Width counts code points, not bytes (spec truncate note 3).
        ("name = 'ééé€'", "p = 'ééé'", "false"),
    ],
)
def test_truncate_string(text: str, inclusive: str, strict_: str) -> None:
    check("name", TRUNC3, text, inclusive, strict_)


def test_truncate_binary() -> None:
    t = TruncateTransform(2)
    check("bin", t, "bin < X'010203'", "p <= X'0102'", "p < X'0102'")
    check("bin", t, "bin = X'010203'", "p = X'0102'", "false")
    check("bin", t, "bin > X'01'", "p >= X'01'", "p > X'01'")


DAY = DayTransform()


@pytest.mark.parametrize(
    ("text", "inclusive", "strict_"),
    [
        ("ts < '2024-01-02T00:00:00'", "p <= '2024-01-01'", "p < '2024-01-02'"),
        ("ts <= '2024-01-02T00:00:00'", "p <= '2024-01-02'", "p < '2024-01-02'"),
        ("ts <= '2024-01-01T23:59:59.999999'", "p <= '2024-01-01'", "p < '2024-01-02'"),
        ("ts > '2024-01-02T10:00:00'", "p >= '2024-01-02'", "p > '2024-01-02'"),
        ("ts > '2024-01-01T23:59:59.999999'", "p >= '2024-01-02'", "p > '2024-01-01'"),
        ("ts >= '2024-01-02T00:00:00'", "p >= '2024-01-02'", "p > '2024-01-01'"),
        ("ts = '2024-01-02T10:00:00'", "p = '2024-01-02'", "false"),
        ("ts != '2024-01-02T10:00:00'", "true", "p != '2024-01-02'"),
        (
            "ts in ('2024-01-02T10:00:00', '2024-01-02T11:00:00', '2024-01-05T00:00:00')",
            "p IN ('2024-01-02', '2024-01-05')",
            "false",
        ),
        (
            "ts not in ('2024-01-02T10:00:00', '2024-01-03T11:00:00')",
            "true",
            "p NOT IN ('2024-01-02', '2024-01-03')",
        ),
        ("ts is null", "p IS NULL", "p IS NULL"),
        # Pre-epoch: Java's fixInclusiveTimeProjection / fixStrictTimeProjection.
        ("ts < '1969-12-31T00:00:00'", "p <= '1969-12-31'", "p < '1969-12-31'"),
        ("ts <= '1969-12-30T12:00:00'", "p <= '1969-12-31'", "p < '1969-12-30'"),
        ("ts = '1969-12-31T10:00:00'", "p IN ('1969-12-31', '1970-01-01')", "false"),
        ("ts >= '1969-12-31T10:00:00'", "p >= '1969-12-31'", "p > '1970-01-01'"),
        ("ts > '1969-12-31T10:00:00'", "p >= '1969-12-31'", "p > '1970-01-01'"),
        ("ts >= '1970-01-01T00:00:00'", "p >= '1970-01-01'", "p > '1970-01-01'"),
        ("ts > '1970-01-02T00:00:00'", "p >= '1970-01-02'", "p > '1970-01-02'"),
        ("ts != '1969-12-31T10:00:00'", "true", "p NOT IN ('1969-12-31', '1970-01-01')"),
        (
            "ts in ('1969-12-30T10:00:00', '1970-01-05T00:00:00')",
            "p IN ('1969-12-30', '1969-12-31', '1970-01-05')",
            "false",
        ),
        (
            "ts not in ('1969-12-30T10:00:00', '1970-01-05T00:00:00')",
            "true",
            "p NOT IN ('1969-12-30', '1969-12-31', '1970-01-05')",
        ),
    ],
)
def test_day_of_timestamp(text: str, inclusive: str, strict_: str) -> None:
    check("ts", DAY, text, inclusive, strict_)


def test_day_of_date_and_nanos() -> None:
    check("d", DAY, "d < '2024-01-02'", "p <= '2024-01-01'", "p < '2024-01-02'")
    check("d", DAY, "d >= '2024-01-02'", "p >= '2024-01-02'", "p > '2024-01-01'")
    check(
        "tsns",
        DAY,
        "tsns < '1970-01-02T00:00:00.000000001'",
        "p <= '1970-01-02'",
        "p < '1970-01-02'",
    )
    check("tsns", DAY, "tsns <= '1969-12-31T23:59:59.999999999'", "p <= '1970-01-01'", "p < '1970-01-01'")


def test_hour_year_month() -> None:
    hour = HourTransform()
    check("tstz", hour, "tstz < '1970-01-01T02:00:00+00:00'", "p <= 1", "p < 2")
    check("tstz", hour, "tstz >= '1970-01-01T02:00:00+00:00'", "p >= 2", "p > 1")
    check("tstz", hour, "tstz = '1969-12-31T23:30:00+00:00'", "p IN (-1, 0)", "false")
    check("tstz", hour, "tstz < '1969-12-31T22:00:00+00:00'", "p <= -2", "p < -2")
    check("tsns", hour, "tsns < '1970-01-01T01:00:00'", "p <= 0", "p < 1")

    year = YearTransform()
    check("ts", year, "ts >= '2024-01-01T00:00:00'", "p >= 54", "p > 53")
    check("ts", year, "ts < '2024-01-01T00:00:00'", "p <= 53", "p < 54")
    check("ts", year, "ts < '1969-06-01T00:00:00'", "p <= 0", "p < -1")
    check("d", year, "d = '1968-05-05'", "p IN (-2, -1)", "false")

    month = MonthTransform()
    check("d", month, "d < '2024-03-01'", "p <= 649", "p < 650")
    check("d", month, "d <= '2024-03-01'", "p <= 650", "p < 650")
    check("d", month, "d > '2024-02-29'", "p >= 650", "p > 649")
    check("d", month, "d in ('2024-03-01', '2024-03-31')", "p = 650", "false")


def test_void_and_unknown_transforms_are_ignored() -> None:
    for transform in (VoidTransform(), UnknownTransform("zorder[2]")):
        for text in ("i = 5", "i is null", "i != 5", "i in (1, 2)", "i < 3"):
            assert incl(text, "i", transform) == "true"
            assert strict(text, "i", transform) == "false"


def test_unpartitioned_columns_and_combinations() -> None:
    spec = PartitionSpec(
        1,
        (
            PartitionField(8, 1000, DAY, "ts_day"),
            PartitionField(8, 1001, HourTransform(), "ts_hour"),
            PartitionField(3, 1002, IDENTITY, "name"),
        ),
    )
    # Two fields on one source: AND for inclusive, OR for strict.
    text = "ts >= '2024-01-02T10:00:00'"
    assert (
        to_string(project_inclusive(parse(text), spec, SCHEMA))
        == "ts_day >= '2024-01-02' AND ts_hour >= 473386"
    )
    assert to_string(project_strict(parse(text), spec, SCHEMA)) == "ts_day > '2024-01-02' OR ts_hour > 473385"
    # A column without a partition field.
    assert project_inclusive(parse("i = 1"), spec, SCHEMA) == AlwaysTrue()
    assert project_strict(parse("i = 1"), spec, SCHEMA) == AlwaysFalse()
    assert to_string(project_inclusive(parse("i = 1 and name = 'a'"), spec, SCHEMA)) == "name = 'a'"
    assert project_strict(parse("i = 1 and name = 'a'"), spec, SCHEMA) == AlwaysFalse()
    assert project_inclusive(parse("i = 1 or name = 'a'"), spec, SCHEMA) == AlwaysTrue()
    assert to_string(project_strict(parse("i = 1 or name = 'a'"), spec, SCHEMA)) == "name = 'a'"
    # NOT is pushed down before projecting.
    assert to_string(project_inclusive(parse("not (name != 'a')"), spec, SCHEMA)) == "name = 'a'"


def test_partition_struct_tolerates_dropped_sources() -> None:
    spec = PartitionSpec(
        1,
        (
            PartitionField(99, 1000, IDENTITY, "dropped"),
            PartitionField(2, 1001, BucketTransform(4), "i_bucket"),
        ),
    )
    struct = partition_struct(spec, SCHEMA)
    assert [f.name for f in struct.fields] == ["dropped", "i_bucket"]
    assert struct.fields[1].field_type == INT
    assert str(struct.fields[0].field_type) == "unknown"
    assert project_inclusive(parse("i = 1"), spec, SCHEMA) != AlwaysTrue()
