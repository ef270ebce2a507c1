"""Binding expressions to a schema, and pushing negations down (``rewrite_not``).

:func:`bind` resolves each column name to its field, converts literals to the field's
internal representation (:mod:`firn.expressions.literals`) and folds predicates whose
outcome the type already decides:

* ``is_null`` on a field that can never be null (it and its enclosing structs are required)
  is false, ``not_null`` true;
* ``is_nan`` on a non-floating-point column is false, ``not_nan`` true;
* a literal the column cannot hold is handled exactly: ``int_col < 2**40`` is
  ``not_null(int_col)``, ``int_col = 2**40`` is false, ``int_col > 5.5`` is ``int_col >= 6``;
* ``in`` with one value is ``=``, with none is false; ``not_in`` likewise;
* ``starts_with(s, '')`` is ``not_null(s)``;
* every predicate on a v3 ``unknown`` column (always null) is the constant its null
  semantics give.

:func:`rewrite_not` removes ``Not`` nodes while keeping the matched rows exactly the
complement (see the package docstring): ``not (x < 5)`` becomes
``x >= 5 or x is null or x is nan`` (the last two only when the field can be null / NaN),
because under two-valued semantics ``x < 5`` and ``x >= 5`` are *both* false for null and NaN.
"""

from __future__ import annotations

from firn.errors import ValidationError
from firn.expressions.describe import to_string
from firn.expressions.literals import Between, Converted, convert_literal
from firn.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    InternalValue,
    Operation,
    UnboundLiteralPredicate,
    UnboundPredicate,
    UnboundSetPredicate,
    UnboundUnaryPredicate,
)
from firn.expressions.terms import BoundReference, Reference
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
from firn.expressions.visitors import BooleanExpressionVisitor, visit
from firn.spec.schema import Schema
from firn.spec.types import (
    GeographyType,
    GeometryType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    UnknownType,
    VariantType,
)

# Operations that are true for a null value (package docstring, "Semantics").
TRUE_FOR_NULL = frozenset(
    {Operation.IS_NULL, Operation.NOT_NAN, Operation.NOT_EQ, Operation.NOT_IN, Operation.NOT_STARTS_WITH}
)


def filterable_columns(schema: Schema) -> list[str]:
    """Dotted names of the primitive columns a filter may reference (not inside lists or maps)."""
    out: list[str] = []

    def walk(fields: tuple[NestedField, ...], prefix: str) -> None:
        for f in fields:
            if isinstance(f.field_type, StructType):
                walk(f.field_type.fields, f"{prefix}{f.name}.")
            elif isinstance(f.field_type, PrimitiveType):
                out.append(prefix + f.name)

    walk(schema.fields, "")
    return out


def bind_reference(schema: Schema, name: str, *, case_sensitive: bool = True) -> BoundReference:
    """Resolve a (dotted) column name to a :class:`BoundReference`; raises ``ValidationError``."""
    field = schema.find_field_or_none(name, case_sensitive=case_sensitive)
    if field is None:
        hint = "" if case_sensitive else " (case-insensitive)"
        raise ValidationError(
            f"cannot bind filter: no column {name!r}{hint} in schema {schema.schema_id}; "
            f"columns are {filterable_columns(schema)}"
        )
    path = [field.name]
    never_null = field.required
    parent_id = schema.parent_id(field.field_id)
    while parent_id is not None:
        parent = schema.find_field(parent_id)
        if isinstance(parent.field_type, ListType | MapType):
            raise ValidationError(
                f"cannot filter on {name!r}: it is inside list or map column {parent.name!r}; "
                "filters apply to top-level and struct fields"
            )
        path.append(parent.name)
        never_null = never_null and parent.required
        parent_id = schema.parent_id(parent_id)
    if not isinstance(field.field_type, PrimitiveType):
        raise ValidationError(
            f"cannot filter on {name!r}: it is a {field.field_type}, not a primitive column"
        )
    if isinstance(field.field_type, VariantType | GeometryType | GeographyType):
        raise ValidationError(
            f"cannot filter on {name!r}: filters on {field.field_type} columns are not supported"
        )
    return BoundReference(field, tuple(reversed(path)), never_null)


