"""Evaluating bound filters with Arrow: ``pyarrow.compute`` expressions and boolean masks.

The conversion follows the package semantics exactly (see :mod:`firn.expressions`), so an
expression never yields null: Arrow's comparison kernels return null for a null input, which
:func:`pyarrow.compute.coalesce` replaces with the predicate's value for null (false for
``<``, ``=``, ``starts_with``..., true for ``!=``, ``not_starts_with``). ``in`` uses
``is_in`` (false for null); ``not_in`` is its negation (true for null). NaN needs no special
case: Arrow compares floats as IEEE numbers, so every comparison with NaN is false and
``!=`` is true, matching the semantics. Since results are never null, ``and`` / ``or`` /
``not`` are plain Boolean operations and ``not e`` is the exact complement of ``e``.

Two entry points share one converter:

* :func:`to_arrow_expression` builds a :class:`pyarrow.compute.Expression` over column
  names (the bound reference's path), for ``Dataset.to_table(filter=...)``, Acero or
  ``Table.filter``.
* :func:`evaluate` computes the mask eagerly over a ``Table`` or ``RecordBatch``; it also
  adapts literals to the data's exact column types (``large_string``, other timestamp
  units, ``arrow.uuid`` extension columns).

Literal → Arrow scalar mapping (:func:`arrow_scalar`): boolean → bool, int → int32,
long → int64, float → float32, double → float64, decimal(P, S) → decimal128(P, S),
date → date32, time → time64[us], timestamp → timestamp[us], timestamptz →
timestamp[us, UTC], timestamp_ns/timestamptz_ns → timestamp[ns(, UTC)], string → string,
uuid → fixed_size_binary(16), fixed[L] → fixed_size_binary(L), binary → binary.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.errors import Unsupported, ValidationError
from firn.expressions.binding import rewrite_not
from firn.expressions.predicates import InternalValue
from firn.expressions.terms import BoundReference
from firn.expressions.tree import BooleanExpression
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.spec.arrow_types import primitive_arrow_type
from firn.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    UnknownType,
    UUIDType,
)


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type of literals of Iceberg primitive type ``t``."""
    at = primitive_arrow_type(t)
    if at is None or isinstance(t, UnknownType):
        raise Unsupported(f"no Arrow literal type for Iceberg type {t}")
    return at


def _arrow_value(t: IcebergType, value: InternalValue) -> object:
    # UUIDs are stored as their 16 big-endian bytes (Appendix D / Parquet UUID logical type).
    if isinstance(t, UUIDType) and not isinstance(value, bytes):
        return value.bytes  # type: ignore[union-attr]
    return value


def arrow_scalar(t: IcebergType, value: InternalValue) -> pa.Scalar:
    """An internal-representation literal as an Arrow scalar of the matching type."""
    return pa.scalar(_arrow_value(t, value), type=arrow_type(t))


def _value_set(t: IcebergType, values: frozenset[InternalValue]) -> pa.Array:
    items = [_arrow_value(t, v) for v in values]
    if isinstance(t, FloatType | DoubleType) and any(v == 0.0 for v in items):
        # Arrow's hash-based is_in tells -0.0 from +0.0, but `=` does not; keep `in` consistent
        # with a disjunction of `=` by listing both zeros.
        items.extend([0.0, -0.0])
    return pa.array(items, type=arrow_type(t))


def _storage(column: Any) -> Any:
    """Extension columns (e.g. ``arrow.uuid``) compare through their storage arrays."""
    if isinstance(column.type, pa.BaseExtensionType):
        if isinstance(column, pa.ChunkedArray):
            return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
        return column.storage
    return column


