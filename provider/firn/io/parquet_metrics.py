"""Column metrics of Parquet data files (spec: "Field-level Metrics and Statistics", Appendix D).

Two sources, one result type:

* :func:`metrics_from_arrow` computes exact metrics from the Arrow data a writer is about to
  write (value, null and NaN counts; min/max bounds without NaN, with ``-0.0 < +0.0``).
* :func:`metrics_from_footer` derives them from the row-group statistics of an existing file
  (``add_files``): NaN counts are unknown there and left out.

Metrics modes follow Iceberg Java's ``MetricsConfig`` (a convention, not spec; see
``reference/notes/iceberg-format-notes.md`` §4): ``none``, ``counts``, ``truncate(N)`` and ``full``;
the default is ``truncate(16)``; ``write.metadata.metrics.column.<name>`` overrides one column;
without an explicit default, only the first ``write.metadata.metrics.max-inferred-column-defaults``
leaf columns get the default mode and the rest get ``none``; columns of the sort order get at least
``truncate(16)``. Bounds are kept only for leaves outside lists and maps, as in Java.
"""

from __future__ import annotations

import enum
import json
import math
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from firn.errors import InvalidMetadata, ValidationError
from firn.io.arrow_schema import arrow_scalar_to_internal, field_id_of, flat_values, is_list_like, storage
from firn.spec import values
from firn.spec.properties import METRICS_MODE_COLUMN_PREFIX, METRICS_MODE_DEFAULT, TableProperties
from firn.spec.schema import Schema
from firn.spec.sorting import SortOrder
from firn.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

# Java MetricsConfig's DEFAULT_MODE, used for inferred and sort-order columns.
DEFAULT_TRUNCATE_LENGTH = 16


class MetricsModeKind(enum.Enum):
    NONE = "none"
    COUNTS = "counts"
    TRUNCATE = "truncate"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """How much to record for a column; ``length`` is set for ``truncate(N)``."""

    kind: MetricsModeKind
    length: int | None = None

    @property
    def counts(self) -> bool:
        return self.kind is not MetricsModeKind.NONE

    @property
    def bounds(self) -> bool:
        return self.kind in (MetricsModeKind.TRUNCATE, MetricsModeKind.FULL)

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind is MetricsModeKind.TRUNCATE else self.kind.value


NONE = MetricsMode(MetricsModeKind.NONE)
COUNTS = MetricsMode(MetricsModeKind.COUNTS)
FULL = MetricsMode(MetricsModeKind.FULL)
DEFAULT_MODE = MetricsMode(MetricsModeKind.TRUNCATE, DEFAULT_TRUNCATE_LENGTH)
_TRUNCATE = re.compile(r"^truncate\(\s*(-?\d+)\s*\)$")


def parse_metrics_mode(text: str) -> MetricsMode:
    """Parse ``none``, ``counts``, ``truncate(N)`` (N > 0) or ``full`` (case-insensitive)."""
    t = str(text).strip().lower()
    for mode in (NONE, COUNTS, FULL):
        if t == mode.kind.value:
            return mode
    m = _TRUNCATE.match(t)
    if m:
        n = int(m.group(1))
        if n <= 0:
            raise ValidationError(f"metrics mode {text!r}: truncate length must be positive")
        return MetricsMode(MetricsModeKind.TRUNCATE, n)
    raise ValidationError(f"unknown metrics mode {text!r}; expected none, counts, truncate(N) or full")


def _leaves(t: IcebergType, prefix: str) -> Iterator[tuple[str, NestedField]]:
    """Primitive leaves under a type, depth first, with their full dotted names."""
    if isinstance(t, StructType | ListType | MapType):
        for f in t.fields:
            name = f"{prefix}{f.name}"
            if isinstance(f.field_type, PrimitiveType):
                yield name, f
            else:
                yield from _leaves(f.field_type, name + ".")