def _convert(ref: BoundReference, op: Operation, value: object) -> Converted:
    converted = convert_literal(ref.field_type, value, column=ref.name)
    if isinstance(converted, float) and converted != converted:
        raise ValidationError(
            f"invalid literal for {ref.name} {op.value}: NaN cannot be compared, use is_nan"
        )
    return converted


def bind_unary(ref: BoundReference, op: Operation) -> BooleanExpression:
    """A unary predicate on a bound reference, folded when the type decides it."""
    if op is Operation.IS_NULL:
        return AlwaysFalse() if ref.never_null else BoundUnaryPredicate(op, ref)
    if op is Operation.NOT_NULL:
        return AlwaysTrue() if ref.never_null else BoundUnaryPredicate(op, ref)
    if op is Operation.IS_NAN:
        return BoundUnaryPredicate(op, ref) if ref.is_floating else AlwaysFalse()
    return BoundUnaryPredicate(op, ref) if ref.is_floating else AlwaysTrue()


def bind_literal(ref: BoundReference, op: Operation, value: object) -> BooleanExpression:
    """A literal predicate with a user literal, converted exactly (see module docstring)."""
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        if not isinstance(ref.field_type, StringType):
            raise ValidationError(
                f"cannot apply {op.value} to {ref.name!r} of type {ref.field_type}: needs a string"
            )
        if not isinstance(value, str):
            raise ValidationError(f"{op.value} on {ref.name!r} needs a string prefix, got {value!r}")
        if value == "":
            # Every non-null string starts with the empty prefix.
            return bind_unary(ref, Operation.NOT_NULL if op is Operation.STARTS_WITH else Operation.IS_NULL)
        return BoundLiteralPredicate(op, ref, value)
    converted = _convert(ref, op, value)
    if not isinstance(converted, Between):
        return BoundLiteralPredicate(op, ref, converted)
    # The literal lies strictly between two representable values: no stored value equals it,
    # so rewrite against its neighbours (module docstring).
    below, above = converted.below, converted.above
    if op is Operation.EQ:
        return AlwaysFalse()
    if op is Operation.NOT_EQ:
        return AlwaysTrue()
    if op in (Operation.LT, Operation.LT_EQ):
        if below is None:
            return AlwaysFalse()
        if above is None:  # literal above the type's range: every non-null value is below it
            return bind_unary(ref, Operation.NOT_NULL)
        return BoundLiteralPredicate(Operation.LT_EQ, ref, below)
    if above is None:
        return AlwaysFalse()
    if below is None:
        return bind_unary(ref, Operation.NOT_NULL)
    return BoundLiteralPredicate(Operation.GT_EQ, ref, above)


def bind_set(ref: BoundReference, op: Operation, literals: tuple[object, ...]) -> BooleanExpression:
    """An ``in`` / ``not_in`` predicate; unrepresentable literals can never match and are dropped."""
    kept: set[InternalValue] = set()
    for v in literals:
        converted = _convert(ref, op, v)
        if not isinstance(converted, Between):
            kept.add(converted)
    return make_set_predicate(ref, op, kept)


def make_set_predicate(ref: BoundReference, op: Operation, literals: set[InternalValue]) -> BooleanExpression:
    """``in`` / ``not_in`` over internal values, reduced to ``=`` / ``!=`` or a constant when small."""
    if not literals:
        return AlwaysFalse() if op is Operation.IN else AlwaysTrue()
    if len(literals) == 1:
        (only,) = literals
        return BoundLiteralPredicate(Operation.EQ if op is Operation.IN else Operation.NOT_EQ, ref, only)
    return BoundSetPredicate(op, ref, frozenset(literals))


