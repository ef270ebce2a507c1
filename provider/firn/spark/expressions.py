"""Firn filter expressions as Spark ``Column``\\s that keep exactly the rows Firn keeps.

``firn.spark.read`` applies a scan's residual filters in Spark to the files Spark's own Parquet
reader reads, so those files must yield the rows Firn's reader would. Firn's semantics (see
``firn.expressions``, evaluated by ``firn.expressions.arrow``) differ from Spark SQL's in two
ways, both handled here:

* Firn predicates are two-valued: ``<``, ``=``, ``starts_with``, ``in``... are false for null,
  ``!=``, ``not_in`` and ``not_starts_with`` are true for null. Spark's are three-valued, so
  each predicate is wrapped in ``coalesce(p, <value for null>)``; ``and`` / ``or`` on
  never-null operands then agree.
* Firn compares floats as IEEE numbers (NaN matches no comparison, ``!=`` only), Spark orders
  NaN above every number, so ``>`` / ``>=`` on float and double columns exclude NaN
  explicitly. (``<``, ``<=``, ``=``, ``in`` already exclude it in Spark, ``!=`` includes it in
  both; both treat ``-0.0`` and ``0.0`` as equal.)

Literals are built so their values are exact whatever the session: ints and longs cast from
Python ints, floats cast to ``float`` (a ``float`` column compares as ``float``, as Firn's
Arrow scalar does), decimals from their plain text, dates and wall-clock timestamps from ISO
text (proleptic Gregorian, no time zone involved), instants from epoch microseconds.

Not expressible (``unsupported`` says why): uuid, time and nanosecond-timestamp columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from firn.errors import Unsupported
from firn.expressions import BooleanExpression
from firn.expressions.binding import rewrite_not
from firn.expressions.predicates import InternalValue
from firn.expressions.terms import BoundReference
from firn.expressions.visitors import BoundPredicateVisitor, visit
from firn.spec import types as it

_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


def quote_name(name: str) -> str:
    """A column name as Spark's ``col()`` reads it literally (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def column_of(path: tuple[str, ...]) -> Column:
    """The Spark column at a struct path (names taken literally, dots included)."""
    c = F.col(quote_name(path[0]))
    for part in path[1:]:
        c = c.getField(part)
    return c


def _literal(t: it.IcebergType, value: InternalValue) -> Column:
    if isinstance(t, it.BooleanType):
        return F.lit(bool(value))
    if isinstance(t, it.IntegerType):
        return F.lit(value).cast("int")
    if isinstance(t, it.LongType):
        return F.lit(value).cast("bigint")
    if isinstance(t, it.FloatType):
        return F.lit(float(value)).cast("float")  # type: ignore[arg-type]
    if isinstance(t, it.DoubleType):
        return F.lit(float(value))  # type: ignore[arg-type]
    if isinstance(t, it.DecimalType):
        assert isinstance(value, Decimal)
        return F.lit(format(value, "f")).cast(f"decimal({t.precision},{t.scale})")
    if isinstance(t, it.DateType):
        assert isinstance(value, int)
        try:
            day = _EPOCH_DAY + dt.timedelta(days=value)
        except OverflowError:
            raise Unsupported(
                f"date literal {value} (days from 1970-01-01) is outside years 1-9999"
            ) from None
        return F.lit(day.isoformat()).cast("date")
    if isinstance(t, it.TimestampType):
        assert isinstance(value, int)
        try:
            wall = _EPOCH + dt.timedelta(microseconds=value)
        except OverflowError:
            raise Unsupported(f"timestamp literal {value} us is outside years 1-9999") from None
        return F.lit(wall.isoformat(sep=" ", timespec="microseconds")).cast("timestamp_ntz")
    if isinstance(t, it.TimestamptzType):
        return F.timestamp_micros(F.lit(value).cast("bigint"))
    if isinstance(t, it.StringType):
        return F.lit(str(value))
    if isinstance(t, it.BinaryType | it.FixedType):
        assert isinstance(value, bytes)
        return F.lit(bytearray(value))
    raise Unsupported(f"Firn filters on {t} columns have no exact Spark form")


def _floating(ref: BoundReference) -> bool:
    return isinstance(ref.field_type, it.FloatType | it.DoubleType)


class _ToColumn(BoundPredicateVisitor[Column]):
    def visit_true(self) -> Column:
        return F.lit(True)

    def visit_false(self) -> Column:
        return F.lit(False)

    def visit_and(self, left_result: Column, right_result: Column) -> Column:
        return left_result & right_result

    def visit_or(self, left_result: Column, right_result: Column) -> Column:
        return left_result | right_result

    @staticmethod
    def _fill(c: Column, when_null: bool) -> Column:
        return F.coalesce(c, F.lit(when_null))

    def _compare(
        self, op: Callable[[Column, Column], Column], ref: BoundReference, value: InternalValue, null: bool
    ) -> Column:
        return self._fill(op(column_of(ref.path), _literal(ref.field_type, value)), null)

    def _above(self, ref: BoundReference, result: Column) -> Column:
        # Spark orders NaN above every number; in Firn NaN matches no comparison.
        return result & ~F.isnan(column_of(ref.path)) if _floating(ref) else result

    def visit_is_null(self, ref: BoundReference) -> Column:
        return column_of(ref.path).isNull()

    def visit_not_null(self, ref: BoundReference) -> Column:
        return column_of(ref.path).isNotNull()

    def visit_is_nan(self, ref: BoundReference) -> Column:
        return self._fill(F.isnan(column_of(ref.path)), False)

    def visit_not_nan(self, ref: BoundReference) -> Column:
        return ~self.visit_is_nan(ref)

    def visit_less_than(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._compare(lambda a, b: a < b, ref, literal, False)

    def visit_less_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._compare(lambda a, b: a <= b, ref, literal, False)

    def visit_greater_than(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._above(ref, self._compare(lambda a, b: a > b, ref, literal, False))

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._above(ref, self._compare(lambda a, b: a >= b, ref, literal, False))

    def visit_equal(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._compare(lambda a, b: a == b, ref, literal, False)

    def visit_not_equal(self, ref: BoundReference, literal: InternalValue) -> Column:
        return self._compare(lambda a, b: a != b, ref, literal, True)

    def visit_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> Column:
        values = [_literal(ref.field_type, v) for v in sorted(literals, key=repr)]
        return self._fill(column_of(ref.path).isin(*values), False)

    def visit_not_in(self, ref: BoundReference, literals: frozenset[InternalValue]) -> Column:
        return ~self.visit_in(ref, literals)

    def visit_starts_with(self, ref: BoundReference, prefix: str) -> Column:
        if not isinstance(ref.field_type, it.StringType):
            raise Unsupported(f"starts_with on a {ref.field_type} column has no exact Spark form")
        return self._fill(column_of(ref.path).startswith(F.lit(prefix)), False)

    def visit_not_starts_with(self, ref: BoundReference, prefix: str) -> Column:
        return ~self.visit_starts_with(ref, prefix)


def to_spark_column(expr: BooleanExpression) -> Column:
    """A Spark ``Column`` keeping exactly the rows the *bound* ``expr`` keeps (never null).
    Raises ``Unsupported`` for predicates with no exact Spark form (see the module docstring)."""
    return visit(rewrite_not(expr), _ToColumn())


def unsupported(expr: BooleanExpression) -> str | None:
    """Why the bound ``expr`` has no exact Spark form, or None when it has one."""
    try:
        to_spark_column(expr)
    except Unsupported as e:
        return str(e)
    return None


__all__ = ["column_of", "quote_name", "to_spark_column", "unsupported"]
