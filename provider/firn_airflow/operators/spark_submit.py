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
(:class:`~firn_airflow.operators.errors.SparkConnectionError`):

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

import os
import shutil
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from firn.errors import FirnError
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.hooks.firn import FirnHook
from firn_airflow.operators.errors import SparkConnectionError
from firn_airflow.operators.spark_job import DEFAULT_SPARK_CONN_ID, driver_environment

if TYPE_CHECKING:
    from airflow.sdk import Context

    from firn_airflow.hooks.connection import FirnConnectionConfig


def _require_spark_connection(conn_id: str) -> None:
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise SparkConnectionError(
            f"Spark connection {conn_id!r} is not defined (SparkSubmitHook would silently submit "
            f"to YARN instead): add it, e.g. AIRFLOW_CONN_{conn_id.upper()}="
            '\'{"conn_type": "spark", "host": "local[*]"}\', or pass conn_id'
        ) from None


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
        _require_spark_connection(self._conn_id)
        self.env_vars = {
            **driver_environment(config, {}),
            **{str(k): str(v) for k, v in (self.env_vars or {}).items()},
        }
        # The hook resolves master, deploy mode and binary from the connection and this
        # operator's overrides; the checks read them from it, as the submission will.
        hook = self._get_hook()
        self._refuse_secrets_in_cluster_mode(config, hook._connection)
        binary = str(hook._connection.get("spark_binary") or "spark-submit")
        path = self.env_vars.get("PATH") or os.environ.get("PATH", "")
        if shutil.which(binary, path=path) is None:
            raise SparkConnectionError(
                f"{binary} is not on PATH (Spark connection {self._conn_id!r}): install pyspark "
                "(or Spark) in the worker and put its bin directory on PATH"
            )
        # Not kept as self._hook: execute() may still add OpenLineage properties to conf first.
        self.log.info(
            "Spark driver gets Firn catalog %r at %s (connection %r) through its environment",
            config.name,
            config.display_uri,
            config.conn_id,
        )

    def _refuse_secrets_in_cluster_mode(
        self, config: FirnConnectionConfig, connection: dict[str, Any]
    ) -> None:
        # spark-submit's --deploy-mode (the connection's, or this operator's) wins over the conf.
        mode = connection.get("deploy_mode") or (self.conf or {}).get("spark.submit.deployMode")
        if mode == "cluster" and config.secrets:
            raise SparkConnectionError(
                f"Spark connection {self._conn_id!r} uses cluster deploy mode, where SparkSubmitHook "
                "passes env_vars as --conf arguments on the command line; Firn connection "
                f"{config.conn_id!r} holds secrets, which must not go there. Use client deploy mode, "
                "or a Firn connection without secrets and give the cluster the credentials through "
                "its own secret mechanism"
            )


__all__ = ["FirnSparkSubmitOperator"]
