"""``firn.spark.register_view``: Firn views as Spark temporary views, on the test SparkSession.

Spark namespaces made here have names of their own and locations under ``tmp_path`` (the
session is shared with the other Spark tests), and are dropped afterwards.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.errors import NotFound, ValidationError
from firn.views import with_field_aliases
from tests.fixtures.spark_tables import catalog_uri, spark_catalog

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

VIEW_NS = "firn_view_ns"  # the Firn view's default namespace, and a Spark namespace
OTHER_NS = "firn_view_other"  # Spark's current namespace while the view is registered
EVENTS = pa.table({"id": list(range(12)), "region": ["eu", "eu", "us", "ap"] * 3})
SQL = "SELECT region, count(*) FROM events GROUP BY region"


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    cat = spark_catalog(tmp_path)
    cat.create_table("db.events", EVENTS.schema, properties={"format-version": "2"}).append(EVENTS)
    return cat


@pytest.fixture
def spark_namespaces(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> Iterator[None]:
    """Spark namespaces VIEW_NS (its ``events``: the Firn table's rows) and OTHER_NS (an
    ``events`` with other rows), OTHER_NS current; all dropped and ``default`` current after."""
    uri = catalog_uri(tmp_path)
    for ns in (VIEW_NS, OTHER_NS):
        spark.sql(f"CREATE NAMESPACE {ns} LOCATION '{tmp_path / 'spark' / ns}'")
    firn_rows = spark.read.format("firn").option("catalog", uri).load("db.events")
    firn_rows.write.option("path", str(tmp_path / "spark" / "events")).saveAsTable(f"{VIEW_NS}.events")
    spark.createDataFrame([(99, "elsewhere")], "id long, region string").write.option(
        "path", str(tmp_path / "spark" / "other_events")
    ).saveAsTable(f"{OTHER_NS}.events")
    spark.catalog.setCurrentDatabase(OTHER_NS)
    try:
        yield
    finally:
        spark.catalog.setCurrentDatabase("default")
        for ns in (VIEW_NS, OTHER_NS):
            spark.sql(f"DROP NAMESPACE IF EXISTS {ns} CASCADE")


def _counts(table: pa.Table) -> dict[str, int]:
    return dict(collections.Counter(table.column("region").to_pylist()))


def _comments(spark: Any, name: str) -> dict[str, str | None]:
    return {r["col_name"]: r["comment"] for r in spark.sql(f"DESCRIBE {name}").collect()}


@pytest.mark.usefixtures("spark_namespaces")
def test_register_view_resolves_in_the_default_namespace(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    schema = with_field_aliases(
        catalog.create_view(
            "db.q", pa.schema([("r", pa.string()), ("c", pa.int64())]), "SELECT 1, 2"
        ).schema(),
        ["area", "events"],
        ["Region code", None],
    )
    catalog.create_view("db.by_region", schema, SQL, default_namespace=VIEW_NS)
    df = firn.spark.register_view(spark, "db.by_region", catalog=catalog_uri(tmp_path))

    expected = _counts(catalog.load_table("db.events").scan().to_arrow())
    assert {r["area"]: r["events"] for r in df.collect()} == expected == {"eu": 6, "us": 3, "ap": 3}
    assert df.columns == ["area", "events"]
    assert _comments(spark, "by_region") == {"area": "Region code", "events": None}
    # Spark's current namespace is restored, and the view keeps resolving in its own.
    assert spark.catalog.currentDatabase() == OTHER_NS
    assert spark.sql("SELECT count(*) AS n FROM events").collect()[0]["n"] == 1  # OTHER_NS.events
    spark.catalog.setCurrentDatabase("default")
    assert {r["area"]: r["events"] for r in spark.sql("SELECT * FROM by_region").collect()} == expected
    spark.catalog.dropTempView("by_region")


@pytest.mark.usefixtures("spark_namespaces")
def test_views_over_firn_tables_registered_as_temp_views(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    """The usual set-up without an Iceberg catalog in Spark: the Firn table is read through the
    ``firn`` source into a temporary view, which an unqualified name in the view's SQL finds."""
    uri = catalog_uri(tmp_path)
    catalog.create_view(
        "db.eu",
        pa.schema([("id", pa.int64())]),
        {"spark": "SELECT id FROM firn_events WHERE region = 'eu'", "trino": "SELECT 1"},
        default_namespace=VIEW_NS,
    )
    spark.read.format("firn").option("catalog", uri).load("db.events").createOrReplaceTempView("firn_events")
    spark.conf.set("spark.firn.catalog.uri", uri)  # the catalog from the conf, as for delete()
    try:
        df = firn.spark.register_view(spark, "db.eu", temp_view="eu ids")
    finally:
        spark.conf.unset("spark.firn.catalog.uri")
    assert sorted(r["id"] for r in df.collect()) == [0, 1, 4, 5, 8, 9]
    assert sorted(r["id"] for r in spark.sql("SELECT id FROM `eu ids`").collect()) == [0, 1, 4, 5, 8, 9]
    spark.catalog.dropTempView("eu ids")
    spark.catalog.dropTempView("firn_events")