class _Binder(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, schema: Schema, case_sensitive: bool) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        return Not(child_result)

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return And(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return Or(left_result, right_result)

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> BooleanExpression:
        ref = bind_reference(self.schema, predicate.ref.name, case_sensitive=self.case_sensitive)
        op = predicate.op
        if isinstance(ref.field_type, UnknownType):
            # v3 `unknown` columns are always null, so the outcome is the op's null semantics.
            return AlwaysTrue() if op in TRUE_FOR_NULL else AlwaysFalse()
        if isinstance(predicate, UnboundUnaryPredicate):
            return bind_unary(ref, op)
        if isinstance(predicate, UnboundLiteralPredicate):
            return bind_literal(ref, op, predicate.literal)
        assert isinstance(predicate, UnboundSetPredicate)
        return bind_set(ref, op, predicate.literals)

    def visit_bound_predicate(self, predicate: BoundPredicate) -> BooleanExpression:
        field = self.schema.find_field_or_none(predicate.ref.field_id)
        if field is None or field.field_type != predicate.ref.field_type:
            raise ValidationError(
                f"predicate {to_string(predicate)} is bound to field id {predicate.ref.field_id}, "
                f"which is not a {predicate.ref.field_type} field of schema {self.schema.schema_id}"
            )
        return predicate


def bind(schema: Schema, expr: BooleanExpression, *, case_sensitive: bool = True) -> BooleanExpression:
    """Bind ``expr`` to ``schema``: resolve names, convert literals, fold type-decided predicates.

    Raises ``ValidationError`` for unknown columns (listing the columns), literals that do
    not fit the column's type, and operations the type does not support. ``Not`` nodes are
    kept; apply :func:`rewrite_not` to remove them.
    """
    return visit(expr, _Binder(schema, case_sensitive))


# -- rewrite_not -----------------------------------------------------------------------------


def _complement_predicate(predicate: BooleanExpression) -> BooleanExpression:
    if isinstance(predicate, BoundPredicate):
        ref = predicate.ref
        op = predicate.op.negate()
        if isinstance(predicate, BoundUnaryPredicate):
            return bind_unary(ref, op)
        if isinstance(predicate, BoundSetPredicate):
            return BoundSetPredicate(op, ref, predicate.literals)
        assert isinstance(predicate, BoundLiteralPredicate)
        negated: BooleanExpression = BoundLiteralPredicate(op, ref, predicate.literal)
        if predicate.op.is_comparison:
            # <, <=, >, >= are false for null and NaN, and so are their negated operators;
            # add the rows neither side matches so that no row vanishes.
            negated = Or(negated, bind_unary(ref, Operation.IS_NULL), bind_unary(ref, Operation.IS_NAN))
        return negated
    if isinstance(predicate, UnboundPredicate):
        uref: Reference = predicate.ref
        op = predicate.op.negate()
        if isinstance(predicate, UnboundUnaryPredicate):
            return UnboundUnaryPredicate(op, uref)
        if isinstance(predicate, UnboundSetPredicate):
            return UnboundSetPredicate(op, uref, predicate.literals)
        assert isinstance(predicate, UnboundLiteralPredicate)
        unegated: BooleanExpression = UnboundLiteralPredicate(op, uref, predicate.literal)
        if predicate.op.is_comparison:
            # The type is not known yet; binding folds is_nan away for non-float columns and
            # is_null for required ones.
            unegated = Or(
                unegated,
                UnboundUnaryPredicate(Operation.IS_NULL, uref),
                UnboundUnaryPredicate(Operation.IS_NAN, uref),
            )
        return unegated
    raise TypeError(f"not a predicate: {predicate!r}")


def _negate(expr: BooleanExpression) -> BooleanExpression:
    if isinstance(expr, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expr, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expr, Not):
        return rewrite_not(expr.child)
    if isinstance(expr, And):
        return Or(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Or):
        return And(_negate(expr.left), _negate(expr.right))
    return _complement_predicate(expr)


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """Push every ``Not`` down into the predicates (De Morgan plus predicate complements).

    The result matches exactly the rows ``expr`` matches, with nulls and NaNs included, and
    contains no ``Not`` node. Works on bound and unbound expressions.
    """
    if isinstance(expr, Not):
        return _negate(expr.child)
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    return expr


__all__ = [
    "TRUE_FOR_NULL",
    "bind",
    "bind_literal",
    "bind_reference",
    "bind_set",
    "bind_unary",
    "filterable_columns",
    "make_set_predicate",
    "rewrite_not",
]
