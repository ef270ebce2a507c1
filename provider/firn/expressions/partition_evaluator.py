"""Evaluating a bound filter on partition tuples (and other flat tuples of internal values).

Planning calls this once per manifest entry, so the expression is compiled once into a single
Python function (generated source: ``lambda row: (row[0] is not None and row[0] >= _c0) and
row[1] in _c1``, with literals passed in a namespace, never spelled into the source), which
saves the call per node a tree of closures makes; evaluating a tuple is then a few index lookups
and comparisons, with ``and`` / ``or`` short-circuiting. Expressions too deeply nested for
Python's compiler fall back to the closure tree. Semantics are the package's two-valued ones (see
:mod:`firn.expressions`): a null value makes ``<``, ``=``, ``in``, ``starts_with`` and
``is_nan`` false and ``!=``, ``not_in``, ``not_starts_with`` and ``not_nan`` true; NaN makes
every comparison false except ``!=``. Floats compare as IEEE numbers (``-0.0 == 0.0``),
exactly like the Arrow evaluator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firn.expressions.binding import rewrite_not
from firn.expressions.predicates import InternalValue
from firn.expressions.projection import partition_struct, project_inclusive
from firn.expressions.terms import BoundReference
from firn.expressions.tree import BooleanExpression
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.types import StructType

# A compiled filter: takes a row (tuple of internal values) and says whether it matches.
RowPredicate = Callable[[Sequence[Any]], bool]


def _always(_: Sequence[Any]) -> bool:
    return True


def _never(_: Sequence[Any]) -> bool:
    return False


class _Compiler(BoundPredicateVisitor[RowPredicate]):
    def __init__(self, positions: Mapping[int, int]) -> None:
        self.positions = positions

    def pos(self, ref: BoundReference) -> int:
        try:
            return self.positions[ref.field_id]
        except KeyError:
            raise ValueError(
                f"field {ref.name!r} (id {ref.field_id}) is not in the evaluated struct"
            ) from None

    def visit_true(self) -> RowPredicate:
        return _always

    def visit_false(self) -> RowPredicate:
        return _never

    def visit_and(self, left_result: RowPredicate, right_result: RowPredicate) -> RowPredicate:
        return lambda row: left_result(row) and right_result(row)

    def visit_or(self, left_result: RowPredicate, right_result: RowPredicate) -> RowPredicate:
        return lambda row: left_result(row) or right_result(row)

    def visit_is_null(self, ref: BoundReference) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] is None

    def visit_not_null(self, ref: BoundReference) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] is not None

    def visit_is_nan(self, ref: BoundReference) -> RowPredicate:
        i = self.pos(ref)
        # NaN is the only value not equal to itself; None == None, so nulls are not NaN.
        return lambda row: row[i] != row[i]

    def visit_not_nan(self, ref: BoundReference) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] == row[i]

    # Python comparisons with NaN are already false, as the semantics require.
    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is not None and v < literal

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is not None and v <= literal

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is not None and v > literal

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is not None and v >= literal

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] == literal

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] != literal

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> RowPredicate:
        i = self.pos(ref)
        # Bound sets never contain None or NaN, so membership is false for both.
        return lambda row: row[i] in literals

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: row[i] not in literals

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is not None and v.startswith(prefix)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> RowPredicate:
        i = self.pos(ref)
        return lambda row: (v := row[i]) is None or not v.startswith(prefix)


@dataclass(frozen=True, slots=True)
class _Source:
    """A fragment of generated Python: an ``and`` / ``or`` chain (kept flat) or an atom."""

    kind: str  # "and", "or" or "atom"
    parts: tuple[str, ...]

    def text(self) -> str:
        if self.kind == "atom":
            return self.parts[0]
        return "(" + f" {self.kind} ".join(self.parts) + ")"


class _SourceCompiler(BoundPredicateVisitor[_Source]):
    def __init__(self, positions: Mapping[int, int]) -> None:
        self.positions = positions
        self.namespace: dict[str, object] = {}

    def const(self, value: object) -> str:
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def item(self, ref: BoundReference) -> str:
        try:
            return f"row[{self.positions[ref.field_id]}]"
        except KeyError:
            raise ValueError(
                f"field {ref.name!r} (id {ref.field_id}) is not in the evaluated struct"
            ) from None

    @staticmethod
    def atom(text: str) -> _Source:
        return _Source("atom", (text,))

    def chain(self, kind: str, left: _Source, right: _Source) -> _Source:
        parts = [*(left.parts if left.kind == kind else (left.text(),))]
        parts.extend(right.parts if right.kind == kind else (right.text(),))
        return _Source(kind, tuple(parts))

    def visit_true(self) -> _Source:
        return self.atom("True")

    def visit_false(self) -> _Source:
        return self.atom("False")

    def visit_and(self, left_result: _Source, right_result: _Source) -> _Source:
        return self.chain("and", left_result, right_result)

    def visit_or(self, left_result: _Source, right_result: _Source) -> _Source:
        return self.chain("or", left_result, right_result)

    def visit_is_null(self, ref: BoundReference) -> _Source:
        return self.atom(f"({self.item(ref)} is None)")

    def visit_not_null(self, ref: BoundReference) -> _Source:
        return self.atom(f"({self.item(ref)} is not None)")

    def visit_is_nan(self, ref: BoundReference) -> _Source:
        v = self.item(ref)
        return self.atom(f"({v} != {v})")

    def visit_not_nan(self, ref: BoundReference) -> _Source:
        v = self.item(ref)
        return self.atom(f"({v} == {v})")

    def _ordered(self, ref: BoundReference, op: str, literal: InternalValue) -> _Source:
        v = self.item(ref)
        return self.atom(f"({v} is not None and {v} {op} {self.const(literal)})")

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self._ordered(ref, "<", literal)

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self._ordered(ref, "<=", literal)

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self._ordered(ref, ">", literal)

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self._ordered(ref, ">=", literal)

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self.atom(f"({self.item(ref)} == {self.const(literal)})")

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> _Source:
        return self.atom(f"({self.item(ref)} != {self.const(literal)})")

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> _Source:
        return self.atom(f"({self.item(ref)} in {self.const(literals)})")

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> _Source:
        return self.atom(f"({self.item(ref)} not in {self.const(literals)})")

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> _Source:
        v = self.item(ref)
        return self.atom(f"({v} is not None and {v}.startswith({self.const(prefix)}))")

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> _Source:
        v = self.item(ref)
        return self.atom(f"({v} is None or not {v}.startswith({self.const(prefix)}))")


def compile_row_filter(expr: BooleanExpression, positions: Mapping[int, int]) -> RowPredicate:
    """Compile a bound expression over a flat struct into a function of one tuple.

    ``positions`` maps each referenced field id to its index in the tuple.
    """
    expr = rewrite_not(expr)
    compiler = _SourceCompiler(positions)
    source = visit(expr, compiler).text()
    try:
        code = compile(f"lambda row: {source}", "<firn row filter>", "eval")
    except (SyntaxError, RecursionError, MemoryError):
        return visit(expr, _Compiler(positions))
    # The generated lambda looks its constants up as globals; it needs no builtins. Every
    # fragment is a comparison or membership test, so the result is always a bool.
    fn: RowPredicate = eval(code, {"__builtins__": {}, **compiler.namespace})
    return fn


class PartitionEvaluator:
    """Evaluates a filter bound to a partition struct on partition tuples (spec field order).

    Build it from a row filter with :meth:`for_row_filter` (inclusive projection: a ``False``
    means no row of that partition can match), or from an already projected filter.
    """

    __slots__ = ("partition_filter", "partition_type", "predicate")

    def __init__(self, partition_type: StructType, partition_filter: BooleanExpression) -> None:
        self.partition_type = partition_type
        self.partition_filter = partition_filter
        positions = {f.field_id: i for i, f in enumerate(partition_type.fields)}
        #: The compiled filter itself; call it directly in hot loops to skip a method call.
        self.predicate: RowPredicate = compile_row_filter(partition_filter, positions)

    @classmethod
    def for_row_filter(
        cls,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
    ) -> PartitionEvaluator:
        """Inclusive projection of ``row_filter`` through ``spec``, compiled."""
        projected = project_inclusive(row_filter, spec, schema, case_sensitive=case_sensitive)
        return cls(partition_struct(spec, schema), projected)

    def eval(self, partition: Sequence[Any]) -> bool:
        """Whether the partition tuple matches the partition filter."""
        return self.predicate(partition)

    __call__ = eval


__all__ = ["PartitionEvaluator", "RowPredicate", "compile_row_filter"]
