"""Firn and PyIceberg 0.12 on one SQLite catalog file, in both directions (marker ``interop``).

* PyIceberg reads Firn-written v1, v2 and v3 tables — partitioned by several transforms, with
  appends, a copy-on-write delete, an overwrite, schema and partition evolution — with the
  same rows as Firn, at the head and at every snapshot.
* Firn reads PyIceberg-written v1 and v2 tables (appends, overwrites, deletes, schema
  evolution; PyIceberg 0.12 cannot write v3) with the same rows, also when time travelling to
  PyIceberg's snapshots; then Firn commits on top and PyIceberg reads the result.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.tables import events, make_events_table

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::UserWarning")]

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

CATALOG = "shared"


@pytest.fixture
def firn(tmp_path: Path) -> Iterator[SqlCatalog]:
    catalog = make_sqlite_catalog(tmp_path, name=CATALOG)
    yield catalog
    catalog.close()


@pytest.fixture
def py(tmp_path: Path) -> Any:
    return pyiceberg_sql.SqlCatalog(
        CATALOG, uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )


def _normalize(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def rows(data: pa.Table) -> list[dict[str, Any]]:
    """Rows as plain values, sorted by id (PyIceberg and Firn may pick different Arrow types
    for the same Iceberg type, e.g. large_string; the values must be equal)."""
    out = [_normalize(r) for r in data.to_pylist()]
    return sorted(out, key=lambda r: (r["id"] is None, r["id"] or 0, repr(r)))


def _py_rows(py_table: Any, **scan: Any) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rows(py_table.scan(**scan).to_arrow())


# -- PyIceberg reads Firn ---------------------------------------------------------------------
def _build_firn_history(table: Table) -> None:
    """Appends, a delete that drops and rewrites files, an overwrite, schema and spec evolution."""
    table.append(events(30))
    table.append(events(10, start=100))
    table.delete("region = 'ap' or id = 7")  # whole 'ap' files dropped, others rewritten
    table.overwrite(events(3, start=500), filter="id >= 100 and id < 105")
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("name", "label")
    with table.update_spec() as update:
        update.add_field("day", "month")
    more = events(5, start=200).rename_columns(
        [("label" if n == "name" else n) for n in events(0).schema.names]
    )
    table.append(more.append_column("note", pa.array(["fresh"] * 5, pa.string())))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_reads_firn_tables(firn: SqlCatalog, py: Any, version: int) -> None:
    table = make_events_table(
        firn,
        version,
        partition_spec=[("region", "identity"), ("ts", "day"), ("id", "bucket[4]"), ("name", "truncate[6]")],
    )
    _build_firn_history(table)
    assert len(table.snapshots()) == 5 and len(table.specs()) == 2 and len(table.schemas()) == 2

    py_table = py.load_table("db.events")
    assert py_table.metadata_location == table.metadata_location
    assert py_table.format_version == version
    firn_rows = rows(table.scan().to_arrow())
    assert _py_rows(py_table) == firn_rows
    assert any(r["note"] == "fresh" for r in firn_rows) and any(r["note"] is None for r in firn_rows)
    # Every snapshot, read through PyIceberg's time travel, matches Firn's.
    for snap in table.snapshots():
        assert _py_rows(py_table, snapshot_id=snap.snapshot_id) == rows(
            table.scan(snapshot_id=snap.snapshot_id).to_arrow()
        ), snap.summary.operation
    # Both plan the same files, and filter the same rows.
    py_files = sorted(t.file.file_path for t in py_table.scan().plan_files())
    assert py_files == sorted(t.file.file_path for t in table.scan().plan_files())
    for expr in ("id >= 20", "region = 'eu'", "label = 'name-005'"):
        assert _py_rows(py_table, row_filter=expr) == rows(table.scan(filter=expr).to_arrow()), expr


def test_pyiceberg_reads_firn_types(firn: SqlCatalog, py: Any) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("i", pa.int32()),
            pa.field("f", pa.float32()),
            pa.field("d", pa.float64()),
            pa.field("dec", pa.decimal128(20, 4)),
            pa.field("b", pa.bool_()),
            pa.field("s", pa.string()),
            pa.field("bin", pa.binary()),
            pa.field("date", pa.date32()),
            pa.field("time", pa.time64("us")),
            pa.field("ts", pa.timestamp("us")),
            pa.field("tstz", pa.timestamp("us", tz="UTC")),
            pa.field("m", pa.map_(pa.string(), pa.int64())),
            pa.field("l", pa.list_(pa.struct([pa.field("a", pa.int32())]))),
            pa.field("li", pa.list_(pa.int32())),
        ]
    )
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "i": pa.array([1, None, -3], pa.int32()),
            "f": pa.array([1.5, float("nan"), None], pa.float32()),
            "d": pa.array([2.25, None, -0.0]),
            "dec": pa.array([Decimal("1.2345"), None, Decimal("-99999.0001")], pa.decimal128(20, 4)),
            "b": [True, None, False],
            "s": ["x", "", None],
            "bin": [b"\x00\x01", None, b""],
            "date": pa.array([dt.date(1969, 12, 31), dt.date(2024, 2, 29), None]),
            "time": pa.array([dt.time(0, 0), dt.time(23, 59, 59, 999999), None], pa.time64("us")),
            "ts": pa.array([dt.datetime(1960, 1, 1), None, dt.datetime(2038, 1, 19, 3, 14, 8)]),
            "tstz": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None, None], pa.timestamp("us", tz="UTC")
            ),
            "m": pa.array([[("a", 1)], None, []], pa.map_(pa.string(), pa.int64())),
            # Not a null list<struct>: PyIceberg 0.12 reads one as [] (also from its own files).
            "l": pa.array([[{"a": 1}], [], [{"a": None}]], pa.list_(pa.struct([pa.field("a", pa.int32())]))),
            "li": pa.array([[1, None], None, []], pa.list_(pa.int32())),
        },
        schema=schema,
    )
    table = make_events_table(
        firn,
        2,
        name="types",
        schema=schema,
        partition_spec=[("date", "year"), ("ts", "hour"), ("dec", "bucket[3]")],
    )
    table.append(data)
    got = py.load_table("db.types").scan().to_arrow()

    def comparable(data: pa.Table) -> list[dict[str, Any]]:
        out = rows(data)
        for r in out:
            r["f"] = "nan" if r["f"] is not None and r["f"] != r["f"] else r["f"]
            r["m"] = sorted(r["m"]) if r["m"] is not None else None
        return out

    assert comparable(got) == comparable(table.scan().to_arrow()) == comparable(data)


# -- Firn reads PyIceberg ---------------------------------------------------------------------
def _py_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DateType,
        DoubleType,
        IntegerType,
        LongType,
        NestedField,
        StringType,
        TimestamptzType,
    )

    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType(), required=False),
        NestedField(3, "ts", TimestamptzType(), required=False),
        NestedField(4, "day", DateType(), required=False),
        NestedField(5, "score", DoubleType(), required=False),
        NestedField(6, "grp", IntegerType(), required=False),
    )


def _py_spec() -> Any:
    # PyIceberg 0.12 computes every transform but identity with the optional pyiceberg-core
    # (Rust) package, which the dev extras do not install. Firn-written tables with every
    # transform are read by PyIceberg above.
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    return PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"),
        PartitionField(source_id=6, field_id=1001, transform=IdentityTransform(), name="grp"),
    )


def _py_rows_of(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([("eu", "us", "ap", None)[i % 4] for i in ids], pa.string()),
            "ts": pa.array([base + dt.timedelta(hours=7 * i) for i in ids], pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
            "score": pa.array([i / 3 for i in ids], pa.float64()),
            "grp": pa.array([i % 3 for i in ids], pa.int32()),
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("region", pa.string()),
                pa.field("ts", pa.timestamp("us", tz="UTC")),
                pa.field("day", pa.date32()),
                pa.field("score", pa.float64()),
                pa.field("grp", pa.int32()),
            ]
        ),
    )


@pytest.mark.parametrize("version", [1, 2])
def test_firn_reads_pyiceberg_tables_and_commits_on_top(firn: SqlCatalog, py: Any, version: int) -> None:
    from pyiceberg.types import StringType as PyString

    py.create_namespace("db")
    py_table = py.create_table(
        "db.clicks",
        schema=_py_schema(),
        partition_spec=_py_spec(),
        properties={"format-version": str(version)},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py_table.append(_py_rows_of(range(20)))
        py_table.append(_py_rows_of(range(100, 110)))
        py_table.overwrite(_py_rows_of([500, 501]), overwrite_filter="region == 'us'")
        py_table.delete("id >= 100 and id < 104")
        with py_table.update_schema() as update:
            update.add_column("tag", PyString())
        py_table.append(_py_rows_of([700, 701]).append_column("tag", pa.array(["t", None], pa.string())))
    py_table = py.load_table("db.clicks")
    py_snapshots = py_table.snapshots()
    assert len(py_snapshots) >= 5

    table = firn.load_table("db.clicks")
    assert table.metadata_location == py_table.metadata_location and table.format_version == version
    assert rows(table.scan().to_arrow()) == _py_rows(py_table)
    assert table.scan().count() == len(_py_rows(py_table))
    for snap in py_snapshots:
        assert rows(table.scan(snapshot_id=snap.snapshot_id).to_arrow()) == _py_rows(
            py_table, snapshot_id=snap.snapshot_id
        ), snap.summary
    # Firn's pruning works on PyIceberg's manifests and partition values.
    assert {t.file.partition[0] for t in table.scan(filter="region = 'eu'").plan_files()} == {"eu"}
    assert rows(table.scan(filter="region = 'eu' and id < 10").to_arrow()) == _py_rows(
        py_table, row_filter="region == 'eu' and id < 10"
    )

    # Firn commits on top: append, copy-on-write delete, schema change; PyIceberg reads it.
    table.append(_py_rows_of([900, 901]).append_column("tag", pa.array(["firn", "firn"], pa.string())))
    table.delete("id = 5 or region is null")
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    after = py.load_table("db.clicks")
    assert after.metadata_location == table.metadata_location
    assert _py_rows(after) == rows(table.scan().to_arrow())
    assert {r["id"] for r in _py_rows(after)} >= {900, 901} and 5 not in {r["id"] for r in _py_rows(after)}
    # ...and PyIceberg can keep writing after Firn.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        after.append(
            _py_rows_of([950])
            .append_column("tag", pa.array(["py"], pa.string()))
            .append_column("extra", pa.array(["x"], pa.string()))
        )
    assert rows(table.refresh().scan().to_arrow()) == _py_rows(py.load_table("db.clicks"))


def test_pyiceberg_reads_multi_member_gzip_metadata(firn: SqlCatalog, py: Any) -> None:
    """``write.metadata.compression-codec=gzip``: Firn writes the snapshot list as reused gzip
    members (one per block of snapshots); PyIceberg reads the file as one gzip stream."""
    from firn.spec.metadata_json import SNAPSHOT_BLOCK

    table = make_events_table(firn, 2, properties={"write.metadata.compression-codec": "gzip"})
    for i in range(SNAPSHOT_BLOCK + 5):
        table.append(events(2, start=2 * i))
    assert table.metadata_location.endswith(".gz.metadata.json")
    py_table = py.load_table(("db", "events"))
    assert len(py_table.metadata.snapshots) == SNAPSHOT_BLOCK + 5
    assert _py_rows(py_table) == rows(table.scan().to_arrow())
