"""Projecting row filters to partition filters (spec "Scan Planning", "Partition Transforms").

* **Inclusive** projection: if a row matches the row filter, its partition matches the
  projection. Used to select manifests and files that *may* hold matching rows.
* **Strict** projection: if a partition matches the projection, *every* row in it matches
  the row filter. Used for residuals and for dropping whole files in deletes.

The projection of a predicate on column ``c`` is combined over every partition field whose
source is ``c``: with AND for inclusive (each field narrows), with OR for strict (any field
proving it suffices). Columns without a partition field project to ``AlwaysTrue``
(inclusive) / ``AlwaysFalse`` (strict), as do ``void`` and unknown transforms (spec: readers
ignore unknown transforms when filtering). The input is bound to the table schema and made
NOT-free first; the output is bound to the spec's partition struct (field ids and names of
the partition fields), ready for :class:`~firn.expressions.partition_evaluator.PartitionEvaluator`
and :class:`~firn.expressions.manifest_evaluator.ManifestEvaluator`.

Per transform (``f`` the transform, ``v`` the literal, ``v±1`` the adjacent value of the
source type: 1 for ints, days or µs/ns, one unit of the last decimal place):

===========  =========================================  ==========================================
transform    inclusive                                  strict
===========  =========================================  ==========================================
identity     the same predicate                         the same predicate
bucket       ``=``, ``in`` on f(v)                      ``!=``, ``not_in`` on f(v)
truncate,    ``<`` → ``<= f(v-1)``, ``<=`` → ``<= f(v)``  ``<`` → ``< f(v)``, ``<=`` → ``< f(v+1)``
year, month, ``>`` → ``>= f(v+1)``, ``>=`` → ``>= f(v)``  ``>`` → ``> f(v)``, ``>=`` → ``> f(v-1)``
day, hour    ``=``, ``in`` on f(v)                      ``!=``, ``not_in`` on f(v)
===========  =========================================  ==========================================

String and binary truncation has no "adjacent value", so ``<`` and ``<=`` both project to
``<= f(v)`` (inclusive) and ``< f(v)`` (strict); ``starts_with`` projects exactly when the
prefix fits in the width. ``is_null`` / ``not_null`` pass through every transform but void
(all of them map null, and only null, to null).

Year/month/day/hour also apply Iceberg Java's correction for pre-epoch values
(``ProjectionUtil.fixInclusiveTimeProjection`` / ``fixStrictTimeProjection``): old Java
writers rounded negative values towards zero, so a partition value ``p < 0`` may hold rows
that belong to ``p - 1``. Inclusive projections widen to also accept ``p + 1`` for negative
``p``; strict ones narrow correspondingly. The correction only ever makes the projection
more conservative, so it is also right for correctly written tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal

from firn.expressions.binding import bind, make_set_predicate, rewrite_not
from firn.expressions.literals import type_range
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
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Or
from firn.expressions.visitors import BooleanExpressionVisitor, visit
from firn.spec.partitioning import PartitionField, PartitionSpec
from firn.spec.schema import Schema
from firn.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from firn.spec.types import (
    UNKNOWN,
    BinaryType,
    DecimalType,
    IcebergType,
    NestedField,
    StringType,
    StructType,
)

_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)
_TRUE: BooleanExpression = AlwaysTrue()
_FALSE: BooleanExpression = AlwaysFalse()


def partition_struct(spec: PartitionSpec, schema: Schema) -> StructType:
    """The partition tuple's struct type, tolerant of dropped source columns.

    Like :meth:`PartitionSpec.partition_type`, but a field whose source column is no longer in
    ``schema`` (or whose transform is unknown) gets the ``unknown`` type instead of raising:
    such fields are never filtered on, yet they keep their position in the tuple.
    """
    fields = []
    for pf in spec.fields:
        src = schema.find_field_or_none(pf.source_id)
        result: IcebergType = UNKNOWN
        if src is not None and pf.transform.can_transform(src.field_type):
            result = pf.transform.result_type(src.field_type)
        fields.append(NestedField(pf.field_id, pf.name, result, False))
    return StructType(*fields)


def partition_reference(pf: PartitionField, source_type: IcebergType) -> BoundReference:
    """A reference to partition field ``pf`` (partition values are always optional)."""
    result_type = pf.transform.result_type(source_type)
    return BoundReference(NestedField(pf.field_id, pf.name, result_type, False), (pf.name,), False)


# -- helpers -----------------------------------------------------------------------------------


def _adjacent(t: IcebergType, value: InternalValue, step: int) -> InternalValue | None:
    """The value ``step`` (±1) units away in an integer-like type, or None past the type's range."""
    if isinstance(t, DecimalType):
        assert isinstance(value, Decimal)
        limit = Decimal(10**t.precision - 1).scaleb(-t.scale)
        moved = value + Decimal(step).scaleb(-t.scale)
        return moved if -limit <= moved <= limit else None
    assert isinstance(value, int)
    lo, hi = type_range(t) or (-(2**63), 2**63 - 1)
    moved_int = value + step
    return moved_int if lo <= moved_int <= hi else None


