from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest

from firn.errors import ValidationError
from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundLiteralPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    Not,
    Operation,
    Or,
    bind,
    bind_reference,
    col,
    parse,
    referenced_field_ids,
    referenced_names,
    rewrite_not,
    to_string,
)
from tests.firn.expressions.helpers import SCHEMA

UTC = dt.UTC
DAY_US = 86_400_000_000


def b(expr: BooleanExpression | str, *, case_sensitive: bool = True) -> BooleanExpression:
    return bind(SCHEMA, parse(expr) if isinstance(expr, str) else expr, case_sensitive=case_sensitive)


def lit(expr: BooleanExpression) -> object:
    assert isinstance(expr, BoundLiteralPredicate), expr
    return expr.literal


# -- references -------------------------------------------------------------------------------


def test_bind_resolves_field_path_and_nullability() -> None:
    ref = bind_reference(SCHEMA, "id")
    assert (ref.field_id, ref.path, ref.never_null) == (1, ("id",), True)
    city = bind_reference(SCHEMA, "addr.city")
    # Required field inside an optional struct is still null when the struct is.
    assert (city.field_id, city.path, city.never_null) == (19, ("addr", "city"), False)
    code = bind_reference(SCHEMA, "req_struct.code")
    assert code.never_null
    assert not bind_reference(SCHEMA, "i").never_null


def test_unknown_column_lists_columns() -> None:
    with pytest.raises(ValidationError) as info:
        b("nope = 1")
    message = str(info.value)
    assert "no column 'nope'" in message
    assert "'addr.city'" in message and "'id'" in message and "'Mixed Case'" in message
    assert "tags" not in message  # list elements cannot be filtered


def test_case_sensitivity() -> None:
    with pytest.raises(ValidationError, match="no column 'ID'"):
        b("ID = 1")
    bound = b("ID = 1 and ADDR.CITY = 'x' and \"mixed case\" = 2", case_sensitive=False)
    assert referenced_field_ids(bound) == {1, 19, 25}
    with pytest.raises(ValidationError, match="case-insensitive"):
        b("NOPE = 1", case_sensitive=False)


def test_cannot_filter_nested_collections_or_structs() -> None:
    with pytest.raises(ValidationError, match="inside list or map column 'tags'"):
        b("tags.element = 'a'")
    with pytest.raises(ValidationError, match="not a primitive column"):
        b("addr is null")


