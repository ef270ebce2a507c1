"""A typed view of a file's column metrics, shared by the metrics evaluators.

Spec "Field-level Metrics and Statistics": value counts include nulls and NaNs; lower and
upper bounds cover the non-null, non-NaN values; a missing map or key means "unknown".
v1-v3 manifests store bounds as Appendix D bytes (:meth:`FileStats.from_data_file` decodes
them lazily, only for the columns a filter reads); V4 content stats store typed values and
can be passed in directly.

String and binary bounds may be truncated (Java's default metrics mode is ``truncate(16)``):
a truncated lower bound is a prefix of the true minimum and a truncated upper bound is a
prefix with its last character incremented. Both remain valid bounds, so the evaluators use
them only through ``<=`` / ``>=`` reasoning that stays correct for any valid bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from firn.expressions.predicates import InternalValue
from firn.expressions.terms import BoundReference
from firn.spec import values
from firn.spec.content import DataFile
from firn.spec.types import IcebergType

_EMPTY: Mapping[int, int] = {}


class _DecodedBounds(Mapping[int, InternalValue]):
    """Appendix D bound bytes decoded on first access, for the field types given."""

    __slots__ = ("_cache", "_raw", "_types")

    def __init__(self, raw: Mapping[int, bytes], types: Mapping[int, IcebergType]) -> None:
        self._raw = raw
        self._types = types
        self._cache: dict[int, InternalValue] = {}

    def __getitem__(self, field_id: int) -> InternalValue:
        if field_id in self._cache:
            return self._cache[field_id]
        t = self._types.get(field_id)
        if t is None:
            raise KeyError(field_id)
        value: InternalValue = values.from_bytes(t, self._raw[field_id])
        self._cache[field_id] = value
        return value

    def __contains__(self, field_id: object) -> bool:
        return field_id in self._raw and field_id in self._types

    def __iter__(self) -> Iterator[int]:
        return (fid for fid in self._raw if fid in self._types)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class FileStats:
    """Record count, per-field counts and typed bounds of one data or delete file."""

    __slots__ = ("lower_bounds", "nan_counts", "null_counts", "record_count", "upper_bounds", "value_counts")

    def __init__(
        self,
        record_count: int,
        *,
        value_counts: Mapping[int, int] | None = None,
        null_counts: Mapping[int, int] | None = None,
        nan_counts: Mapping[int, int] | None = None,
        lower_bounds: Mapping[int, InternalValue] | None = None,
        upper_bounds: Mapping[int, InternalValue] | None = None,
    ) -> None:
        self.record_count = record_count
        self.value_counts = value_counts or _EMPTY
        self.null_counts = null_counts or _EMPTY
        self.nan_counts = nan_counts or _EMPTY
        self.lower_bounds: Mapping[int, InternalValue] = lower_bounds or {}
        self.upper_bounds: Mapping[int, InternalValue] = upper_bounds or {}

    @classmethod
    def from_data_file(cls, file: DataFile, types: Mapping[int, IcebergType]) -> FileStats:
        """Stats of a manifest's ``data_file``; bounds of the fields in ``types`` decode on use."""
        return cls(
            file.record_count,
            value_counts=file.value_counts,
            null_counts=file.null_value_counts,
            nan_counts=file.nan_value_counts,
            lower_bounds=_DecodedBounds(file.lower_bounds, types) if file.lower_bounds else None,
            upper_bounds=_DecodedBounds(file.upper_bounds, types) if file.upper_bounds else None,
        )

    # -- bounds --------------------------------------------------------------------------------
    def lower(self, ref: BoundReference) -> InternalValue | None:
        """The lower bound, or None if unknown (a NaN bound, which the spec forbids, is ignored)."""
        v = self.lower_bounds.get(ref.field_id)
        return None if isinstance(v, float) and math.isnan(v) else v

    def upper(self, ref: BoundReference) -> InternalValue | None:
        v = self.upper_bounds.get(ref.field_id)
        return None if isinstance(v, float) and math.isnan(v) else v

    # -- counts --------------------------------------------------------------------------------
    def nulls(self, ref: BoundReference) -> int | None:
        """Number of nulls: 0 for never-null fields, None when unknown."""
        if ref.never_null:
            return 0
        return self.null_counts.get(ref.field_id)

    def nans(self, ref: BoundReference) -> int | None:
        """Number of NaNs: 0 for non-floating types, None when unknown."""
        if not ref.is_floating:
            return 0
        return self.nan_counts.get(ref.field_id)

    def may_contain_null(self, ref: BoundReference) -> bool:
        n = self.nulls(ref)
        return n is None or n > 0

    def may_contain_nan(self, ref: BoundReference) -> bool:
        n = self.nans(ref)
        return n is None or n > 0

    def ordinary_count(self, ref: BoundReference) -> int | None:
        """Number of non-null, non-NaN values, or None when it cannot be derived."""
        total = self.value_counts.get(ref.field_id)
        nulls, nans = self.nulls(ref), self.nans(ref)
        if total is None or nulls is None or nans is None:
            return None
        return total - nulls - nans

    def no_ordinary_values(self, ref: BoundReference) -> bool:
        """Whether every value is null or NaN (so every comparison is false)."""
        return self.ordinary_count(ref) == 0

    def all_null(self, ref: BoundReference) -> bool:
        total = self.value_counts.get(ref.field_id)
        nulls = self.nulls(ref)
        return total is not None and nulls is not None and total == nulls

    def all_nan(self, ref: BoundReference) -> bool:
        total = self.value_counts.get(ref.field_id)
        nans = self.nans(ref)
        return total is not None and nans is not None and total == nans and total > 0


__all__ = ["FileStats"]