def _pred(op: Operation, ref: BoundReference, value: InternalValue | None) -> BooleanExpression:
    return BoundLiteralPredicate(op, ref, value) if value is not None else _FALSE


def _set(op: Operation, ref: BoundReference, values: Iterable[InternalValue]) -> BooleanExpression:
    return make_set_predicate(ref, op, set(values))


def _applier(transform: Transform, source: IcebergType) -> Callable[[InternalValue], InternalValue]:
    """``transform`` applied to non-null literals of ``source`` type."""

    def apply(value: InternalValue) -> InternalValue:
        out = transform.apply(source, value)
        if out is None:
            raise ValueError(f"transform {transform} maps literal {value!r} of type {source} to null")
        result: InternalValue = out
        return result

    return apply


def _unary_passthrough(pred: BoundPredicate, part: BoundReference) -> BooleanExpression | None:
    """is_null / not_null survive every transform but void: null maps to null and only null."""
    if pred.op in (Operation.IS_NULL, Operation.NOT_NULL):
        return BoundUnaryPredicate(pred.op, part)
    return None


# -- per-transform projections -----------------------------------------------------------------


def _identity(pred: BoundPredicate, part: BoundReference, inclusive: bool) -> BooleanExpression:
    if isinstance(pred, BoundUnaryPredicate):
        return BoundUnaryPredicate(pred.op, part)
    if isinstance(pred, BoundSetPredicate):
        return BoundSetPredicate(pred.op, part, pred.literals)
    assert isinstance(pred, BoundLiteralPredicate)
    return BoundLiteralPredicate(pred.op, part, pred.literal)


def _bucket(
    transform: BucketTransform, pred: BoundPredicate, part: BoundReference, inclusive: bool
) -> BooleanExpression:
    passthrough = _unary_passthrough(pred, part)
    if passthrough is not None:
        return passthrough
    src = pred.ref.field_type

    f = _applier(transform, src)
    # Hashing keeps equality only: x = v implies bucket(x) = bucket(v), and
    # bucket(x) != bucket(v) implies x != v.
    want_eq, want_set = (Operation.EQ, Operation.IN) if inclusive else (Operation.NOT_EQ, Operation.NOT_IN)
    if isinstance(pred, BoundLiteralPredicate) and pred.op is want_eq:
        return BoundLiteralPredicate(pred.op, part, f(pred.literal))
    if isinstance(pred, BoundSetPredicate) and pred.op is want_set:
        return _set(pred.op, part, (f(v) for v in pred.literals))
    return _TRUE if inclusive else _FALSE


def _ordered_integer(
    f: Callable[[InternalValue], InternalValue],
    pred: BoundPredicate,
    part: BoundReference,
    inclusive: bool,
) -> BooleanExpression:
    """Monotonic transforms of integer-like sources (truncate of int/long/decimal, time units)."""
    passthrough = _unary_passthrough(pred, part)
    if passthrough is not None:
        return passthrough
    src = pred.ref.field_type
    op = pred.op
    if isinstance(pred, BoundSetPredicate):
        if (op is Operation.IN) == inclusive:
            return _set(op, part, (f(v) for v in pred.literals))
        return _TRUE if inclusive else _FALSE
    if not isinstance(pred, BoundLiteralPredicate):
        return _TRUE if inclusive else _FALSE
    v = pred.literal

    def at(step: int) -> InternalValue | None:
        moved = _adjacent(src, v, step) if step else v
        return None if moved is None else f(moved)

    if inclusive:
        # x < v  =>  x <= v-1  =>  f(x) <= f(v-1)   (monotonic f)
        if op is Operation.LT:
            return _pred(Operation.LT_EQ, part, at(-1))
        if op is Operation.LT_EQ:
            return _pred(Operation.LT_EQ, part, at(0))
        if op is Operation.GT:
            return _pred(Operation.GT_EQ, part, at(1))
        if op is Operation.GT_EQ:
            return _pred(Operation.GT_EQ, part, at(0))
        if op is Operation.EQ:
            return _pred(Operation.EQ, part, at(0))
        return _TRUE
    # strict: f(x) < f(v) implies x < v; f(x) < f(v+1) implies x <= v; f(x) != f(v) implies x != v.
    if op is Operation.LT:
        return _pred(Operation.LT, part, at(0))
    if op is Operation.LT_EQ:
        upper = at(1)
        # v is the type's maximum: every non-null value is <= v.
        return (
            _pred(Operation.LT, part, upper)
            if upper is not None
            else BoundUnaryPredicate(Operation.NOT_NULL, part)
        )
    if op is Operation.GT:
        return _pred(Operation.GT, part, at(0))
    if op is Operation.GT_EQ:
        lower = at(-1)
        return (
            _pred(Operation.GT, part, lower)
            if lower is not None
            else BoundUnaryPredicate(Operation.NOT_NULL, part)
        )
    if op is Operation.NOT_EQ:
        return _pred(Operation.NOT_EQ, part, at(0))
    return _FALSE