# -- literal conversion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("id") == 5, 5),
        (col("i") == -(2**31), -(2**31)),
        (col("x") == 1, 1.0),
        (col("x") == Decimal("0.1"), 0.1),
        (col("f") == 1.1, 1.100000023841858),  # rounded to float32, as Java does
        (col("price") == Decimal("1.5"), Decimal("1.50")),
        (col("price") == 3, Decimal("3.00")),
        (col("price") == 0.1, Decimal("0.10")),
        (col("price") == "2.25", Decimal("2.25")),
        (col("d") == "2024-01-02", 19724),
        (col("d") == dt.date(1969, 12, 31), -1),
        (col("d") == dt.datetime(2024, 1, 2), 19724),
        (col("ts") == "2024-01-02T03:04:05.123456", 19724 * DAY_US + 11_045_123_456),
        (col("ts") == "2024-01-02", 19724 * DAY_US),
        (col("ts") == dt.datetime(1969, 12, 31, 23, 59, 59, 999999), -1),
        (col("ts") == dt.date(2024, 1, 2), 19724 * DAY_US),
        (col("tstz") == "2024-01-02T00:00:00", 19724 * DAY_US),  # naive: UTC
        (col("tstz") == "2024-01-02T02:00:00+02:00", 19724 * DAY_US),
        (col("tstz") == "2024-01-02T00:00:00Z", 19724 * DAY_US),
        (
            col("tstz") == dt.datetime(2024, 1, 1, 19, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
            19724 * DAY_US,
        ),
        (col("tsns") == "1970-01-01T00:00:00.000000001", 1),
        (col("tstzns") == "1969-12-31T23:59:59.999999999+00:00", -1),
        (col("tsns") == dt.datetime(1970, 1, 1, 0, 0, 1), 1_000_000_000),
        (col("t") == "12:30:00.5", (12 * 60 + 30) * 60_000_000 + 500_000),
        (col("t") == dt.time(0, 0, 1), 1_000_000),
        (
            col("u") == "f79c3e09-677c-4bbd-a479-3f349cb785e7",
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        ),
        (col("fx") == b"abc", b"abc"),
        (col("bin") == b"", b""),
        (col("flag") == True, True),  # noqa: E712
        (col("name") == "x", "x"),
        (col("i") == "7", 7),  # numeric strings go through values.to_internal
    ],
)
def test_literal_conversion(expr: BooleanExpression, expected: object) -> None:
    bound = bind(SCHEMA, expr)
    value = lit(bound)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        (col("name") == 5, "column 'name' of type string: 5"),
        (col("i") == "abc", "column 'i' of type int"),
        (col("i") == True, "column 'i'"),  # noqa: E712
        (col("x") == "1.5x", "column 'x' of type double"),
        (col("fx") == b"ab", "expected exactly 3 bytes"),
        (col("u") == "not-a-uuid", "not a UUID"),
        (col("d") == "2024-13-01", "column 'd' of type date"),
        (col("ts") == "2024-01-01T00:00:00+01:00", "timestamp without time zone"),
        (col("ts") == "yesterday", "ISO-8601"),
        (col("t") == "25:00", "expected a time"),
        (col("x") == Decimal("NaN"), "NaN"),
        (col("price") == "abc", "not a decimal"),
        (col("flag") == 1, "column 'flag' of type boolean"),
        (col("i").starts_with("a"), "needs a string"),
        (col("name").starts_with(5), "needs a string prefix"),  # type: ignore[arg-type]
    ],
)
def test_invalid_literals(expr: BooleanExpression, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        bind(SCHEMA, expr)
    assert fragment in str(info.value)


# -- type-aware folding -----------------------------------------------------------------------


def i_pred(op: Operation, value: object) -> BoundLiteralPredicate:
    return BoundLiteralPredicate(op, bind_reference(SCHEMA, "i"), value)  # type: ignore[arg-type]


I_NOT_NULL = BoundUnaryPredicate(Operation.NOT_NULL, bind_reference(SCHEMA, "i"))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Out of the int range (Java: aboveMax / belowMin), with null rows kept correct.
        (col("i") < 2**40, I_NOT_NULL),
        (col("i") <= 2**40, I_NOT_NULL),
        (col("i") > 2**40, AlwaysFalse()),
        (col("i") >= 2**40, AlwaysFalse()),
        (col("i") == 2**40, AlwaysFalse()),
        (col("i") != 2**40, AlwaysTrue()),
        (col("i") > -(2**40), I_NOT_NULL),
        (col("i") >= -(2**40), I_NOT_NULL),
        (col("i") < -(2**40), AlwaysFalse()),
        (col("i") <= -(2**40), AlwaysFalse()),
        (col("i") < float("inf"), I_NOT_NULL),
        (col("id") < 2**70, AlwaysTrue()),  # required: every row
        # Fractions rewrite exactly instead of rounding.
        (col("i") > 5.5, i_pred(Operation.GT_EQ, 6)),
        (col("i") >= Decimal("5.5"), i_pred(Operation.GT_EQ, 6)),
        (col("i") < 5.5, i_pred(Operation.LT_EQ, 5)),
        (col("i") <= -5.5, i_pred(Operation.LT_EQ, -6)),
        (col("i") == 5.5, AlwaysFalse()),
        (col("i") != 5.5, AlwaysTrue()),
        (col("i") == 5.0, i_pred(Operation.EQ, 5)),
        (col("i").isin([1, 1.5, 2**40]), i_pred(Operation.EQ, 1)),
        (col("i").isin([1.5, 2**40]), AlwaysFalse()),
        (col("i").not_in([1.5]), AlwaysTrue()),
        (col("i").not_in([]), AlwaysTrue()),
        (col("i").isin([]), AlwaysFalse()),
        (col("i").not_in([2, 2.5]), i_pred(Operation.NOT_EQ, 2)),
        # Unary folds.
        (col("id").is_null(), AlwaysFalse()),
        (col("id").not_null(), AlwaysTrue()),
        (col("req_struct.code").is_null(), AlwaysFalse()),
        (col("i").is_nan(), AlwaysFalse()),
        (col("i").not_nan(), AlwaysTrue()),
        (col("name").is_nan(), AlwaysFalse()),
        # Empty prefix.
        (
            col("name").starts_with(""),
            BoundUnaryPredicate(Operation.NOT_NULL, bind_reference(SCHEMA, "name")),
        ),
        (
            col("name").not_starts_with(""),
            BoundUnaryPredicate(Operation.IS_NULL, bind_reference(SCHEMA, "name")),
        ),
        # v3 unknown columns are always null.
        (col("gone").is_null(), AlwaysTrue()),
        (col("gone").not_null(), AlwaysFalse()),
        (col("gone") == 5, AlwaysFalse()),
        (col("gone") != 5, AlwaysTrue()),
        (col("gone").not_in([1]), AlwaysTrue()),
        (col("gone").isin([1]), AlwaysFalse()),
        (col("gone") < 1, AlwaysFalse()),
    ],
)
def test_type_aware_folding(expr: BooleanExpression, expected: BooleanExpression) -> None:
    assert bind(SCHEMA, expr) == expected


