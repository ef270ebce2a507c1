"""Filter expressions: building, parsing, binding, projecting and evaluating row filters.

Build filters with :func:`col` (``(col("id") > 5) & col("region").isin(["eu"])``) or
:func:`parse` (``parse("id > 5 and region in ('eu')")``), :func:`bind` them to a schema,
and hand them to the evaluators: :class:`ManifestEvaluator` (manifest-list partition
summaries), :class:`PartitionEvaluator` (partition tuples), :class:`InclusiveMetricsEvaluator`
and :class:`StrictMetricsEvaluator` (file metrics), :func:`columnar_metrics.might_match`
(columnar stats of many files at once, vectorized), :class:`ResidualEvaluator` (what remains
per partition), and :func:`evaluate` / :func:`to_arrow_expression` (rows, with Arrow).

Semantics
---------
Every evaluator uses the same **two-valued** logic; nothing evaluates to "unknown".

==================================  ============  ============
predicate                           null value    NaN value
==================================  ============  ============
``is_null``                         true          false
``not_null``                        false         true
``is_nan``                          false         true
``not_nan``                         true          false
``<``, ``<=``, ``>``, ``>=``, ``=``  false         false
``!=``                              true          true
``in``                              false         false
``not_in``                          true          true
``starts_with``                     false         n/a
``not_starts_with``                 true          n/a
==================================  ============  ============

So ``=`` / ``!=``, ``in`` / ``not_in``, ``starts_with`` / ``not_starts_with``, ``is_null`` /
``not_null`` and ``is_nan`` / ``not_nan`` are exact complements. ``<`` and ``>=`` are not
(both are false for null and NaN), so :func:`rewrite_not` turns ``not (x < v)`` into
``x >= v or x is null or x is nan`` (dropping the parts the field's type and nullability rule
out). Hence ``rewrite_not(Not(e))`` matches exactly the rows ``e`` does not: copy-on-write
deletes keep the complement of the delete filter, and a row is never in both or neither.

Floating-point values compare as IEEE numbers (``-0.0 = 0.0``; NaN is unordered); float
literals are rounded to the column's precision. Literals may be neither null nor NaN. Values
compare in Firn's internal representation (:mod:`firn.spec.values`): strings by code point,
binary and UUIDs as unsigned bytes, decimals by value.
"""

from __future__ import annotations

from firn.expressions.arrow import arrow_scalar, arrow_type, evaluate, filter_data, to_arrow_expression
from firn.expressions.binding import bind, bind_reference, rewrite_not
from firn.expressions.builder import (
    Column,
    col,
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
    not_nan,
    not_null,
    not_starts_with,
    starts_with,
)
from firn.expressions.describe import referenced_field_ids, referenced_names, to_string
from firn.expressions.inclusive_metrics import IN_PREDICATE_LIMIT, InclusiveMetricsEvaluator
from firn.expressions.manifest_evaluator import ManifestEvaluator
from firn.expressions.parser import parse
from firn.expressions.partition_evaluator import PartitionEvaluator, compile_row_filter
from firn.expressions.predicates import (
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    InternalValue,
    LiteralValue,
    Operation,
    UnboundLiteralPredicate,
    UnboundPredicate,
    UnboundSetPredicate,
    UnboundUnaryPredicate,
)
from firn.expressions.projection import partition_struct, project_inclusive, project_strict
from firn.expressions.residual import ResidualEvaluator
from firn.expressions.stats import FileStats
from firn.expressions.strict_metrics import StrictMetricsEvaluator
from firn.expressions.terms import BoundReference, Reference
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or, and_, not_, or_
from firn.expressions.visitors import BooleanExpressionVisitor, BoundPredicateVisitor, visit

__all__ = [
    "IN_PREDICATE_LIMIT",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BooleanExpressionVisitor",
    "BoundLiteralPredicate",
    "BoundPredicate",
    "BoundPredicateVisitor",
    "BoundReference",
    "BoundSetPredicate",
    "BoundUnaryPredicate",
    "Column",
    "FileStats",
    "InclusiveMetricsEvaluator",
    "InternalValue",
    "LiteralValue",
    "ManifestEvaluator",
    "Not",
    "Operation",
    "Or",
    "PartitionEvaluator",
    "Reference",
    "ResidualEvaluator",
    "StrictMetricsEvaluator",
    "UnboundLiteralPredicate",
    "UnboundPredicate",
    "UnboundSetPredicate",
    "UnboundUnaryPredicate",
    "and_",
    "arrow_scalar",
    "arrow_type",
    "bind",
    "bind_reference",
    "col",
    "compile_row_filter",
    "equal_to",
    "evaluate",
    "filter_data",
    "greater_than",
    "greater_than_or_equal",
    "is_in",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal_to",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "or_",
    "parse",
    "partition_struct",
    "project_inclusive",
    "project_strict",
    "referenced_field_ids",
    "referenced_names",
    "rewrite_not",
    "starts_with",
    "to_arrow_expression",
    "to_string",
    "visit",
]