def column_metrics_modes(
    schema: Schema, properties: TableProperties, *, sort_order: SortOrder | None = None
) -> dict[int, MetricsMode]:
    """The metrics mode of every primitive leaf, keyed by field id (Java ``MetricsConfig``)."""
    leaves = list(_leaves(schema.as_struct(), ""))
    explicit_default = METRICS_MODE_DEFAULT in properties.raw
    default = parse_metrics_mode(properties.metrics_mode_default)
    inferred: set[int] | None = None
    if not explicit_default and len(leaves) > properties.metrics_max_inferred_columns:
        # Java: wide tables get metrics only for the first N leaf columns unless told otherwise.
        inferred = {f.field_id for _, f in leaves[: properties.metrics_max_inferred_columns]}
    sorted_ids = set()
    if sort_order is not None:
        sorted_ids = {sf.source_id for sf in sort_order.fields if sf.transform.preserves_order}
    modes: dict[int, MetricsMode] = {}
    for name, f in leaves:
        mode = default if inferred is None or f.field_id in inferred else NONE
        if f.field_id in sorted_ids and not mode.bounds:
            mode = DEFAULT_MODE
        override = properties.raw.get(METRICS_MODE_COLUMN_PREFIX + name)
        if override is not None:
            mode = parse_metrics_mode(override)
        modes[f.field_id] = mode
    return modes


@dataclass(frozen=True, slots=True)
class FileMetrics:
    """Per-column metrics of one data file, keyed by field id; bounds are Appendix D bytes."""

    record_count: int
    column_sizes: Mapping[int, int]
    value_counts: Mapping[int, int]
    null_value_counts: Mapping[int, int]
    nan_value_counts: Mapping[int, int]
    lower_bounds: Mapping[int, bytes]
    upper_bounds: Mapping[int, bytes]


# ---------------------------------------------------------------------------------------------
# Bounds helpers
# ---------------------------------------------------------------------------------------------
# Types with an Appendix D binary form and a total order, i.e. types that can have bounds.
_BOUNDED_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)


def _bounded_type(t: IcebergType) -> bool:
    return isinstance(t, _BOUNDED_TYPES)


def _serialize_bounds(
    t: IcebergType, mode: MetricsMode, lower: Any, upper: Any
) -> tuple[bytes | None, bytes | None]:
    if mode.kind is MetricsModeKind.TRUNCATE and isinstance(t, StringType | BinaryType):
        # Java's truncate(N): the prefix is a lower bound; the prefix with its last unit
        # incremented is an upper bound (none if every unit is already the maximum).
        assert mode.length is not None
        lower = values.truncate_lower_bound(t, lower, mode.length)
        upper = values.truncate_upper_bound(t, upper, mode.length)
    lo = values.to_bytes(t, lower) if lower is not None else None
    hi = values.to_bytes(t, upper) if upper is not None else None
    return lo, hi


class _Accumulator:
    """Collects metrics maps while walking columns."""

    def __init__(self) -> None:
        self.column_sizes: dict[int, int] = {}
        self.value_counts: dict[int, int] = {}
        self.null_counts: dict[int, int] = {}
        self.nan_counts: dict[int, int] = {}
        self.lower: dict[int, bytes] = {}
        self.upper: dict[int, bytes] = {}

    def result(self, record_count: int) -> FileMetrics:
        return FileMetrics(
            record_count,
            self.column_sizes,
            self.value_counts,
            self.null_counts,
            self.nan_counts,
            self.lower,
            self.upper,
        )


# ---------------------------------------------------------------------------------------------
# From Arrow data
# ---------------------------------------------------------------------------------------------
def _float_bounds(values_: pa.ChunkedArray, lo: float, hi: float) -> tuple[float, float]:
    """Apply ``-0.0 < +0.0`` (Appendix D) to min/max that Arrow computed with ``-0.0 == +0.0``."""
    if lo != 0.0 and hi != 0.0:
        return lo, hi
    neg_zero = pos_zero = False
    for chunk in values_.chunks:
        arr = chunk.to_numpy(zero_copy_only=False)
        zeros = arr == 0.0  # nulls come through as NaN, which compare unequal
        if zeros.any():
            signs = np.signbit(arr[zeros])
            neg_zero = neg_zero or bool(signs.any())
            pos_zero = pos_zero or bool((~signs).any())
    if lo == 0.0:
        lo = -0.0 if neg_zero else 0.0
    if hi == 0.0:
        hi = 0.0 if pos_zero else -0.0
    return lo, hi


