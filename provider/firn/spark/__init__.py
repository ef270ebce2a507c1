"""Firn on Spark: the ``firn`` PySpark data source, Spark-side row deletes, maintenance on
Spark (``SparkRunner``, the spark-submit job) and shipping Firn to executors.

::

    import firn.spark

    firn.spark.register(spark)
    df = spark.read.format("firn").option("catalog", "sqlite:///cat.db").load("db.t")
    df = firn.spark.read(spark, "db.t", catalog="sqlite:///cat.db")  # delete-free files read by Spark
    new = firn.spark.read(spark, "db.t", from_snapshot_id=a, to_snapshot_id=b)  # rows appended in (a, b]
    changes = firn.spark.read_changes(spark, "db.t", a, b)  # INSERT/DELETE rows, as table.changelog
    df.write.format("firn").option("catalog", "sqlite:///cat.db").mode("append").save("db.t")
    firn.spark.delete(spark, "db.t", "id < 10", catalog="sqlite:///cat.db")
    firn.spark.register_view(spark, "db.v", catalog="sqlite:///cat.db")  # a Firn view, as temp view v

This package imports PySpark; nothing below it does (an import-linter contract).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firn.spark import job
from firn.spark.changes import SparkChangelogPlan, plan_changes, read_changes
from firn.spark.config import CatalogConfig, catalog_config
from firn.spark.dataframe import RoutedFile, SparkReadPlan, plan_read, read
from firn.spark.deletes import RowDeleteResult, delete, merge_on_read_delete
from firn.spark.package import pack_venv, package
from firn.spark.runner import SparkRunner
from firn.spark.source import SOURCE_NAME, FirnDataSource, SessionSettings
from firn.spark.views import register_view
from firn.spark.workers import WorkerPython, WorkersCannotImportFirn, check_workers

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"


def register(
    spark: SparkSession, *, filter_pushdown: bool = False, check_python: bool = True
) -> type[FirnDataSource]:
    """Register the ``firn`` data source with ``spark``; returns the registered class.

    Python data source workers cannot read the session conf, so this captures what the source
    needs from it now: ``spark.firn.catalog.*`` (catalog URI, warehouse, properties) with the
    driver's ``FIRN_CATALOG_*`` environment over it (``firn.spark.config.driver_conf``),
    ``spark.sql.sources.partitionOverwriteMode`` and the default parallelism. Call it again
    after changing those. ``filter_pushdown=True`` lets Spark push its filters into planning
    (and enables ``spark.sql.python.filterPushdown.enabled``, which PySpark requires for that);
    it is off by default because of a PySpark 4.2 caching issue that can return a previous
    query's filtered rows for a reused DataFrame (see ``firn.spark.source``). The ``filter``
    read option prunes planning without that risk.

    Before anything is registered, one one-row task checks that Spark's Python workers can
    import Firn (once per Spark application; ``firn.spark.workers``): when they run another
    interpreter (``PYSPARK_PYTHON`` unset, so PySpark takes ``python3`` from the PATH), this
    raises :class:`~firn.spark.workers.WorkersCannotImportFirn` naming that interpreter and
    the fix, instead of every read failing later inside a task. ``check_python=False`` skips
    the check."""
    from firn.spark.config import driver_conf

    if check_python:
        check_workers(spark)
    if filter_pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
    settings = SessionSettings(
        conf=driver_conf(spark),
        partition_overwrite_mode=str(spark.conf.get(OVERWRITE_MODE_CONF, "static") or "static").lower(),
        parallelism=spark.sparkContext.defaultParallelism,
        filter_pushdown=filter_pushdown,
    )
    # A class made here (not importable by name) is pickled by value, settings included, into
    # the Python workers that run the source.
    registered = type(FirnDataSource.__name__, (FirnDataSource,), {"settings": settings})
    registered.__qualname__ = "register.<locals>.FirnDataSource"
    spark.dataSource.register(registered)
    return registered


__all__ = [
    "SOURCE_NAME",
    "CatalogConfig",
    "FirnDataSource",
    "RoutedFile",
    "RowDeleteResult",
    "SparkChangelogPlan",
    "SparkReadPlan",
    "SparkRunner",
    "WorkerPython",
    "WorkersCannotImportFirn",
    "catalog_config",
    "check_workers",
    "delete",
    "job",
    "merge_on_read_delete",
    "pack_venv",
    "package",
    "plan_changes",
    "plan_read",
    "read",
    "read_changes",
    "register",
    "register_view",
]