class _Converter(BoundPredicateVisitor[Any]):
    """Builds Arrow results from either expressions (lazy) or columns (eager)."""

    def __init__(self, leaf: Callable[[BoundReference], Any], eager: bool) -> None:
        self.leaf = leaf
        self.eager = eager

    # -- combinators: Expression operators in lazy mode, kernels in eager mode -----------------
    def visit_true(self) -> Any:
        return pa.scalar(True) if self.eager else pc.scalar(True)

    def visit_false(self) -> Any:
        return pa.scalar(False) if self.eager else pc.scalar(False)

    def visit_and(self, left_result: Any, right_result: Any) -> Any:
        return pc.and_(left_result, right_result) if self.eager else left_result & right_result

    def visit_or(self, left_result: Any, right_result: Any) -> Any:
        return pc.or_(left_result, right_result) if self.eager else left_result | right_result

    def _not(self, value: Any) -> Any:
        return pc.invert(value)

    def _fill(self, value: Any, when_null: bool) -> Any:
        return pc.coalesce(value, pa.scalar(when_null))

    def _literal(self, ref: BoundReference, value: InternalValue, column: Any) -> Any:
        scalar = arrow_scalar(ref.field_type, value)
        if self.eager and column.type != scalar.type:
            try:
                return scalar.cast(column.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return scalar  # let the kernel's implicit casts decide
        return scalar

    # -- predicates ----------------------------------------------------------------------------
    def visit_is_null(self, ref: BoundReference) -> Any:
        return pc.is_null(self.leaf(ref))

    def visit_not_null(self, ref: BoundReference) -> Any:
        return pc.is_valid(self.leaf(ref))

    def visit_is_nan(self, ref: BoundReference) -> Any:
        return self._fill(pc.is_nan(self.leaf(ref)), False)

    def visit_not_nan(self, ref: BoundReference) -> Any:
        return self._not(self.visit_is_nan(ref))

    def _compare(
        self, fn: Callable[[Any, Any], Any], ref: BoundReference, value: InternalValue, null: bool
    ) -> Any:
        column = self.leaf(ref)
        return self._fill(fn(column, self._literal(ref, value, column)), null)

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.less, ref, literal, False)

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.less_equal, ref, literal, False)

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.greater, ref, literal, False)

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.greater_equal, ref, literal, False)

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.equal, ref, literal, False)

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> Any:
        return self._compare(pc.not_equal, ref, literal, True)

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> Any:
        column = self.leaf(ref)
        value_set = _value_set(ref.field_type, literals)
        if self.eager and column.type != value_set.type:
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
                value_set = value_set.cast(column.type)
        # is_in without a null in the set is false (never null) for null inputs.
        return pc.is_in(column, value_set=value_set)

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> Any:
        return self._not(self.visit_in(ref, literals))

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> Any:
        return self._fill(pc.starts_with(self.leaf(ref), pattern=prefix), False)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> Any:
        return self._not(self.visit_starts_with(ref, prefix))


def _expression_leaf(ref: BoundReference) -> pc.Expression:
    field = pc.field(*ref.path)
    if isinstance(ref.field_type, UUIDType):
        # arrow.uuid extension columns have no comparison kernels: compare their storage
        # (a cast to fixed_size_binary(16) is free, and a no-op on plain fixed[16] columns).
        return field.cast(pa.binary(16))
    return field


def to_arrow_expression(expr: BooleanExpression) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` over column names equivalent to a bound ``expr``.

    Columns are referenced by the bound reference's path (nested struct fields as nested
    field references), so the data must use the names of the schema the filter was bound to.
    """
    result = visit(rewrite_not(expr), _Converter(_expression_leaf, eager=False))
    return result if isinstance(result, pc.Expression) else pc.scalar(result)


def _column_leaf(data: pa.Table | pa.RecordBatch) -> Callable[[BoundReference], Any]:
    names = set(data.schema.names)

    def leaf(ref: BoundReference) -> Any:
        top = ref.path[0]
        if top not in names:
            raise ValidationError(
                f"filter column {ref.name!r} is not in the data; columns are {data.schema.names}"
            )
        column = data.column(top)
        if len(ref.path) > 1:
            try:
                column = pc.struct_field(column, list(ref.path[1:]))
            except (pa.ArrowInvalid, KeyError, IndexError) as e:
                raise ValidationError(f"filter column {ref.name!r} is not in the data: {e}") from e
        return _storage(column)

    return leaf


def evaluate(expr: BooleanExpression, data: pa.Table | pa.RecordBatch) -> pa.Array | pa.ChunkedArray:
    """The Boolean mask (never null) of rows of ``data`` that a bound ``expr`` matches."""
    result = visit(rewrite_not(expr), _Converter(_column_leaf(data), eager=True))
    if isinstance(result, pa.Scalar):
        return pa.array(np.full(data.num_rows, result.as_py(), dtype=bool), type=pa.bool_())
    return result


def filter_data(expr: BooleanExpression, data: pa.Table | pa.RecordBatch) -> pa.Table | pa.RecordBatch:
    """The rows of ``data`` that a bound ``expr`` matches."""
    return data.filter(evaluate(expr, data))


__all__ = ["arrow_scalar", "arrow_type", "evaluate", "filter_data", "to_arrow_expression"]