def _arrow_bounds(t: IcebergType, values_: pa.ChunkedArray) -> tuple[Any, Any] | None:
    if values_.null_count == len(values_):
        return None
    if isinstance(values_.type, pa.BaseExtensionType):
        values_ = pa.chunked_array([storage(c) for c in values_.chunks], type=values_.type.storage_type)
    mm = pc.min_max(values_)
    lo_s, hi_s = mm["min"], mm["max"]
    if not lo_s.is_valid or not hi_s.is_valid:
        return None
    lo = arrow_scalar_to_internal(t, lo_s)
    hi = arrow_scalar_to_internal(t, hi_s)
    if isinstance(t, FloatType | DoubleType):
        # Arrow's min_max skips NaN unless every value is NaN; NaN is never a bound.
        if math.isnan(lo) or math.isnan(hi):
            return None
        lo, hi = _float_bounds(values_, lo, hi)
    elif isinstance(t, UUIDType) and isinstance(lo, bytes | bytearray):
        lo, hi = uuid.UUID(bytes=bytes(lo)), uuid.UUID(bytes=bytes(hi))
    return lo, hi


def _leaf_arrow_metrics(
    acc: _Accumulator, f: NestedField, values_: pa.ChunkedArray, mode: MetricsMode, repeated: bool
) -> None:
    fid = f.field_id
    t = f.field_type
    acc.value_counts[fid] = len(values_)
    acc.null_counts[fid] = values_.null_count
    if isinstance(t, FloatType | DoubleType):
        acc.nan_counts[fid] = int(pc.sum(pc.is_nan(values_)).as_py() or 0) if len(values_) else 0
    if not mode.bounds or repeated or not _bounded_type(t):
        return
    bounds = _arrow_bounds(t, values_)
    if bounds is None:
        return
    lo, hi = _serialize_bounds(t, mode, *bounds)
    if lo is not None:
        acc.lower[fid] = lo
    if hi is not None:
        acc.upper[fid] = hi


def _walk_arrow(
    acc: _Accumulator,
    f: NestedField,
    col: pa.ChunkedArray,
    modes: Mapping[int, MetricsMode],
    repeated: bool,
) -> None:
    t = f.field_type
    if isinstance(t, StructType):
        # ChunkedArray.flatten() merges the struct's validity into its children, so a child of
        # a null struct counts as a null value (as Parquet's definition levels do).
        for child, child_col in zip(t.fields, col.flatten()):
            _walk_arrow(acc, child, child_col, modes, repeated)
    elif isinstance(t, ListType):
        elements = pa.chunked_array([flat_values(c) for c in col.chunks], type=col.type.value_type)
        _walk_arrow(acc, t.element_field, elements, modes, True)
    elif isinstance(t, MapType):
        entries = [flat_values(c) for c in col.chunks]
        keys = pa.chunked_array([e.field(0) for e in entries], type=col.type.key_type)
        items = pa.chunked_array([e.field(1) for e in entries], type=col.type.item_type)
        _walk_arrow(acc, t.key_field, keys, modes, True)
        _walk_arrow(acc, t.value_field, items, modes, True)
    else:
        mode = modes.get(f.field_id, NONE)
        if mode.counts and not isinstance(t, UnknownType):
            _leaf_arrow_metrics(acc, f, col, mode, repeated)


def metrics_from_arrow(table: pa.Table, schema: Schema, modes: Mapping[int, MetricsMode]) -> FileMetrics:
    """Exact metrics of ``table`` (already conformed to ``schema``), without column sizes."""
    acc = _Accumulator()
    for f in schema.fields:
        if f.name in table.column_names:
            _walk_arrow(acc, f, table.column(f.name), modes, False)
    return acc.result(table.num_rows)


def parquet_leaf_field_ids(arrow_schema: pa.Schema) -> list[tuple[int | None, bool]]:
    """``(field id, under a list or map)`` of each Parquet leaf column, in file column order."""
    out: list[tuple[int | None, bool]] = []

    def visit(f: pa.Field, repeated: bool) -> None:
        dt = f.type
        if pa.types.is_struct(dt):
            for i in range(dt.num_fields):
                visit(dt.field(i), repeated)
        elif pa.types.is_map(dt):
            visit(dt.key_field, True)
            visit(dt.item_field, True)
        elif is_list_like(dt):
            visit(dt.value_field, True)
        else:
            out.append((field_id_of(f), repeated))

    for f in arrow_schema:
        visit(f, False)
    return out


