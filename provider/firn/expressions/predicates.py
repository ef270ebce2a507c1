"""Predicates: an operation on one column, unbound (by name) or bound (to a field).

Every predicate has an :class:`Operation` and one of three shapes:

* unary (``is_null``, ``not_null``, ``is_nan``, ``not_nan``),
* literal (``<``, ``<=``, ``>``, ``>=``, ``=``, ``!=``, ``starts_with``, ``not_starts_with``),
* set (``in``, ``not_in``).

Unbound predicates hold literals exactly as the user gave them (``5``, ``"2024-01-01"``,
``datetime(...)``). Binding (:mod:`firn.expressions.binding`) converts them to the field's
internal representation (see :mod:`firn.spec.values`), so bound literals are plain ints,
floats, strings, ``Decimal``\\s, ``UUID``\\s or bytes that compare with ``<`` like the
column's values.

Literals may not be null (use ``is_null``) or NaN (use ``is_nan``): Iceberg Java rejects
both, because ``x = NaN`` can never be true and ``x < NaN`` has no useful meaning.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from firn.errors import ValidationError
from firn.expressions.terms import BoundReference, Reference
from firn.expressions.tree import BooleanExpression

# Values a user may write as a literal before binding.
LiteralValue = bool | int | float | str | bytes | Decimal | dt.date | dt.datetime | dt.time | uuid.UUID
# Values a bound literal holds (Firn's internal representation, firn.spec.values).
InternalValue = bool | int | float | str | bytes | Decimal | uuid.UUID


class Operation(enum.Enum):
    """The operation of a predicate. ``value`` is the spelling used by :func:`to_string`."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "<"
    LT_EQ = "<="
    GT = ">"
    GT_EQ = ">="
    EQ = "="
    NOT_EQ = "!="
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"
    IN = "in"
    NOT_IN = "not_in"

    @property
    def is_unary(self) -> bool:
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        return self in (Operation.IN, Operation.NOT_IN)

    @property
    def is_literal(self) -> bool:
        return not self.is_unary and not self.is_set

    @property
    def is_comparison(self) -> bool:
        """``<``, ``<=``, ``>``, ``>=``: the operations that are false for null *and* NaN values."""
        return self in _COMPARISONS

    def negate(self) -> Operation:
        """The operation that is true exactly where this one is false, for non-null non-NaN values.

        For ``is_null``/``not_null``, ``is_nan``/``not_nan``, ``=``/``!=``, ``in``/``not_in``
        and ``starts_with``/``not_starts_with`` this is the exact complement, nulls and NaNs
        included. ``<`` and ``>=`` are both false for null and NaN, so the complement of a
        comparison also needs ``is_null`` / ``is_nan`` (see ``binding.rewrite_not``).
        """
        return _NEGATE[self]

    def flip(self) -> Operation:
        """The operation with its operands swapped: ``5 < x`` is ``x > 5``."""
        return _FLIP.get(self, self)


_UNARY = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN})
_COMPARISONS = frozenset({Operation.LT, Operation.LT_EQ, Operation.GT, Operation.GT_EQ})
_NEGATE = {
    Operation.IS_NULL: Operation.NOT_NULL,
    Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN,
    Operation.NOT_NAN: Operation.IS_NAN,
    Operation.LT: Operation.GT_EQ,
    Operation.LT_EQ: Operation.GT,
    Operation.GT: Operation.LT_EQ,
    Operation.GT_EQ: Operation.LT,
    Operation.EQ: Operation.NOT_EQ,
    Operation.NOT_EQ: Operation.EQ,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
    Operation.IN: Operation.NOT_IN,
    Operation.NOT_IN: Operation.IN,
}
_FLIP = {
    Operation.LT: Operation.GT,
    Operation.LT_EQ: Operation.GT_EQ,
    Operation.GT: Operation.LT,
    Operation.GT_EQ: Operation.LT_EQ,
}


def _check_user_literal(op: Operation, name: str, value: object) -> None:
    if value is None:
        hint = "is_null / not_null" if op in (Operation.EQ, Operation.NOT_EQ) else "is_null"
        raise ValidationError(f"invalid literal for {name} {op.value}: null is not a value, use {hint}")
    if isinstance(value, float) and math.isnan(value):
        raise ValidationError(
            f"invalid literal for {name} {op.value}: NaN cannot be compared, use is_nan / not_nan"
        )
    if isinstance(value, bytearray | memoryview | list | tuple | set | frozenset | dict):
        raise ValidationError(
            f"invalid literal for {name} {op.value}: {type(value).__name__} is not a single value: {value!r}"
        )


class UnboundPredicate(BooleanExpression):
    """A predicate on a column named by a :class:`Reference`; bind it before evaluating."""

    __slots__ = ()
    op: Operation
    ref: Reference


