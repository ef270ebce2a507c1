from __future__ import annotations

import math
from decimal import Decimal

import pytest

from firn.expressions import FileStats, InclusiveMetricsEvaluator, StrictMetricsEvaluator, parse
from firn.spec.content import DataFile
from tests.firn.expressions.helpers import SCHEMA, data_file

# A 10-row file: id 1..10 (required), i in [10, 20] with 2 nulls, name in ['abc', 'abz'],
# x in [-1.0, 2.5] with 1 null and 1 NaN, price in [1.00, 9.99], addr.city in ['Berlin', 'Bonn'].
FILE = data_file(
    record_count=10,
    value_counts={1: 10, 2: 10, 3: 10, 4: 10, 6: 10, 19: 10},
    null_counts={1: 0, 2: 2, 3: 0, 4: 1, 6: 0, 19: 0},
    nan_counts={4: 1},
    lower={1: 1, 2: 10, 3: "abc", 4: -1.0, 6: Decimal("1.00"), 19: "Berlin"},
    upper={1: 10, 2: 20, 3: "abz", 4: 2.5, 6: Decimal("9.99"), 19: "Bonn"},
)


def incl(text: str, file: DataFile = FILE) -> bool:
    return InclusiveMetricsEvaluator(SCHEMA, parse(text)).eval(file)


def strict(text: str, file: DataFile = FILE) -> bool:
    return StrictMetricsEvaluator(SCHEMA, parse(text)).eval(file)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i < 10", False),
        ("i < 11", True),
        ("i <= 9", False),
        ("i <= 10", True),
        ("i > 20", False),
        ("i >= 20", True),
        ("i = 9", False),
        ("i = 21", False),
        ("i = 15", True),
        ("i != 15", True),
        ("i in (1, 2, 30)", False),
        ("i in (1, 20)", True),
        ("i not in (10, 20)", True),
        ("i is null", True),
        ("i is not null", True),
        ("id is null", False),  # required: folded to false
        ("name like 'ab%'", True),
        ("name like 'abd%'", True),
        ("name like 'aa%'", False),
        ("name like 'b%'", False),
        ("name like 'abzz%'", False),
        ("name not like 'ab%'", False),  # no nulls, both bounds start with 'ab'
        ("name not like 'abc%'", True),
        ("x is nan", True),
        ("x is not nan", True),
        ("x > 2.5", False),
        ("x != 2.5", True),
        ("price > 9.99", False),
        ("price >= 9.985", True),  # binds to price >= 9.99
        ("price > 9.985", True),
        ("price = 1.005", False),  # no decimal(9, 2) equals it
        ("addr.city = 'Bochum'", True),
        ("addr.city = 'Bremen'", False),
        ("addr.city = 'Aachen'", False),
        ("d = '2024-01-01'", True),  # no stats for d: might match
        ("i = 9 or name = 'abd'", True),
        ("i = 9 and name = 'abd'", False),
        ("not (i >= 10)", True),  # i < 10 or i is null: there are nulls
        ("not (id >= 1)", False),  # id is required and all ids are >= 1
        ("true", True),
        ("false", False),
    ],
)
def test_inclusive(text: str, expected: bool) -> None:
    assert incl(text) is expected


def test_inclusive_counts() -> None:
    all_null = data_file(value_counts={2: 10}, null_counts={2: 10})
    assert not incl("i is not null", all_null)
    assert not incl("i = 1", all_null)
    assert not incl("i < 1", all_null)
    assert not incl("i in (1, 2)", all_null)
    assert incl("i is null", all_null)
    assert incl("i != 1", all_null)  # null != 1 is true
    assert incl("i not in (1, 2)", all_null)

    no_nulls = data_file(value_counts={2: 10}, null_counts={2: 0})
    assert not incl("i is null", no_nulls)

    nan_and_null = data_file(value_counts={4: 10}, null_counts={4: 4}, nan_counts={4: 6})
    assert not incl("x < 100", nan_and_null)
    assert not incl("x = 1", nan_and_null)
    assert incl("x is nan", nan_and_null)
    assert incl("x is not nan", nan_and_null)  # the nulls
    assert incl("x != 1", nan_and_null)
    all_nan = data_file(value_counts={4: 10}, null_counts={4: 0}, nan_counts={4: 10})
    assert not incl("x is not nan", all_nan)
    assert not incl("x is null", all_nan)
    no_nan = data_file(value_counts={4: 10}, null_counts={4: 0}, nan_counts={4: 0})
    assert not incl("x is nan", no_nan)