def test_no_spark_sql_names_the_dialects(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    catalog.create_view(
        "db.t_only", pa.schema([("x", pa.int64())]), {"trino": "SELECT 1", "presto": "SELECT 1"}
    )
    before = (spark.catalog.currentCatalog(), spark.catalog.currentDatabase())
    with pytest.raises(
        NotFound,
        match=r"'db\.t_only' has no SQL representation for dialect 'spark'; its dialects: trino, presto",
    ):
        firn.spark.register_view(spark, "db.t_only", catalog=catalog_uri(tmp_path))
    assert not spark.catalog.tableExists("t_only")
    assert (spark.catalog.currentCatalog(), spark.catalog.currentDatabase()) == before


def test_missing_default_namespace_or_catalog_is_refused(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    uri = catalog_uri(tmp_path)
    before = (spark.catalog.currentCatalog(), spark.catalog.currentDatabase())
    catalog.create_view("db.v", pa.schema([("x", pa.int64())]), "SELECT 1", default_namespace="no_such_ns")
    with pytest.raises(NotFound, match=r"has no namespace 'no_such_ns' \(the view's default namespace"):
        firn.spark.register_view(spark, "db.v", catalog=uri)
    catalog.create_view("db.w", pa.schema([("x", pa.int64())]), "SELECT 1", default_catalog="nope")
    with pytest.raises(NotFound, match=r"Spark has no catalog 'nope' .*CATALOG_NOT_FOUND"):
        firn.spark.register_view(spark, "db.w", catalog=uri)
    assert (spark.catalog.currentCatalog(), spark.catalog.currentDatabase()) == before
    assert not spark.catalog.tableExists("v") and not spark.catalog.tableExists("w")
    with pytest.raises(firn.errors.NoSuchView):
        firn.spark.register_view(spark, "db.nope", catalog=uri)


def test_spark_refusing_the_sql_is_one_clear_error(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    uri = catalog_uri(tmp_path)
    # The schema says one column, the SQL yields two.
    catalog.create_view("db.two", pa.schema([("x", pa.int64())]), "SELECT 1, 2", default_namespace="default")
    with pytest.raises(
        ValidationError, match=r"Spark refused the spark SQL of view 'db\.two'.*ARITY_MISMATCH"
    ):
        firn.spark.register_view(spark, "db.two", catalog=uri)
    catalog.create_view(
        "db.gone", pa.schema([("x", pa.int64())]), "SELECT x FROM no_such_table", default_namespace="default"
    )
    with pytest.raises(ValidationError, match="TABLE_OR_VIEW_NOT_FOUND"):
        firn.spark.register_view(spark, "db.gone", catalog=uri)


def test_names_and_comments_are_quoted(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    doc = "it's a \\ backslash, a `tick` and\na newline"
    schema = with_field_aliases(
        catalog.create_view("db.q", pa.schema([("a", pa.int64())]), "SELECT 1").schema(),
        ["we`ird col"],
        [doc],
    )
    catalog.create_view("db.odd", schema, "SELECT 7", default_namespace="default")
    df = firn.spark.register_view(spark, "db.odd", temp_view="od`d", catalog=catalog_uri(tmp_path))
    assert df.columns == ["we`ird col"] and df.collect()[0][0] == 7
    assert _comments(spark, "`od``d`") == {"we`ird col": doc}
    spark.catalog.dropTempView("od`d")
