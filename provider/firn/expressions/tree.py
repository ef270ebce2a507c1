"""The boolean expression tree: constants and the ``And`` / ``Or`` / ``Not`` connectives.

Expressions are immutable and hashable, so they can be cached, compared and used as dict
keys. The connectives simplify on construction, the way Iceberg Java's ``Expressions.and``
does: ``And(x, AlwaysTrue())`` is ``x``, ``Or(x, AlwaysTrue())`` is ``AlwaysTrue()``,
``Not(Not(x))`` is ``x`` and ``Not(AlwaysFalse())`` is ``AlwaysTrue()``. Predicates live in
:mod:`firn.expressions.predicates`.

Expressions refuse to be used as Python booleans: ``col("a") == 1 and col("b") == 2``
would otherwise silently evaluate to just the second predicate, and a delete with that
filter would remove far more rows than intended. Use ``&``, ``|`` and ``~`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce, singledispatch
from typing import ClassVar, NoReturn


@singledispatch
def describe(expr: BooleanExpression) -> str:
    """SQL-like text of ``expr`` (what ``str(expr)`` returns).

    The text is produced by a visitor over every expression class, which lives above this
    module (:mod:`firn.expressions.describe`) and registers itself here; importing
    :mod:`firn.expressions` (which any import of this module does first) installs it.
    """
    return repr(expr)


class BooleanExpression:
    """Base of every filter expression. Combine with ``&``, ``|`` and ``~``."""

    __slots__ = ()

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        if not isinstance(other, BooleanExpression):
            return NotImplemented
        return And(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        if not isinstance(other, BooleanExpression):
            return NotImplemented
        return Or(self, other)

    def __invert__(self) -> BooleanExpression:
        return Not(self)

    def __bool__(self) -> NoReturn:
        raise TypeError(
            "a filter expression has no truth value: combine expressions with & | ~ "
            "(not with and / or / not), and test for a missing filter with `is None`"
        )

    def __str__(self) -> str:
        return describe(self)


class AlwaysTrue(BooleanExpression):
    """The expression that matches every row (a singleton)."""

    __slots__ = ()
    _instance: ClassVar[AlwaysTrue | None] = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "AlwaysTrue()"

    def __reduce__(self) -> tuple[type[AlwaysTrue], tuple[()]]:
        return (AlwaysTrue, ())


class AlwaysFalse(BooleanExpression):
    """The expression that matches no row (a singleton)."""

    __slots__ = ()
    _instance: ClassVar[AlwaysFalse | None] = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "AlwaysFalse()"

    def __reduce__(self) -> tuple[type[AlwaysFalse], tuple[()]]:
        return (AlwaysFalse, ())


class _Immutable(BooleanExpression):
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")


class And(_Immutable):
    """Conjunction. ``And(a, b, c)`` nests as ``And(And(a, b), c)``; constants fold away."""

    __slots__ = ("left", "right")
    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> BooleanExpression:
        if rest:
            return reduce(And, rest, And(left, right))
        _check_operands("And", left, right)
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(left, AlwaysTrue):
            return right
        if isinstance(right, AlwaysTrue) or left == right:
            return left
        obj = object.__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, And) and self.left == other.left and self.right == other.right

    def __hash__(self) -> int:
        return hash(("and", self.left, self.right))

    def __repr__(self) -> str:
        return f"And({self.left!r}, {self.right!r})"

    def __reduce__(self) -> tuple[type[And], tuple[BooleanExpression, BooleanExpression]]:
        return (And, (self.left, self.right))


class Or(_Immutable):
    """Disjunction. ``Or(a, b, c)`` nests as ``Or(Or(a, b), c)``; constants fold away."""

    __slots__ = ("left", "right")
    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> BooleanExpression:
        if rest:
            return reduce(Or, rest, Or(left, right))
        _check_operands("Or", left, right)
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(left, AlwaysFalse):
            return right
        if isinstance(right, AlwaysFalse) or left == right:
            return left
        obj = object.__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Or) and self.left == other.left and self.right == other.right

    def __hash__(self) -> int:
        return hash(("or", self.left, self.right))

    def __repr__(self) -> str:
        return f"Or({self.left!r}, {self.right!r})"

    def __reduce__(self) -> tuple[type[Or], tuple[BooleanExpression, BooleanExpression]]:
        return (Or, (self.left, self.right))


class Not(_Immutable):
    """Negation. ``Not(Not(x))`` is ``x``; constants flip.

    ``Not`` of a predicate is kept as written; :func:`firn.expressions.binding.rewrite_not`
    pushes negations down to the predicates, which is what the evaluators need.
    """

    __slots__ = ("child",)
    child: BooleanExpression

    def __new__(cls, child: BooleanExpression) -> BooleanExpression:  # type: ignore[misc]
        _check_operands("Not", child)
        if isinstance(child, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(child, AlwaysFalse):
            return AlwaysTrue()
        if isinstance(child, Not):
            return child.child
        obj = object.__new__(cls)
        object.__setattr__(obj, "child", child)
        return obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Not) and self.child == other.child

    def __hash__(self) -> int:
        return hash(("not", self.child))

    def __repr__(self) -> str:
        return f"Not({self.child!r})"

    def __reduce__(self) -> tuple[type[Not], tuple[BooleanExpression]]:
        return (Not, (self.child,))


def _check_operands(name: str, *operands: object) -> None:
    for op in operands:
        if not isinstance(op, BooleanExpression):
            raise TypeError(f"{name} operands must be filter expressions, got {type(op).__name__}: {op!r}")


def balanced(
    combine: Callable[[BooleanExpression, BooleanExpression], BooleanExpression],
    expressions: Sequence[BooleanExpression],
    empty: BooleanExpression,
) -> BooleanExpression:
    """Combine with an associative ``And`` / ``Or`` as a balanced tree.

    A filter generated as ``a = 1 or a = 2 or ...`` with thousands of terms would otherwise
    be thousands of levels deep, beyond what recursive visitors can walk.
    """
    if not expressions:
        return empty
    if len(expressions) == 1:
        return expressions[0]
    mid = len(expressions) // 2
    return combine(balanced(combine, expressions[:mid], empty), balanced(combine, expressions[mid:], empty))


def and_(*expressions: BooleanExpression) -> BooleanExpression:
    """Conjunction of any number of expressions, as a balanced tree (``AlwaysTrue()`` when empty)."""
    return balanced(And, expressions, AlwaysTrue())


def or_(*expressions: BooleanExpression) -> BooleanExpression:
    """Disjunction of any number of expressions, as a balanced tree (``AlwaysFalse()`` when empty)."""
    return balanced(Or, expressions, AlwaysFalse())


def not_(expression: BooleanExpression) -> BooleanExpression:
    """Negation (``Not(expression)``)."""
    return Not(expression)


__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "Not",
    "Or",
    "and_",
    "balanced",
    "not_",
    "or_",
]