def _fix_inclusive_time(expr: BooleanExpression) -> BooleanExpression:
    """Java ``fixInclusiveTimeProjection``: also accept p+1 for negative partition values p."""
    if isinstance(expr, BoundLiteralPredicate):
        v = expr.literal
        assert isinstance(v, int)
        if v < 0 and expr.op is Operation.LT_EQ:
            return BoundLiteralPredicate(Operation.LT_EQ, expr.ref, v + 1)
        if v < 0 and expr.op is Operation.EQ:
            return BoundSetPredicate(Operation.IN, expr.ref, frozenset({v, v + 1}))
    elif isinstance(expr, BoundSetPredicate) and expr.op is Operation.IN:
        fixed = set(expr.literals)
        fixed.update(v + 1 for v in expr.literals if isinstance(v, int) and v < 0)
        return BoundSetPredicate(Operation.IN, expr.ref, frozenset(fixed))
    return expr


def _fix_strict_time(expr: BooleanExpression) -> BooleanExpression:
    """Java ``fixStrictTimeProjection``: exclude partitions that old writers may have mislabelled."""
    if isinstance(expr, BoundLiteralPredicate):
        v = expr.literal
        assert isinstance(v, int)
        if expr.op in (Operation.GT, Operation.GT_EQ) and v <= 0:
            return BoundLiteralPredicate(expr.op, expr.ref, v + 1)
        if expr.op is Operation.NOT_EQ and v < 0:
            return BoundSetPredicate(Operation.NOT_IN, expr.ref, frozenset({v, v + 1}))
    elif isinstance(expr, BoundSetPredicate) and expr.op is Operation.NOT_IN:
        fixed = set(expr.literals)
        fixed.update(v + 1 for v in expr.literals if isinstance(v, int) and v < 0)
        return BoundSetPredicate(Operation.NOT_IN, expr.ref, frozenset(fixed))
    return expr


def _truncate_text(
    transform: TruncateTransform, pred: BoundPredicate, part: BoundReference, inclusive: bool
) -> BooleanExpression:
    """truncate[W] of string or binary: prefixes of at most W code points (or bytes)."""
    passthrough = _unary_passthrough(pred, part)
    if passthrough is not None:
        return passthrough
    width = transform.width
    op = pred.op
    if isinstance(pred, BoundSetPredicate):
        if (op is Operation.IN) == inclusive:
            return _set(op, part, (v[:width] for v in pred.literals if isinstance(v, str | bytes)))
        return _TRUE if inclusive else _FALSE
    if not isinstance(pred, BoundLiteralPredicate):
        return _TRUE if inclusive else _FALSE
    v = pred.literal
    assert isinstance(v, str | bytes)
    t = v[:width]
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        assert isinstance(v, str)
        starts = op is Operation.STARTS_WITH
        if len(v) < width:
            # x starts with v  <=>  trunc(x) starts with v: exact, so valid both ways.
            return BoundLiteralPredicate(op, part, v)
        if len(v) == width:
            return BoundLiteralPredicate(Operation.EQ if starts else Operation.NOT_EQ, part, v)
        # Longer prefix: x starts with v implies trunc(x) = v[:W]; the converse does not hold.
        if starts:
            return BoundLiteralPredicate(Operation.EQ, part, t) if inclusive else _FALSE
        return BoundLiteralPredicate(Operation.NOT_EQ, part, t) if not inclusive else _TRUE
    if inclusive:
        if op in (Operation.LT, Operation.LT_EQ):
            return BoundLiteralPredicate(Operation.LT_EQ, part, t)
        if op in (Operation.GT, Operation.GT_EQ):
            return BoundLiteralPredicate(Operation.GT_EQ, part, t)
        if op is Operation.EQ:
            return BoundLiteralPredicate(Operation.EQ, part, t)
        return _TRUE
    # A prefix sorts no later than its string, so trunc(x) < trunc(v) implies x < v, and
    # trunc(x) > trunc(v) implies x > v (trunc(x) cannot be a proper prefix of trunc(v) then).
    if op in (Operation.LT, Operation.LT_EQ):
        return BoundLiteralPredicate(Operation.LT, part, t)
    if op in (Operation.GT, Operation.GT_EQ):
        return BoundLiteralPredicate(Operation.GT, part, t)
    if op is Operation.NOT_EQ:
        return BoundLiteralPredicate(Operation.NOT_EQ, part, t)
    return _FALSE


