"""Reading through the ``firn`` data source: identical answers to ``table.scan()`` on every
format version (deletes applied) and in time travel, column selection, filter pushdown that
prunes planning, and light, picklable input partitions.

The ``direct`` tests drive the data source's Python objects as PySpark's planner and workers
do (schema, reader, pushFilters, partitions pickled, read) without a JVM; the ``spark`` tests
go through a real local[2] session."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import datasource as sds
from pyspark.sql import types as st
from pyspark.sql.datasource import CaseInsensitiveDict

from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.spark.source import FirnDataSource, FirnInputPartition, SessionSettings, SplitSettings, pack_tasks
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.spark_tables import TABLE_KINDS, build_table, catalog_uri, same_rows, spark_catalog


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


class PushdownSource(FirnDataSource):
    """The source as ``register(spark, filter_pushdown=True)`` makes it."""

    settings = SessionSettings(filter_pushdown=True)


def _source(directory: Path, name: str = "db.events", **options: str) -> FirnDataSource:
    return PushdownSource(CaseInsensitiveDict({"path": name, "catalog": catalog_uri(directory), **options}))


def direct_read(
    directory: Path,
    name: str = "db.events",
    *,
    filters: list[sds.Filter] | None = None,
    schema: st.StructType | None = None,
    **options: str,
) -> tuple[pa.Table, list[sds.Filter], list[FirnInputPartition]]:
    """(rows, filters left to Spark, partitions) as PySpark would get them."""
    source = pickle.loads(pickle.dumps(_source(directory, name, **options)))
    reader = source.reader(schema if schema is not None else source.schema())
    rest = list(reader.pushFilters(list(filters or [])))
    reader = pickle.loads(pickle.dumps(reader))
    # PySpark pickles partitions with the standard pickler.
    parts = [pickle.loads(pickle.dumps(p)) for p in reader.partitions()]
    batches = [b for p in parts for b in reader.read(p)]
    return pa.Table.from_batches(batches, schema=reader.target), rest, parts


@pytest.mark.parametrize("kind", sorted(TABLE_KINDS))
def test_direct_read_equals_scan(tmp_path: Path, catalog: SqlCatalog, kind: str) -> None:
    table = build_table(catalog, kind)
    got, _, parts = direct_read(tmp_path)
    expected = table.scan().to_arrow()
    assert got.num_rows == expected.num_rows > 0
    assert same_rows(got, expected)
    assert sum(len(p.tasks) for p in parts) == len(table.scan().plan_files())


def _snapshots(table: Table) -> list[int]:
    return [s.snapshot_id for s in table.snapshots()]


@pytest.mark.parametrize("kind", ["v2-deletes", "v4"])
def test_direct_time_travel(tmp_path: Path, catalog: SqlCatalog, kind: str) -> None:
    table = build_table(catalog, kind)
    first, second = _snapshots(table)[:2]
    table.manage_snapshots().create_tag("t1", first).commit()
    as_of = next(e.timestamp_ms for e in table.history() if e.snapshot_id == second)
    cases: list[tuple[dict[str, str], dict[str, Any]]] = [
        ({"snapshot-id": str(first)}, {"snapshot_id": first}),
        ({"ref": "t1"}, {"ref": "t1"}),
        ({"as-of-timestamp": str(as_of)}, {"as_of": as_of}),
    ]
    for options, scan in cases:
        got, _, _ = direct_read(tmp_path, **options)
        expected = table.scan(**scan).to_arrow()
        assert same_rows(got, expected), options
    assert direct_read(tmp_path, **{"snapshot-id": str(first)})[0].num_rows == 60


def test_time_travel_uses_the_snapshot_schema(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    first = _snapshots(table)[0]
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    assert "extra" in _source(tmp_path).schema().fieldNames()
    old = _source(tmp_path, **{"snapshot-id": str(first)}).schema()
    assert "extra" not in old.fieldNames()


def test_columns_option_and_metadata_columns(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    got, _, _ = direct_read(tmp_path, columns="name, id, _pos, info.score")
    expected = table.scan(columns=["name", "id", "_pos", "info.score"]).to_arrow()
    assert got.column_names == ["name", "id", "_pos", "info"] == expected.column_names
    assert same_rows(got, expected)
    assert got.schema.field("info").type == pa.struct([pa.field("score", pa.float64())])


def test_user_schema_selects_columns_and_checks_types(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v2-deletes")
    schema = st.StructType([st.StructField("region", st.StringType()), st.StructField("id", st.LongType())])
    got, _, _ = direct_read(tmp_path, schema=schema)
    assert same_rows(got, table.scan(columns=["region", "id"]).to_arrow())
    wrong = st.StructType([st.StructField("id", st.IntegerType())])
    with pytest.raises(
        ValidationError, match=r"'id' of db\.events reads as bigint not null; the given schema says int"
    ):
        _source(tmp_path).reader(wrong)
    with pytest.raises(ValidationError, match="unknown column 'nope'"):
        _source(tmp_path).reader(st.StructType([st.StructField("nope", st.LongType())]))


def test_schema_pins_the_table_state_it_read(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    source = _source(tmp_path)
    schema = source.schema()
    before = table.scan().to_arrow()
    table.append(pa.table({"id": pa.array([999], pa.int64())}))
    reader = source.reader(schema)
    rows = pa.Table.from_batches(
        [b for p in reader.partitions() for b in reader.read(p)], schema=reader.target
    )
    assert same_rows(rows, before)


def test_pushdown_prunes_partitions_and_files(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    all_tasks = len(table.scan().plan_files())
    region = sds.EqualTo(("region",), "eu")
    got, rest, parts = direct_read(tmp_path, filters=[region])
    assert rest == []
    assert set(got.column("region").to_pylist()) == {"eu"}
    assert same_rows(got, table.scan(filter="region = 'eu'").to_arrow())
    assert (
        sum(len(p.tasks) for p in parts) == len(table.scan(filter="region = 'eu'").plan_files()) < all_tasks
    )
    # Metrics: ids >= 100 live only in the third append's files.
    late = sds.GreaterThanOrEqual(("id",), 100)
    got, rest, parts = direct_read(tmp_path, filters=[late])
    assert rest == [] and min(got.column("id").to_pylist()) == 100
    assert sum(len(p.tasks) for p in parts) == len(table.scan(filter="id >= 100").plan_files()) < all_tasks


def test_filter_option_prunes_planning(tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v4")
    got, _, parts = direct_read(tmp_path, filter="region = 'eu' and id >= 100")
    expected = table.scan(filter="region = 'eu' and id >= 100")
    assert same_rows(got, expected.to_arrow()) and got.num_rows > 0
    assert sum(len(p.tasks) for p in parts) == len(expected.plan_files()) < len(table.scan().plan_files())
    with pytest.raises(ValidationError):
        _source(tmp_path, filter="nope = 1").schema()


def test_without_pushdown_spark_keeps_every_filter(tmp_path: Path, catalog: SqlCatalog) -> None:
    build_table(catalog, "v1")
    source = FirnDataSource(CaseInsensitiveDict({"path": "db.events", "catalog": catalog_uri(tmp_path)}))
    reader = source.reader(source.schema())
    region = sds.EqualTo(("region",), "eu")
    assert list(reader.pushFilters([region])) == [region]
    assert (
        not hasattr(type(reader), "pushFilters")
        or type(reader).pushFilters is sds.DataSourceReader.pushFilters
    )


def test_untranslatable_filters_go_back_to_spark(tmp_path: Path, catalog: SqlCatalog) -> None:
    build_table(catalog, "v1")
    ends = sds.StringEndsWith(("name",), "7")
    contains = sds.StringContains(("name",), "1")
    unknown = sds.EqualTo(("nope",), 1)
    pushed = sds.EqualTo(("region",), "us")
    got, rest, _ = direct_read(tmp_path, filters=[ends, pushed, contains, unknown])
    assert rest == [ends, contains, unknown]
    assert all(r is f for r, f in zip(rest, [ends, contains, unknown]))  # by reference
    assert set(got.column("region").to_pylist()) == {"us"}


def test_partitions_carry_no_column_metrics_and_stay_small(tmp_path: Path, catalog: SqlCatalog) -> None:
    build_table(catalog, "v2-deletes")
    _, _, parts = direct_read(tmp_path)
    for p in parts:
        for t in p.tasks:
            assert t.file.lower_bounds is None and t.file.value_counts is None
        assert len(pickle.dumps(p)) < 4096 * len(p.tasks)


def test_empty_table_reads_nothing(tmp_path: Path, catalog: SqlCatalog) -> None:
    build_table(catalog, "v1", name="other")
    catalog.create_table("db.empty", catalog.load_table("db.other").schema())
    got, _, parts = direct_read(tmp_path, "db.empty")
    assert parts == [] and got.num_rows == 0
    reader = _source(tmp_path, "db.empty").reader(_source(tmp_path, "db.empty").schema())
    assert list(reader.read(sds.InputPartition(None))) == []


def test_missing_catalog_is_a_clear_error(tmp_path: Path) -> None:
    source = FirnDataSource(CaseInsensitiveDict({"path": "db.t"}))
    with pytest.raises(ValidationError, match=r"no Firn catalog.*spark\.firn\.catalog\.uri"):
        source.schema()


def _tasks(sizes: list[int]) -> list[Any]:
    class _F:
        def __init__(self, size: int) -> None:
            self.file_size_in_bytes = size

    class _T:
        def __init__(self, size: int) -> None:
            self.file = _F(size)
            self.delete_files: tuple[Any, ...] = ()

    return [_T(s) for s in sizes]


def test_pack_tasks_by_size_and_parallelism() -> None:
    mib = 1024 * 1024
    big = SplitSettings(target=128 * mib, open_cost=4 * mib, parallelism=2)
    # 10 files of 100 MiB: never grouped past the target.
    assert [len(g) for g in pack_tasks(_tasks([100 * mib] * 10), big)] == [1] * 10
    # 64 files of 1 MiB weigh 4 MiB each (open cost): 256 MiB over 2 cores -> 128 MiB bins.
    assert [len(g) for g in pack_tasks(_tasks([mib] * 64), big)] == [32, 32]
    # A small table still spreads over the cores, in balanced partitions.
    assert [len(g) for g in pack_tasks(_tasks([10 * mib] * 4), big)] == [2, 2]
    assert [len(g) for g in pack_tasks(_tasks([5 * mib] * 12), big)] == [6, 6]
    assert [len(g) for g in pack_tasks(_tasks([mib] * 3), big)] == [1, 2]
    assert [len(g) for g in pack_tasks(_tasks([8_310_000 + i for i in range(20)]), big)] == [10, 10]
    assert pack_tasks([], big) == []
    tiny = SplitSettings(target=1, open_cost=4 * mib, parallelism=2)
    assert [len(g) for g in pack_tasks(_tasks([100 * mib] * 5), tiny)] == [1] * 5


# -- through Spark -------------------------------------------------------------------------------------


def spark_read(spark: Any, directory: Path, name: str = "db.events", **options: str) -> pa.Table:
    reader = spark.read.format("firn").option("catalog", catalog_uri(directory))
    for k, v in options.items():
        reader = reader.option(k, v)
    result: pa.Table = reader.load(name).toArrow()
    return result


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
@pytest.mark.parametrize("kind", sorted(TABLE_KINDS))
def test_spark_read_equals_scan(spark: Any, tmp_path: Path, catalog: SqlCatalog, kind: str) -> None:
    table = build_table(catalog, kind)
    got = spark_read(spark, tmp_path)
    expected = table.scan().to_arrow()
    assert got.num_rows == expected.num_rows > 0 and same_rows(got, expected)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_time_travel(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v3-dvs")
    first, second = _snapshots(table)[:2]
    table.manage_snapshots().create_branch("b", second).commit()
    as_of = next(e.timestamp_ms for e in table.history() if e.snapshot_id == first)
    assert same_rows(
        spark_read(spark, tmp_path, **{"snapshot-id": str(first)}), table.scan(snapshot_id=first).to_arrow()
    )
    assert same_rows(spark_read(spark, tmp_path, ref="b"), table.scan(ref="b").to_arrow())
    assert same_rows(
        spark_read(spark, tmp_path, **{"as-of-timestamp": str(as_of)}), table.scan(as_of=as_of).to_arrow()
    )


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_catalog_from_session_conf(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    import firn.spark

    table = build_table(catalog, "v1")
    spark.conf.set("spark.firn.catalog.uri", catalog_uri(tmp_path))
    try:
        firn.spark.register(spark)
        got = spark.read.format("firn").load("db.events").toArrow()
    finally:
        spark.conf.unset("spark.firn.catalog.uri")
        firn.spark.register(spark)
    assert same_rows(got, table.scan().to_arrow())


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_input_partitions_and_columns(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v2-deletes")
    files = len(table.scan().plan_files())
    uri = catalog_uri(tmp_path)
    read = spark.read.format("firn").option("catalog", uri)
    # Small files are grouped so each of local[2]'s cores gets one partition ...
    assert read.load("db.events").rdd.getNumPartitions() == 2 < files
    # ... and with a split size below any file, each planned file is its own partition.
    assert read.option("split-size", "1").load("db.events").rdd.getNumPartitions() == files
    df = spark.read.format("firn").option("catalog", uri).option("columns", "region, id").load("db.events")
    assert df.columns == ["region", "id"]
    assert same_rows(df.toArrow(), table.scan(columns=["region", "id"]).to_arrow())


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_pushdown_prunes_planned_files(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    import firn.spark

    table = build_table(catalog, "v3-dvs")
    uri = catalog_uri(tmp_path)

    def query(where: str) -> Any:  # a fresh DataFrame per query (see firn.spark.register)
        df = spark.read.format("firn").option("catalog", uri).option("split-size", "1").load("db.events")
        return df.where(where)

    firn.spark.register(spark, filter_pushdown=True)
    try:
        for where, firn_filter in [("region = 'eu'", "region = 'eu'"), ("id >= 100", "id >= 100")]:
            df = query(where)
            # One input partition per planned file: the pushed filter pruned by partition / metrics.
            planned = len(table.scan(filter=firn_filter).plan_files())
            assert df.rdd.getNumPartitions() == planned < len(table.scan().plan_files())
            assert same_rows(df.toArrow(), table.scan(filter=firn_filter).to_arrow())
    finally:
        firn.spark.register(spark)
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
