"""Building filters in Python: ``col("id") > 5``, ``col("region").isin(["eu", "us"])``.

:func:`col` returns a :class:`Column`, whose comparison operators and methods build unbound
predicates; combine them with ``&``, ``|`` and ``~``::

    (col("id") > 5) & col("region").isin(["eu", "us"]) & ~col("name").starts_with("tmp_")

Mind the parentheses: ``&`` and ``|`` bind tighter than comparisons in Python. The functions
below (``equal_to("id", 5)`` ...) build the same predicates without operator overloading.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from firn.errors import ValidationError
from firn.expressions.predicates import (
    LiteralValue,
    Operation,
    UnboundLiteralPredicate,
    UnboundSetPredicate,
    UnboundUnaryPredicate,
)
from firn.expressions.terms import Reference
from firn.expressions.tree import And, BooleanExpression


class Column:
    """A named column in a filter under construction (see :func:`col`)."""

    __slots__ = ("_ref",)
    # Comparison operators build expressions, so columns cannot be hashed or compared for equality.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValidationError(f"column name must be a non-empty string, got {name!r}")
        self._ref = Reference(name)

    @property
    def ref(self) -> Reference:
        return self._ref

    @property
    def name(self) -> str:
        return self._ref.name

    def __repr__(self) -> str:
        return f"col({self._ref.name!r})"

    def _literal(self, op: Operation, value: object) -> UnboundLiteralPredicate:
        if isinstance(value, Column):
            raise ValidationError(
                f"comparing two columns ({self.name} {op.value} {value.name}) is not supported; "
                "compare a column with a literal"
            )
        return UnboundLiteralPredicate(op, self._ref, value)  # type: ignore[arg-type]

    def __lt__(self, value: LiteralValue) -> BooleanExpression:
        return self._literal(Operation.LT, value)

    def __le__(self, value: LiteralValue) -> BooleanExpression:
        return self._literal(Operation.LT_EQ, value)

    def __gt__(self, value: LiteralValue) -> BooleanExpression:
        return self._literal(Operation.GT, value)

    def __ge__(self, value: LiteralValue) -> BooleanExpression:
        return self._literal(Operation.GT_EQ, value)

    def __eq__(self, value: LiteralValue) -> BooleanExpression:  # type: ignore[override]
        return self._literal(Operation.EQ, value)

    def __ne__(self, value: LiteralValue) -> BooleanExpression:  # type: ignore[override]
        return self._literal(Operation.NOT_EQ, value)

    def __bool__(self) -> NoReturn:
        raise TypeError(f"{self!r} has no truth value; compare it with a literal to build a filter")

    def isin(self, values: Iterable[LiteralValue]) -> BooleanExpression:
        """``column in (values...)``."""
        return UnboundSetPredicate(Operation.IN, self._ref, values)

    def not_in(self, values: Iterable[LiteralValue]) -> BooleanExpression:
        """``column not in (values...)`` (true for null values)."""
        return UnboundSetPredicate(Operation.NOT_IN, self._ref, values)

    def is_null(self) -> BooleanExpression:
        return UnboundUnaryPredicate(Operation.IS_NULL, self._ref)

    def not_null(self) -> BooleanExpression:
        return UnboundUnaryPredicate(Operation.NOT_NULL, self._ref)

    def is_nan(self) -> BooleanExpression:
        return UnboundUnaryPredicate(Operation.IS_NAN, self._ref)

    def not_nan(self) -> BooleanExpression:
        return UnboundUnaryPredicate(Operation.NOT_NAN, self._ref)

    def starts_with(self, prefix: str) -> BooleanExpression:
        return self._literal(Operation.STARTS_WITH, prefix)

    def not_starts_with(self, prefix: str) -> BooleanExpression:
        """True for values that do not start with ``prefix`` and for null values."""
        return self._literal(Operation.NOT_STARTS_WITH, prefix)

    def between(self, low: LiteralValue, high: LiteralValue) -> BooleanExpression:
        """``low <= column <= high`` (both ends inclusive, as in SQL)."""
        return And(self._literal(Operation.GT_EQ, low), self._literal(Operation.LT_EQ, high))


def col(name: str) -> Column:
    """A column by name; dotted names (``"address.city"``) reach into structs."""
    return Column(name)


def is_null(name: str) -> BooleanExpression:
    return col(name).is_null()


def not_null(name: str) -> BooleanExpression:
    return col(name).not_null()


def is_nan(name: str) -> BooleanExpression:
    return col(name).is_nan()


def not_nan(name: str) -> BooleanExpression:
    return col(name).not_nan()


def less_than(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) < value


def less_than_or_equal(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) <= value


def greater_than(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) > value


def greater_than_or_equal(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) >= value


def equal_to(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) == value


def not_equal_to(name: str, value: LiteralValue) -> BooleanExpression:
    return col(name) != value


def is_in(name: str, values: Iterable[LiteralValue]) -> BooleanExpression:
    return col(name).isin(values)


def not_in(name: str, values: Iterable[LiteralValue]) -> BooleanExpression:
    return col(name).not_in(values)


def starts_with(name: str, prefix: str) -> BooleanExpression:
    return col(name).starts_with(prefix)


def not_starts_with(name: str, prefix: str) -> BooleanExpression:
    return col(name).not_starts_with(prefix)


__all__ = [
    "Column",
    "col",
    "equal_to",
    "greater_than",
    "greater_than_or_equal",
    "is_in",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_equal_to",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "starts_with",
]
