"""Inspecting expressions: readable strings for logs and the fields an expression reads.

:func:`to_string` renders SQL-like text that :func:`firn.expressions.parser.parse` reads
back, so an unbound filter survives a round trip through a log line or a job argument.
Bound literals are shown in their natural form (``'2024-01-02'`` rather than ``19724``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from decimal import Decimal

from firn.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    InternalValue,
    LiteralValue,
    Operation,
    UnboundLiteralPredicate,
    UnboundPredicate,
    UnboundSetPredicate,
    sorted_literals,
)
from firn.expressions.tree import BooleanExpression, describe
from firn.expressions.visitors import BooleanExpressionVisitor, visit
from firn.spec.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_SIMPLE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Words the parser treats as keywords; column names spelled like them are quoted.
KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false", "escape"}
)

# Precedences for parenthesizing: OR < AND < NOT/predicate.
_OR, _AND, _ATOM = 1, 2, 3


def quote_identifier(part: str) -> str:
    """One name part, double-quoted when it is not a plain identifier or is a keyword."""
    if _SIMPLE_IDENTIFIER.match(part) and part.lower() not in KEYWORDS:
        return part
    return '"' + part.replace('"', '""') + '"'


def format_name(path: tuple[str, ...] | list[str]) -> str:
    return ".".join(quote_identifier(p) for p in path)


def _quote_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def format_user_literal(value: LiteralValue) -> str:
    """A user (unbound) literal as parser-readable text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else _quote_string(repr(value))
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return _quote_string(value.isoformat())
    if isinstance(value, uuid.UUID):
        return _quote_string(str(value))
    return _quote_string(str(value))


def format_internal_literal(t: IcebergType, value: InternalValue) -> str:
    """A bound literal, converted back to its natural form for the reader of a log."""
    if isinstance(value, int) and not isinstance(value, bool):
        if isinstance(t, DateType):
            return _quote_string((_EPOCH_DATE + dt.timedelta(days=value)).isoformat())
        if isinstance(t, TimeType):
            return _quote_string((dt.datetime.min + dt.timedelta(microseconds=value)).time().isoformat())
        if isinstance(t, TimestampType | TimestamptzType):
            suffix = "+00:00" if isinstance(t, TimestamptzType) else ""
            return _quote_string(_format_micros(value) + suffix)
        if isinstance(t, TimestampNanoType | TimestamptzNanoType):
            suffix = "+00:00" if isinstance(t, TimestamptzNanoType) else ""
            micros, nanos = divmod(value, 1000)
            text = _format_micros(micros, force_fraction=nanos != 0)
            return _quote_string(text + (f"{nanos:03d}" if nanos else "") + suffix)
    return format_user_literal(value)


def _format_micros(micros: int, *, force_fraction: bool = False) -> str:
    try:
        ts = _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        return str(micros)
    text = ts.isoformat()
    if force_fraction and ts.microsecond == 0:
        text += ".000000"
    return text


def _format_like_prefix(prefix: str) -> str:
    # The parser's LIKE escape character is a backslash (as in Spark SQL).
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return _quote_string(escaped + "%")


def _predicate_text(op: Operation, name: str, literals: list[str]) -> str:
    if op is Operation.IS_NULL:
        return f"{name} IS NULL"
    if op is Operation.NOT_NULL:
        return f"{name} IS NOT NULL"
    if op is Operation.IS_NAN:
        return f"{name} IS NAN"
    if op is Operation.NOT_NAN:
        return f"{name} IS NOT NAN"
    if op is Operation.IN:
        return f"{name} IN ({', '.join(literals)})"
    if op is Operation.NOT_IN:
        return f"{name} NOT IN ({', '.join(literals)})"
    if op is Operation.STARTS_WITH:
        return f"{name} LIKE {literals[0]}"
    if op is Operation.NOT_STARTS_WITH:
        return f"{name} NOT LIKE {literals[0]}"
    return f"{name} {op.value} {literals[0]}"


