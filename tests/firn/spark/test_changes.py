"""Incremental reads and changelogs on Spark: the ``firn`` data source's ``start-snapshot-id`` /
``end-snapshot-id`` / ``start-timestamp`` / ``end-timestamp`` options and ``firn.spark.read``'s
range arguments return the rows of ``table.scan`` over the same range; ``firn.spark.read_changes``
returns the rows of ``table.changelog`` (carry-over removed, kept, net changes), delete-free
files read by Spark's own Parquet reader. All through a real local[2] session."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.table.table import Table
from tests.fixtures.changelog import row_tuples
from tests.fixtures.spark_tables import build_table, catalog_uri, spark_catalog
from tests.fixtures.tables import events

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


def _multiset(data: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(row_tuples(data, data.column_names))


def _history(catalog: SqlCatalog, kind: str) -> tuple[Table, int]:
    """``build_table``'s table (appends and merge-on-read deletes: position deletes and an
    equality delete on v2, DVs on v3/V4), then copy-on-write and merge-on-read upserts and a
    compaction; returns it with its first snapshot id."""
    table = build_table(catalog, kind)
    first = table.snapshots()[0].snapshot_id
    table.upsert(events(4, start=30).set_column(4, "name", pa.array(["upd"] * 4)), ["id"])
    table.set_properties({"write.merge.mode": "copy-on-write", "write.update.mode": "copy-on-write"})
    table.upsert(events(3, start=200), ["id"])
    table.upsert(events(2, start=80).set_column(4, "name", pa.array(["cow"] * 2)), ["id"])
    table.maintenance.rewrite_data_files(rewrite_all=True, min_input_files=1).run()
    table.append(events(5, start=300))
    return table, first


def test_incremental_options_and_read(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table, first = _history(catalog, "v3-dvs")
    snaps = [s.snapshot_id for s in table.snapshots()]
    second = snaps[1]
    uri = catalog_uri(tmp_path)
    expected = table.scan(from_snapshot_id=first).to_arrow()
    # The appends after the first, as appended: two of build_table's, the upsert that matched
    # no row (an append), the last one.
    assert expected.num_rows == 40 + 30 + 3 + 5
    reader = spark.read.format("firn").option("catalog", uri).option("start-snapshot-id", str(first))
    assert _multiset(reader.load("db.events").toArrow()) == _multiset(expected)
    bounded = reader.option("end-snapshot-id", str(second)).load("db.events").toArrow()
    assert _multiset(bounded) == _multiset(
        table.scan(from_snapshot_id=first, to_snapshot_id=second).to_arrow()
    )
    by_time = (
        spark.read.format("firn")
        .option("catalog", uri)
        .option("start-timestamp", str(table.snapshot_by_id(first).timestamp_ms))  # type: ignore[union-attr]
        .option("end-timestamp", str(table.snapshot_by_id(second).timestamp_ms))  # type: ignore[union-attr]
        .load("db.events")
        .toArrow()
    )
    assert _multiset(by_time) == _multiset(bounded)
    # firn.spark.read: the appended files have no deletes of their own, so Spark reads them all.
    got = firn.spark.read(spark, "db.events", catalog=uri, from_snapshot_id=first).toArrow()
    assert _multiset(got) == _multiset(expected)
    plan = firn.spark.plan_read(spark, table, from_snapshot_id=first)
    assert plan.native_files and not plan.firn_files
    with pytest.raises(ValidationError, match="cannot be combined"):
        firn.spark.read(spark, table, snapshot_id=first, from_snapshot_id=first)


@pytest.mark.parametrize("kind", ["v2-deletes", "v4"])
def test_read_changes_equals_the_library(spark: Any, tmp_path: Path, catalog: SqlCatalog, kind: str) -> None:
    table, first = _history(catalog, kind)
    uri = catalog_uri(tmp_path)
    for options in ({}, {"remove_carry_over": False}, {"net_changes": True}):
        expected = table.changelog(from_snapshot_id=first, **options).to_arrow()
        got = firn.spark.read_changes(spark, "db.events", first, None, catalog=uri, **options).toArrow()
        assert got.column_names == expected.column_names
        assert got.num_rows == expected.num_rows > 0, options
        assert _multiset(got) == _multiset(expected), options
    plan = firn.spark.plan_changes(spark, table, first)
    # Whole delete-free files (appends, copy-on-write rewrites) are Spark's; files whose deletes
    # changed are Firn's.
    assert plan.native_files and plan.firn_files
    assert any(r.reason == "its delete files changed" for r in plan.routed)
    # A column subset and a filter, on a range given by time.
    end = table.snapshots()[-1]
    start_ms = table.snapshot_by_id(first).timestamp_ms  # type: ignore[union-attr]
    expected = table.changelog(
        from_timestamp=start_ms, filter="region = 'eu'", columns=["id", "name"]
    ).to_arrow()
    got = firn.spark.read_changes(
        spark,
        table,
        from_timestamp=start_ms,
        to_timestamp=end.timestamp_ms,
        filter="region = 'eu'",
        columns=["id", "name"],
    ).toArrow()
    assert got.column_names == ["id", "name", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert _multiset(got) == _multiset(expected) and expected.num_rows > 0


def test_spark_cancels_rows_as_the_library_does(spark: Any) -> None:
    # Carry-over pairs of one snapshot compared whole: NaN equals NaN, -0.0 is not 0.0, a null
    # struct is not a struct of nulls, maps compare entry by entry; a multiset (one of two
    # identical INSERTs survives one DELETE).
    from pyspark.sql import types as st

    from firn.core.changelog_rows import cancel_carry_over
    from firn.spark.changes import _cancel

    data = st.StructType(
        [
            st.StructField("x", st.DoubleType()),
            st.StructField("s", st.StructType([st.StructField("f", st.DoubleType())])),
            st.StructField("m", st.MapType(st.StringType(), st.DoubleType())),
        ]
    )
    nan = float("nan")
    deleted = [
        (nan, {"f": 1.0}, {"a": nan}),
        (-0.0, None, None),
        (2.0, {"f": None}, {"a": 1.0}),
        (3.0, None, {}),
    ]
    inserted = [
        (nan, {"f": 1.0}, {"a": nan}),
        (0.0, None, None),
        (2.0, None, {"a": 1.0}),
        (3.0, None, {}),
        (3.0, None, {}),
    ]
    rows = [(*r, "DELETE", 0, 1) for r in deleted] + [(*r, "INSERT", 0, 1) for r in inserted]
    cdc = "_change_type string, _change_ordinal int, _commit_snapshot_id long"
    df = spark.createDataFrame(rows, f"x double, s struct<f: double>, m map<string, double>, {cdc}")
    got = sorted(
        (r["_change_type"], repr(r["x"]), repr(r["s"] and r["s"].asDict()), repr(r["m"]))
        for r in _cancel(df, data, within_snapshot=True).collect()
    )
    arrow_type = pa.struct([pa.field("f", pa.float64())])

    def table(rs: list[tuple[Any, ...]]) -> pa.Table:
        return pa.table(
            {
                "x": pa.array([r[0] for r in rs], pa.float64()),
                "s": pa.array([r[1] for r in rs], arrow_type),
                "m": pa.array(
                    [list(r[2].items()) if r[2] is not None else None for r in rs],
                    pa.map_(pa.string(), pa.float64()),
                ),
            }
        )

    d, i = cancel_carry_over(table(deleted), table(inserted))
    expected = sorted(
        [
            ("DELETE", repr(r["x"]), repr(r["s"]), repr(dict(r["m"]) if r["m"] is not None else None))
            for r in d.to_pylist()
        ]
        + [
            ("INSERT", repr(r["x"]), repr(r["s"]), repr(dict(r["m"]) if r["m"] is not None else None))
            for r in i.to_pylist()
        ]
    )
    assert got == expected
    assert [g[0] for g in got] == ["DELETE", "DELETE", "INSERT", "INSERT", "INSERT"]