class BoundPredicate(BooleanExpression):
    """A predicate on a field of a schema, with literals in internal representation."""

    __slots__ = ()
    op: Operation
    ref: BoundReference


@dataclass(frozen=True, slots=True, repr=False)
class UnboundUnaryPredicate(UnboundPredicate):
    """``is_null``, ``not_null``, ``is_nan`` or ``not_nan`` on a named column."""

    op: Operation
    ref: Reference

    def __post_init__(self) -> None:
        if not self.op.is_unary:
            raise ValueError(f"{self.op} is not a unary operation")

    def __repr__(self) -> str:
        return f"UnboundUnaryPredicate({self.op.name}, {self.ref.name!r})"


@dataclass(frozen=True, slots=True, repr=False)
class UnboundLiteralPredicate(UnboundPredicate):
    """A comparison, ``starts_with`` or ``not_starts_with`` of a named column with a literal."""

    op: Operation
    ref: Reference
    literal: LiteralValue

    def __post_init__(self) -> None:
        if not self.op.is_literal:
            raise ValueError(f"{self.op} does not take a single literal")
        _check_user_literal(self.op, self.ref.name, self.literal)

    def __repr__(self) -> str:
        return f"UnboundLiteralPredicate({self.op.name}, {self.ref.name!r}, {self.literal!r})"


@dataclass(frozen=True, slots=True, repr=False)
class UnboundSetPredicate(UnboundPredicate):
    """``in`` or ``not_in`` of a named column with literals (duplicates removed, order kept)."""

    op: Operation
    ref: Reference
    literals: tuple[LiteralValue, ...]

    def __init__(self, op: Operation, ref: Reference, literals: Iterable[LiteralValue]) -> None:
        if not op.is_set:
            raise ValueError(f"{op} is not a set operation")
        if isinstance(literals, str | bytes):
            raise ValidationError(
                f"{op.value} needs a collection of literals, not a single value: {literals!r}"
            )
        values = tuple(literals)
        for v in values:
            _check_user_literal(op, ref.name, v)
        # dict.fromkeys keeps the first occurrence of each value in order.
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "literals", tuple(dict.fromkeys(values)))

    def __repr__(self) -> str:
        return f"UnboundSetPredicate({self.op.name}, {self.ref.name!r}, {self.literals!r})"


@dataclass(frozen=True, slots=True, repr=False)
class BoundUnaryPredicate(BoundPredicate):
    """A bound ``is_null``, ``not_null``, ``is_nan`` or ``not_nan``."""

    op: Operation
    ref: BoundReference

    def __post_init__(self) -> None:
        if not self.op.is_unary:
            raise ValueError(f"{self.op} is not a unary operation")

    def __repr__(self) -> str:
        return f"BoundUnaryPredicate({self.op.name}, {self.ref.name!r}#{self.ref.field_id})"


@dataclass(frozen=True, slots=True, repr=False)
class BoundLiteralPredicate(BoundPredicate):
    """A bound comparison or ``starts_with``; ``literal`` is in the field's internal representation."""

    op: Operation
    ref: BoundReference
    literal: InternalValue

    def __post_init__(self) -> None:
        if not self.op.is_literal:
            raise ValueError(f"{self.op} does not take a single literal")

    def __repr__(self) -> str:
        return (
            f"BoundLiteralPredicate({self.op.name}, {self.ref.name!r}#{self.ref.field_id}, {self.literal!r})"
        )


@dataclass(frozen=True, slots=True, repr=False)
class BoundSetPredicate(BoundPredicate):
    """A bound ``in`` / ``not_in`` with at least two distinct internal-representation literals.

    Binding turns a one-element set into ``=`` / ``!=`` and an empty one into a constant,
    the way Iceberg Java does, so evaluators only ever see real sets here.
    """

    op: Operation
    ref: BoundReference
    literals: frozenset[InternalValue]

    def __post_init__(self) -> None:
        if not self.op.is_set:
            raise ValueError(f"{self.op} is not a set operation")

    def __repr__(self) -> str:
        return f"BoundSetPredicate({self.op.name}, {self.ref.name!r}#{self.ref.field_id}, {sorted_literals(self.literals)!r})"


def sorted_literals(values: Iterable[InternalValue]) -> list[InternalValue]:
    """Literals in a stable order for printing (values of one type sort; mixed ones by repr)."""
    items = list(values)
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


__all__ = [
    "BoundLiteralPredicate",
    "BoundPredicate",
    "BoundSetPredicate",
    "BoundUnaryPredicate",
    "InternalValue",
    "LiteralValue",
    "Operation",
    "UnboundLiteralPredicate",
    "UnboundPredicate",
    "UnboundSetPredicate",
    "UnboundUnaryPredicate",
    "sorted_literals",
]
