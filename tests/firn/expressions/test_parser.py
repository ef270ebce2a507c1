from __future__ import annotations

from decimal import Decimal

import pytest

from firn.errors import ValidationError
from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Operation,
    Or,
    Reference,
    UnboundLiteralPredicate,
    col,
    parse,
    to_string,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id > 5", col("id") > 5),
        ("id >= 5", col("id") >= 5),
        ("id < 5", col("id") < 5),
        ("id <= 5", col("id") <= 5),
        ("id = 5", col("id") == 5),
        ("id == 5", col("id") == 5),
        ("id != 5", col("id") != 5),
        ("id <> 5", col("id") != 5),
        ("id>5", col("id") > 5),
        ("5 < id", col("id") > 5),
        ("5 >= id", col("id") <= 5),
        ("'eu' = region", col("region") == "eu"),
        ("id = -5", col("id") == -5),
        ("id = - 5", col("id") == -5),
        ("id = +5", col("id") == 5),
        ("x > 1.5", col("x") > Decimal("1.5")),
        ("x > -1.5e3", col("x") > Decimal("-1.5e3")),
        ("x > .5", col("x") > Decimal(".5")),
        ("x > 1e10", col("x") > Decimal("1e10")),
        ("region = 'eu'", col("region") == "eu"),
        ("name = 'it''s'", col("name") == "it's"),
        ("name = ''", col("name") == ""),
        ("name = 'ünï ✓'", col("name") == "ünï ✓"),
        ("ts >= '2024-01-01T00:00:00'", col("ts") >= "2024-01-01T00:00:00"),
        ("flag = true", col("flag") == True),  # noqa: E712
        ("flag = FALSE", col("flag") == False),  # noqa: E712
        ("b = X'00ff'", col("b") == b"\x00\xff"),
        ("b = x''", col("b") == b""),
        ("a in (1, 2, 3)", col("a").isin([1, 2, 3])),
        ("a IN (1)", col("a").isin([1])),
        ("name not in ('x','y')", col("name").not_in(["x", "y"])),
        ("x is null", col("x").is_null()),
        ("x IS NOT NULL", col("x").not_null()),
        ("f is nan", col("f").is_nan()),
        ("f is not NaN", col("f").not_nan()),
        ("s like 'abc%'", col("s").starts_with("abc")),
        ("s LIKE 'abc%%'", col("s").starts_with("abc")),
        ("s not like 'abc%'", col("s").not_starts_with("abc")),
        ("s like 'abc'", col("s") == "abc"),
        ("s not like 'abc'", col("s") != "abc"),
        ("s like '50\\%%'", col("s").starts_with("50%")),
        ("s like 'a\\_b%'", col("s").starts_with("a_b")),
        ("s like 'a!%%' escape '!'", col("s").starts_with("a%")),
        ("s like '%'", col("s").starts_with("")),
        ("a between 1 and 5", col("a").between(1, 5)),
        ("a not between 1 and 5", Not(col("a").between(1, 5))),
        ("a between -5 and 'x' and b = 1", And(col("a").between(-5, "x"), col("b") == 1)),
        ("true", AlwaysTrue()),
        ("FALSE", AlwaysFalse()),
        ("true and a = 1", col("a") == 1),
        ("false or a = 1", col("a") == 1),
        ("not a = 1", Not(col("a") == 1)),
        ("not (a = 1)", Not(col("a") == 1)),
        ("NOT NOT a = 1", col("a") == 1),
        ("a = 1 and b = 2 or c = 3", Or(And(col("a") == 1, col("b") == 2), col("c") == 3)),
        ("a = 1 or b = 2 and c = 3", Or(col("a") == 1, And(col("b") == 2, col("c") == 3))),
        ("(a = 1 or b = 2) and c = 3", And(Or(col("a") == 1, col("b") == 2), col("c") == 3)),
        ("not a = 1 and b = 2", And(Not(col("a") == 1), col("b") == 2)),
        ("((a = 1))", col("a") == 1),
        ("a.b.c = 1", col("a.b.c") == 1),
        ('"x y" = 1', col("x y") == 1),
        ("`x y` = 1", col("x y") == 1),
        ('"a""b" = 1', col('a"b') == 1),
        ('addr."zip code" = 1', col("addr.zip code") == 1),
        ('"and" = 1', col("and") == 1),
        ("t.year = 2024", col("t.year") == 2024),
        ("t.in = 1", col("t.in") == 1),
        ("ID > 5 AnD Region = 'eu'", And(col("ID") > 5, col("Region") == "eu")),
        ("  id\n>\t5  ", col("id") > 5),
        ("_a1 = 1", col("_a1") == 1),
    ],
)
def test_parse_valid(text: str, expected: BooleanExpression) -> None:
    assert parse(text) == expected


