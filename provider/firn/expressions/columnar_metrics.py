"""May each of many files contain rows matching a filter? Decided from columnar stats, vectorized.

The columnar counterpart of :mod:`firn.expressions.inclusive_metrics` for stats held as Arrow
columns, one row per file (DESIGN: "planning is vectorized with pyarrow, not a Python loop over
records"). V4 planning uses it on content entries' typed ``content_stats`` — data-file entries
and, unchanged, manifest entries, whose stats aggregate their children's. :func:`might_match`
returns a NumPy mask that is False only where the stats prove that no row matches; unknown
stats (a null count or bound, or no stats for the column) mean "may match".

Rules, per predicate on column ``c`` (``lo``/``hi`` the bounds):

* ``is_null``: no nulls → no match. ``not_null``: all values null → no match.
* ``is_nan``: no NaNs → no match (a column without NaN counts holds no NaN). ``not_nan``: all
  values NaN → no match.
* ``<``, ``<=``, ``>``, ``>=``, ``=``, ``starts_with``, ``in``: all values null → no match;
  otherwise the literal (``in``: the literals' range) is compared with the bounds.
* ``!=``, ``not_in``, ``not_starts_with``: always "may match".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.expressions.binding import rewrite_not
from firn.expressions.predicates import InternalValue, UnboundPredicate
from firn.expressions.terms import BoundReference
from firn.expressions.tree import AlwaysTrue, BooleanExpression
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.util.arrow_chunks import bool_np

ArrowColumn: TypeAlias = pa.Array | pa.ChunkedArray


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """The stats of one column for every file (arrays of the stats table's length).

    ``nan_count`` is None for columns that cannot hold NaN; ``scalar`` turns a literal in
    Firn's internal representation into a scalar comparable with the bounds.
    """

    lower: ArrowColumn
    upper: ArrowColumn
    value_count: ArrowColumn
    null_count: ArrowColumn
    nan_count: ArrowColumn | None
    scalar: Callable[[InternalValue], pa.Scalar]


class ColumnarStats(Protocol):
    """Per-column stats of ``num_rows`` files, looked up by field id (None: no stats)."""

    @property
    def num_rows(self) -> int: ...

    def column(self, field_id: int) -> ColumnStats | None: ...


def _maybe(condition: ArrowColumn) -> np.ndarray:
    """Unknown (null) comparison results mean "may match"."""
    return bool_np(pc.fill_null(condition, True))


@dataclass(frozen=True, slots=True)
class _Column:
    stats: ColumnStats
    # No non-null value at all: no comparison can match.
    all_null: np.ndarray


class _ColumnarMetricsVisitor(BoundPredicateVisitor[np.ndarray]):
    def __init__(self, stats: ColumnarStats) -> None:
        self.stats = stats
        self.n = stats.num_rows
        self._columns: dict[int, _Column | None] = {}

    def _all(self, value: bool) -> np.ndarray:
        return np.full(self.n, value, dtype=bool)

    def _column(self, ref: BoundReference) -> _Column | None:
        field_id = ref.field_id
        if field_id not in self._columns:
            s = self.stats.column(field_id)
            self._columns[field_id] = (
                None
                if s is None
                else _Column(s, bool_np(pc.fill_null(pc.equal(s.null_count, s.value_count), False)))
            )
        return self._columns[field_id]

    # -- structure ---------------------------------------------------------------------------
    def visit_true(self) -> np.ndarray:
        return self._all(True)

    def visit_false(self) -> np.ndarray:
        return self._all(False)

    def visit_and(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        return left_result & right_result

    def visit_or(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        return left_result | right_result

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> np.ndarray:
        return self._all(True)  # nothing known about it: conservatively "may match"

    # -- unary predicates ----------------------------------------------------------------------
    def visit_is_null(self, ref: BoundReference) -> np.ndarray:
        c = self._column(ref)
        return self._all(True) if c is None else _maybe(pc.greater(c.stats.null_count, 0))

    def visit_not_null(self, ref: BoundReference) -> np.ndarray:
        c = self._column(ref)
        return self._all(True) if c is None else ~c.all_null

    def visit_is_nan(self, ref: BoundReference) -> np.ndarray:
        c = self._column(ref)
        if c is None:
            return self._all(True)
        if c.stats.nan_count is None:
            return self._all(False)
        return _maybe(pc.greater(c.stats.nan_count, 0))

    def visit_not_nan(self, ref: BoundReference) -> np.ndarray:
        c = self._column(ref)
        if c is None or c.stats.nan_count is None:
            return self._all(True)
        return ~bool_np(pc.fill_null(pc.equal(c.stats.nan_count, c.stats.value_count), False))

    # -- comparisons -----------------------------------------------------------------------------
    def _compare(
        self,
        ref: BoundReference,
        literal: InternalValue,
        test: Callable[[ColumnStats, pa.Scalar], np.ndarray],
    ) -> np.ndarray:
        c = self._column(ref)
        if c is None:
            return self._all(True)
        return test(c.stats, c.stats.scalar(literal)) & ~c.all_null

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        return self._compare(ref, literal, lambda s, v: _maybe(pc.less(s.lower, v)))

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        return self._compare(ref, literal, lambda s, v: _maybe(pc.less_equal(s.lower, v)))

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        return self._compare(ref, literal, lambda s, v: _maybe(pc.greater(s.upper, v)))

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        return self._compare(ref, literal, lambda s, v: _maybe(pc.greater_equal(s.upper, v)))

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        return self._compare(
            ref,
            literal,
            lambda s, v: _maybe(pc.less_equal(s.lower, v)) & _maybe(pc.greater_equal(s.upper, v)),
        )

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> np.ndarray:
        # Only "every value equals the literal" stats could rule a file out; bounds cannot.
        return self._all(True)

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> np.ndarray:
        k = len(prefix)

        def test(s: ColumnStats, v: pa.Scalar) -> np.ndarray:
            # Cutting preserves order, so every value's first k characters lie in [lo[:k], hi[:k]].
            lo = pc.utf8_slice_codeunits(s.lower, 0, k)
            hi = pc.utf8_slice_codeunits(s.upper, 0, k)
            return _maybe(pc.less_equal(lo, v)) & _maybe(pc.greater_equal(hi, v))

        return self._compare(ref, prefix, test)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> np.ndarray:
        return self._all(True)

    # -- sets ------------------------------------------------------------------------------------
    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> np.ndarray:
        c = self._column(ref)
        if c is None:
            return self._all(True)
        if not literals:
            return self._all(False)
        ordered: list[Any] = sorted(literals)
        lo_v, hi_v = c.stats.scalar(ordered[0]), c.stats.scalar(ordered[-1])
        return (
            _maybe(pc.less_equal(c.stats.lower, hi_v))
            & _maybe(pc.greater_equal(c.stats.upper, lo_v))
            & ~c.all_null
        )

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> np.ndarray:
        return self._all(True)


def might_match(stats: ColumnarStats, expr: BooleanExpression) -> np.ndarray:
    """Boolean mask over the files of ``stats``: those that may hold rows matching the bound
    filter ``expr``."""
    if isinstance(expr, AlwaysTrue) or stats.num_rows == 0:
        return np.full(stats.num_rows, True, dtype=bool)
    return visit(rewrite_not(expr), _ColumnarMetricsVisitor(stats))


__all__ = ["ColumnStats", "ColumnarStats", "might_match"]