def test_decimal_and_temporal_literals_between_representable_values() -> None:
    assert lit(b(col("price") < Decimal("1.005"))) == Decimal("1.00")
    assert b(col("price") < Decimal("1.005")).op is Operation.LT_EQ  # type: ignore[attr-defined]
    assert lit(b(col("price") > Decimal("1.005"))) == Decimal("1.01")
    assert b(col("price") == Decimal("1.005")) == AlwaysFalse()
    assert b(col("price") > Decimal("1e10")) == AlwaysFalse()
    assert b(col("price") < Decimal("1e10")) == BoundUnaryPredicate(
        Operation.NOT_NULL, bind_reference(SCHEMA, "price")
    )
    # Sub-microsecond literal on a microsecond column.
    bound = b(col("ts") >= "1970-01-01T00:00:00.0000005")
    assert isinstance(bound, BoundLiteralPredicate)
    assert (bound.op, bound.literal) == (Operation.GT_EQ, 1)
    assert b(col("ts") == "1970-01-01T00:00:00.0000005") == AlwaysFalse()
    # A datetime that is not midnight on a date column.
    bound = b(col("d") < dt.datetime(2024, 1, 2, 12))
    assert isinstance(bound, BoundLiteralPredicate)
    assert (bound.op, bound.literal) == (Operation.LT_EQ, 19724)


def test_set_literals_are_converted_and_deduplicated() -> None:
    bound = b(col("price").isin(["1.5", Decimal("1.50"), 2]))
    assert isinstance(bound, BoundSetPredicate)
    assert bound.literals == frozenset({Decimal("1.50"), Decimal("2.00")})
    assert b(col("x").isin([0.0, -0.0])) == BoundLiteralPredicate(
        Operation.EQ, bind_reference(SCHEMA, "x"), 0.0
    )


def test_bind_keeps_not_and_structure() -> None:
    bound = b("not (i = 1) or (name = 'a' and true)")
    assert isinstance(bound, Or)
    assert isinstance(bound.left, Not)
    assert isinstance(bound.right, BoundLiteralPredicate)


def test_bound_predicates_pass_through_and_are_checked() -> None:
    bound = b("i = 1")
    assert bind(SCHEMA, bound) == bound
    from firn.spec.schema import Schema
    from firn.spec.types import STRING, NestedField

    other = Schema(NestedField(2, "i", STRING))
    with pytest.raises(ValidationError, match="bound to field id 2"):
        bind(other, bound)


# -- rewrite_not ------------------------------------------------------------------------------


def ref_pred(name: str, op: Operation, value: object = None) -> BooleanExpression:
    ref = bind_reference(SCHEMA, name)
    if op.is_unary:
        return BoundUnaryPredicate(op, ref)
    return BoundLiteralPredicate(op, ref, value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not (i = 1)", ref_pred("i", Operation.NOT_EQ, 1)),
        ("not (i != 1)", ref_pred("i", Operation.EQ, 1)),
        ("not (i is null)", ref_pred("i", Operation.NOT_NULL)),
        ("not (i is not null)", ref_pred("i", Operation.IS_NULL)),
        ("not (x is nan)", ref_pred("x", Operation.NOT_NAN)),
        ("not (x is not nan)", ref_pred("x", Operation.IS_NAN)),
        ("not (name like 'a%')", ref_pred("name", Operation.NOT_STARTS_WITH, "a")),
        ("not (name not like 'a%')", ref_pred("name", Operation.STARTS_WITH, "a")),
        # Comparisons: null (and NaN) rows match neither side, so they join the complement.
        ("not (i < 1)", Or(ref_pred("i", Operation.GT_EQ, 1), ref_pred("i", Operation.IS_NULL))),
        ("not (i <= 1)", Or(ref_pred("i", Operation.GT, 1), ref_pred("i", Operation.IS_NULL))),
        ("not (i > 1)", Or(ref_pred("i", Operation.LT_EQ, 1), ref_pred("i", Operation.IS_NULL))),
        ("not (i >= 1)", Or(ref_pred("i", Operation.LT, 1), ref_pred("i", Operation.IS_NULL))),
        ("not (id >= 1)", ref_pred("id", Operation.LT, 1)),  # required, not floating
        (
            "not (x < 1)",
            Or(
                Or(ref_pred("x", Operation.GT_EQ, 1.0), ref_pred("x", Operation.IS_NULL)),
                ref_pred("x", Operation.IS_NAN),
            ),
        ),
        ("not not (i = 1)", ref_pred("i", Operation.EQ, 1)),
        (
            "not (i = 1 and name = 'a')",
            Or(ref_pred("i", Operation.NOT_EQ, 1), ref_pred("name", Operation.NOT_EQ, "a")),
        ),
        (
            "not (i = 1 or not (name = 'a'))",
            And(ref_pred("i", Operation.NOT_EQ, 1), ref_pred("name", Operation.EQ, "a")),
        ),
        ("i = 1 and not (id = 2)", And(ref_pred("i", Operation.EQ, 1), ref_pred("id", Operation.NOT_EQ, 2))),
    ],
)
def test_rewrite_not(text: str, expected: BooleanExpression) -> None:
    assert rewrite_not(b(text)) == expected