def add_column_sizes(
    metrics: FileMetrics, metadata: pq.FileMetaData, arrow_schema: pa.Schema, modes: Mapping[int, MetricsMode]
) -> FileMetrics:
    """``metrics`` with ``column_sizes`` (compressed bytes per leaf) taken from a written footer."""
    leaves = parquet_leaf_field_ids(arrow_schema)
    if len(leaves) != metadata.num_columns:
        raise InvalidMetadata(
            f"Parquet footer has {metadata.num_columns} columns, schema has {len(leaves)} leaves"
        )
    sizes: dict[int, int] = {}
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for j, (fid, _) in enumerate(leaves):
            if fid is not None and modes.get(fid, NONE).counts:
                sizes[fid] = sizes.get(fid, 0) + group.column(j).total_compressed_size
    return FileMetrics(
        metrics.record_count,
        sizes,
        metrics.value_counts,
        metrics.null_value_counts,
        metrics.nan_value_counts,
        metrics.lower_bounds,
        metrics.upper_bounds,
    )


def split_offsets(metadata: pq.FileMetaData) -> tuple[int, ...]:
    """The file offset where each row group starts (its first page), ascending."""
    out = []
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        if group.num_columns == 0:
            continue
        col = group.column(0)
        start = col.data_page_offset
        if (
            col.has_dictionary_page
            and col.dictionary_page_offset is not None
            and 0 < col.dictionary_page_offset < start
        ):
            start = col.dictionary_page_offset
        out.append(start)
    return tuple(sorted(out))


# ---------------------------------------------------------------------------------------------
# From a Parquet footer
# ---------------------------------------------------------------------------------------------
_UNIT_PER_SECOND = {"milliseconds": 1_000, "microseconds": 1_000_000, "nanoseconds": 1_000_000_000}
_CONVERTED_UNITS = {
    "TIMESTAMP_MILLIS": "milliseconds",
    "TIMESTAMP_MICROS": "microseconds",
    "TIME_MILLIS": "milliseconds",
    "TIME_MICROS": "microseconds",
}


def _time_unit(column: pq.ColumnSchema) -> str | None:
    lt = column.logical_type
    if lt is not None and lt.type in ("TIMESTAMP", "TIME"):
        unit = json.loads(lt.to_json()).get("timeUnit")
        return str(unit) if unit is not None else None
    return _CONVERTED_UNITS.get(str(column.converted_type))