def project_predicate(pf: PartitionField, pred: BoundPredicate, *, inclusive: bool) -> BooleanExpression:
    """Project one bound predicate on ``pf``'s source column through ``pf``'s transform."""
    transform: Transform = pf.transform
    src = pred.ref.field_type
    unusable = _TRUE if inclusive else _FALSE
    if (pf.source_ids is not None and len(pf.source_ids) > 1) or not transform.can_transform(src):
        return unusable
    if isinstance(transform, IdentityTransform):
        return _identity(pred, partition_reference(pf, src), inclusive)
    if isinstance(transform, BucketTransform):
        return _bucket(transform, pred, partition_reference(pf, src), inclusive)
    if isinstance(transform, TruncateTransform):
        part = partition_reference(pf, src)
        if isinstance(src, StringType | BinaryType):
            return _truncate_text(transform, pred, part, inclusive)
        return _ordered_integer(_applier(transform, src), pred, part, inclusive)
    if isinstance(transform, _TIME_TRANSFORMS):
        part = partition_reference(pf, src)
        projected = _ordered_integer(_applier(transform, src), pred, part, inclusive)
        return _fix_inclusive_time(projected) if inclusive else _fix_strict_time(projected)
    # void and unknown transforms carry no information about the source value.
    return unusable


class _Projector(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, spec: PartitionSpec, inclusive: bool) -> None:
        self.inclusive = inclusive
        self.by_source: dict[int, list[PartitionField]] = {}
        for pf in spec.fields:
            self.by_source.setdefault(pf.source_id, []).append(pf)

    def visit_true(self) -> BooleanExpression:
        return _TRUE

    def visit_false(self) -> BooleanExpression:
        return _FALSE

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        raise TypeError("projection needs a NOT-free expression: apply rewrite_not first")

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return And(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return Or(left_result, right_result)

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> BooleanExpression:
        raise TypeError(f"projection needs a bound expression, got unbound {predicate!r}")

    def visit_bound_predicate(self, predicate: BoundPredicate) -> BooleanExpression:
        fields = self.by_source.get(predicate.ref.field_id, ())
        if self.inclusive:
            # Every field's projection must hold for a matching row: AND them.
            result = _TRUE
            for pf in fields:
                result = And(result, project_predicate(pf, predicate, inclusive=True))
            return result
        # Any one field's strict projection proves the predicate: OR them.
        result = _FALSE
        for pf in fields:
            result = Or(result, project_predicate(pf, predicate, inclusive=False))
        return result


def _prepare(expr: BooleanExpression, schema: Schema, case_sensitive: bool) -> BooleanExpression:
    return rewrite_not(bind(schema, expr, case_sensitive=case_sensitive))


def project_inclusive(
    expr: BooleanExpression, spec: PartitionSpec, schema: Schema, *, case_sensitive: bool = True
) -> BooleanExpression:
    """The inclusive projection of a row filter (bound or unbound) onto ``spec``'s partition struct."""
    return visit(_prepare(expr, schema, case_sensitive), _Projector(spec, inclusive=True))


def project_strict(
    expr: BooleanExpression, spec: PartitionSpec, schema: Schema, *, case_sensitive: bool = True
) -> BooleanExpression:
    """The strict projection of a row filter (bound or unbound) onto ``spec``'s partition struct."""
    return visit(_prepare(expr, schema, case_sensitive), _Projector(spec, inclusive=False))


__all__ = [
    "partition_reference",
    "partition_struct",
    "project_inclusive",
    "project_predicate",
    "project_strict",
]