def test_rewrite_not_sets_and_constants() -> None:
    bound = rewrite_not(b("not (i in (1, 2))"))
    assert isinstance(bound, BoundSetPredicate)
    assert bound.op is Operation.NOT_IN and bound.literals == frozenset({1, 2})
    assert rewrite_not(Not(AlwaysTrue())) == AlwaysFalse()
    assert rewrite_not(b("not (true)")) == AlwaysFalse()


def test_rewrite_not_unbound_then_bind_equals_bind_then_rewrite() -> None:
    for text in [
        "not (i < 1)",
        "not (x >= 2 and name like 'a%')",
        "not (id > 3 or i in (1, 2))",
        "not (x is nan)",
    ]:
        assert bind(SCHEMA, rewrite_not(parse(text))) == rewrite_not(b(text)), text


def test_rewrite_not_unbound_shape() -> None:
    assert rewrite_not(parse("not (a < 1)")) == Or(col("a") >= 1, col("a").is_null(), col("a").is_nan())


# -- introspection ------------------------------------------------------------------------------


def test_referenced_field_ids_and_names() -> None:
    bound = b("i = 1 or (addr.city = 'x' and not (x is nan)) or true")
    assert bound == AlwaysTrue()
    bound = b("i = 1 or (addr.city = 'x' and not (x is nan))")
    assert referenced_field_ids(bound) == {2, 19, 4}
    assert referenced_names(bound) == {"i", "addr.city", "x"}
    assert referenced_names(parse("a = 1 and b.c is null")) == {"a", "b.c"}
    with pytest.raises(TypeError, match="bound"):
        referenced_field_ids(parse("a = 1"))


def test_to_string_of_bound_literals_is_readable() -> None:
    text = to_string(
        b(
            "d = '2024-01-02' and ts < '2024-01-02T03:04:05.5' and tstz >= '2024-01-02T00:00:00+00:00' "
            "and tsns = '1970-01-01T00:00:00.000000001' and t = '12:00:00' and price in (1.5, 2) "
            "and u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7' and bin = X'00ff'"
        )
    )
    assert "d = '2024-01-02'" in text
    assert "ts < '2024-01-02T03:04:05.500000'" in text
    assert "tstz >= '2024-01-02T00:00:00+00:00'" in text
    assert "tsns = '1970-01-01T00:00:00.000000001'" in text
    assert "t = '12:00:00'" in text
    assert "price IN (1.50, 2.00)" in text
    assert "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'" in text
    assert "bin = X'00ff'" in text
    # Bound strings parse back and bind to the same expression.
    bound = b("name like 'a%' and not (i in (1, 2)) and \"Mixed Case\" = 3 and addr.city != 'x'")
    assert bind(SCHEMA, parse(to_string(bound))) == bound


def test_bound_and_unbound_expressions_pickle() -> None:
    import pickle

    unbound = parse("i in (1, 2, 3) and name like 'a%' or not (x < 1.5) and d >= '2024-01-01'")
    for expr in (unbound, b(unbound), rewrite_not(b(unbound))):
        restored = pickle.loads(pickle.dumps(expr))
        assert restored == expr
        assert hash(restored) == hash(expr)
