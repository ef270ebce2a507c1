"""Parquet data files: field ids, metrics (checked by brute force), footer metrics, projection reads."""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firn.errors import InvalidMetadata, ValidationError
from firn.io.arrow_schema import schema_to_arrow
from firn.io.base import FileIO
from firn.io.memory import InMemoryFileIO
from firn.io.parquet import (
    ParquetWriteResult,
    metrics_from_parquet_footer,
    parse_metrics_mode,
    read_parquet,
    read_parquet_table,
    write_parquet_file,
)
from firn.io.parquet_metrics import COUNTS, FULL, NONE, MetricsMode, MetricsModeKind, column_metrics_modes
from firn.io.pyarrow_io import PyArrowFileIO
from firn.spec import values
from firn.spec.name_mapping import create_mapping_from_schema, parse_name_mapping
from firn.spec.properties import TableProperties
from firn.spec.schema import Schema
from firn.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)

LOC = "memory://bucket/t/data/file.parquet"


@pytest.fixture(params=["memory", "local"])
def io(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileIO, str]]:
    if request.param == "memory":
        yield InMemoryFileIO(), LOC
    else:
        yield PyArrowFileIO(), str(tmp_path / "data" / "file.parquet")


def props(**kv: str) -> TableProperties:
    return TableProperties.parse(kv)


def wide_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "b", BOOLEAN),
        NestedField(3, "i", INT),
        NestedField(4, "f", FLOAT),
        NestedField(5, "d", DOUBLE),
        NestedField(6, "dec", DecimalType(12, 3)),
        NestedField(7, "date", DATE),
        NestedField(8, "time", TIME),
        NestedField(9, "ts", TIMESTAMP),
        NestedField(10, "tstz", TIMESTAMPTZ),
        NestedField(11, "s", STRING),
        NestedField(12, "u", UUID),
        NestedField(13, "fx", FixedType(3)),
        NestedField(14, "bin", BINARY),
        NestedField(15, "st", StructType(NestedField(16, "x", INT), NestedField(17, "y", STRING))),
        NestedField(18, "l", ListType(19, DOUBLE, element_required=False)),
        NestedField(20, "m", MapType(21, STRING, 22, LONG, value_required=False)),
    )


def random_table(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)

    def maybe(values: list[Any], p: float = 0.2) -> list[Any]:
        return [None if rng.random() < p else v for v in values]

    words = [
        "",
        "a",
        "zzz",
        "héllo wörld",
        "日本語のテキスト" * 3,
        "x" * 40,
        "\U0010ffff" * 20,
        "emoji 😀 text",
    ]
    floats = [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf"), -float("inf"), 3.0e38]
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "b": pa.array(maybe([bool(v) for v in rng.integers(0, 2, n)])),
            "i": pa.array(maybe([int(v) for v in rng.integers(-(2**31), 2**31, n)]), pa.int32()),
            "f": pa.array(maybe([floats[k] for k in rng.integers(0, len(floats), n)]), pa.float32()),
            "d": pa.array(maybe([floats[k] * 1.1 for k in rng.integers(0, len(floats), n)]), pa.float64()),
            "dec": pa.array(
                maybe([Decimal(int(v)).scaleb(-3) for v in rng.integers(-(10**11), 10**11, n)]),
                pa.decimal128(12, 3),
            ),
            "date": pa.array(maybe([int(v) for v in rng.integers(-30000, 30000, n)]), pa.date32()),
            "time": pa.array(maybe([int(v) for v in rng.integers(0, 86_400_000_000, n)]), pa.time64("us")),
            "ts": pa.array(maybe([int(v) for v in rng.integers(-(2**50), 2**50, n)]), pa.timestamp("us")),
            "tstz": pa.array(
                maybe([int(v) for v in rng.integers(-(2**50), 2**50, n)]), pa.timestamp("us", "UTC")
            ),
            "s": pa.array(maybe([words[k] + str(k % 3) for k in rng.integers(0, len(words), n)])),
            "u": pa.array(
                maybe([uuid.UUID(int=int(v)).bytes for v in rng.integers(0, 2**62, n)]), pa.binary(16)
            ),
            "fx": pa.array(maybe([bytes(rng.integers(0, 256, 3).tolist()) for _ in range(n)]), pa.binary(3)),
            "bin": pa.array(maybe([b"\xff" * int(k) + b"\x00" for k in rng.integers(0, 30, n)])),
            "st": pa.array(
                maybe([{"x": int(v), "y": words[int(v) % len(words)]} for v in rng.integers(-5, 5, n)]),
                pa.struct([("x", pa.int32()), ("y", pa.string())]),
            ),
            "l": pa.array(
                maybe([maybe([float(x) for x in rng.random(int(k))]) for k in rng.integers(0, 4, n)])
            ),
            "m": pa.array(
                maybe([[(f"k{j}", int(v)) for j in range(int(v) % 3)] for v in rng.integers(0, 100, n)]),
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )


# -- brute force reference -------------------------------------------------------------------------


def float_key(v: float) -> tuple[float, int]:
    # -0.0 sorts before +0.0 (Appendix D).
    return (v, 0 if math.copysign(1.0, v) < 0 else 1)


def truncate_upper(t: IcebergType, v: Any, n: int) -> Any:
    """Java's truncated max, written independently of firn.spec.values for cross-checking."""
    if len(v) <= n:
        return v
    if isinstance(t, PrimitiveType) and t == STRING:
        cps = [ord(c) for c in v[:n]]
        while cps:
            nxt = cps[-1] + 1
            if 0xD800 <= nxt <= 0xDFFF:
                nxt = 0xE000
            if nxt <= 0x10FFFF:
                return "".join(map(chr, cps[:-1])) + chr(nxt)
            cps.pop()
        return None
    bs = list(v[:n])
    while bs:
        if bs[-1] < 0xFF:
            bs[-1] += 1
            return bytes(bs)
        bs.pop()
    return None


def to_internal(t: IcebergType, v: Any) -> Any:
    if v is None:
        return None
    if t == DATE:
        return (v - dt.date(1970, 1, 1)).days
    if t == TIME:
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if t in (TIMESTAMP, TIMESTAMPTZ):
        epoch = dt.datetime(1970, 1, 1, tzinfo=v.tzinfo)
        d = v - epoch
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if t == UUID:
        return v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=v)
    return v