def test_inclusive_not_equal_rules_out_single_valued_files() -> None:
    single = data_file(value_counts={2: 10}, null_counts={2: 0}, lower={2: 7}, upper={2: 7})
    assert not incl("i != 7", single)
    assert not incl("i not in (6, 7)", single)
    assert incl("i != 8", single)
    with_nulls = data_file(value_counts={2: 10}, null_counts={2: 1}, lower={2: 7}, upper={2: 7})
    assert incl("i != 7", with_nulls)
    unknown_nans = data_file(value_counts={4: 10}, null_counts={4: 0}, lower={4: 7.0}, upper={4: 7.0})
    assert incl("x != 7", unknown_nans)  # NaNs (unknown count) would match


def test_inclusive_missing_stats_and_record_counts() -> None:
    bare = data_file()
    for text in (
        "i = 1",
        "i is null",
        "i is not null",
        "x is nan",
        "name like 'a%'",
        "i in (1, 2)",
        "i != 3",
    ):
        assert incl(text, bare), text
    assert not incl("i = 1", data_file(record_count=0))
    assert InclusiveMetricsEvaluator(SCHEMA, parse("i = 1"), include_empty_files=True).eval(
        data_file(record_count=0)
    )
    assert incl("i = 1", data_file(record_count=-1, value_counts={2: 5}, null_counts={2: 5}))


def test_inclusive_truncated_string_bounds() -> None:
    # Java's truncate(3): lower 'abc' for min 'abcdef', upper 'abe' for max 'abdxyz' (last char +1).
    truncated = data_file(value_counts={3: 10}, null_counts={3: 0}, lower={3: "abc"}, upper={3: "abe"})
    assert incl("name = 'abcdef'", truncated)
    assert incl("name = 'abdzzz'", truncated)
    assert incl("name like 'abcd%'", truncated)
    assert incl("name like 'abe%'", truncated)  # upper 'abe' itself may not be a value, but is allowed
    assert not incl("name like 'abf%'", truncated)
    assert not incl("name like 'abb%'", truncated)
    assert not incl("name = 'abb'", truncated)
    assert not incl("name = 'abf'", truncated)
    assert incl("name not like 'abc%'", truncated)


def test_inclusive_in_with_many_values() -> None:
    many = "i in (" + ", ".join(str(v) for v in range(100, 400)) + ")"
    # Over IN_PREDICATE_LIMIT literals the bounds are not checked (Java does the same).
    assert incl(many)
    assert not incl("i in (" + ", ".join(str(v) for v in range(100, 200)) + ")")


def test_nan_bounds_are_ignored() -> None:
    bad = data_file(
        value_counts={4: 10}, null_counts={4: 0}, nan_counts={4: 0}, lower={4: math.nan}, upper={4: 1.0}
    )
    assert incl("x < -100", bad)
    assert not incl("x > 1", bad)


def test_eval_stats_with_typed_bounds() -> None:
    stats = FileStats(5, value_counts={2: 5}, null_counts={2: 0}, lower_bounds={2: 3}, upper_bounds={2: 4})
    ev = InclusiveMetricsEvaluator(SCHEMA, parse("i > 4"))
    assert not ev.eval_stats(stats)
    assert StrictMetricsEvaluator(SCHEMA, parse("i >= 3")).eval_stats(stats)


# -- strict -----------------------------------------------------------------------------------

