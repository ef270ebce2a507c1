"""Residual filters: what is left of a row filter once a file's partition is known.

Spec "Scan Planning", note 1: strict projections "are used to calculate the residual
predicates for each file in a scan". For each predicate of the (bound, NOT-free) row filter
and a partition tuple:

* if the predicate's **strict** projection matches the partition, every row matches it,
  so it becomes ``AlwaysTrue``;
* else if its **inclusive** projection does not match, no row can match it, so it becomes
  ``AlwaysFalse``;
* else it stays, to be evaluated on the rows.

``And`` / ``Or`` then fold the constants away. The residual is bound to the table schema.
Both projections of every predicate are compiled once, so computing a residual per file
costs only tuple lookups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from firn.expressions.binding import bind, rewrite_not
from firn.expressions.partition_evaluator import compile_row_filter
from firn.expressions.predicates import BoundPredicate, UnboundPredicate
from firn.expressions.projection import partition_struct, project_predicate
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Or
from firn.expressions.visitors import BooleanExpressionVisitor, visit
from firn.spec.partitioning import PartitionField, PartitionSpec
from firn.spec.schema import Schema

_Residual = Callable[[Sequence[Any]], BooleanExpression]
_TRUE: BooleanExpression = AlwaysTrue()
_FALSE: BooleanExpression = AlwaysFalse()


class _ResidualCompiler(BooleanExpressionVisitor[_Residual]):
    def __init__(self, spec: PartitionSpec, schema: Schema) -> None:
        self.by_source: dict[int, list[PartitionField]] = {}
        for pf in spec.fields:
            self.by_source.setdefault(pf.source_id, []).append(pf)
        self.positions = {f.field_id: i for i, f in enumerate(partition_struct(spec, schema).fields)}

    def visit_true(self) -> _Residual:
        return lambda partition: _TRUE

    def visit_false(self) -> _Residual:
        return lambda partition: _FALSE

    def visit_not(self, child_result: _Residual) -> _Residual:
        raise TypeError("residuals need a NOT-free expression: apply rewrite_not first")

    def visit_and(self, left_result: _Residual, right_result: _Residual) -> _Residual:
        def residual(partition: Sequence[Any]) -> BooleanExpression:
            left = left_result(partition)
            return left if left is _FALSE else And(left, right_result(partition))

        return residual

    def visit_or(self, left_result: _Residual, right_result: _Residual) -> _Residual:
        def residual(partition: Sequence[Any]) -> BooleanExpression:
            left = left_result(partition)
            return left if left is _TRUE else Or(left, right_result(partition))

        return residual

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> _Residual:
        raise TypeError(f"residuals need a bound expression, got unbound {predicate!r}")

    def visit_bound_predicate(self, predicate: BoundPredicate) -> _Residual:
        fields = self.by_source.get(predicate.ref.field_id)
        if not fields:
            return lambda partition: predicate
        strict: BooleanExpression = _FALSE
        inclusive: BooleanExpression = _TRUE
        for pf in fields:
            strict = Or(strict, project_predicate(pf, predicate, inclusive=False))
            inclusive = And(inclusive, project_predicate(pf, predicate, inclusive=True))
        if isinstance(strict, AlwaysFalse) and isinstance(inclusive, AlwaysTrue):
            return lambda partition: predicate
        all_rows_match = compile_row_filter(strict, self.positions)
        some_rows_may_match = compile_row_filter(inclusive, self.positions)

        def residual(partition: Sequence[Any]) -> BooleanExpression:
            if all_rows_match(partition):
                return _TRUE
            if not some_rows_may_match(partition):
                return _FALSE
            return predicate

        return residual


class ResidualEvaluator:
    """Computes, per partition tuple, the part of a row filter that rows must still be tested on."""

    __slots__ = ("_fn", "row_filter", "spec")

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
    ) -> None:
        self.spec = spec
        self.row_filter = rewrite_not(bind(schema, row_filter, case_sensitive=case_sensitive))
        if not spec.fields:
            # Unpartitioned: nothing is known about any file's rows.
            self._fn: _Residual = lambda partition: self.row_filter
        else:
            self._fn = visit(self.row_filter, _ResidualCompiler(spec, schema))

    def residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        """The bound row filter left to apply to rows of ``partition`` (a tuple in spec order)."""
        return self._fn(partition)

    __call__ = residual_for


__all__ = ["ResidualEvaluator"]