def _rescale(value: int, from_per_second: int, to_per_second: int, upper: bool) -> int:
    if from_per_second <= to_per_second:
        return value * (to_per_second // from_per_second)
    div = from_per_second // to_per_second
    # Coarsening must keep the bound valid: floor a lower bound, ceil an upper bound.
    return -((-value) // div) if upper else value // div


def _footer_value(t: IcebergType, column: pq.ColumnSchema, raw: Any, upper: bool) -> Any:
    """A row-group statistic (physical value) as an internal value of ``t``; None if unusable."""
    physical = column.physical_type
    if physical == "INT96":
        return None  # legacy timestamps: no usable ordering in statistics
    if isinstance(t, BooleanType):
        return bool(raw)
    if isinstance(t, IntegerType | LongType | DateType):
        return int(raw)
    if isinstance(t, FloatType | DoubleType):
        v = float(raw)
        return None if math.isnan(v) else v
    if isinstance(t, DecimalType):
        if isinstance(raw, bytes | bytearray):
            unscaled = int.from_bytes(raw, "big", signed=True)
        else:
            unscaled = int(raw)
        return values.decimal_from_unscaled(unscaled, t.scale) if column.scale == t.scale else None
    if isinstance(t, TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        unit = _time_unit(column)
        if unit not in _UNIT_PER_SECOND:
            return None
        target = 1_000_000_000 if isinstance(t, TimestampNanoType | TimestamptzNanoType) else 1_000_000
        return _rescale(int(raw), _UNIT_PER_SECOND[unit], target, upper)
    if isinstance(t, StringType):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(t, UUIDType):
        return uuid.UUID(bytes=bytes(raw)) if len(raw) == 16 else None
    if isinstance(t, BinaryType | FixedType):
        return bytes(raw)
    return None


def _normalize_zero(lo: Any, hi: Any) -> tuple[Any, Any]:
    # Parquet writers may record either zero; readers must widen to -0.0 / +0.0 (parquet-format).
    if isinstance(lo, float) and lo == 0.0:
        lo = -0.0
    if isinstance(hi, float) and hi == 0.0:
        hi = 0.0
    return lo, hi


def metrics_from_footer(
    metadata: pq.FileMetaData,
    schema: Schema,
    modes: Mapping[int, MetricsMode],
    *,
    arrow_schema: pa.Schema,
) -> FileMetrics:
    """Metrics of an existing file from its row-group statistics.

    ``arrow_schema`` is the file's Arrow schema with the field ids to use (from the file or a
    name mapping). Columns whose ids are not in ``schema`` are ignored. Counts or bounds that a
    row group does not record are left out for the whole file, since they would be wrong.
    """
    leaves = parquet_leaf_field_ids(arrow_schema)
    if len(leaves) != metadata.num_columns:
        raise InvalidMetadata(
            f"Parquet footer has {metadata.num_columns} columns, schema has {len(leaves)} leaves"
        )
    acc = _Accumulator()
    no_nulls: set[int] = set()
    no_bounds: set[int] = set()
    lows: dict[int, Any] = {}
    highs: dict[int, Any] = {}
    for j, (fid, repeated) in enumerate(leaves):
        f = schema.find_field_or_none(fid) if fid is not None else None
        if fid is None or f is None or not isinstance(f.field_type, PrimitiveType):
            continue
        mode = modes.get(fid, NONE)
        if not mode.counts:
            continue
        t = f.field_type
        column = metadata.schema.column(j)
        want_bounds = mode.bounds and not repeated and _bounded_type(t)
        for rg in range(metadata.num_row_groups):
            chunk = metadata.row_group(rg).column(j)
            acc.column_sizes[fid] = acc.column_sizes.get(fid, 0) + chunk.total_compressed_size
            acc.value_counts[fid] = acc.value_counts.get(fid, 0) + chunk.num_values
            stats = chunk.statistics if chunk.is_stats_set else None
            if stats is None or not stats.has_null_count:
                no_nulls.add(fid)
            else:
                acc.null_counts[fid] = acc.null_counts.get(fid, 0) + stats.null_count
            if not want_bounds:
                continue
            if stats is None:
                no_bounds.add(fid)
                continue
            if not stats.has_min_max:
                # A chunk of only nulls has no min/max and does not widen the bounds.
                if not (stats.has_null_count and stats.null_count >= chunk.num_values):
                    no_bounds.add(fid)
                continue
            lo = _footer_value(t, column, stats.min_raw, upper=False)
            hi = _footer_value(t, column, stats.max_raw, upper=True)
            if lo is None or hi is None:
                no_bounds.add(fid)
                continue
            lo, hi = _normalize_zero(lo, hi)
            key = values.sort_key(t)
            if fid not in lows or key(lo) < key(lows[fid]):
                lows[fid] = lo
            if fid not in highs or key(hi) > key(highs[fid]):
                highs[fid] = hi
    for fid in no_nulls:
        acc.null_counts.pop(fid, None)
    for fid, lo in lows.items():
        if fid in no_bounds:
            continue
        f = schema.find_field(fid)
        lo_b, hi_b = _serialize_bounds(f.field_type, modes[fid], lo, highs[fid])
        if lo_b is not None:
            acc.lower[fid] = lo_b
        if hi_b is not None:
            acc.upper[fid] = hi_b
    return acc.result(metadata.num_rows)


__all__ = [
    "COUNTS",
    "DEFAULT_MODE",
    "FULL",
    "NONE",
    "FileMetrics",
    "MetricsMode",
    "MetricsModeKind",
    "add_column_sizes",
    "column_metrics_modes",
    "metrics_from_arrow",
    "metrics_from_footer",
    "parquet_leaf_field_ids",
    "parse_metrics_mode",
    "split_offsets",
]
