"""May a data (or delete) file contain rows matching a filter? Decided from its metrics.

Spec "Scan Planning": "Scan predicates are also used to filter data and delete files using
column bounds and counts". ``eval`` returns ``False`` only when the metrics *prove* that no
row matches; anything unknown (missing counts or bounds, unknown record count) means ``True``.
Semantics follow :mod:`firn.expressions` (null and NaN values match ``!=``, ``not_in``,
``not_starts_with`` and ``not_nan`` but no comparison).

Rules, per predicate on column ``c`` (``lo``/``hi`` the bounds, which exclude nulls and NaN):

* ``is_null``: no nulls → no match. ``not_null``: all values null → no match.
* ``is_nan``: no NaNs, or only nulls → no match. ``not_nan``: all values NaN → no match.
* ``<``, ``<=``, ``>``, ``>=``, ``=``, ``in``, ``starts_with``: only nulls/NaNs → no match;
  otherwise compare the literal with the bounds (``=``: ``lo <= v <= hi``; ``in``: some
  literal in ``[lo, hi]``, checked only up to :data:`IN_PREDICATE_LIMIT` literals as Java
  does; ``starts_with``: ``lo`` and ``hi`` cut to the prefix length bracket the prefix).
* ``!=``, ``not_in``: no match only if no nulls, no NaNs and ``lo == hi`` equals a literal.
* ``not_starts_with``: no match only if no nulls and both bounds start with the prefix
  (strings with a given prefix form one interval, so every value between them has it too).

Truncated string bounds are still valid bounds, and every rule above only relies on that,
so ``starts_with`` / ``=`` on strings longer than the truncation length stay conservative:
e.g. for ``lo = 'abc'`` truncated from ``'abcdef'``, ``s = 'abcd'`` might match and
``starts_with(s, 'abcz')`` is ruled out only when ``hi[:4] < 'abcz'``.
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

# Iceberg Java InclusiveMetricsEvaluator.IN_PREDICATE_LIMIT: beyond this many literals the
# bound checks cost more than reading the file would save.
IN_PREDICATE_LIMIT = 200

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False


class _InclusiveMetricsVisitor(BoundPredicateVisitor[bool]):
    __slots__ = ("stats",)

    def __init__(self, stats: FileStats) -> None:
        self.stats = stats

    def visit_true(self) -> bool:
        return ROWS_MIGHT_MATCH

    def visit_false(self) -> bool:
        return ROWS_CANNOT_MATCH

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_is_null(self, ref: BoundReference) -> bool:
        return self.stats.nulls(ref) != 0

    def visit_not_null(self, ref: BoundReference) -> bool:
        return not self.stats.all_null(ref)

    def visit_is_nan(self, ref: BoundReference) -> bool:
        if self.stats.nans(ref) == 0 or self.stats.all_null(ref):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_not_nan(self, ref: BoundReference) -> bool:
        return not self.stats.all_nan(ref)

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        lo = self.stats.lower(ref)
        return lo is None or lo < literal  # type: ignore[operator]

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        lo = self.stats.lower(ref)
        return lo is None or lo <= literal  # type: ignore[operator]

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        hi = self.stats.upper(ref)
        return hi is None or hi > literal  # type: ignore[operator]

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        hi = self.stats.upper(ref)
        return hi is None or hi >= literal  # type: ignore[operator]

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        if lo is not None and lo > literal:  # type: ignore[operator]
            return ROWS_CANNOT_MATCH
        return not (hi is not None and hi < literal)  # type: ignore[operator]

    def _single_value(self, ref: BoundReference) -> InternalValue | None:
        """The one value every row holds (no nulls, no NaNs, lo == hi), if the metrics prove it."""
        if self.stats.may_contain_null(ref) or self.stats.may_contain_nan(ref):
            return None
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        return lo if lo is not None and hi is not None and lo == hi else None

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        only = self._single_value(ref)
        return not (only is not None and only == literal)

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        if len(literals) > IN_PREDICATE_LIMIT:
            return ROWS_MIGHT_MATCH
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        candidates = literals
        if lo is not None:
            candidates = frozenset(v for v in candidates if lo <= v)  # type: ignore[operator]
        if hi is not None:
            candidates = frozenset(v for v in candidates if v <= hi)  # type: ignore[operator]
        return bool(candidates)

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        only = self._single_value(ref)
        return not (only is not None and only in literals)

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        if self.stats.no_ordinary_values(ref):
            return ROWS_CANNOT_MATCH
        n = len(prefix)
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        # Cutting preserves order (a <= b implies a[:n] <= b[:n]), so every value's first n
        # characters lie in [lo[:n], hi[:n]].
        if isinstance(lo, str) and lo[:n] > prefix:
            return ROWS_CANNOT_MATCH
        return not (isinstance(hi, str) and hi[:n] < prefix)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        if self.stats.may_contain_null(ref):
            return ROWS_MIGHT_MATCH
        lo, hi = self.stats.lower(ref), self.stats.upper(ref)
        if isinstance(lo, str) and isinstance(hi, str) and lo.startswith(prefix) and hi.startswith(prefix):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH


class InclusiveMetricsEvaluator:
    """Decides from metrics whether a file may contain rows matching ``row_filter``.

    Binds the filter once; :meth:`eval` is then called per file.
    """

    __slots__ = ("_types", "expr", "include_empty_files")

    def __init__(
        self,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive=case_sensitive))
        self.include_empty_files = include_empty_files
        self._types: Mapping[int, IcebergType] = {f.field_id: f.field_type for f in schema.primitive_fields()}

    def eval(self, file: DataFile) -> bool:
        """False only if no row of ``file`` can match the filter."""
        return self.eval_stats(FileStats.from_data_file(file, self._types))

    def eval_stats(self, stats: FileStats) -> bool:
        """:meth:`eval` over already typed stats (e.g. V4 content stats)."""
        if stats.record_count == 0:
            # An empty file holds no matching row (a v1 import may write -1 for "unknown").
            return self.include_empty_files
        if stats.record_count < 0:
            return ROWS_MIGHT_MATCH
        return visit(self.expr, _InclusiveMetricsVisitor(stats))

    __call__ = eval


__all__ = ["IN_PREDICATE_LIMIT", "InclusiveMetricsEvaluator"]
