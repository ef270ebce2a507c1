"""Spark's pushed filters (``pyspark.sql.datasource`` ``Filter``\\s) as Firn expressions.

Spark evaluates filters in SQL's three-valued logic and orders NaN above every other value;
Firn's expressions are two-valued (a predicate on null is false, except ``!=``, ``not_in``,
``not_starts_with`` and ``is_null``) and NaN is unordered (see ``firn.expressions``). Each
translation below keeps exactly the rows Spark keeps, so a translated filter is not handed
back to Spark:

* ``a > v`` / ``a >= v`` on a float column also keeps NaN (Spark: NaN is the largest value);
* ``NOT (a = v)`` is ``a != v and a is not null`` (Spark drops the null rows, Firn's ``!=``
  keeps them); likewise ``NOT IN`` and ``NOT LIKE 'p%'``;
* ``NOT (a > v)`` is ``a <= v`` (NaN and null drop out on both sides), ``NOT (a < v)`` is
  ``a >= v`` (plus NaN on float columns);
* ``a IN (..., null)`` ignores the null (it never matches); ``a <=> null`` is ``a is null``.

Filters that cannot be translated exactly are returned to Spark: ``LIKE '%x'`` and
``LIKE '%x%'``, NaN literals, ``NOT IN`` lists holding null, names that do not resolve, values
the column cannot bind, filters on uuid columns (see ``_value``), and any ``Not`` around
those. Nested fields are addressed by their dotted path (``s.x``); a path part containing a
dot is not pushed.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import cast

from pyspark.sql import datasource as sds

from firn.errors import FirnError
from firn.expressions import (
    AlwaysFalse,
    And,
    BooleanExpression,
    LiteralValue,
    Or,
    bind,
    equal_to,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal_to,
    not_in,
    not_null,
    not_starts_with,
    starts_with,
)
from firn.spec.schema import Schema
from firn.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    TimestamptzNanoType,
    TimestamptzType,
    UUIDType,
)


class _NotPushable(Exception):
    pass


def _name(path: tuple[str, ...]) -> str:
    if not path or any("." in part for part in path):
        raise _NotPushable
    return ".".join(path)


def _value(v: object, t: IcebergType) -> LiteralValue:
    if v is None:
        raise _NotPushable
    if isinstance(v, float) and math.isnan(v):
        raise _NotPushable
    if (
        isinstance(v, dt.datetime)
        and v.tzinfo is None
        and isinstance(t, TimestamptzType | TimestamptzNanoType)
    ):
        # PySpark hands instants over as aware UTC datetimes; a naive one would be read as UTC
        # by Firn, which is only right if it was meant so: leave it to Spark.
        raise _NotPushable
    if isinstance(t, UUIDType):
        # Spark compares a uuid column's canonical text, so 'ABCD...' or a hyphenless spelling
        # matches nothing there, while Firn parses any spelling as the UUID. Canonical text
        # would translate exactly, but Firn's Arrow row filter cannot yet compare an arrow.uuid
        # column with a literal (firn.io.parquet_read): every uuid filter stays with Spark.
        raise _NotPushable
    return cast(LiteralValue, v)


class FilterTranslator:
    """Translates pushed filters against one schema (the schema rows are read with)."""

    def __init__(self, schema: Schema, *, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive

    def _type(self, name: str) -> IcebergType:
        f = self.schema.find_field_or_none(name, case_sensitive=self.case_sensitive)
        if f is None:
            raise _NotPushable
        return f.field_type

    def _floating(self, name: str) -> bool:
        return isinstance(self._type(name), FloatType | DoubleType)

    def _with_nan(self, name: str, expr: BooleanExpression) -> BooleanExpression:
        return Or(expr, is_nan(name)) if self._floating(name) else expr

    def _translate(self, f: sds.Filter) -> BooleanExpression:
        if isinstance(f, sds.Not):
            return self._negate(f.child)
        if isinstance(f, sds.IsNull):
            return is_null(_name(f.attribute))
        if isinstance(f, sds.IsNotNull):
            return not_null(_name(f.attribute))
        name = _name(getattr(f, "attribute", ()))
        t = self._type(name)
        if isinstance(f, sds.EqualNullSafe):
            return is_null(name) if f.value is None else equal_to(name, _value(f.value, t))
        if isinstance(f, sds.EqualTo):
            return equal_to(name, _value(f.value, t))
        if isinstance(f, sds.GreaterThan):
            return self._with_nan(name, greater_than(name, _value(f.value, t)))
        if isinstance(f, sds.GreaterThanOrEqual):
            return self._with_nan(name, greater_than_or_equal(name, _value(f.value, t)))
        if isinstance(f, sds.LessThan):
            return less_than(name, _value(f.value, t))
        if isinstance(f, sds.LessThanOrEqual):
            return less_than_or_equal(name, _value(f.value, t))
        if isinstance(f, sds.In):
            values = [_value(v, t) for v in f.value if v is not None]
            return is_in(name, values) if values else AlwaysFalse()
        if isinstance(f, sds.StringStartsWith):
            return starts_with(name, f.value)
        raise _NotPushable

    def _negate(self, f: sds.Filter) -> BooleanExpression:
        if isinstance(f, sds.Not):
            return self._translate(f.child)
        if isinstance(f, sds.IsNull):
            return not_null(_name(f.attribute))
        if isinstance(f, sds.IsNotNull):
            return is_null(_name(f.attribute))
        name = _name(getattr(f, "attribute", ()))
        t = self._type(name)
        if isinstance(f, sds.EqualNullSafe):
            # NOT (a <=> v) holds for null a, as Firn's != does.
            return not_null(name) if f.value is None else not_equal_to(name, _value(f.value, t))
        if isinstance(f, sds.EqualTo):
            return And(not_equal_to(name, _value(f.value, t)), not_null(name))
        if isinstance(f, sds.GreaterThan):
            return less_than_or_equal(name, _value(f.value, t))
        if isinstance(f, sds.GreaterThanOrEqual):
            return less_than(name, _value(f.value, t))
        if isinstance(f, sds.LessThan):
            return self._with_nan(name, greater_than_or_equal(name, _value(f.value, t)))
        if isinstance(f, sds.LessThanOrEqual):
            return self._with_nan(name, greater_than(name, _value(f.value, t)))
        if isinstance(f, sds.In):
            if any(v is None for v in f.value):
                raise _NotPushable  # NOT IN (..., null) is never true: rare, left to Spark
            return And(not_in(name, [_value(v, t) for v in f.value]), not_null(name))
        if isinstance(f, sds.StringStartsWith):
            return And(not_starts_with(name, f.value), not_null(name))
        raise _NotPushable

    def translate(self, f: sds.Filter) -> BooleanExpression | None:
        """The Firn expression keeping exactly the rows Spark's filter keeps, or None."""
        try:
            expr = self._translate(f)
            bind(self.schema, expr, case_sensitive=self.case_sensitive)
        except (_NotPushable, FirnError):
            return None
        return expr

    def split(self, filters: Sequence[sds.Filter]) -> tuple[list[BooleanExpression], list[sds.Filter]]:
        """(translated expressions, filters left to Spark)."""
        pushed: list[BooleanExpression] = []
        rest: list[sds.Filter] = []
        for f in filters:
            expr = self.translate(f)
            if expr is None:
                rest.append(f)
            else:
                pushed.append(expr)
        return pushed, rest


__all__ = ["FilterTranslator"]
