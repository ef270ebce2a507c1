"""Vectorized pruning of V4 content entries by their typed ``content_stats`` (DESIGN: "planning
is vectorized with pyarrow, not a Python loop over records").

``might_match(table, expr, layout)`` returns, for every entry, whether it *may* hold rows
matching a bound filter — the columnar twin of :class:`InclusiveMetricsEvaluator`. It is used
on data-file entries and, unchanged, on manifest entries, whose stats aggregate their
children's (counts summed, min of lower and max of upper bounds, null if any child lacks one).
Unknown stats always mean "may match".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Or, rewrite_not
from firn.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    Operation,
)
from firn.manifests.v4_layout import StatsColumn, V4Layout, typed_array


def _all(n: int, value: bool) -> np.ndarray:
    return np.full(n, value, dtype=bool)


class _Stats:
    """The stats arrays of one column over all entries (None members: not present)."""

    def __init__(self, table: pa.Table, col: StatsColumn) -> None:
        stats = table.column("content_stats")
        struct = pc.struct_field(stats, col.name)
        self.lower = pc.struct_field(struct, "lower_bound")
        self.upper = pc.struct_field(struct, "upper_bound")
        self.value_count = pc.struct_field(struct, "value_count")
        self.null_count = pc.struct_field(struct, "null_value_count")
        self.nan_count = pc.struct_field(struct, "nan_value_count") if col.has_nan else None
        # No non-null value at all: comparisons cannot match.
        self.all_null = _np(pc.fill_null(pc.equal(self.null_count, self.value_count), False))


def _np(arr: Any) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = (
            arr.combine_chunks()
            if arr.num_chunks != 1
            else (arr.chunk(0) if arr.num_chunks else pa.array([], pa.bool_()))
        )
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def _maybe(cond: Any) -> np.ndarray:
    """Unknown (null) comparison results mean "may match"."""
    return _np(pc.fill_null(cond, True))


class _Evaluator:
    def __init__(self, table: pa.Table, layout: V4Layout) -> None:
        self.table = table
        self.layout = layout
        self.n = table.num_rows
        self.has_stats = "content_stats" in table.column_names
        self._cache: dict[int, _Stats] = {}

    def stats(self, field_id: int) -> _Stats | None:
        if not self.has_stats:
            return None
        col = self.layout.stats_by_id.get(field_id)
        if col is None:
            return None
        s = self._cache.get(field_id)
        if s is None:
            s = _Stats(self.table, col)
            self._cache[field_id] = s
        return s

    def eval(self, expr: BooleanExpression) -> np.ndarray:
        if isinstance(expr, AlwaysTrue):
            return _all(self.n, True)
        if isinstance(expr, AlwaysFalse):
            return _all(self.n, False)
        if isinstance(expr, And):
            return self.eval(expr.left) & self.eval(expr.right)
        if isinstance(expr, Or):
            return self.eval(expr.left) | self.eval(expr.right)
        if isinstance(expr, BoundPredicate):
            return self.predicate(expr)
        # Anything else (e.g. an unbound leftover) is conservatively "may match".
        return _all(self.n, True)

    def _scalar(self, field_id: int, value: Any) -> pa.Scalar:
        col = self.layout.stats_by_id[field_id]
        return typed_array([value], col.bound_type)[0]

    def predicate(self, pred: BoundPredicate) -> np.ndarray:
        s = self.stats(pred.ref.field_id)
        if s is None:
            return _all(self.n, True)
        op = pred.op
        if isinstance(pred, BoundUnaryPredicate):
            if op is Operation.IS_NULL:
                return _maybe(pc.greater(s.null_count, 0))
            if op is Operation.NOT_NULL:
                return ~s.all_null
            if op is Operation.IS_NAN:
                return _maybe(pc.greater(s.nan_count, 0)) if s.nan_count is not None else _all(self.n, False)
            if op is Operation.NOT_NAN:
                if s.nan_count is None:
                    return _all(self.n, True)
                return ~_np(pc.fill_null(pc.equal(s.nan_count, s.value_count), False))
            return _all(self.n, True)
        if isinstance(pred, BoundLiteralPredicate):
            v = self._scalar(pred.ref.field_id, pred.literal)
            if op is Operation.LT:
                out = _maybe(pc.less(s.lower, v))
            elif op is Operation.LT_EQ:
                out = _maybe(pc.less_equal(s.lower, v))
            elif op is Operation.GT:
                out = _maybe(pc.greater(s.upper, v))
            elif op is Operation.GT_EQ:
                out = _maybe(pc.greater_equal(s.upper, v))
            elif op is Operation.EQ:
                out = _maybe(pc.less_equal(s.lower, v)) & _maybe(pc.greater_equal(s.upper, v))
            elif op is Operation.STARTS_WITH and isinstance(pred.literal, str):
                k = len(pred.literal)
                lo = pc.utf8_slice_codeunits(s.lower, 0, k)
                hi = pc.utf8_slice_codeunits(s.upper, 0, k)
                out = _maybe(pc.less_equal(lo, v)) & _maybe(pc.greater_equal(hi, v))
            else:
                # !=, not_starts_with: only exact "all values equal" stats could rule a file out.
                return _all(self.n, True)
            return out & ~s.all_null
        if isinstance(pred, BoundSetPredicate):
            if op is Operation.IN and pred.literals:
                ordered = sorted(pred.literals)
                lo_v, hi_v = (
                    self._scalar(pred.ref.field_id, ordered[0]),
                    self._scalar(pred.ref.field_id, ordered[-1]),
                )
                return (
                    _maybe(pc.less_equal(s.lower, hi_v))
                    & _maybe(pc.greater_equal(s.upper, lo_v))
                    & ~s.all_null
                )
            if op is Operation.IN:
                return _all(self.n, False)
            return _all(self.n, True)
        return _all(self.n, True)


def might_match(table: pa.Table, expr: BooleanExpression, layout: V4Layout) -> np.ndarray:
    """Boolean mask: entries of ``table`` that may hold rows matching bound ``expr``."""
    if isinstance(expr, AlwaysTrue) or table.num_rows == 0:
        return _all(table.num_rows, True)
    return _Evaluator(table, layout).eval(rewrite_not(expr))


__all__ = ["might_match"]
