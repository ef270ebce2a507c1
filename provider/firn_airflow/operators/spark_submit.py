"""``FirnSparkSubmitOperator``: any PySpark application, with the Firn catalog of a connection.

A data pipeline that reads or writes Firn tables through the ``firn`` data source needs the
catalog in its Spark driver. This is the Spark provider's ``SparkSubmitOperator`` plus one
argument, ``firn_conn_id``: when the task runs, the connection's catalog URI, warehouse and
properties are handed to the driver as ``FIRN_CATALOG_*`` environment variables (read by
``firn.spark.register``, ``firn.spark.delete`` and the maintenance job), never on the
command line, where a password or storage key would be visible to every user of the machine
and in spark-submit's log line. The job then needs no catalog options::

    FirnSparkSubmitOperator(
        task_id="ingest",
        application="jobs/ingest_events.py",   # calls firn.spark.register(spark)
        firn_conn_id="firn_default",
        conn_id="spark_default",
        application_args=["--table", "demo.events"],
        outlets=[firn_asset("firn_default", "demo.events")],
    )

Before anything is submitted the Spark connection must exist (``SparkSubmitHook`` would
otherwise submit to YARN without a word), ``spark-submit`` must be on ``PATH``, and a
connection holding secrets is refused for cluster deploy mode, where the hook would turn the
environment into ``--conf`` arguments. Everything else -- templating, ``on_kill``, resumable
cluster-mode jobs, OpenLineage injection -- is ``SparkSubmitOperator``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.hooks.firn import FirnHook
from firn_airflow.operators.spark_job import (
    DEFAULT_SPARK_CONN_ID,
    SparkMaintenanceJob,
    SparkSettings,
    driver_environment,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class FirnSparkSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` whose Spark driver gets the catalog of ``firn_conn_id``.

    :param firn_conn_id: the Firn connection whose catalog the application uses (default
        ``firn_default``).
    :param conn_id: the Spark connection (default ``spark_default``; it must exist).
    Every other argument is ``SparkSubmitOperator``'s. Variables given in ``env_vars`` win over
    the catalog's (``FIRN_CATALOG_URI``, ``FIRN_CATALOG_WAREHOUSE``, ``FIRN_CATALOG_PROPERTIES``).
    """

    ui_color = "#e8f4fa"

    def __init__(
        self, *, firn_conn_id: str = DEFAULT_CONN_ID, conn_id: str = DEFAULT_SPARK_CONN_ID, **kwargs: Any
    ) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.firn_conn_id = firn_conn_id

    def execute(self, context: Context) -> None:
        hook = FirnHook(self.firn_conn_id)
        config = hook.get_config()  # registers the connection's secrets with the log masker
        env = {**driver_environment(config, {}), **dict(self.env_vars or {})}
        settings = SparkSettings(conn_id=self._conn_id, conf=dict(self.conf or {}), env_vars=env)
        SparkMaintenanceJob(settings, config, log=self.log).check()
        self.env_vars = env
        self.log.info(
            "Spark driver gets Firn catalog %r at %s (connection %r) through its environment",
            config.name,
            config.display_uri,
            config.conn_id,
        )
        super().execute(context)


__all__ = ["FirnSparkSubmitOperator"]
