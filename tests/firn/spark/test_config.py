"""Where the data source, the deletes and the job find their catalog: options over the Spark
conf ``spark.firn.catalog.*`` (URI, warehouse, any catalog property, the catalog's name).

These drive ``CatalogConfig`` and the data source's Python objects directly, with the conf as
``firn.spark.register`` captures it; ``test_source.py`` reads through a session whose conf
names the catalog."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.spark.config import CatalogConfig
from firn.spark.source import FirnDataSource, SessionSettings
from tests.fixtures.spark_tables import build_table, catalog_uri, same_rows, spark_catalog
from tests.fixtures.tables import make_events_table


def test_conf_gives_uri_warehouse_and_properties() -> None:
    conf = {
        "spark.firn.catalog.uri": "sqlite:///c.db",
        "spark.firn.catalog.warehouse": "/wh",
        "spark.firn.catalog.s3.endpoint": "http://minio:9000",
        "spark.firn.catalog.name": "prod",
        "spark.other": "ignored",
    }
    config = CatalogConfig.resolve({}, conf)
    assert config == CatalogConfig(
        "sqlite:///c.db", "/wh", {"s3.endpoint": "http://minio:9000", "name": "prod"}
    )
    assert config.name == "prod"
    assert CatalogConfig.from_conf({"spark.firn.catalog.warehouse": "/wh"}) is None  # no uri: no catalog


def test_options_override_the_conf() -> None:
    conf = {
        "spark.firn.catalog.uri": "sqlite:///c.db",
        "spark.firn.catalog.warehouse": "/wh",
        "spark.firn.catalog.s3.endpoint": "http://conf:9000",
        "spark.firn.catalog.s3.region": "eu-west-1",
    }
    # Spark lower-cases option keys; values keep their case.
    options = {"catalog": "sqlite:///other.db", "catalog.s3.endpoint": "http://Option:9000"}
    config = CatalogConfig.resolve(options, conf)
    assert config.uri == "sqlite:///other.db" and config.warehouse == "/wh"
    assert config.properties == {"s3.endpoint": "http://Option:9000", "s3.region": "eu-west-1"}
    assert CatalogConfig.resolve({"warehouse": "/mine"}, conf).warehouse == "/mine"


def test_no_catalog_anywhere_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match=r"pass \.option\('catalog', '<uri>'\) or set the Spark conf"):
        CatalogConfig.resolve({"warehouse": "/wh"}, {"spark.firn.catalog.warehouse": "/wh"})


class _ConfSource(FirnDataSource):
    """The source as ``register`` makes it for a session whose conf is set below."""


def _source_with_conf(conf: dict[str, str], **options: str) -> FirnDataSource:
    cls = type("FirnDataSource", (_ConfSource,), {"settings": SessionSettings(conf=conf)})
    return cls(CaseInsensitiveDict({"path": "db.events", **options}))


def _read(source: FirnDataSource) -> pa.Table:
    reader = source.reader(source.schema())
    return pa.Table.from_batches(
        [b for p in reader.partitions() for b in reader.read(p)], schema=reader.target
    )


def test_the_source_reads_the_catalog_named_by_the_conf(tmp_path: Path) -> None:
    table = build_table(spark_catalog(tmp_path), "v3-dvs")
    conf = {"spark.firn.catalog.uri": catalog_uri(tmp_path), "spark.firn.catalog.warehouse": str(tmp_path)}
    assert same_rows(_read(_source_with_conf(conf)), table.scan().to_arrow())


def test_the_catalog_name_property_selects_the_catalog(tmp_path: Path) -> None:
    # Two catalogs in one SQLite database, as Iceberg's JDBC catalog keeps them: same table
    # name, different rows. The conf's name picks one; a per-read option picks the other.
    default = build_table(spark_catalog(tmp_path), "v1")
    prod = SqlCatalog("prod", catalog_uri(tmp_path), warehouse=str(tmp_path / "prod-warehouse"))
    prod.create_namespace("db")
    other = make_events_table(prod, 2, name="events")
    other.append(pa.table({"id": pa.array([7, 8], pa.int64())}))
    conf = {"spark.firn.catalog.uri": catalog_uri(tmp_path), "spark.firn.catalog.name": "prod"}
    assert sorted(_read(_source_with_conf(conf)).column("id").to_pylist()) == [7, 8]
    chosen = _source_with_conf(conf, **{"catalog.name": "default"})
    assert same_rows(_read(chosen), default.scan().to_arrow())


def test_reprs_mask_credentials() -> None:
    # Catalog settings travel in Spark conf and data source objects; their repr() must not
    # print a database password or a storage secret (issue 18).
    conf = {
        "spark.firn.catalog.uri": "postgresql://firn:DBPASS-77@db/firn",
        "spark.firn.catalog.s3.secret-access-key": "S3SECRET-88",
        "spark.firn.catalog.s3.endpoint": "http://minio:9000",
    }
    config = CatalogConfig.resolve({}, conf)
    assert config.properties["s3.secret-access-key"] == "S3SECRET-88"  # still usable
    settings = SessionSettings(conf=conf)
    for text in (repr(config), str(config), repr(settings)):
        assert "DBPASS-77" not in text and "S3SECRET-88" not in text
        assert "***" in text and "http://minio:9000" in text
