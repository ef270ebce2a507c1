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

Before anything is submitted, each of these is one clear task error
(:class:`~firn_airflow.errors.SparkConnectionError`):

* the Spark connection does not exist (``SparkSubmitHook`` would otherwise submit to YARN
  without a word);
* the deploy mode is ``cluster`` -- from the connection, the operator's ``deploy_mode`` or
  ``spark.submit.deployMode`` -- and the Firn connection holds secrets: the hook would turn the
  environment into ``--conf`` arguments on the command line (YARN, Kubernetes);
* ``spark-submit`` (the connection's ``spark-binary``) is not on ``PATH``.

Everything else -- templating, ``on_kill``, resumable cluster-mode jobs, OpenLineage
injection -- is ``SparkSubmitOperator``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from firn.errors import FirnError
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.hooks.firn import FirnHook
from firn_airflow.hooks.spark_job import (
    DEFAULT_SPARK_CONN_ID,
    driver_environment,
    preflight,
    require_spark_connection,
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
        try:
            self._prepare()
        except FirnError as e:
            raise e from None  # one clear task error, without the causes it wraps
        super().execute(context)

    def _prepare(self) -> None:
        """Check everything; ``env_vars`` becomes the catalog's variables with the user's on top."""
        config = FirnHook(self.firn_conn_id).get_config()  # registers the secrets with the masker
        require_spark_connection(self._conn_id)
        self.env_vars = {
            **driver_environment(config, {}),
            **{str(k): str(v) for k, v in (self.env_vars or {}).items()},
        }
        # The hook resolves master, deploy mode and binary from the connection and this
        # operator's overrides; the checks read them from it, as the submission will.
        preflight(
            self._get_hook(),
            spark_conn_id=self._conn_id,
            firn=config,
            conf=self.conf,
            env_vars=self.env_vars,
        )
        # Not kept as self._hook: execute() may still add OpenLineage properties to conf first.
        self.log.info(
            "Spark driver gets Firn catalog %r at %s (connection %r) through its environment",
            config.name,
            config.display_uri,
            config.conn_id,
        )


__all__ = ["FirnSparkSubmitOperator"]
