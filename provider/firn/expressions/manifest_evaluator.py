"""May a manifest contain files matching a filter? Decided from its partition summaries.

Spec "Scan Planning": "Manifests that contain no matching files, determined using either
file counts or partition summaries, may be skipped." Each manifest-list entry carries one
``field_summary`` per partition field (spec "Manifest Lists": ``contains_null``,
``contains_nan``, and Appendix D ``lower_bound`` / ``upper_bound`` of the non-null, non-NaN
partition values). The row filter is projected inclusively onto the partition struct
(:mod:`firn.expressions.projection`) and evaluated against the summaries; ``eval`` returns
``False`` only when no partition in the manifest can match.

Spec: bounds are "null if all values are null or NaN". A manifest whose summary has no
bounds is treated as all-null/NaN only when ``contains_null`` or ``contains_nan`` says such
values exist; otherwise the bounds are taken as merely unknown (Java assumes the former even
then, which is wrong for writers that omit bounds).
"""

from __future__ import annotations

from collections.abc import Sequence

from firn.expressions.binding import rewrite_not
from firn.expressions.predicates import InternalValue
from firn.expressions.projection import partition_struct, project_inclusive
from firn.expressions.terms import BoundReference
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, BooleanExpression
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.spec import values
from firn.spec.content import ManifestFile, PartitionFieldSummary
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.types import StructType

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False


class _ManifestVisitor(BoundPredicateVisitor[bool]):
    def __init__(self, summaries: Sequence[PartitionFieldSummary], positions: dict[int, int]) -> None:
        self.summaries = summaries
        self.positions = positions

    def summary(self, ref: BoundReference) -> PartitionFieldSummary | None:
        i = self.positions.get(ref.field_id)
        return self.summaries[i] if i is not None and i < len(self.summaries) else None

    @staticmethod
    def bound(ref: BoundReference, data: bytes | None) -> InternalValue | None:
        if data is None:
            return None
        value: InternalValue = values.from_bytes(ref.field_type, data)
        return None if values.is_nan(value) else value

    @staticmethod
    def only_null_or_nan(s: PartitionFieldSummary) -> bool:
        return s.lower_bound is None and s.upper_bound is None and (s.contains_null or s.contains_nan is True)

    @staticmethod
    def all_null(s: PartitionFieldSummary, ref: BoundReference) -> bool:
        if not s.contains_null or s.lower_bound is not None or s.upper_bound is not None:
            return False
        # Without bounds the non-null values, if any, are all NaN; only a definite
        # contains_nan = false rules them out.
        return not ref.is_floating or s.contains_nan is False

    def visit_true(self) -> bool:
        return ROWS_MIGHT_MATCH

    def visit_false(self) -> bool:
        return ROWS_CANNOT_MATCH

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_is_null(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        return s is None or s.contains_null

    def visit_not_null(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        return s is None or not self.all_null(s, ref)

    def visit_is_nan(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        return s is None or s.contains_nan is not False

    def visit_not_nan(self, ref: BoundReference) -> bool:
        s = self.summary(ref)
        all_nan = (
            s is not None
            and s.contains_nan is True
            and not s.contains_null
            and s.lower_bound is None
            and s.upper_bound is None
        )
        return not all_nan

    def _range(self, ref: BoundReference) -> tuple[bool, InternalValue | None, InternalValue | None]:
        """(may hold ordinary values, lower, upper)."""
        s = self.summary(ref)
        if s is None:
            return True, None, None
        if self.only_null_or_nan(s):
            return False, None, None
        return True, self.bound(ref, s.lower_bound), self.bound(ref, s.upper_bound)

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        possible, lo, _ = self._range(ref)
        return possible and (lo is None or lo < literal)  # type: ignore[operator]

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        possible, lo, _ = self._range(ref)
        return possible and (lo is None or lo <= literal)  # type: ignore[operator]

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> bool:
        possible, _, hi = self._range(ref)
        return possible and (hi is None or hi > literal)  # type: ignore[operator]

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        possible, _, hi = self._range(ref)
        return possible and (hi is None or hi >= literal)  # type: ignore[operator]

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        possible, lo, hi = self._range(ref)
        if not possible or (lo is not None and lo > literal):  # type: ignore[operator]
            return ROWS_CANNOT_MATCH
        return hi is None or hi >= literal  # type: ignore[operator]

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        possible, lo, hi = self._range(ref)
        if not possible:
            return ROWS_CANNOT_MATCH
        return any(
            (lo is None or lo <= v) and (hi is None or v <= hi)  # type: ignore[operator]
            for v in literals
        )

    def _single_value(self, ref: BoundReference) -> InternalValue | None:
        """The one value every partition in the manifest has, if the summary proves it."""
        s = self.summary(ref)
        if s is None or s.contains_null or (ref.is_floating and s.contains_nan is not False):
            return None
        lo, hi = self.bound(ref, s.lower_bound), self.bound(ref, s.upper_bound)
        return lo if lo is not None and hi is not None and lo == hi else None

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> bool:
        only = self._single_value(ref)
        return not (only is not None and only == literal)

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> bool:
        only = self._single_value(ref)
        return not (only is not None and only in literals)

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        possible, lo, hi = self._range(ref)
        if not possible:
            return ROWS_CANNOT_MATCH
        n = len(prefix)
        if isinstance(lo, str) and lo[:n] > prefix:
            return ROWS_CANNOT_MATCH
        return not (isinstance(hi, str) and hi[:n] < prefix)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> bool:
        s = self.summary(ref)
        if s is None or s.contains_null:
            return ROWS_MIGHT_MATCH
        lo, hi = self.bound(ref, s.lower_bound), self.bound(ref, s.upper_bound)
        if isinstance(lo, str) and isinstance(hi, str) and lo.startswith(prefix) and hi.startswith(prefix):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH


class ManifestEvaluator:
    """Decides from a manifest's partition summaries whether it may hold matching files."""

    __slots__ = ("_positions", "partition_filter", "partition_type")

    def __init__(self, partition_type: StructType, partition_filter: BooleanExpression) -> None:
        """From a filter already bound to ``partition_type`` (e.g. an inclusive projection)."""
        self.partition_type = partition_type
        self.partition_filter = rewrite_not(partition_filter)
        self._positions = {f.field_id: i for i, f in enumerate(partition_type.fields)}

    @classmethod
    def for_row_filter(
        cls,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
    ) -> ManifestEvaluator:
        """Projects ``row_filter`` inclusively through ``spec`` (the manifest's spec)."""
        projected = project_inclusive(row_filter, spec, schema, case_sensitive=case_sensitive)
        return cls(partition_struct(spec, schema), projected)

    def eval(self, manifest: ManifestFile) -> bool:
        """False only if no file in ``manifest`` can contain matching rows."""
        if manifest.partitions is None:
            return not isinstance(self.partition_filter, AlwaysFalse)
        return self.eval_summaries(manifest.partitions)

    def eval_summaries(self, summaries: Sequence[PartitionFieldSummary]) -> bool:
        """:meth:`eval` over a list of partition field summaries in spec order."""
        if isinstance(self.partition_filter, AlwaysTrue):
            return ROWS_MIGHT_MATCH
        return visit(self.partition_filter, _ManifestVisitor(summaries, self._positions))

    __call__ = eval


__all__ = ["ManifestEvaluator"]
