"""The driver's ``FIRN_CATALOG_*`` environment reaches every driver-side entry point of
``firn.spark`` (the data source through ``register``, ``catalog_config``, Spark deletes), not
only the maintenance job: that is how the Airflow operators keep catalog secrets off
spark-submit's command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.spark.config import (
    CONF_PREFIX,
    ENV_CATALOG_PROPERTIES,
    ENV_CATALOG_URI,
    ENV_CATALOG_WAREHOUSE,
    driver_conf,
)
from tests.fixtures.spark_tables import build_table, catalog_uri, same_rows, spark_catalog


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_environment_goes_over_the_session_conf(spark: Any) -> None:
    spark.conf.set(CONF_PREFIX + "uri", "sqlite:///from-conf.db")
    spark.conf.set(CONF_PREFIX + "s3.region", "conf-region")
    try:
        conf = driver_conf(
            spark,
            {
                ENV_CATALOG_URI: "sqlite:///from-env.db",
                ENV_CATALOG_WAREHOUSE: "/env/warehouse",
                ENV_CATALOG_PROPERTIES: json.dumps({"s3.secret-access-key": "k", "name": "prod"}),
            },
        )
        assert conf[CONF_PREFIX + "uri"] == "sqlite:///from-env.db"
        assert conf[CONF_PREFIX + "warehouse"] == "/env/warehouse"
        assert conf[CONF_PREFIX + "s3.secret-access-key"] == "k" and conf[CONF_PREFIX + "name"] == "prod"
        assert conf[CONF_PREFIX + "s3.region"] == "conf-region"  # the conf still counts below
        assert driver_conf(spark, {})[CONF_PREFIX + "uri"] == "sqlite:///from-conf.db"
    finally:
        spark.conf.unset(CONF_PREFIX + "uri")
        spark.conf.unset(CONF_PREFIX + "s3.region")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_read_and_delete_take_the_catalog_from_the_environment(
    spark: Any, tmp_path: Path, catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import firn.spark

    table = build_table(catalog, "v3-dvs")
    monkeypatch.setenv(ENV_CATALOG_URI, catalog_uri(tmp_path))
    try:
        firn.spark.register(spark)  # captures the environment for the source's workers
        got = spark.read.format("firn").load("db.events").toArrow()
        assert same_rows(got, table.scan().to_arrow())
        result = firn.spark.merge_on_read_delete(spark, "db.events", "id = 30")
        assert result.deleted_rows == 1
        assert table.refresh().scan(filter="id = 30").count() == 0
    finally:
        monkeypatch.delenv(ENV_CATALOG_URI)
        firn.spark.register(spark)
