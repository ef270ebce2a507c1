"""Writing through the ``firn`` data source: append, full and dynamic overwrite committed once,
the table's spec and sort order applied, schema mismatches refused before anything is written,
aborted jobs cleaned up, and every type round-tripping through Spark."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import types as st
from pyspark.sql.datasource import CaseInsensitiveDict

from firn.catalog.sql import SqlCatalog
from firn.errors import FirnError, ValidationError
from firn.io.arrow_schema import schema_to_arrow
from firn.spark.source import FirnDataSource, SessionSettings
from firn.spark.typemap import spark_arrow_schema, spark_schema
from firn.spark.writer import ABORT_MARKER_PREFIX, WRITE_ID_PROPERTY, FirnCommitMessage, FirnWriter
from firn.spec.schema import Schema
from firn.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from firn.table.table import Table
from tests.fixtures.spark_tables import build_table, catalog_uri, same_rows, sorted_by_id, spark_catalog
from tests.fixtures.tables import EVENTS_SCHEMA, events


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


def _data_files(table: Table) -> set[str]:
    """Files under the data directory, abort markers left out."""
    found = {f.location for f in table.io.list_prefix(f"{table.location}/data")}
    return {p for p in found if not p.rsplit("/", 1)[-1].startswith(ABORT_MARKER_PREFIX)}


def _writer(directory: Path, struct: st.StructType, overwrite: bool = False, **options: str) -> FirnWriter:
    source = FirnDataSource(
        CaseInsensitiveDict({"path": "db.events", "catalog": catalog_uri(directory), **options})
    )
    return source.writer(struct, overwrite)


def _batches(data: pa.Table, struct: st.StructType) -> list[pa.RecordBatch]:
    """``data`` in the Arrow layout Spark hands a writer."""
    return data.cast(spark_arrow_schema(struct)).to_batches(max_chunksize=7)


# -- driver and executor objects, without a JVM ----------------------------------------------------------
def test_schema_mismatches_fail_on_the_driver_before_any_file(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    before = _data_files(table)
    full = spark_schema(table.schema())
    no_id = st.StructType([f for f in full.fields if f.name != "id"])
    with pytest.raises(
        ValidationError, match=r"cannot write this DataFrame to db\.events: required column 'id' is missing"
    ):
        _writer(tmp_path, no_id)
    extra = st.StructType([*full.fields, st.StructField("bogus", st.LongType())])
    with pytest.raises(ValidationError, match=r"not in the table schema: \['bogus'\]"):
        _writer(tmp_path, extra)
    wrong = st.StructType(
        [st.StructField("id", st.StringType()) if f.name == "id" else f for f in full.fields]
    )
    with pytest.raises(
        ValidationError, match="column 'id': cannot write Arrow type string to Iceberg type long"
    ):
        _writer(tmp_path, wrong)
    zoned = st.StructType([st.StructField("ts", st.TimestampType())])
    catalog.create_table("db.naive", Schema(NestedField(1, "ts", TIMESTAMP, False)))
    source = FirnDataSource(CaseInsensitiveDict({"path": "db.naive", "catalog": catalog_uri(tmp_path)}))
    with pytest.raises(ValidationError, match="column 'ts'"):
        source.writer(zoned, False)  # timestamp_ntz stays ntz: an instant does not fit
    assert _data_files(table) == before


def test_tasks_write_files_and_the_driver_commits_once(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v2-deletes")
    struct = spark_schema(table.schema())
    writer = _writer(tmp_path, struct)
    messages = [writer.write(iter(_batches(events(20, start=500 + 20 * i), struct))) for i in range(2)]
    assert all(isinstance(m, FirnCommitMessage) and m.data_files for m in messages)
    snapshots = len(table.snapshots())
    writer.commit(list(messages))
    table.refresh()
    assert len(table.snapshots()) == snapshots + 1
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get(WRITE_ID_PROPERTY) == writer.write_id
    ids = table.scan(filter="id >= 500", columns=["id"]).to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(500, 540))


def test_abort_deletes_written_files_unless_the_commit_landed(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    struct = spark_schema(table.schema())
    before = _data_files(table)
    writer = _writer(tmp_path, struct)
    message = writer.write(iter(_batches(events(10, start=900), struct)))
    assert _data_files(table) > before
    writer.abort([message, None])  # one task failed: no message
    assert _data_files(table) == before
    landed = _writer(tmp_path, struct)
    message = landed.write(iter(_batches(events(10, start=900), struct)))
    landed.commit([message])
    landed.abort([message])  # e.g. after a commit whose outcome Spark could not see
    assert table.refresh().scan(filter="id >= 900").count() == 10


def test_abort_also_removes_files_of_tasks_it_was_not_told_about(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    struct = spark_schema(table.schema())
    before = _data_files(table)
    writer = _writer(tmp_path, struct, **{"write-buffer-bytes": "1"})
    finished = writer.write(iter(_batches(events(10, start=900), struct)))  # its message got lost
    writer.abort([None])
    assert _data_files(table) == before and finished.data_files  # type: ignore[attr-defined]
    # A straggler still running after abort() finds the marker and removes its own files.
    with pytest.raises(FirnError, match="was aborted"):
        writer.write(iter(_batches(events(10, start=950), struct)))
    assert _data_files(table) == before


def test_a_failing_task_removes_what_it_wrote(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    struct = spark_schema(table.schema())
    before = _data_files(table)
    writer = _writer(tmp_path, struct, **{"write-buffer-bytes": "1"})  # flush per batch
    good = events(7, start=700)
    bad = events(7, start=800)
    bad = bad.set_column(0, "id", pa.array([None] * 7, pa.int64()))
    loose = spark_arrow_schema(
        st.StructType([st.StructField(f.name, f.dataType, True) for f in struct.fields])
    )
    batches = [*good.cast(loose).to_batches(), *bad.cast(loose).to_batches()]
    with pytest.raises(ValidationError, match="'id' is required but 7 values are null"):
        writer.write(iter(batches))
    assert _data_files(table) == before


def test_overwrite_modes(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    struct = spark_schema(table.schema())
    eu_only = events(8, start=1000).filter(pa.compute.equal(events(8, start=1000).column("region"), "eu"))

    def run(**options: str) -> None:
        writer = _writer(tmp_path, struct, True, **options)
        assert writer.mode == ("dynamic" if options else "overwrite")
        writer.commit([writer.write(iter(_batches(eu_only, struct)))])

    run(**{"overwrite-mode": "dynamic"})
    regions = table.refresh().scan(columns=["region", "id"]).to_arrow().to_pylist()
    assert sorted(r["id"] for r in regions if r["region"] == "eu") == eu_only.column("id").to_pylist()
    assert {r["region"] for r in regions} == {"eu", "us", "ap", None}
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get("replace-partitions") == "true"
    run(partitionOverwriteMode="DYNAMIC")
    run()  # static: the whole table
    assert table.refresh().scan().count() == eu_only.num_rows
    with pytest.raises(ValidationError, match="overwrite mode must be 'static' or 'dynamic'"):
        _writer(tmp_path, struct, True, **{"overwrite-mode": "sideways"})


def test_the_session_overwrite_mode_applies_unless_an_option_says_otherwise(
    tmp_path: Path, catalog: SqlCatalog
) -> None:
    table = build_table(catalog, "v1")
    struct = spark_schema(table.schema())
    # What register() captures from spark.sql.sources.partitionOverwriteMode=dynamic.
    dynamic = type(
        "FirnDataSource", (FirnDataSource,), {"settings": SessionSettings(partition_overwrite_mode="dynamic")}
    )

    def writer(**options: str) -> FirnWriter:
        source = dynamic(
            CaseInsensitiveDict({"path": "db.events", "catalog": catalog_uri(tmp_path), **options})
        )
        return source.writer(struct, True)

    assert writer().mode == "dynamic"
    assert writer(**{"overwrite-mode": "static"}).mode == "overwrite"
    assert writer(partitionOverwriteMode="STATIC").mode == "overwrite"
    assert _writer(tmp_path, struct, True).mode == "overwrite"  # the default session: static
    assert _writer(tmp_path, struct, False).mode == "append"


def test_files_follow_the_partition_spec_and_sort_order(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = catalog.create_table(
        "db.sorted",
        EVENTS_SCHEMA,
        partition_spec=[("region", "identity")],
        sort_order=[("x", "desc", "nulls-last")],
        properties={"format-version": "2"},
    )
    struct = spark_schema(table.schema())
    source = FirnDataSource(CaseInsensitiveDict({"path": "db.sorted", "catalog": catalog_uri(tmp_path)}))
    writer = source.writer(struct, False)
    message = writer.write(iter(_batches(events(40), struct)))
    writer.commit([message])
    files = message.data_files  # type: ignore[attr-defined]
    assert {f.partition for f in files} == {("eu",), ("us",), ("ap",), (None,)}
    assert all(f.sort_order_id == table.sort_order().order_id != 0 for f in files)
    import pyarrow.parquet as pq

    for f in files:
        xs = pq.read_table(f.file_path.removeprefix("file://"), columns=["x"]).column("x").to_pylist()
        non_null = [x for x in xs if x is not None]
        assert non_null == sorted(non_null, reverse=True) and xs[len(non_null) :] == [None] * (
            len(xs) - len(non_null)
        )


# -- through Spark ----------------------------------------------------------------------------------------
ALL_TYPES = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "u", UUID, False),
    NestedField(3, "t", TIME, False),
    NestedField(4, "ts", TIMESTAMP, False),
    NestedField(5, "tstz", TIMESTAMPTZ, False),
    NestedField(6, "d", DATE, False),
    NestedField(7, "amount", DecimalType(12, 3), False),
    NestedField(8, "fx", FixedType(4), False),
    NestedField(9, "bin", BINARY, False),
    NestedField(
        10,
        "s",
        StructType(
            NestedField(11, "name", STRING, True), NestedField(12, "tags", ListType(13, STRING, False), False)
        ),
        False,
    ),
    NestedField(14, "m", MapType(15, STRING, 16, DOUBLE, False), False),
    NestedField(
        17,
        "l",
        ListType(18, StructType(NestedField(19, "k", INT, False), NestedField(20, "v", UUID, False)), False),
        False,
    ),
)


def _all_types_rows(n: int) -> pa.Table:
    base = dt.datetime(2024, 3, 10, 1, 30, 15, 123456)
    rows = [
        {
            "id": i,
            "u": uuid.UUID(int=i * 7919 + 1).bytes if i % 5 else None,
            "t": dt.time(i % 24, 15, 30, 250000),
            "ts": base + dt.timedelta(days=i),
            "tstz": (base + dt.timedelta(hours=i)).replace(tzinfo=dt.UTC),
            "d": dt.date(2020, 2, 29) + dt.timedelta(days=i),
            "amount": Decimal(i * 1001) / 1000 if i % 3 else None,
            "fx": bytes([i % 256, 1, 2, 3]),
            "bin": b"\x00\xff" * (i % 4),
            "s": {"name": f"n{i}", "tags": [f"a{i}", None]} if i % 4 else None,
            "m": {"x": float(i), "y": None} if i % 2 else {},
            "l": [{"k": i, "v": uuid.UUID(int=i).bytes}, {"k": None, "v": None}],
        }
        for i in range(n)
    ]
    target = schema_to_arrow(ALL_TYPES)
    raw = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [pa.field(f.name, pa.binary(16) if f.name == "u" else _storage(f.type)) for f in target]
        ),
    )
    return raw


def _storage(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.UuidType):
        return pa.binary(16)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(c.name, _storage(c.type), c.nullable) for c in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _storage(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(_storage(t.key_type), _storage(t.item_type))
    return t


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_every_type_round_trips_through_spark(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    source = catalog.create_table("db.types", ALL_TYPES, properties={"format-version": "2"})
    source.append(_all_types_rows(12))
    catalog.create_table("db.copy", ALL_TYPES, properties={"format-version": "2"})
    uri = catalog_uri(tmp_path)
    df = spark.read.format("firn").option("catalog", uri).load("db.types")
    assert df.schema == spark_schema(ALL_TYPES)
    assert dict(df.dtypes)["ts"] == "timestamp_ntz" and dict(df.dtypes)["tstz"] == "timestamp"
    first = df.orderBy("id").first()
    assert first is not None and first["u"] is None and first["t"] == dt.time(0, 15, 30, 250000)
    assert df.where("id = 1").first()["u"] == str(uuid.UUID(int=7920))  # type: ignore[index]
    df.write.format("firn").option("catalog", uri).mode("append").save("db.copy")
    copy = catalog.load_table("db.copy").scan().to_arrow()
    assert sorted_by_id(copy.to_pylist()) == sorted_by_id(source.scan().to_arrow().to_pylist())


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_nanosecond_timestamps_read_as_microseconds(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    schema = Schema(NestedField(1, "id", LONG, True), NestedField(2, "ns", TIMESTAMP_NS, False))
    table = catalog.create_table("db.ns", schema, properties={"format-version": "3"})
    table.append(pa.table({"id": [1], "ns": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))}))
    row = spark.read.format("firn").option("catalog", catalog_uri(tmp_path)).load("db.ns").first()
    assert row["ns"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_append_overwrite_and_dynamic_overwrite(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    table = build_table(catalog, "v4")
    uri = catalog_uri(tmp_path)
    read = spark.read.format("firn").option("catalog", uri).load("db.events")
    new = spark.createDataFrame(events(12, start=2000).to_pylist(), schema=read.schema)
    snapshots = len(table.snapshots())
    new.write.format("firn").option("catalog", uri).mode("append").save("db.events")
    table.refresh()
    assert len(table.snapshots()) == snapshots + 1  # one commit for all tasks
    assert table.scan(filter="id >= 2000").count() == 12
    eu = new.where("region = 'eu'")
    eu.write.format("firn").option("catalog", uri).option("overwrite-mode", "dynamic").mode("overwrite").save(
        "db.events"
    )
    rows = table.refresh().scan(columns=["id", "region"]).to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows if r["region"] == "eu") == [2000, 2004, 2008]
    assert any(r["region"] == "us" and r["id"] < 2000 for r in rows)
    new.write.format("firn").option("catalog", uri).mode("overwrite").save("db.events")
    got = spark.read.format("firn").option("catalog", uri).load("db.events").toArrow()
    assert same_rows(got, table.refresh().scan().to_arrow()) and got.num_rows == 12


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_write_failure_leaves_no_files(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v2-deletes")
    before, snapshots = _data_files(table), len(table.snapshots())
    uri = catalog_uri(tmp_path)
    loose = st.StructType(
        [st.StructField(f.name, f.dataType, True) for f in spark_schema(table.schema()).fields]
    )
    rows = events(40, start=3000).to_pylist()
    rows[-1]["id"] = None  # the last partition's task fails; the others have written files
    df = spark.createDataFrame(rows, schema=loose).repartition(4)
    with pytest.raises(Exception, match="'id' is required"):
        df.write.format("firn").option("catalog", uri).mode("append").save("db.events")
    table.refresh()
    assert _data_files(table) == before and len(table.snapshots()) == snapshots
    with pytest.raises(Exception, match="required column 'id' is missing"):
        df.drop("id").write.format("firn").option("catalog", uri).mode("append").save("db.events")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_writes_follow_the_table_properties(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    # Outside the table's location, inside the warehouse (the catalog's places).
    data_dir = Path(str(catalog.warehouse)) / "elsewhere"
    table = catalog.create_table(
        "db.props",
        EVENTS_SCHEMA,
        partition_spec=[("region", "identity")],
        properties={
            "format-version": "2",
            "write.parquet.compression-codec": "gzip",
            "write.data.path": str(data_dir),
            "write.metadata.metrics.column.name": "none",
            "write.target-file-size-bytes": "16384",
        },
    )
    uri = catalog_uri(tmp_path)
    struct = spark_schema(table.schema())
    df = spark.createDataFrame(events(2000).to_pylist(), schema=struct).repartition(2)
    df.write.format("firn").option("catalog", uri).mode("append").save("db.props")
    tasks = table.refresh().scan().plan_files()
    files = [t.file for t in tasks]
    assert sum(f.record_count for f in files) == 2000
    assert len(files) > 2 * 4  # split at the target size: more than one file per task and partition
    name_id = table.schema().find_field("name").field_id
    import pyarrow.parquet as pq

    for f in files:
        local = f.file_path.removeprefix("file://")
        assert local.startswith(f"{data_dir}/region=")
        meta = pq.ParquetFile(local).metadata
        assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {"GZIP"}
        assert name_id not in (f.lower_bounds or {}) and 1 in (f.lower_bounds or {})
    assert same_rows(table.scan().to_arrow(), events(2000))


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_session_dynamic_overwrite(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    import firn.spark

    table = build_table(catalog, "v2-deletes")
    uri = catalog_uri(tmp_path)
    us = spark.createDataFrame(
        [r for r in events(12, start=4000).to_pylist() if r["region"] == "us"],
        schema=spark_schema(table.schema()),
    )
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        assert firn.spark.register(spark).settings.partition_overwrite_mode == "dynamic"
        us.write.format("firn").option("catalog", uri).mode("overwrite").save("db.events")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        firn.spark.register(spark)
    rows = table.refresh().scan(columns=["id", "region"]).to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows if r["region"] == "us") == sorted(r["id"] for r in us.collect())
    assert {r["region"] for r in rows} == {"eu", "us", "ap", None}  # other partitions kept
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get("replace-partitions") == "true"
