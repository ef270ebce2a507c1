"""Visitor framework for expressions (STYLE 12: a small ABC plus ``functools.singledispatch``).

:func:`visit` walks an expression bottom-up and calls the visitor's hook for each node.
:class:`BooleanExpressionVisitor` is the general interface; :class:`BoundPredicateVisitor`
splits bound predicates into one method per operation, which is what every evaluator
implements. Each evaluator lives in its own module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import singledispatch
from typing import Generic, TypeVar

from firn.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    InternalValue,
    Operation,
    UnboundPredicate,
)
from firn.expressions.terms import BoundReference
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or

T = TypeVar("T")


class BooleanExpressionVisitor(ABC, Generic[T]):
    """Hooks called by :func:`visit`, children first."""

    @abstractmethod
    def visit_true(self) -> T:
        """``AlwaysTrue``."""

    @abstractmethod
    def visit_false(self) -> T:
        """``AlwaysFalse``."""

    @abstractmethod
    def visit_not(self, child_result: T) -> T:
        """``Not``, given its child's result."""

    @abstractmethod
    def visit_and(self, left_result: T, right_result: T) -> T:
        """``And``, given its children's results."""

    @abstractmethod
    def visit_or(self, left_result: T, right_result: T) -> T:
        """``Or``, given its children's results."""

    @abstractmethod
    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> T:
        """An unbound predicate."""

    @abstractmethod
    def visit_bound_predicate(self, predicate: BoundPredicate) -> T:
        """A bound predicate."""


@singledispatch
def visit(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Walk ``expr`` with ``visitor`` and return the root's result."""
    raise TypeError(f"not a filter expression: {expr!r}")


@visit.register
def _(expr: AlwaysTrue, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_true()


@visit.register
def _(expr: AlwaysFalse, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_false()


@visit.register
def _(expr: Not, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_not(visit(expr.child, visitor))


@visit.register
def _(expr: And, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: Or, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: UnboundPredicate, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_unbound_predicate(expr)


@visit.register
def _(expr: BoundPredicate, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_bound_predicate(expr)


class BoundPredicateVisitor(BooleanExpressionVisitor[T], ABC):
    """A visitor over bound, NOT-free expressions with one hook per operation.

    Evaluators first apply ``rewrite_not``, so ``visit_not`` is never reached for them; the
    default raises to catch callers that skip that step.
    """

    def visit_not(self, child_result: T) -> T:
        raise TypeError(f"{type(self).__name__} needs a NOT-free expression: apply rewrite_not first")

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> T:
        raise TypeError(f"{type(self).__name__} needs a bound expression, got unbound {predicate!r}")

    def visit_bound_predicate(self, predicate: BoundPredicate) -> T:
        ref = predicate.ref
        op = predicate.op
        if isinstance(predicate, BoundUnaryPredicate):
            if op is Operation.IS_NULL:
                return self.visit_is_null(ref)
            if op is Operation.NOT_NULL:
                return self.visit_not_null(ref)
            if op is Operation.IS_NAN:
                return self.visit_is_nan(ref)
            return self.visit_not_nan(ref)
        if isinstance(predicate, BoundSetPredicate):
            if op is Operation.IN:
                return self.visit_in(ref, predicate.literals)
            return self.visit_not_in(ref, predicate.literals)
        if not isinstance(predicate, BoundLiteralPredicate):
            raise TypeError(f"unknown bound predicate {predicate!r}")
        lit = predicate.literal
        if op is Operation.LT:
            return self.visit_less_than(ref, lit)
        if op is Operation.LT_EQ:
            return self.visit_less_than_or_equal(ref, lit)
        if op is Operation.GT:
            return self.visit_greater_than(ref, lit)
        if op is Operation.GT_EQ:
            return self.visit_greater_than_or_equal(ref, lit)
        if op is Operation.EQ:
            return self.visit_equal(ref, lit)
        if op is Operation.NOT_EQ:
            return self.visit_not_equal(ref, lit)
        # Binding only accepts starts_with on string columns, so the literal is a str.
        assert isinstance(lit, str)
        if op is Operation.STARTS_WITH:
            return self.visit_starts_with(ref, lit)
        return self.visit_not_starts_with(ref, lit)

    @abstractmethod
    def visit_is_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_is_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> T: ...

    @abstractmethod
    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> T: ...

    @abstractmethod
    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> T: ...

    @abstractmethod
    def visit_starts_with(self, ref: BoundReference, prefix: str) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> T: ...


__all__ = ["BooleanExpressionVisitor", "BoundPredicateVisitor", "visit"]