def test_numbers_keep_their_kind() -> None:
    expr = parse("a = 10")
    assert isinstance(expr, UnboundLiteralPredicate)
    assert type(expr.literal) is int
    expr = parse("a = 10.0")
    assert isinstance(expr, UnboundLiteralPredicate)
    assert expr.literal == Decimal("10.0")
    assert isinstance(expr.literal, Decimal)
    big = parse("a = 123456789012345678901234567890")
    assert isinstance(big, UnboundLiteralPredicate)
    assert big.literal == 123456789012345678901234567890


def test_like_yields_prefix_predicate() -> None:
    expr = parse("s like 'ab%'")
    assert expr == UnboundLiteralPredicate(Operation.STARTS_WITH, Reference("s"), "ab")


@pytest.mark.parametrize(
    "text",
    [
        "id > 5 AND region = 'eu'",
        "(a = 1 OR b = 2) AND NOT (c IS NULL)",
        "s LIKE 'a\\%b\\_c%' AND s NOT LIKE 'x%'",
        "\"x y\".\"and\" IN (1, 2, 3) OR q NOT IN ('a', 'it''s')",
        "f IS NAN OR f IS NOT NAN OR g IS NOT NULL",
        "b = X'00ff' AND flag = true AND x >= -1.25E+3",
        "true",
        "a = 1 AND (b = 2 OR c = 3) AND d = 4",
    ],
)
def test_to_string_round_trips(text: str) -> None:
    expr = parse(text)
    assert parse(to_string(expr)) == expr
    assert parse(str(expr)) == expr


def _error(text: str) -> str:
    with pytest.raises(ValidationError) as info:
        parse(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", 0, "empty filter"),
        ("   ", 3, "empty filter"),
        ("id >", 4, "expected a literal after '>', found end of input"),
        ("id > 5 region = 'eu'", 7, "unexpected 'region' after a complete expression"),
        ("(id > 5", 7, "expected ')' to close '(' at position 0"),
        ("id > 5)", 6, "unexpected ')'"),
        ("id = 'abc", 5, "unterminated string"),
        ('"abc = 1', 0, "unterminated quoted identifier"),
        ("id # 5", 3, "unexpected character '#'"),
        ("id = 12abc", 5, "invalid number '12a'"),
        ("id = null", 5, "use 'id IS NULL'"),
        ("id != NULL", 6, "IS NULL"),
        ("id in (1, null)", 10, "NULL is not a value"),
        ("x = nan", 4, "IS NAN"),
        ("id is 5", 6, "expected NULL or NAN after IS"),
        ("id is not", 9, "expected NULL or NAN after IS NOT"),
        ("id in ()", 7, "expected a literal in the IN list, found ')'"),
        ("id in (1, 2", 11, "expected ',' or ')' in the IN list"),
        ("id in 1", 6, "expected '(' after IN"),
        ("s like '%abc'", 7, "unsupported LIKE pattern '%abc'"),
        ("s like 'a_c%'", 7, "unsupported LIKE pattern"),
        ("s like 'a%c'", 7, "unsupported LIKE pattern"),
        ("s like 'ab\\'", 7, "ends with the escape character"),
        ("s like abc", 7, "expected a quoted pattern after LIKE"),
        ("a between 1", 11, "expected AND between the BETWEEN bounds"),
        ("a between 1 or 2", 12, "expected AND"),
        ("id", 2, "expected an operator"),
        ("id not 5", 7, "expected IN, LIKE or BETWEEN after NOT"),
        ("and = 1", 0, "quote column names that are keywords"),
        ("= 1", 0, "expected a column name, literal"),
        ("5 = 6", 4, "expected a column name, found '6'"),
        ("5 and x", 2, "expected a comparison operator after literal"),
        ("id = -'a'", 6, "expected a number after '-'"),
        ("b = X'0g'", 4, "invalid hex"),
        ("a. = 1", 3, "expected a field name after '.'"),
        ('"" = 1', 0, "empty quoted identifier"),
        ("not", 3, "found end of input"),
        ("a = 1 and", 9, "found end of input"),
    ],
)
def test_parse_errors_name_position_and_token(text: str, position: int, fragment: str) -> None:
    message = _error(text)
    assert f"at position {position}" in message
    assert fragment in message
    assert repr(text) in message
    # The caret line points at the position under the echoed input.
    lines = message.splitlines()
    assert lines[-1] == "  " + " " * position + "^"
    assert lines[-2] == "  " + text


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(ValidationError, match="must be a string"):
        parse(5)  # type: ignore[arg-type]
