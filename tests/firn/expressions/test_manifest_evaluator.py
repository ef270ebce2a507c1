from __future__ import annotations

import pytest

from firn.expressions import ManifestEvaluator, parse
from firn.spec import values
from firn.spec.content import ManifestFile, PartitionFieldSummary
from firn.spec.partitioning import PartitionField, PartitionSpec
from firn.spec.transforms import DayTransform, IdentityTransform, TruncateTransform
from firn.spec.types import DATE, DOUBLE, INT, STRING, IcebergType
from tests.firn.expressions.helpers import SCHEMA

SPEC = PartitionSpec(
    2,
    (
        PartitionField(2, 1000, IdentityTransform(), "i"),
        PartitionField(3, 1001, TruncateTransform(4), "name_trunc"),
        PartitionField(4, 1002, IdentityTransform(), "x"),
        PartitionField(8, 1003, DayTransform(), "ts_day"),
    ),
)
TYPES: dict[str, IcebergType] = {"i": INT, "name": STRING, "x": DOUBLE, "day": DATE}


def summary(
    t: IcebergType,
    lower: object = None,
    upper: object = None,
    *,
    contains_null: bool = False,
    contains_nan: bool | None = False,
) -> PartitionFieldSummary:
    return PartitionFieldSummary(
        contains_null=contains_null,
        contains_nan=contains_nan,
        lower_bound=None if lower is None else values.to_bytes(t, lower),
        upper_bound=None if upper is None else values.to_bytes(t, upper),
    )


def default_summaries(**overrides: PartitionFieldSummary) -> tuple[PartitionFieldSummary, ...]:
    base = {
        "i": summary(INT, 10, 20),
        "name": summary(STRING, "abcd", "abzz"),
        "x": summary(DOUBLE, -1.0, 2.5),
        "day": summary(DATE, 19724, 19730),  # 2024-01-02 .. 2024-01-08
    }
    base.update(overrides)
    return tuple(base[k] for k in ("i", "name", "x", "day"))


def manifest(summaries: tuple[PartitionFieldSummary, ...] | None) -> ManifestFile:
    return ManifestFile("s3://b/m.avro", 100, partition_spec_id=2, partitions=summaries)


def might_match(text: str, **overrides: PartitionFieldSummary) -> bool:
    ev = ManifestEvaluator.for_row_filter(SPEC, SCHEMA, parse(text))
    return ev.eval(manifest(default_summaries(**overrides)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i < 10", False),
        ("i < 11", True),
        ("i <= 10", True),
        ("i <= 9", False),
        ("i > 20", False),
        ("i > 19", True),
        ("i >= 20", True),
        ("i >= 21", False),
        ("i = 9", False),
        ("i = 10", True),
        ("i = 15", True),
        ("i = 21", False),
        ("i in (1, 2, 21)", False),
        ("i in (1, 15)", True),
        ("i != 15", True),
        ("i not in (10, 20)", True),
        ("i is null", False),
        ("i is not null", True),
        ("name like 'ab%'", True),
        ("name like 'abc%'", True),  # projected to name_trunc like 'abc%'
        ("name like 'abcd%'", True),
        ("name like 'aa%'", False),
        ("name like 'ac%'", False),
        ("name = 'zzzzz'", False),
        ("x is nan", False),
        ("x is not nan", True),
        ("x > 2.5", False),
        ("x >= 2.5", True),
        ("x < -1", False),
        ("ts >= '2024-01-09T00:00:00'", False),
        ("ts >= '2024-01-08T23:00:00'", True),
        ("ts < '2024-01-02T00:00:00'", False),
        ("ts < '2024-01-02T00:00:00.000001'", True),
        ("id = 5", True),  # not a partition source: cannot prune
        ("i = 9 or i = 21", False),
        ("i = 9 or i = 15", True),
        ("i = 15 and x > 3", False),
        ("not (i >= 10)", False),  # i < 10 or i is null; neither possible
        ("true", True),
        ("false", False),
    ],
)
def test_bounds(text: str, expected: bool) -> None:
    assert might_match(text) is expected


def test_nulls_and_nans() -> None:
    all_null = summary(INT, contains_null=True)
    assert might_match("i is null", i=all_null)
    assert not might_match("i is not null", i=all_null)
    assert not might_match("i = 5", i=all_null)
    assert not might_match("i < 5", i=all_null)
    assert not might_match("i in (1, 2)", i=all_null)
    assert might_match("i != 5", i=all_null)  # null != 5 is true
    assert might_match("i not in (5, 6)", i=all_null)

    some_null = summary(INT, 5, 5, contains_null=True)
    assert might_match("i is null", i=some_null)
    assert might_match("i != 5", i=some_null)
    assert not might_match("i != 5", i=summary(INT, 5, 5))  # every partition is exactly 5
    assert not might_match("i not in (5, 6)", i=summary(INT, 5, 5))
    assert might_match("i not in (4, 6)", i=summary(INT, 5, 5))

    all_nan = summary(DOUBLE, contains_nan=True)
    assert might_match("x is nan", x=all_nan)
    assert not might_match("x is not nan", x=all_nan)
    assert not might_match("x < 100", x=all_nan)
    assert might_match("x != 1", x=all_nan)
    assert might_match("x is not null", x=all_nan)  # NaN is not null

    nan_unknown = summary(DOUBLE, 1.0, 2.0, contains_nan=None)
    assert might_match("x is nan", x=nan_unknown)
    assert might_match("x != 1", x=summary(DOUBLE, 1.0, 1.0, contains_nan=None))
    null_or_nan = summary(DOUBLE, contains_null=True, contains_nan=None)
    assert might_match("x is not null", x=null_or_nan)  # the non-null values may be NaN
    assert not might_match("x is not null", x=summary(DOUBLE, contains_null=True, contains_nan=False))


def test_missing_bounds_without_null_flags_are_unknown() -> None:
    # A writer that omits bounds must not make every comparison fail.
    no_bounds = summary(INT)
    assert might_match("i = 5", i=no_bounds)
    assert might_match("i < 0", i=no_bounds)
    assert might_match("i is not null", i=no_bounds)


def test_not_starts_with() -> None:
    both_prefixed = summary(STRING, "abca", "abcz")
    assert not might_match("name not like 'abc%'", name=both_prefixed)
    assert might_match("name not like 'abc%'", name=summary(STRING, "abca", "abcz", contains_null=True))
    assert might_match("name not like 'abc%'", name=summary(STRING, "abba", "abcz"))


def test_missing_summaries_or_nan_bounds() -> None:
    ev = ManifestEvaluator.for_row_filter(SPEC, SCHEMA, parse("i = 5"))
    assert ev.eval(manifest(None))
    assert ev.eval(manifest(()))
    assert not ManifestEvaluator.for_row_filter(SPEC, SCHEMA, parse("false")).eval(manifest(None))
    nan_lower = PartitionFieldSummary(
        False, True, values.to_bytes(DOUBLE, float("nan")), values.to_bytes(DOUBLE, 1.0)
    )
    assert might_match("x < -5", x=nan_lower)  # a NaN bound (forbidden by the spec) is ignored


def test_many_in_literals() -> None:
    text = "i in (" + ", ".join(str(v) for v in range(100, 600)) + ")"
    assert not might_match(text)
    assert might_match(text + " or i in (15, 16)")