class _ToString(BooleanExpressionVisitor[tuple[str, int]]):
    def visit_true(self) -> tuple[str, int]:
        return "true", _ATOM

    def visit_false(self) -> tuple[str, int]:
        return "false", _ATOM

    def visit_not(self, child_result: tuple[str, int]) -> tuple[str, int]:
        return f"NOT ({child_result[0]})", _ATOM

    def visit_and(self, left_result: tuple[str, int], right_result: tuple[str, int]) -> tuple[str, int]:
        return f"{_wrap(left_result, _AND)} AND {_wrap(right_result, _AND)}", _AND

    def visit_or(self, left_result: tuple[str, int], right_result: tuple[str, int]) -> tuple[str, int]:
        return f"{_wrap(left_result, _OR)} OR {_wrap(right_result, _OR)}", _OR

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> tuple[str, int]:
        name = format_name(predicate.ref.name.split("."))
        if isinstance(predicate, UnboundSetPredicate):
            lits = [format_user_literal(v) for v in predicate.literals]
        elif isinstance(predicate, UnboundLiteralPredicate):
            v = predicate.literal
            if predicate.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH) and isinstance(v, str):
                lits = [_format_like_prefix(v)]
            else:
                lits = [format_user_literal(v)]
        else:
            lits = []
        return _predicate_text(predicate.op, name, lits), _ATOM

    def visit_bound_predicate(self, predicate: BoundPredicate) -> tuple[str, int]:
        ref = predicate.ref
        name = format_name(ref.path)
        t = ref.field_type
        if isinstance(predicate, BoundSetPredicate):
            lits = [format_internal_literal(t, v) for v in sorted_literals(predicate.literals)]
        elif isinstance(predicate, BoundLiteralPredicate):
            v = predicate.literal
            if predicate.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH) and isinstance(v, str):
                lits = [_format_like_prefix(v)]
            else:
                lits = [format_internal_literal(t, v)]
        else:
            lits = []
        return _predicate_text(predicate.op, name, lits), _ATOM


def _wrap(result: tuple[str, int], parent: int) -> str:
    text, prec = result
    return f"({text})" if prec < parent else text


def to_string(expr: BooleanExpression) -> str:
    """SQL-like text for logs.

    ``parse(to_string(e))`` is equivalent to ``e`` and, for an expression that itself came
    from :func:`~firn.expressions.parser.parse`, equal to it (the parser groups chains of
    ``AND`` / ``OR`` as balanced trees, which the text does not record).
    """
    return visit(expr, _ToString())[0]


describe.register(BooleanExpression, to_string)


class _FieldIds(BooleanExpressionVisitor[frozenset[int]]):
    def visit_true(self) -> frozenset[int]:
        return frozenset()

    def visit_false(self) -> frozenset[int]:
        return frozenset()

    def visit_not(self, child_result: frozenset[int]) -> frozenset[int]:
        return child_result

    def visit_and(self, left_result: frozenset[int], right_result: frozenset[int]) -> frozenset[int]:
        return left_result | right_result

    def visit_or(self, left_result: frozenset[int], right_result: frozenset[int]) -> frozenset[int]:
        return left_result | right_result

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> frozenset[int]:
        raise TypeError(f"referenced_field_ids needs a bound expression; {predicate!r} is unbound")

    def visit_bound_predicate(self, predicate: BoundPredicate) -> frozenset[int]:
        return frozenset({predicate.ref.field_id})


def referenced_field_ids(expr: BooleanExpression) -> frozenset[int]:
    """The field ids a bound expression reads (for column projection and metrics lookups)."""
    return visit(expr, _FieldIds())


class _Names(BooleanExpressionVisitor[frozenset[str]]):
    def visit_true(self) -> frozenset[str]:
        return frozenset()

    def visit_false(self) -> frozenset[str]:
        return frozenset()

    def visit_not(self, child_result: frozenset[str]) -> frozenset[str]:
        return child_result

    def visit_and(self, left_result: frozenset[str], right_result: frozenset[str]) -> frozenset[str]:
        return left_result | right_result

    def visit_or(self, left_result: frozenset[str], right_result: frozenset[str]) -> frozenset[str]:
        return left_result | right_result

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> frozenset[str]:
        return frozenset({predicate.ref.name})

    def visit_bound_predicate(self, predicate: BoundPredicate) -> frozenset[str]:
        return frozenset({predicate.ref.name})


def referenced_names(expr: BooleanExpression) -> frozenset[str]:
    """The (dotted) column names an expression reads, bound or not."""
    return visit(expr, _Names())


__all__ = [
    "format_internal_literal",
    "format_user_literal",
    "quote_identifier",
    "referenced_field_ids",
    "referenced_names",
    "to_string",
]