def expected_leaf(t: IcebergType, vals: list[Any], mode: MetricsMode, repeated: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"values": len(vals), "nulls": sum(v is None for v in vals)}
    present = [to_internal(t, v) for v in vals if v is not None]
    if t in (FLOAT, DOUBLE):
        out["nans"] = sum(1 for v in present if math.isnan(v))
        present = [v for v in present if not math.isnan(v)]
    if not mode.bounds or repeated or not present:
        return out
    if t in (FLOAT, DOUBLE):
        lo, hi = min(present, key=float_key), max(present, key=float_key)
    else:
        lo, hi = min(present), max(present)
    if mode.kind is MetricsModeKind.TRUNCATE and t in (STRING, BINARY):
        assert mode.length is not None
        lo, hi = lo[: mode.length], truncate_upper(t, hi, mode.length)
    out["lower"] = values.to_bytes(t, lo)
    if hi is not None:
        out["upper"] = values.to_bytes(t, hi)
    return out


def leaf_values(table: pa.Table, schema: Schema) -> dict[int, tuple[IcebergType, list[Any], bool]]:
    """Every leaf's values (None where the value or a parent struct is null), from Python lists."""
    out: dict[int, tuple[IcebergType, list[Any], bool]] = {}

    def walk(f: NestedField, vals: list[Any], repeated: bool) -> None:
        t = f.field_type
        if isinstance(t, StructType):
            for c in t.fields:
                walk(c, [None if v is None else v.get(c.name) for v in vals], repeated)
        elif isinstance(t, ListType):
            walk(t.element_field, [e for v in vals if v is not None for e in v], True)
        elif isinstance(t, MapType):
            entries = [kv for v in vals if v is not None for kv in v]
            walk(t.key_field, [k for k, _ in entries], True)
            walk(t.value_field, [x for _, x in entries], True)
        else:
            out[f.field_id] = (t, vals, repeated)

    for f in schema.fields:
        walk(f, table.column(f.name).to_pylist(), False)
    return out


def assert_metrics_exact(
    result: ParquetWriteResult, table: pa.Table, schema: Schema, p: TableProperties
) -> None:
    modes = column_metrics_modes(schema, p)
    m = result.metrics
    for fid, (t, vals, repeated) in leaf_values(table, schema).items():
        mode = modes[fid]
        if not mode.counts:
            for metric in (
                m.column_sizes,
                m.value_counts,
                m.null_value_counts,
                m.lower_bounds,
                m.upper_bounds,
            ):
                assert fid not in metric
            continue
        exp = expected_leaf(t, vals, mode, repeated)
        assert m.value_counts[fid] == exp["values"], fid
        assert m.null_value_counts[fid] == exp["nulls"], fid
        assert m.column_sizes[fid] > 0
        if t in (FLOAT, DOUBLE):
            assert m.nan_value_counts[fid] == exp["nans"], fid
        else:
            assert fid not in m.nan_value_counts
        assert m.lower_bounds.get(fid) == exp.get("lower"), (fid, t)
        assert m.upper_bounds.get(fid) == exp.get("upper"), (fid, t)


