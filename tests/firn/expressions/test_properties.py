"""Property tests: every evaluator agrees with row-by-row evaluation on random data.

Rows include nulls, NaN, -0.0, infinities, pre-epoch dates and timestamps, and strings whose
bounds get truncated. Filters include out-of-range and fractional literals, negations and
every operation. The row-level reference is :func:`compile_row_filter` on Python tuples,
itself checked against the Arrow evaluator.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firn.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    Not,
    Or,
    PartitionEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    bind,
    col,
    compile_row_filter,
    evaluate,
    partition_struct,
    project_strict,
    rewrite_not,
    to_arrow_expression,
    visit,
)
from firn.expressions.partition_evaluator import _Compiler
from firn.spec import values
from firn.spec.content import DataFile, FileContent, FileFormat, PartitionFieldSummary
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
from firn.spec.types import DATE, DOUBLE, INT, LONG, STRING, TIMESTAMPTZ, DecimalType, NestedField

DEC = DecimalType(9, 2)
SCHEMA = Schema(
    NestedField(1, "i", INT),
    NestedField(2, "l", LONG, required=True),
    NestedField(3, "x", DOUBLE),
    NestedField(4, "s", STRING),
    NestedField(5, "dec", DEC),
    NestedField(6, "d", DATE),
    NestedField(7, "ts", TIMESTAMPTZ),
)
COLUMNS = [f.name for f in SCHEMA.fields]
TYPES = {f.field_id: f.field_type for f in SCHEMA.fields}
POSITIONS = {f.field_id: i for i, f in enumerate(SCHEMA.fields)}
ARROW_TYPES = [
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.string(),
    pa.decimal128(9, 2),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
]

HOUR = 3_600_000_000
DAY = 24 * HOUR
INF = math.inf
NAN = math.nan
EPOCH = dt.datetime(1970, 1, 1)

# Internal values each column's rows are drawn from (None = null).
ROW_VALUES: dict[str, list[Any]] = {
    # Not -(2**31): truncate[10] of it leaves the int range (Java's int arithmetic wraps).
    "i": [-(2**31) + 8, -12, -10, -1, 0, 1, 5, 9, 10, 11, 2**31 - 1, None],
    "l": [-5, 0, 3, 34, 100],
    "x": [-INF, -1.5, -0.0, 0.0, 1.0, 2.5, INF, NAN, None],
    "s": ["", "a", "ab", "abc", "abd", "abcdef", "b", "é", "éa", "zz", None],
    "dec": [Decimal(v) for v in ("-1.00", "0.00", "0.50", "1.50", "10.65", "99.99")] + [None],
    "d": [-400, -32, -1, 0, 1, 31, 59, 365, None],
    "ts": [-DAY - 1, -DAY, -HOUR - 1, -HOUR, -1, 0, 1, HOUR - 1, HOUR, DAY, DAY + 1, 40 * DAY, None],
}


def _iso(micros: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=micros)).isoformat(timespec="microseconds")


# User literals for each column: exact, between representable values, and out of range.
LITERALS: dict[str, list[Any]] = {
    "i": [-12, -10, -1, 0, 1, 5, 9, 10, 11, 2**31 - 1, -(2**31), 2**40, -(2**40), Decimal("5.5"), -0.5],
    "l": [-5, 0, 3, 34, 101, Decimal("3.5")],
    "x": [-INF, -1.5, -0.0, 0.0, 1.0, 2.0, 2.5, INF, Decimal("0.1")],
    "s": ["", "a", "ab", "abc", "abcd", "abd", "aa", "b", "c", "é", "zz"],
    "dec": [Decimal(v) for v in ("-1.00", "0.00", "0.50", "1.50", "1.505", "10.65", "10.7")] + [1, "0.5"],
    "d": [dt.date(1970, 1, 1) + dt.timedelta(days=v) for v in (-401, -400, -32, -1, 0, 1, 30, 31, 59, 366)]
    + [dt.datetime(1969, 12, 31, 12)],
    "ts": [_iso(v) for v in (-DAY - 1, -DAY, -HOUR, -1, 0, 1, HOUR, DAY, DAY + 1, 40 * DAY)]
    + ["1969-12-31T23:59:59.9999995+00:00", "1970-01-01"],
}
PREFIXES = ["", "a", "ab", "abc", "abcd", "b", "é", "z"]


@st.composite
def predicates(draw: st.DrawFn) -> BooleanExpression:
    name = draw(st.sampled_from(COLUMNS))
    c = col(name)
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "set", "unary", "prefix"]))
    if kind == "unary":
        return draw(st.sampled_from([c.is_null(), c.not_null(), c.is_nan(), c.not_nan()]))
    if kind == "prefix" and name == "s":
        prefix = draw(st.sampled_from(PREFIXES))
        return c.starts_with(prefix) if draw(st.booleans()) else c.not_starts_with(prefix)
    if kind == "set":
        lits = draw(st.lists(st.sampled_from(LITERALS[name]), min_size=0, max_size=4))
        return c.isin(lits) if draw(st.booleans()) else c.not_in(lits)
    v = draw(st.sampled_from(LITERALS[name]))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
    return {"<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v, "=": c == v, "!=": c != v}[op]


expressions = st.recursive(
    predicates() | st.sampled_from([AlwaysTrue(), AlwaysFalse()]),
    lambda children: st.one_of(
        st.tuples(children, children).map(lambda p: And(*p)),
        st.tuples(children, children).map(lambda p: Or(*p)),
        children.map(Not),
    ),
    max_leaves=6,
)
rows_strategy = st.lists(
    st.tuples(*(st.sampled_from(ROW_VALUES[c]) for c in COLUMNS)), min_size=0, max_size=12
)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {name: pa.array([r[i] for r in rows], type=ARROW_TYPES[i]) for i, name in enumerate(COLUMNS)}
    )


@SETTINGS
@given(expressions, rows_strategy)
def test_arrow_matches_rows_and_complement_is_exact(
    expr: BooleanExpression, rows: list[tuple[Any, ...]]
) -> None:
    bound = bind(SCHEMA, expr)
    table = _table(rows)
    expected = [compile_row_filter(bound, POSITIONS)(r) for r in rows]
    closures = visit(rewrite_not(bound), _Compiler(POSITIONS))  # the compiler's fallback path
    assert [closures(r) for r in rows] == expected
    mask = evaluate(bound, table).to_pylist()
    assert mask == expected
    assert table.filter(to_arrow_expression(bound)).num_rows == sum(expected)
    complement = rewrite_not(Not(bound))
    assert evaluate(complement, table).to_pylist() == [not v for v in expected]
    # Unbound rewrite then bind gives the same rows as bind then rewrite.
    assert evaluate(bind(SCHEMA, rewrite_not(Not(expr))), table).to_pylist() == [not v for v in expected]


# -- metrics --------------------------------------------------------------------------------------


def _ordinary(values_: list[Any]) -> list[Any]:
    return [v for v in values_ if v is not None and not (isinstance(v, float) and math.isnan(v))]


@st.composite
def data_files(draw: st.DrawFn, rows: list[tuple[Any, ...]]) -> DataFile:
    value_counts: dict[int, int] = {}
    null_counts: dict[int, int] = {}
    nan_counts: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    keep = st.sampled_from([True, True, True, False])  # each stat is sometimes missing
    for f in SCHEMA.fields:
        column = [r[POSITIONS[f.field_id]] for r in rows]
        if draw(keep):
            value_counts[f.field_id] = len(column)
        if draw(keep):
            null_counts[f.field_id] = sum(v is None for v in column)
        if f.field_type == DOUBLE and draw(keep):
            nan_counts[f.field_id] = sum(isinstance(v, float) and math.isnan(v) for v in column)
        ordinary = _ordinary(column)
        if not ordinary:
            continue
        key = values.sort_key(f.field_type)
        lo, hi = min(ordinary, key=key), max(ordinary, key=key)
        if f.field_type == STRING:
            width = draw(st.sampled_from([None, 1, 2, 3]))
            if width is not None:
                lo = values.truncate_lower_bound(STRING, lo, width)
                hi = values.truncate_upper_bound(STRING, hi, width)
        if draw(keep):
            lower[f.field_id] = values.to_bytes(f.field_type, lo)
        if hi is not None and draw(keep):
            upper[f.field_id] = values.to_bytes(f.field_type, hi)
    return DataFile(
        content=FileContent.DATA,
        file_path="mem://f.parquet",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=len(rows),
        file_size_in_bytes=1,
        value_counts=value_counts,
        null_value_counts=null_counts,
        nan_value_counts=nan_counts,
        lower_bounds=lower,
        upper_bounds=upper,
    )


@SETTINGS
@given(expressions, rows_strategy, st.data())
def test_metrics_evaluators_are_sound(
    expr: BooleanExpression, rows: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    file = data.draw(data_files(rows))
    matches = [compile_row_filter(bind(SCHEMA, expr), POSITIONS)(r) for r in rows]
    if any(matches):
        assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(file), (
            "inclusive rejected a file with matching rows"
        )
    if StrictMetricsEvaluator(SCHEMA, expr).eval(file):
        assert all(matches), "strict accepted a file with a non-matching row"


# -- partitions -----------------------------------------------------------------------------------

CANDIDATE_FIELDS: list[tuple[str, Transform]] = [
    ("i", IdentityTransform()),
    ("i", BucketTransform(4)),
    ("i", TruncateTransform(10)),
    ("l", BucketTransform(3)),
    ("l", IdentityTransform()),
    ("x", IdentityTransform()),
    ("s", TruncateTransform(2)),
    ("s", IdentityTransform()),
    ("s", BucketTransform(2)),
    ("dec", TruncateTransform(50)),
    ("d", YearTransform()),
    ("d", MonthTransform()),
    ("d", DayTransform()),
    ("d", IdentityTransform()),
    ("ts", DayTransform()),
    ("ts", HourTransform()),
    ("ts", MonthTransform()),
    ("ts", YearTransform()),
]
specs = st.lists(st.sampled_from(range(len(CANDIDATE_FIELDS))), min_size=1, max_size=4, unique=True).map(
    lambda picks: PartitionSpec(
        1,
        tuple(
            PartitionField(
                SCHEMA.find_field(CANDIDATE_FIELDS[k][0]).field_id,
                1000 + n,
                CANDIDATE_FIELDS[k][1],
                f"p{n}",
            )
            for n, k in enumerate(picks)
        ),
    )
)


def _partition(spec: PartitionSpec, row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(pf.transform.apply(TYPES[pf.source_id], row[POSITIONS[pf.source_id]]) for pf in spec.fields)


def _summaries(spec: PartitionSpec, partitions: list[tuple[Any, ...]]) -> tuple[PartitionFieldSummary, ...]:
    struct = partition_struct(spec, SCHEMA)
    out = []
    for i, f in enumerate(struct.fields):
        column = [p[i] for p in partitions]
        ordinary = _ordinary(column)
        key = values.sort_key(f.field_type)
        out.append(
            PartitionFieldSummary(
                contains_null=any(v is None for v in column),
                contains_nan=any(isinstance(v, float) and math.isnan(v) for v in column),
                lower_bound=values.to_bytes(f.field_type, min(ordinary, key=key)) if ordinary else None,
                upper_bound=values.to_bytes(f.field_type, max(ordinary, key=key)) if ordinary else None,
            )
        )
    return tuple(out)


@SETTINGS
@given(expressions, rows_strategy, specs)
def test_partition_pruning_and_residuals_are_sound(
    expr: BooleanExpression, rows: list[tuple[Any, ...]], spec: PartitionSpec
) -> None:
    bound = bind(SCHEMA, expr)
    row_filter = compile_row_filter(bound, POSITIONS)
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for r in rows:
        groups[_partition(spec, r)].append(r)

    inclusive = PartitionEvaluator.for_row_filter(spec, SCHEMA, expr)
    strict = PartitionEvaluator(partition_struct(spec, SCHEMA), project_strict(expr, spec, SCHEMA))
    residuals = ResidualEvaluator(spec, SCHEMA, expr)
    for partition, members in groups.items():
        matches = [row_filter(r) for r in members]
        if any(matches):
            assert inclusive.eval(partition), f"inclusive projection pruned matching partition {partition}"
        if strict.eval(partition):
            assert all(matches), f"strict projection accepted partition {partition} with non-matching rows"
        residual = compile_row_filter(residuals.residual_for(partition), POSITIONS)
        assert [residual(r) for r in members] == matches, f"residual changed results in {partition}"

    if rows:
        manifest = ManifestEvaluator.for_row_filter(spec, SCHEMA, expr)
        if any(row_filter(r) for r in rows):
            assert manifest.eval_summaries(_summaries(spec, list(groups))), (
                "manifest with matching rows pruned"
            )