# id 1..10 (required), i in [10, 20] without nulls, name in ['abc', 'abz'], x with NaN.
STRICT_FILE = data_file(
    record_count=10,
    value_counts={1: 10, 2: 10, 3: 10, 4: 10},
    null_counts={2: 0, 3: 0, 4: 0},
    nan_counts={4: 1},
    lower={1: 1, 2: 10, 3: "abc", 4: 1.0},
    upper={1: 10, 2: 20, 3: "abz", 4: 2.0},
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 11", True),
        ("id < 10", False),
        ("id <= 10", True),
        ("id > 0", True),
        ("id > 1", False),
        ("id >= 1", True),
        ("i < 21", True),
        ("i <= 20", True),
        ("i > 9", True),
        ("i >= 10", True),
        ("i >= 11", False),
        ("i = 10", False),
        ("i != 5", True),
        ("i != 21", True),
        ("i != 15", False),
        ("i not in (1, 2, 21)", True),
        ("i not in (1, 15)", False),
        ("i in (10, 20)", False),
        ("i is not null", True),
        ("i is null", False),
        ("name like 'ab%'", True),
        ("name like 'abc%'", False),
        ("name not like 'b%'", True),
        ("name not like 'aa%'", True),
        ("name not like 'ab%'", False),
        ("x < 3", False),  # one NaN row: NaN < 3 is false
        ("x != 3", True),  # NaN != 3 is true
        ("x is not null", True),
        ("x is not nan", False),
        ("id < 11 and i >= 10", True),
        ("id < 11 and i >= 11", False),
        ("id < 5 or i >= 10", True),
        ("d = '2024-01-01'", False),  # no stats
        ("true", True),
        ("false", False),
    ],
)
def test_strict(text: str, expected: bool) -> None:
    assert strict(text, STRICT_FILE) is expected


def test_strict_nulls_require_proof() -> None:
    nullable = data_file(value_counts={2: 10}, null_counts={2: 3}, lower={2: 1}, upper={2: 2})
    assert not strict("i < 5", nullable)  # null rows do not match
    assert strict("i != 5", nullable)  # null rows do match !=
    assert strict("i not in (5, 6)", nullable)
    assert not strict("i is not null", nullable)
    unknown_nulls = data_file(value_counts={2: 10}, lower={2: 1}, upper={2: 2})
    assert not strict("i < 5", unknown_nulls)
    all_null = data_file(value_counts={2: 10}, null_counts={2: 10})
    assert strict("i is null", all_null)
    assert strict("i != 5", all_null)
    assert strict("i not in (5, 6)", all_null)
    assert strict("name not like 'a%'", data_file(value_counts={3: 10}, null_counts={3: 10}))
    assert not strict("i = 5", all_null)


def test_strict_equality_and_nans() -> None:
    single = data_file(value_counts={2: 10}, null_counts={2: 0}, lower={2: 7}, upper={2: 7})
    assert strict("i = 7", single)
    assert strict("i in (6, 7)", single)
    assert not strict("i = 8", single)
    single_float = data_file(value_counts={4: 10}, null_counts={4: 0}, lower={4: 7.0}, upper={4: 7.0})
    assert not strict("x = 7", single_float)  # NaN count unknown
    proven = data_file(
        value_counts={4: 10}, null_counts={4: 0}, nan_counts={4: 0}, lower={4: 7.0}, upper={4: 7.0}
    )
    assert strict("x = 7", proven)
    assert strict("x is not nan", proven)
    all_nan = data_file(value_counts={4: 10}, null_counts={4: 0}, nan_counts={4: 10})
    assert strict("x is nan", all_nan)
    assert strict("x != 1", all_nan)
    mixed = data_file(value_counts={4: 10}, null_counts={4: 5}, nan_counts={4: 5})
    assert strict("x != 1", mixed)
    assert strict("x not in (1, 2)", mixed)
    assert not strict("x is nan", mixed)


def test_strict_truncated_string_bounds() -> None:
    truncated = data_file(value_counts={3: 10}, null_counts={3: 0}, lower={3: "abc"}, upper={3: "abe"})
    assert strict("name like 'ab%'", truncated)
    assert not strict("name like 'abc%'", truncated)
    assert strict("name < 'abf'", truncated)
    assert not strict("name < 'abe'", truncated)
    assert not strict("name = 'abc'", truncated)
    assert strict("name != 'abb'", truncated)
    assert not strict("name != 'abd'", truncated)


def test_strict_record_counts() -> None:
    assert strict("i = 1", data_file(record_count=0))
    assert not strict("true and i = 1", data_file(record_count=-1))
    assert not strict("i is not null", data_file(record_count=-1, value_counts={2: 1}, null_counts={2: 0}))
