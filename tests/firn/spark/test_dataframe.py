"""``firn.spark.read``: delete-free files through Spark's own Parquet reader, the rest through
the ``firn`` data source, and the union equal to ``table.scan().to_arrow()`` on every format
version, in time travel, after schema and partition evolution, with filters and columns.
Also which files go which way (``plan_read``) and that the native part is Spark's FileScan.
All through a real local[2] session."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.io.arrow_schema import schema_to_arrow
from firn.io.parquet import metrics_from_parquet_footer
from firn.spec.types import DoubleType, IntegerType, LongType, StringType
from firn.table.table import Table
from tests.fixtures.spark_tables import TABLE_KINDS, build_table, catalog_uri, spark_catalog
from tests.fixtures.tables import events, make_events_table

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
FIELD_ID_CONF = "spark.sql.parquet.fieldId.read.enabled"


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


def _canon(v: Any) -> Any:
    """A comparable form: NaN and -0.0 kept apart, instants in UTC, UUIDs as text, pandas
    Timestamps (pyarrow's form of nanosecond timestamps) as datetimes."""
    if isinstance(v, dt.datetime) and hasattr(v, "to_pydatetime"):
        v = v.to_pydatetime()
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else repr(v))
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return ("instant", v.astimezone(dt.UTC).isoformat())
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return tuple(sorted((k, _canon(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return tuple(_canon(x) for x in v)
    return v


def rows(data: pa.Table) -> list[str]:
    return sorted(repr(_canon(r)) for r in data.to_pylist())


def assert_same(got: pa.Table, expected: pa.Table) -> None:
    assert got.column_names == expected.column_names
    assert rows(got) == rows(expected)


def check(spark: Any, table: Table, **options: Any) -> firn.spark.SparkReadPlan:
    """``read`` equals ``scan`` for these options; returns the plan (for routing checks)."""
    scan_options = dict(options)
    if "as_of_timestamp" in scan_options:
        scan_options["as_of"] = scan_options.pop("as_of_timestamp")
    expected = table.scan(**scan_options).to_arrow()
    assert_same(firn.spark.read(spark, table, **options).toArrow(), expected)
    return firn.spark.plan_read(spark, table, **options)


def files_with_deletes(table: Table, **scan: Any) -> set[str]:
    return {t.file.file_path for t in table.scan(**scan).plan_files() if t.delete_files}


def plan_text(df: Any, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    df.explain()
    return capsys.readouterr().out


# -- format versions, time travel ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(TABLE_KINDS))
def test_read_equals_scan(spark: Any, tmp_path: Path, catalog: SqlCatalog, kind: str) -> None:
    table = build_table(catalog, kind)
    df = firn.spark.read(spark, "db.events", catalog=catalog_uri(tmp_path))
    expected = table.scan().to_arrow()
    got = df.toArrow()
    assert got.num_rows == expected.num_rows > 0
    assert_same(got, expected)
    plan = firn.spark.plan_read(spark, table)
    # Exactly the files with deletes go to Firn; every other planned file is read by Spark.
    assert set(plan.firn_files) == files_with_deletes(table)
    assert set(plan.native_files) == {t.file.file_path for t in table.scan().plan_files()} - set(
        plan.firn_files
    )
    assert plan.native_files
    assert all("delete file" in r.reason for r in plan.routed)
    assert (len(plan.firn_files) > 0) == (kind != "v1")


def test_a_plan_does_not_print_storage_secrets(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    # Found in issue 18: repr(plan_read(...)) printed io_properties with s3.secret-access-key.
    secrets = {"s3.secret-access-key": "PLANSECRET-1", "s3.session-token": "PLANTOKEN-2"}
    build_table(catalog, "v1")
    plan = firn.spark.plan_read(
        spark, "db.events", catalog=catalog_uri(tmp_path), **{"s3.access-key-id": "AKID", **secrets}
    )
    assert {k: plan.pin.io_properties[k] for k in secrets} == secrets  # executors still get them
    for text in (repr(plan), str(plan), repr(plan.pin)):
        assert "PLANSECRET-1" not in text and "PLANTOKEN-2" not in text
        assert "'s3.secret-access-key': '***'" in text and "'s3.access-key-id': 'AKID'" in text


def test_native_part_is_sparks_parquet_file_scan(
    spark: Any, tmp_path: Path, catalog: SqlCatalog, capsys: pytest.CaptureFixture[str]
) -> None:
    build_table(catalog, "v1")
    build_table(catalog, "v3-dvs", name="with_dvs")
    uri = catalog_uri(tmp_path)
    plain = plan_text(firn.spark.read(spark, "db.events", catalog=uri), capsys)
    assert "FileScan parquet" in plain
    assert "(Python)" not in plain and firn.spark.dataframe.PLANNED_SOURCE_NAME not in plain
    mixed = plan_text(firn.spark.read(spark, "db.with_dvs", catalog=uri), capsys)
    assert "FileScan parquet" in mixed
    assert f"BatchScan {firn.spark.dataframe.PLANNED_SOURCE_NAME}" in mixed and "(Python)" in mixed


def test_time_travel(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    first, second = [s.snapshot_id for s in table.snapshots()][:2]
    table.manage_snapshots().create_tag("t2", second).commit()
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    table.append(events(5, start=500).append_column("extra", pa.array(["e"] * 5)))
    as_of = next(e.timestamp_ms for e in table.history() if e.snapshot_id == second)
    plan = check(spark, table, snapshot_id=first)
    assert not plan.firn_files and len(plan.native_files) == 4  # one append, no deletes yet
    assert "extra" not in firn.spark.read(spark, table, snapshot_id=first).columns
    check(spark, table, ref="t2")
    check(spark, table, as_of_timestamp=as_of)
    check(spark, table, as_of_timestamp=dt.datetime.fromtimestamp(as_of / 1000, dt.UTC))
    plan = check(spark, table)
    assert "extra" in firn.spark.read(spark, table).columns
    assert plan.native_files and plan.firn_files


# -- schema evolution ------------------------------------------------------------------------------------
EVOLVING = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("a", pa.int32()),
        pa.field("f", pa.float32()),
        pa.field("label", pa.string()),
        pa.field("gone", pa.string()),
        pa.field("info", pa.struct([pa.field("p", pa.int32()), pa.field("q", pa.string())])),
    ]
)


def _first_rows(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "a": pa.array([i if i % 6 else None for i in range(n)], pa.int32()),
            "f": pa.array([i / 8 for i in range(n)], pa.float32()),
            "label": [f"n-{i}" for i in range(n)],
            "gone": [f"old-{i}" for i in range(n)],
            "info": [{"p": i, "q": f"q{i}"} if i % 5 else None for i in range(n)],
        },
        schema=EVOLVING,
    )


def _evolved_table(catalog: SqlCatalog) -> Table:
    table = catalog.create_table("db.evolving", EVOLVING, properties={"format-version": "2"})
    table.append(_first_rows(40))
    with table.update_schema() as update:
        update.rename_column("label", "title")
        update.update_column("a", LongType())
        update.update_column("f", DoubleType())
        update.delete_column("gone")
        update.rename_column("info.p", "pp")
    with table.update_schema() as update:
        update.add_column("gone", StringType())  # a new field with a dropped field's name
        update.add_column("info.r", IntegerType())
    new = table.schema()
    n = 20
    table.append(
        pa.table(
            {
                "id": pa.array(range(100, 100 + n), pa.int64()),
                "a": pa.array([2**40 + i for i in range(n)], pa.int64()),
                "f": [i / 3 for i in range(n)],
                "title": [f"m-{i}" for i in range(n)],
                "info": [{"pp": i, "q": None, "r": -i} for i in range(n)],
                "gone": [f"new-{i}" if i % 2 else None for i in range(n)],
            }
        ).select([f.name for f in new.fields])
    )
    return table


def test_schema_evolution(spark: Any, catalog: SqlCatalog) -> None:
    table = _evolved_table(catalog)
    plan = check(spark, table)
    assert not plan.firn_files and len(plan.native_files) == 2
    # The old file is read under its own names and types, then renamed and widened by casts.
    assert len(plan.native) == 2
    old = next(g for g in plan.native if any(c.target is not None for c in g.layout.columns))
    assert {c.name for c in old.layout.columns if c.target is not None} == {"a", "f", "info"}
    read_as = {c.name: c.read_name for c in old.layout.columns}
    assert read_as["title"] == "label"
    # The new "gone" is asked for under a name the file lacks: the dropped "gone" is not read.
    assert read_as["gone"] != "gone" and "gone" not in old.layout.read_schema.fieldNames()
    got = firn.spark.read(spark, table, columns=["id", "gone", "a"]).toArrow().to_pylist()
    assert {r["gone"] for r in got if r["id"] < 100} == {None}
    for where in [
        "a >= 30",
        "a > 1099511627776",
        "f > 2.5",
        "title = 'n-3' or title = 'm-3'",
        "gone is null",
        "gone = 'new-3'",
        "info.pp < 5",
        "info.r is null",
        "info.q like 'q1%'",
    ]:
        check(spark, table, filter=where)
    check(spark, table, columns=["title", "id", "info.pp"])
    check(spark, table, columns=["info.r", "id"], filter="info.pp >= 3")


@pytest.mark.parametrize("field_ids", ["true", "false"])
def test_swapped_names_with_a_filter(spark: Any, catalog: SqlCatalog, field_ids: str) -> None:
    """Two columns swap names: Spark asked by the file's names reads and prunes the right
    columns whether or not Spark's field-id matching is on."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), False), pa.field("a", pa.int64()), pa.field("b", pa.int64())]
    )
    table = catalog.create_table("db.swap", schema, properties={"format-version": "2"})
    n = 1000
    table.append(pa.table({"id": range(n), "a": range(n), "b": range(100_000, 100_000 + n)}, schema=schema))
    with table.update_schema() as update:
        update.rename_column("a", "tmp")
    with table.update_schema() as update:
        update.rename_column("b", "a")
    with table.update_schema() as update:
        update.rename_column("tmp", "b")
    before = spark.conf.get(FIELD_ID_CONF)
    spark.conf.set(FIELD_ID_CONF, field_ids)
    try:
        assert firn.spark.read(spark, table, filter="a >= 100500").count() == 500
        assert firn.spark.read(spark, table).where("b < 10").count() == 10
        assert firn.spark.read(spark, table).where("a >= 100990").count() == 10
        plan = check(spark, table, filter="b < 10 and a > 100000")
        assert not plan.firn_files
    finally:
        spark.conf.set(FIELD_ID_CONF, before)


def test_initial_default_goes_to_firn(spark: Any, catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 3, name="defaults")
    table.append(events(10))
    with table.update_schema() as update:
        update.add_column("level", IntegerType(), default=7)
    table.append(events(5, start=10).append_column("level", pa.array([1] * 5, pa.int32())))
    plan = check(spark, table)
    assert len(plan.routed) == 1 and "initial default" in plan.routed[0].reason
    assert len(plan.native_files) == 1
    assert {r["level"] for r in firn.spark.read(spark, table).toArrow().to_pylist()} == {1, 7}


# -- partitioning ----------------------------------------------------------------------------------------
def test_transformed_and_evolved_specs(spark: Any, catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2, name="parts", partition_spec=[("id", "bucket[4]"), ("ts", "day")])
    table.append(events(30))
    with table.update_spec() as update:
        update.remove_field("ts_day")
        update.add_field("ts", "month")
        update.add_field("region", "identity")
    table.append(events(30, start=30))
    plan = check(spark, table)
    assert not plan.firn_files and len(plan.native_files) == len(table.scan().plan_files()) > 4
    for where in [
        "ts >= '2024-01-05T00:00:00+00:00'",
        "ts < '2024-01-02T12:00:00+00:00' or region = 'ap'",
        "region = 'eu' and id > 40",
        "id in (3, 33, 58)",
        "region is null",
        "day between '2024-01-01' and '2024-03-01'",
    ]:
        check(spark, table, filter=where)
    check(spark, table, columns=["name", "id"], filter="region = 'us'")


def _append_file(table: Table, path: Path, data: pa.Table, partition: tuple[Any, ...]) -> None:
    """Commit a Parquet file written outside Firn (field ids from the table's schema)."""
    pq.write_table(data, path)
    meta = metrics_from_parquet_footer(table.io, str(path), table.schema(), table.metadata.table_properties)
    table.row_delta().add_data_files([meta.to_data_file(partition=partition, spec_id=0)]).commit()


def test_identity_value_not_in_the_file_goes_to_firn(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2, name="hive", partition_spec=[("region", "identity")])
    table.append(events(8))
    schema = table.schema()
    without_region = schema.select([f.name for f in schema.fields if f.name != "region"])
    data = events(4, start=50).drop_columns(["region"]).cast(schema_to_arrow(without_region))
    outside = tmp_path / "outside-region-eu.parquet"
    _append_file(table, outside, data, ("eu",))
    plan = check(spark, table)
    assert [r.path for r in plan.routed] == [str(outside)]
    assert "identity partition column 'region' is not stored in the file" in plan.routed[0].reason
    got = firn.spark.read(spark, table, filter="id >= 50").toArrow()
    assert got.column("region").to_pylist() == ["eu"] * 4


# -- files from other writers ---------------------------------------------------------------------------
def test_added_files_by_name_mapping_and_hidden_names(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    table = make_events_table(catalog, 2, name="added")
    table.append(events(10))
    plain = events(6, start=20)  # written without field ids: read through the name mapping
    pq.write_table(plain, tmp_path / "plain.parquet")
    pq.write_table(events(3, start=40), tmp_path / "_hidden.parquet")
    table.add_files([str(tmp_path / "plain.parquet"), str(tmp_path / "_hidden.parquet")])
    with table.update_schema() as update:
        update.rename_column("name", "title")
    plan = check(spark, table)
    assert str(tmp_path / "plain.parquet") in plan.native_files
    routed = {r.path: r.reason for r in plan.routed}
    assert list(routed) == [str(tmp_path / "_hidden.parquet")]
    assert "starts with '_' or '.'" in routed[str(tmp_path / "_hidden.parquet")]
    check(spark, table, filter="title = 'name-021'", columns=["id", "title"])


def test_types_spark_reads_exactly_and_types_it_does_not(spark: Any, catalog: SqlCatalog) -> None:
    native = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("fx", pa.binary(4)),
            pa.field("bn", pa.binary()),
            pa.field("ntz", pa.timestamp("us")),
            pa.field("tz", pa.timestamp("us", tz="UTC")),
            pa.field("d", pa.date32()),
            pa.field("m", pa.map_(pa.string(), pa.int32())),
            pa.field("dec", pa.decimal128(20, 3)),
            pa.field("l", pa.list_(pa.struct([pa.field("u", pa.int32()), pa.field("v", pa.float32())]))),
        ]
    )
    table = catalog.create_table("db.types", native, properties={"format-version": "3"})
    table.append(
        pa.table(
            {
                "id": [1, 2, 3],
                "fx": [b"abcd", None, b"\x00\x00\x00\x01"],
                "bn": [b"\x00\x01", b"", None],
                "ntz": [dt.datetime(1000, 1, 1, 12), dt.datetime(2024, 3, 1, 1, 2, 3, 999999), None],
                "tz": [dt.datetime(1500, 1, 1, tzinfo=dt.UTC), None, dt.datetime(2024, 3, 1, tzinfo=dt.UTC)],
                "d": [dt.date(1000, 1, 1), dt.date(2024, 2, 29), None],
                "m": [[("a", 1), ("b", None)], None, []],
                "dec": [Decimal("12345678901234567.125"), Decimal("-0.001"), None],
                "l": [[{"u": 1, "v": 1.5}, None], None, [{"u": None, "v": float("nan")}]],
            },
            schema=native,
        )
    )
    plan = check(spark, table)
    assert not plan.firn_files
    for where in [
        "ntz < '2024-01-01T00:00:00'",
        "tz >= '1600-01-01T00:00:00+00:00'",
        "d = '1000-01-01'",
        "dec > 0",
        "bn = X'0001'",
        "fx != X'61626364'",
    ]:
        plan = check(spark, table, filter=where)
        assert plan.native_files or not table.scan(filter=where).plan_files()
    for column, pa_type in [("u", pa.uuid()), ("t", pa.time64("us")), ("ns", pa.timestamp("ns"))]:
        schema = pa.schema([pa.field("id", pa.int64(), False), pa.field(column, pa_type)])
        other = catalog.create_table(f"db.types_{column}", schema, properties={"format-version": "3"})
        value = {"u": uuid.UUID(int=7), "t": dt.time(1, 2, 3, 4), "ns": dt.datetime(2024, 1, 1, 0, 0, 1)}[
            column
        ]
        other.append(pa.table({"id": [1, 2], column: pa.array([value, None], pa_type)}, schema=schema))
        plan = check(spark, other)
        assert not plan.native_files and "Spark's Parquet reader does not read" in plan.routed[0].reason


# -- filters and columns ---------------------------------------------------------------------------------
def _float_table(catalog: SqlCatalog) -> Table:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("v", pa.float64()),
            pa.field("w", pa.float32()),
            pa.field("s", pa.string()),
        ]
    )
    values = [float("nan"), -0.0, 0.0, None, 1.5, -2.0, 0.1, float("inf")]
    table = catalog.create_table("db.floats", schema, properties={"format-version": "2"})
    table.append(
        pa.table(
            {
                "id": range(len(values)),
                "v": values,
                "w": pa.array(values, pa.float32()),
                "s": ["a", "ab", None, "b", "", "ba", "abc", "x"],
            },
            schema=schema,
        )
    )
    return table


FILTERS = [
    "v > 0",
    "v >= 0",
    "v < 0",
    "v <= 0",
    "v = 0",
    "v != 0",
    "v in (0, 1.5)",
    "v not in (1.5, -2)",
    "v is nan",
    "v is not nan",
    "v is null",
    "v is not null",
    "not (v > 0)",
    "not (v = 1.5) or v is null",
    "w = 0.1",
    "w > 0.1",
    "w <= 0.1",
    "s like 'a%'",
    "s not like 'a%'",
    "s > 'ab'",
    "s != 'a'",
    "not (s in ('a', 'b'))",
    "v > 0 and s like 'a%' or id = 3",
]


@pytest.mark.parametrize("where", FILTERS)
def test_filters_keep_firns_null_and_nan_semantics(spark: Any, catalog: SqlCatalog, where: str) -> None:
    table = _float_table(catalog)
    plan = check(spark, table, filter=where)
    assert not plan.firn_files  # the residual was applied by Spark, not by Firn


def test_columns_and_filter_on_other_columns(spark: Any, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    check(spark, table, columns=["name", "id"])
    check(spark, table, columns=["name", "id"], filter="x > 3 and info.src = 'web'")
    check(spark, table, columns=["info.score", "id"], filter="info.src = 'app'")
    check(spark, table, columns=["ID", "Name"], case_sensitive=False, filter="REGION = 'us'")
    df = firn.spark.read(spark, table, columns=["info.score", "id"], filter="info.src = 'app'")
    assert df.schema["info"].dataType.simpleString() == "struct<score:double>"


def test_metadata_columns_go_to_firn(spark: Any, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    plan = check(spark, table, columns=["id", "_pos", "_file"])
    assert not plan.native_files
    assert {r.reason for r in plan.routed} == {"metadata column '_pos' requested"}


def test_empty_table_and_bad_arguments(spark: Any, catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2, name="empty")
    df = firn.spark.read(spark, table)
    assert df.count() == 0 and df.columns == [f.name for f in table.schema().fields]
    with pytest.raises(ValidationError, match="at least one column"):
        firn.spark.read(spark, table, columns=[])
    with pytest.raises(ValidationError, match="not one string"):
        firn.spark.read(spark, table, columns="id")
    with pytest.raises(ValidationError, match="nope"):
        firn.spark.read(spark, table, columns=["nope"])


def test_a_missing_file_is_an_error_whatever_the_session_says(spark: Any, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    df = firn.spark.read(spark, table)
    Path(table.scan().plan_files()[0].file.file_path).unlink()
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")  # would silently drop the file's rows
    try:
        with pytest.raises(Exception, match="FILE_NOT_EXIST"):
            df.count()
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