# -- writing ---------------------------------------------------------------------------------------


def parquet_field_ids(pf: pq.ParquetFile) -> dict[str, int]:
    """Field ids as stored in the Parquet schema itself (not the embedded Arrow schema)."""
    found = re.finditer(r"field_id=(-?\d+) (\w+)", str(pf.schema))
    return {m.group(2): int(m.group(1)) for m in found if int(m.group(1)) >= 0}


def test_written_file_has_parquet_field_ids_everywhere(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    schema = wide_schema()
    result = write_parquet_file(fio, loc, random_table(20), schema, props())
    with fio.new_input(loc).open_arrow() as f:
        pf = pq.ParquetFile(f)
        ids = parquet_field_ids(pf)
        text = str(pf.schema)
    for name in ("id", "b", "i", "dec", "u", "st", "x", "y", "l", "m", "key", "value"):
        assert (
            ids[name]
            == schema.find_field(
                {"x": "st.x", "y": "st.y", "key": "m.key", "value": "m.value"}.get(name, name)
            ).field_id
        )
    assert ids["element"] == 19
    # Appendix A: uuid as fixed[16] with the UUID logical type, small decimals as ints, time not UTC.
    assert re.search(r"fixed_len_byte_array\(16\) field_id=12 u \(UUID\)", text)
    assert re.search(r"int64 field_id=6 dec \(Decimal\(precision=12, scale=3\)\)", text)
    assert re.search(r"field_id=8 time \(Time\(isAdjustedToUTC=false", text)
    assert re.search(r"required int64 field_id=1 id", text)
    assert result.record_count == 20
    assert result.file_size_in_bytes == fio.new_input(loc).length()


def test_metrics_are_exact_with_default_truncation(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    table, schema, p = random_table(500), wide_schema(), props()
    result = write_parquet_file(fio, loc, table, schema, p)
    assert_metrics_exact(result, table, schema, p)
    # Long strings are truncated to 16 code points and the upper bound is incremented.
    assert len(result.metrics.lower_bounds[11].decode()) <= 16
    # Leaves inside lists and maps have counts but no bounds.
    assert 19 in result.metrics.value_counts and 19 not in result.metrics.lower_bounds
    assert 21 in result.metrics.value_counts and 22 not in result.metrics.upper_bounds


def test_metrics_modes_full_counts_none_and_column_overrides(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    table, schema = random_table(200, seed=3), wide_schema()
    p = props(
        **{
            "write.metadata.metrics.default": "full",
            "write.metadata.metrics.column.i": "none",
            "write.metadata.metrics.column.d": "counts",
            "write.metadata.metrics.column.st.y": "truncate(2)",
            "write.metadata.metrics.column.bin": "truncate(1)",
        }
    )
    result = write_parquet_file(fio, loc, table, schema, p)
    assert_metrics_exact(result, table, schema, p)
    m = result.metrics
    assert 3 not in m.value_counts and 3 not in m.column_sizes
    assert 5 in m.null_value_counts and 5 not in m.lower_bounds and 5 in m.nan_value_counts
    assert len(m.lower_bounds[17].decode()) <= 2
    # full mode keeps the whole longest string.
    longest = max(v for v in table.column("s").to_pylist() if v is not None)
    assert m.upper_bounds[11] == longest.encode()


def test_max_inferred_columns_limits_default_metrics(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    table, schema = random_table(50), wide_schema()
    p = props(**{"write.metadata.metrics.max-inferred-column-defaults": "3"})
    result = write_parquet_file(fio, loc, table, schema, p)
    # The first three leaves (id, b, i) get truncate(16); every other leaf gets none.
    assert set(result.metrics.value_counts) == {1, 2, 3}
    assert set(result.metrics.lower_bounds) == {1, 2, 3}
    assert_metrics_exact(result, table, schema, p)
    # An explicit default applies to every column again (Java).
    p2 = props(
        **{
            "write.metadata.metrics.max-inferred-column-defaults": "3",
            "write.metadata.metrics.default": "counts",
        }
    )
    modes = column_metrics_modes(schema, p2)
    assert all(m == COUNTS for m in modes.values())


def test_parse_metrics_mode() -> None:
    assert parse_metrics_mode("None") == NONE
    assert parse_metrics_mode(" full ") == FULL
    assert parse_metrics_mode("truncate(8)") == MetricsMode(MetricsModeKind.TRUNCATE, 8)
    assert str(parse_metrics_mode("TRUNCATE(8)")) == "truncate(8)"
    for bad in ("truncate(0)", "truncate", "most"):
        with pytest.raises(ValidationError):
            parse_metrics_mode(bad)


float_values = st.lists(
    st.one_of(st.none(), st.floats(width=32, allow_nan=True), st.sampled_from([0.0, -0.0])), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(float_values)
def test_float_bounds_property(vals: list[float | None]) -> None:
    schema = Schema(NestedField(1, "f", FLOAT), NestedField(2, "d", DOUBLE))
    table = pa.table({"f": pa.array(vals, pa.float32()), "d": pa.array(vals, pa.float64())})
    fio = InMemoryFileIO()
    p = props()
    result = write_parquet_file(fio, LOC, table, schema, p)
    assert_metrics_exact(result, table, schema, p)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(min_size=0, max_size=24)), max_size=20),
    st.lists(st.one_of(st.none(), st.binary(max_size=24)), max_size=20),
    st.integers(min_value=1, max_value=18),
)
def test_string_and_binary_truncation_property(
    strs: list[str | None], bins: list[bytes | None], n: int
) -> None:
    strs = [s.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if s else s for s in strs]
    schema = Schema(NestedField(1, "s", STRING), NestedField(2, "b", BINARY))
    size = max(len(strs), len(bins))
    strs += [None] * (size - len(strs))
    bins += [None] * (size - len(bins))
    table = pa.table({"s": pa.array(strs, pa.string()), "b": pa.array(bins, pa.binary())})
    p = props(**{"write.metadata.metrics.default": f"truncate({n})"})
    result = write_parquet_file(InMemoryFileIO(), LOC, table, schema, p)
    assert_metrics_exact(result, table, schema, p)


def test_all_max_bytes_have_no_upper_bound() -> None:
    schema = Schema(NestedField(1, "b", BINARY), NestedField(2, "s", STRING))
    table = pa.table({"b": [b"\xff" * 20], "s": ["\U0010ffff" * 20]})
    result = write_parquet_file(InMemoryFileIO(), LOC, table, schema, props())
    assert result.metrics.lower_bounds == {1: b"\xff" * 16, 2: ("\U0010ffff" * 16).encode()}
    assert result.metrics.upper_bounds == {}


def test_row_groups_split_offsets_codec_and_sizes(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
    table = pa.table({"id": pa.array(np.arange(10_000)), "s": [f"row-{i}" for i in range(10_000)]})
    p = props(
        **{"write.parquet.row-group-size-bytes": str(64 * 1024), "write.parquet.compression-codec": "gzip"}
    )
    result = write_parquet_file(fio, loc, table, schema, p)
    with fio.new_input(loc).open_arrow() as f:
        md = pq.ParquetFile(f).metadata
    assert md.num_row_groups > 1
    assert len(result.split_offsets) == md.num_row_groups
    assert list(result.split_offsets) == sorted(result.split_offsets)
    assert result.split_offsets[0] == 4  # right after the "PAR1" magic
    for rg in range(md.num_row_groups):
        col = md.row_group(rg).column(0)
        assert col.compression == "GZIP"
        assert result.split_offsets[rg] == min(
            o for o in (col.dictionary_page_offset, col.data_page_offset) if o is not None and o > 0
        )
    assert result.metrics.column_sizes[1] == sum(
        md.row_group(rg).column(0).total_compressed_size for rg in range(md.num_row_groups)
    )
    assert result.file_size_in_bytes == fio.new_input(loc).length()


def test_unknown_columns_are_not_written() -> None:
    schema = Schema(
        NestedField(1, "id", LONG),
        NestedField(2, "u", UNKNOWN),
        NestedField(3, "st", StructType(NestedField(4, "a", INT), NestedField(5, "z", UNKNOWN))),
    )
    fio = InMemoryFileIO()
    table = pa.table({"id": [1], "st": pa.array([{"a": 1}])})
    write_parquet_file(fio, LOC, table, schema, props())
    pf = pq.ParquetFile(fio.new_input(LOC).open_arrow())
    assert pf.metadata.num_columns == 2
    assert set(parquet_field_ids(pf).values()) == {1, 3, 4}
    # Reading projects the unknown columns back as nulls.
    out = read_parquet_table(fio, LOC, projected=schema)
    assert out.to_pylist() == [{"id": 1, "u": None, "st": {"a": 1, "z": None}}]


def test_failed_write_leaves_no_file() -> None:
    fio = InMemoryFileIO()
    schema = Schema(NestedField(1, "id", LONG, required=True))
    with pytest.raises(ValidationError):
        write_parquet_file(fio, LOC, pa.table({"id": [None, 1]}), schema, props())
    assert LOC not in fio


# -- footer metrics (add_files) -------------------------------------------------------------------


def test_footer_metrics_match_data_metrics(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    table, schema, p = random_table(300, seed=11), wide_schema(), props()
    written = write_parquet_file(fio, loc, table, schema, p)
    footer = metrics_from_parquet_footer(fio, loc, schema, p)
    assert footer.record_count == written.record_count
    assert footer.file_size_in_bytes == written.file_size_in_bytes
    assert footer.split_offsets == written.split_offsets
    assert footer.metrics.column_sizes == written.metrics.column_sizes
    top_level = {f.field_id for f in schema.fields} | {16, 17}
    for fid in top_level & set(written.metrics.value_counts):
        assert footer.metrics.value_counts[fid] == written.metrics.value_counts[fid]
        assert footer.metrics.null_value_counts[fid] == written.metrics.null_value_counts[fid]
    # NaN counts are not in Parquet statistics.
    assert footer.metrics.nan_value_counts == {}
    for fid, lo in footer.metrics.lower_bounds.items():
        t = schema.find_type(fid)
        key = values.sort_key(t)
        # Footer bounds must bound the data: never tighter than the exact bounds.
        assert key(values.from_bytes(t, lo)) <= key(values.from_bytes(t, written.metrics.lower_bounds[fid]))
    for fid in (1, 3, 6, 7, 8, 9, 10, 12, 13, 16):
        assert footer.metrics.lower_bounds[fid] == written.metrics.lower_bounds[fid], fid
        assert footer.metrics.upper_bounds[fid] == written.metrics.upper_bounds[fid], fid
    assert footer.metrics.lower_bounds[11] == written.metrics.lower_bounds[11]
    assert footer.metrics.upper_bounds.get(11) == written.metrics.upper_bounds.get(11)


def plain_parquet(fio: FileIO, loc: str, table: pa.Table, **kwargs: Any) -> None:
    with fio.new_output(loc).open_arrow() as out:
        pq.write_table(table, out, **kwargs)


def test_footer_metrics_of_file_without_ids_need_a_name_mapping() -> None:
    fio = InMemoryFileIO()
    table = pa.table(
        {
            "record_id": pa.array([3, 1, 2], pa.int32()),
            "ts": pa.array([1_000, None, 3_000], pa.timestamp("ms")),
            "name": ["b", "a", None],
        }
    )
    plain_parquet(fio, LOC, table)
    schema = Schema(
        NestedField(1, "id", LONG), NestedField(2, "ts", TIMESTAMP), NestedField(3, "name", STRING)
    )
    with pytest.raises(ValidationError, match="no Iceberg field ids"):
        metrics_from_parquet_footer(fio, LOC, schema, props())
    mapping_json = (
        '[{"field-id": 1, "names": ["id", "record_id"]}, {"field-id": 2, "names": ["ts"]},'
        ' {"field-id": 3, "names": ["name"]}]'
    )
    for kwargs, p in (
        ({"name_mapping": parse_name_mapping(mapping_json)}, props()),
        ({}, props(**{"schema.name-mapping.default": mapping_json})),
    ):
        r = metrics_from_parquet_footer(fio, LOC, schema, p, **kwargs)
        m = r.metrics
        assert r.record_count == 3
        assert m.value_counts == {1: 3, 2: 3, 3: 3}
        assert m.null_value_counts == {1: 0, 2: 1, 3: 1}
        # int32 statistics become long bounds; ms timestamps become µs.
        assert m.lower_bounds[1] == struct.pack("<q", 1) and m.upper_bounds[1] == struct.pack("<q", 3)
        assert m.lower_bounds[2] == struct.pack("<q", 1_000_000)
        assert m.upper_bounds[2] == struct.pack("<q", 3_000_000)
        assert (m.lower_bounds[3], m.upper_bounds[3]) == (b"a", b"b")


def test_footer_metrics_zero_and_all_null_row_groups() -> None:
    fio = InMemoryFileIO()
    schema = Schema(NestedField(1, "d", DOUBLE), NestedField(2, "n", LONG))
    table = pa.table(
        {"d": pa.array([0.0, 0.0, 1.0, None]), "n": pa.array([None, None, None, None], pa.int64())}
    )
    plain_parquet(fio, LOC, table.cast(schema_to_arrow(schema)), row_group_size=2)
    m = metrics_from_parquet_footer(fio, LOC, schema, props()).metrics
    # Parquet readers must widen a zero minimum to -0.0 (parquet-format); max stays +0.0 or above.
    assert m.lower_bounds[1] == struct.pack("<d", -0.0)
    assert m.upper_bounds[1] == struct.pack("<d", 1.0)
    assert m.null_value_counts == {1: 1, 2: 4}
    assert 2 not in m.lower_bounds


# -- reading -------------------------------------------------------------------------------------


def written_file(fio: FileIO, loc: str, *, row_group_rows: int | None = None) -> tuple[Schema, pa.Table]:
    schema = Schema(
        NestedField(1, "a", INT, required=True),
        NestedField(2, "b", STRING),
        NestedField(3, "c", FLOAT),
        NestedField(4, "dec", DecimalType(5, 2)),
        NestedField(5, "day", DATE),
        NestedField(6, "pt", StructType(NestedField(7, "x", INT), NestedField(8, "y", FLOAT))),
        NestedField(9, "pts", ListType(10, StructType(NestedField(11, "v", INT)), True)),
        NestedField(12, "m", MapType(13, STRING, 14, FLOAT, False)),
    )
    n = 100
    table = pa.table(
        {
            "a": pa.array(np.arange(n), pa.int32()),
            "b": [f"s{i}" for i in range(n)],
            "c": pa.array(np.arange(n) / 2, pa.float32()),
            "dec": [Decimal(i).scaleb(-2) for i in range(n)],
            "day": pa.array(np.arange(n), pa.int32()).cast(pa.date32()),
            "pt": [None if i % 10 == 0 else {"x": i, "y": i / 4} for i in range(n)],
            "pts": [[{"v": i}, {"v": -i}] for i in range(n)],
            "m": pa.array(
                [[("k", i / 8)] if i % 2 else None for i in range(n)], pa.map_(pa.string(), pa.float32())
            ),
        }
    )
    p = props()
    if row_group_rows is not None:
        per_row = table.nbytes / n
        p = props(**{"write.parquet.row-group-size-bytes": str(int(per_row * row_group_rows))})
    write_parquet_file(fio, loc, table, schema, p)
    return schema, table


def test_read_renamed_reordered_added_and_promoted_columns(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    written_file(fio, loc)
    projected = Schema(
        NestedField(5, "when", TIMESTAMP),  # date -> timestamp (v3 promotion), renamed
        NestedField(3, "c_double", DOUBLE),  # float -> double
        NestedField(20, "added", STRING),  # not in the file: nulls
        NestedField(21, "with_default", LONG, initial_default=42),  # initial-default
        NestedField(1, "a_long", LONG, required=True),  # int -> long
        NestedField(4, "dec", DecimalType(9, 2)),  # precision widening
    )
    out = read_parquet_table(fio, loc, projected=projected)
    assert out.schema.equals(schema_to_arrow(projected), check_metadata=True)
    assert out.num_rows == 100
    assert out.column("a_long").to_pylist() == list(range(100))
    assert out.column("c_double").to_pylist() == [i / 2 for i in range(100)]
    assert out.column("added").null_count == 100
    assert out.column("with_default").to_pylist() == [42] * 100
    assert out.column("when").to_pylist()[3] == dt.datetime(1970, 1, 4)
    assert out.column("dec").to_pylist()[7] == Decimal("0.07")


def test_read_nested_projection_with_renames_defaults_and_promotion(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    written_file(fio, loc)
    projected = Schema(
        NestedField(
            6,
            "point",
            StructType(
                NestedField(8, "yy", DOUBLE),
                NestedField(30, "z", INT, initial_default=-1),
            ),
        ),
        NestedField(
            9, "pts", ListType(10, StructType(NestedField(11, "v", LONG), NestedField(31, "w", STRING)), True)
        ),
        NestedField(12, "m", MapType(13, STRING, 14, DOUBLE, False)),
    )
    rows = read_parquet_table(fio, loc, projected=projected).to_pylist()
    assert rows[0]["point"] is None  # the struct itself was null
    assert rows[5]["point"] == {"yy": 1.25, "z": -1}
    assert rows[3]["pts"] == [{"v": 3, "w": None}, {"v": -3, "w": None}]
    assert rows[3]["m"] == [("k", 3 / 8)] and rows[4]["m"] is None


def test_read_only_struct_validity_when_no_child_is_in_file() -> None:
    fio = InMemoryFileIO()
    written_file(fio, LOC)
    projected = Schema(NestedField(6, "pt", StructType(NestedField(40, "new", INT))))
    rows = read_parquet_table(fio, LOC, projected=projected).column("pt").to_pylist()
    assert rows[0] is None and rows[1] == {"new": None}


def test_partition_constants_fill_missing_identity_columns() -> None:
    fio = InMemoryFileIO()
    written_file(fio, LOC)
    projected = Schema(
        NestedField(1, "a", INT, required=True),
        NestedField(50, "region", STRING),
        NestedField(51, "day", DATE, initial_default=0),
    )
    out = read_parquet_table(fio, LOC, projected=projected, partition_constants={50: "eu", 51: 19724, 1: 999})
    assert set(out.column("region").to_pylist()) == {"eu"}
    assert set(out.column("day").to_pylist()) == {dt.date(2024, 1, 2)}
    # Columns present in the file are never replaced by constants.
    assert out.column("a").to_pylist() == list(range(100))


def test_unknown_projection_ignores_file_column_and_bad_types_fail() -> None:
    fio = InMemoryFileIO()
    written_file(fio, LOC)
    out = read_parquet_table(fio, LOC, projected=Schema(NestedField(2, "b", UNKNOWN)))
    assert out.column("b").null_count == 100 and out.column("b").type == pa.null()
    with pytest.raises(InvalidMetadata, match="'b' is string in the file and cannot be read as long"):
        read_parquet_table(fio, LOC, projected=Schema(NestedField(2, "b", LONG)))
    with pytest.raises(InvalidMetadata, match="'pt'"):
        read_parquet_table(fio, LOC, projected=Schema(NestedField(6, "pt", LONG)))


def test_row_filter_and_positions_across_row_groups(io: tuple[FileIO, str]) -> None:
    fio, loc = io
    written_file(fio, loc, row_group_rows=10)
    with fio.new_input(loc).open_arrow() as f:
        assert pq.ParquetFile(f).metadata.num_row_groups >= 5
    projected = Schema(NestedField(2, "name", STRING), NestedField(1, "a", LONG, required=True))
    expr = ((pc.field("a") >= 17) & (pc.field("a") < 23)) | (pc.field("name") == "s95")
    batches = list(
        read_parquet(fio, loc, projected=projected, row_filter=expr, include_pos=True, batch_size=4)
    )
    out = pa.Table.from_batches(batches)
    assert out.column_names == ["name", "a", "_pos"]
    assert out.column("a").to_pylist() == [17, 18, 19, 20, 21, 22, 95]
    # Row i of the file has a == i, so positions equal the ids.
    assert out.column("_pos").to_pylist() == out.column("a").to_pylist()
    assert all(b.num_rows <= 4 for b in batches)
    # Unfiltered positions cover the file exactly once.
    streamed = list(read_parquet(fio, loc, projected=projected, include_pos=True, batch_size=7))
    assert max(b.num_rows for b in streamed) == 7
    assert pa.Table.from_batches(streamed).column("_pos").to_pylist() == list(range(100))
    whole = read_parquet_table(fio, loc, projected=projected, include_pos=True)
    assert whole.column("_pos").to_pylist() == list(range(100))
    filtered = read_parquet_table(fio, loc, projected=projected, row_filter=expr, include_pos=True)
    assert filtered.equals(out)


def test_row_group_pruning_with_renamed_reordered_columns() -> None:
    from firn.io.parquet_read import _build_nodes, _Projection, _prune_row_groups

    fio = InMemoryFileIO()
    written_file(fio, LOC, row_group_rows=10)
    projected = Schema(
        NestedField(6, "point", StructType(NestedField(8, "yy", FLOAT), NestedField(7, "xx", INT))),
        NestedField(2, "name", STRING),
        NestedField(1, "ident", INT, required=True),
    )
    nf = fio.new_input(LOC).open_arrow()
    pf = pq.ParquetFile(nf)
    proj = _Projection(LOC, _build_nodes(pf.schema_arrow), projected, {}, False)
    total = pf.metadata.num_row_groups
    pruned = _prune_row_groups(nf, proj, pf.schema_arrow, pc.field("ident") >= 95)
    assert pruned is not None and 0 < len(pruned[1]) < total
    # pyarrow may or may not use nested statistics; it must never skip the matching group.
    pruned2 = _prune_row_groups(nf, proj, pf.schema_arrow, pc.field("point", "xx") < 5)
    assert pruned2 is None or 0 in pruned2[1]
    # A filter on a column the file lacks cannot prune (it might be a constant or default).
    proj_added = _Projection(
        LOC, _build_nodes(pf.schema_arrow), Schema(NestedField(99, "ident", INT)), {}, False
    )
    assert _prune_row_groups(nf, proj_added, pf.schema_arrow, pc.field("ident") >= 95) is None
    # End to end, renamed nested filters return exactly the matching rows.
    out = read_parquet_table(fio, LOC, projected=projected, row_filter=pc.field("point", "xx") > 93)
    assert out.column("ident").to_pylist() == [94, 95, 96, 97, 98, 99]
    out = read_parquet_table(fio, LOC, projected=projected, row_filter=pc.field("point", "yy") < 1.0)
    assert out.column("ident").to_pylist() == [1, 2, 3]


def test_filter_on_unprojected_column_is_a_validation_error() -> None:
    fio = InMemoryFileIO()
    written_file(fio, LOC)
    with pytest.raises(ValidationError, match="row filter"):
        read_parquet_table(
            fio, LOC, projected=Schema(NestedField(1, "a", INT)), row_filter=pc.field("b") == "s1"
        )


def test_filter_matching_nothing_gives_empty_table_with_schema() -> None:
    fio = InMemoryFileIO()
    written_file(fio, LOC)
    projected = Schema(NestedField(1, "a", INT, required=True))
    out = read_parquet_table(fio, LOC, projected=projected, row_filter=pc.field("a") > 1000, include_pos=True)
    assert out.num_rows == 0
    assert out.column_names == ["a", "_pos"]


def test_name_mapping_reads_files_without_field_ids() -> None:
    fio = InMemoryFileIO()
    plain = pa.table(
        {
            "lat": pa.array([1.5, 2.5], pa.float32()),
            "id": pa.array([1, 2], pa.int32()),
            "loc": pa.array([{"zip": "A", "junk": 1}, None]),
            "tags": pa.array([["x"], []]),
        }
    )
    plain_parquet(fio, LOC, plain)
    table_schema = Schema(
        NestedField(1, "record_id", LONG),
        NestedField(2, "latitude", DOUBLE),
        NestedField(3, "location", StructType(NestedField(4, "postcode", STRING))),
        NestedField(5, "labels", ListType(6, STRING, False)),
    )
    mapping = parse_name_mapping(
        '[{"field-id": 1, "names": ["record_id", "id"]}, {"field-id": 2, "names": ["latitude", "lat"]},'
        ' {"field-id": 3, "names": ["loc"], "fields": [{"field-id": 4, "names": ["zip"]}]},'
        ' {"field-id": 5, "names": ["tags"], "fields": [{"field-id": 6, "names": ["element"]}]}]'
    )
    out = read_parquet_table(fio, LOC, projected=table_schema, name_mapping=mapping)
    assert out.to_pylist() == [
        {"record_id": 1, "latitude": 1.5, "location": {"postcode": "A"}, "labels": ["x"]},
        {"record_id": 2, "latitude": 2.5, "location": None, "labels": []},
    ]
    with pytest.raises(ValidationError, match="no Iceberg field ids"):
        read_parquet_table(fio, LOC, projected=table_schema)
    # The schema a file was written with serves as the mapping when none is given.
    hint = Schema(NestedField(1, "id", INT), NestedField(2, "lat", FLOAT))
    out = read_parquet_table(
        fio, LOC, projected=table_schema.select(["record_id", "latitude"]), file_schema_hint=hint
    )
    assert out.column("record_id").to_pylist() == [1, 2]
    assert create_mapping_from_schema(hint).id_for(["lat"]) == 2


def test_legacy_physical_forms_of_uuid_and_string() -> None:
    fio = InMemoryFileIO()
    u = uuid.uuid4()
    # Older writers: uuid as plain fixed[16], strings as unannotated binary (Hive).
    plain_parquet(
        fio, LOC, pa.table({"u": pa.array([u.bytes], pa.binary(16)), "s": pa.array([b"h\xc3\xa9"])})
    )
    schema = Schema(NestedField(1, "u", UUID), NestedField(2, "s", STRING))
    out = read_parquet_table(fio, LOC, projected=schema, name_mapping=create_mapping_from_schema(schema))
    assert out.to_pylist() == [{"u": u, "s": "hé"}]


def test_reading_missing_file_raises_not_found() -> None:
    from firn.errors import NotFound

    with pytest.raises(NotFound):
        list(read_parquet(InMemoryFileIO(), LOC, projected=Schema(NestedField(1, "a", INT))))


@pytest.mark.slow
def test_large_write_and_read_round_trip(tmp_path: Path) -> None:
    fio = PyArrowFileIO()
    loc = str(tmp_path / "big.parquet")
    n = 2_000_000
    schema = Schema(
        NestedField(1, "id", LONG, required=True), NestedField(2, "v", DOUBLE), NestedField(3, "s", STRING)
    )
    rng = np.random.default_rng(0)
    table = pa.table(
        {"id": np.arange(n), "v": rng.random(n), "s": pa.array(rng.integers(0, 1000, n)).cast(pa.string())}
    )
    result = write_parquet_file(fio, loc, table, schema, props())
    assert result.metrics.value_counts[1] == n
    out = read_parquet_table(
        fio, loc, projected=schema, row_filter=pc.field("id") >= n - 10, include_pos=True
    )
    assert out.column("_pos").to_pylist() == list(range(n - 10, n))
