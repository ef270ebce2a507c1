"""Do *all* rows of a file match a filter? Decided from its metrics.

Deletes use this to drop whole files instead of rewriting them: ``eval`` returns ``True``
only when the metrics *prove* every row matches; anything unknown means ``False``.
Semantics follow :mod:`firn.expressions`, which matters here: null and NaN values match
``!=``, ``not_in``, ``not_starts_with`` and ``not_nan``, so those predicates tolerate them,
while every comparison, ``=``, ``in`` and ``starts_with`` requires proof that the column has
no nulls (a required field, or a zero null count) and no NaNs.

Rules, per predicate on column ``c`` (``lo``/``hi`` the bounds of non-null non-NaN values):

* ``is_null``: all values null. ``not_null``: no nulls.
* ``is_nan``: all values NaN. ``not_nan``: no NaNs (nulls are fine).
* ``<``: no nulls/NaNs and ``hi < v``; likewise ``<=``, ``>`` (``lo > v``), ``>=``.
* ``=``: no nulls/NaNs and ``lo == hi == v``. ``in``: no nulls/NaNs and ``lo == hi`` in the set.
* ``!=`` / ``not_in``: only nulls and NaNs, or every literal outside ``[lo, hi]``.
* ``starts_with``: no nulls and both bounds start with the prefix.
* ``not_starts_with``: only nulls, or ``lo[:n] > prefix`` or ``hi[:n] < prefix``.

Truncated string bounds remain valid bounds, and these rules only rely on validity; in
particular ``lo == hi`` proves a single value even if both were truncated.
"""

from __future__ import annotations

from collections.abc import Mapping

from firn.expressions.binding import bind, rewrite_not
from firn.expressions.predicates import InternalValue
from firn.expressions.stats import FileStats
from firn.expressions.terms import BoundReference
from firn.expressions.tree import BooleanExpression
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.spec.content import DataFile
from firn.spec.schema import Schema
from firn.spec.types import IcebergType

ROWS_MUST_MATCH = True
ROWS_MIGHT_NOT_MATCH = False


class _StrictMetricsVisitor(BoundPredicateVisitor[bool]):
    __slots__ = ("stats",)

    def __init__(self, stats: FileStats) -> None:
        self.stats = stats

    def visit_true(self) -> bool:
        return ROWS_MUST_MATCH

    def visit_false(self) -> bool:
        return ROWS_MIGHT_NOT_MATCH

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def _only_ordinary(self, ref: BoundReference) -> bool:
        """No nulls and no NaNs, proven."""
        return not self.stats.may_contain_null(ref) and not self.stats.may_contain_nan(ref)

    def _only_null_or_nan(self, ref: BoundReference) -> bool:
        return self.stats.no_ordinary_values(ref)

    def visit_is_null(self, ref: BoundReference) -> bool:
        return self.stats.all_null(ref)

    def visit_not_null(self, ref: BoundReference) -> bool:
        return not self.stats.may_contain_null(ref)

    def visit_is_nan(self, ref: BoundReference) -> bool:
        return self.stats.all_nan(ref)

    def visit_not_nan(self, ref: BoundReference) -> bool:
        return not self.stats.may_contain_nan(ref)

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        hi = self.stats.upper(ref)
        return self._only_ordinary(ref) and hi is not None and hi < literal  # type: ignore[operator]

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        hi = self.stats.upper(ref)
        return self._only_ordinary(ref) and hi is not None and hi <= literal  # type: ignore[operator]

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        lo = self.stats.lower(ref)
        return self._only_ordinary(ref) and lo is not None and lo > literal  # type: ignore[operator]

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        lo = self.stats.lower(ref)
        return self._only_ordinary(ref) and lo is not None and lo >= literal  # type: ignore[operator]

    def _single_value(self, ref: BoundReference) -> InternalValue | None:
        if not self._only_ordinary(ref):
            return None
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        return lo if lo is not None and hi is not None and lo == hi else None

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        only = self._single_value(ref)
        return only is not None and only == literal

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        only = self._single_value(ref)
        return only is not None and only in literals

    def _outside_bounds(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        """Every literal lies outside [lo, hi], so no ordinary value equals any of them."""
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        if lo is None and hi is None:
            return False
        return all(
            (lo is not None and v < lo) or (hi is not None and v > hi)  # type: ignore[operator]
            for v in literals
        )

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        return self._only_null_or_nan(ref) or self._outside_bounds(ref, frozenset({literal}))

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        return self._only_null_or_nan(ref) or self._outside_bounds(ref, literals)

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        if self.stats.may_contain_null(ref):
            return ROWS_MIGHT_NOT_MATCH
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        # Strings with a given prefix form an interval, so bounds inside it enclose only such values.
        return isinstance(lo, str) and isinstance(hi, str) and lo.startswith(prefix) and hi.startswith(prefix)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        if self.stats.all_null(ref):
            return ROWS_MUST_MATCH
        n = len(prefix)
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        if isinstance(lo, str) and lo[:n] > prefix:
            return ROWS_MUST_MATCH
        return isinstance(hi, str) and hi[:n] < prefix


class StrictMetricsEvaluator:
    """Decides from metrics whether *every* row of a file matches ``row_filter``."""

    __slots__ = ("_types", "expr")

    def __init__(self, schema: Schema, row_filter: BooleanExpression, *, case_sensitive: bool = True) -> None:
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive=case_sensitive))
        self._types: Mapping[int, IcebergType] = {f.field_id: f.field_type for f in schema.primitive_fields()}

    def eval(self, file: DataFile) -> bool:
        """True only if the metrics prove that every row of ``file`` matches."""
        return self.eval_stats(FileStats.from_data_file(file, self._types))

    def eval_stats(self, stats: FileStats) -> bool:
        """:meth:`eval` over already typed stats (e.g. V4 content stats)."""
        if stats.record_count == 0:
            return ROWS_MUST_MATCH  # vacuously: an empty file has no non-matching row
        if stats.record_count < 0:
            return ROWS_MIGHT_NOT_MATCH  # unknown row count (imported v1 files)
        return visit(self.expr, _StrictMetricsVisitor(stats))

    __call__ = eval


__all__ = ["StrictMetricsEvaluator"]
