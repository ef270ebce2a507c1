"""Partition field summaries of a manifest (spec "Manifest Lists", ``field_summary`` element 508).

One accumulator per partition field tracks whether any value was null or NaN and the lower and
upper bound of the other values. Bounds are serialized with Appendix D in the partition
field's result type (spec note [1] under ``field_summary``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from firn.errors import ValidationError
from firn.spec import values
from firn.spec.content import PartitionFieldSummary
from firn.spec.types import DoubleType, FloatType, IcebergType, StructType, UnknownType


class _FieldStats:
    """Running summary of one partition field's values."""

    __slots__ = ("contains_nan", "contains_null", "is_float", "lower", "type", "upper")

    def __init__(self, t: IcebergType) -> None:
        self.type = t
        self.is_float = isinstance(t, FloatType | DoubleType)
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, value: Any) -> None:
        if value is None:
            self.contains_null = True
            return
        if self.is_float:
            if math.isnan(value):
                # NaN is never a bound (spec "Manifest Lists", contains_nan).
                self.contains_nan = True
                return
            # Spec note [2]: -0.0 sorts before +0.0, so compare (value, sign) pairs.
            lower = self.lower
            if lower is None or value < lower or (value == lower and math.copysign(1.0, value) < 0):
                self.lower = value
            upper = self.upper
            if upper is None or value > upper or (value == upper and math.copysign(1.0, value) > 0):
                self.upper = value
            return
        if self.lower is None:
            self.lower = self.upper = value
        elif value < self.lower:
            self.lower = value
        elif value > self.upper:
            self.upper = value

    def summary(self) -> PartitionFieldSummary:
        lower = upper = None
        if self.lower is not None:
            lower = values.to_bytes(self.type, self.lower)
            upper = values.to_bytes(self.type, self.upper)
        # Java and PyIceberg always write contains_nan (false for non-float types).
        return PartitionFieldSummary(self.contains_null, self.contains_nan, lower, upper)


class PartitionSummaryBuilder:
    """Accumulates partition tuples and produces one :class:`PartitionFieldSummary` per field."""

    __slots__ = ("_stats",)

    def __init__(self, partition_type: StructType) -> None:
        self._stats = [_FieldStats(f.field_type) for f in partition_type.fields]

    def update(self, partition: Sequence[Any]) -> None:
        """Add one partition tuple (internal values, spec field order)."""
        stats = self._stats
        if len(partition) != len(stats):
            raise ValidationError(
                f"partition tuple {tuple(partition)!r} has {len(partition)} values; the spec has {len(stats)} fields"
            )
        try:
            for s, v in zip(stats, partition):
                s.update(v)
        except TypeError as e:
            raise ValidationError(
                f"partition tuple {tuple(partition)!r} has a value of the wrong type: {e}"
            ) from e

    def summaries(self) -> tuple[PartitionFieldSummary, ...]:
        return tuple(
            PartitionFieldSummary(s.contains_null, s.contains_nan)
            if isinstance(s.type, UnknownType)
            else s.summary()
            for s in self._stats
        )


__all__ = ["PartitionSummaryBuilder"]
