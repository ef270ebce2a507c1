"""Firn maintenance operators: one per ``table.maintenance`` operation, one that runs whatever
``recommend()`` says, and a TaskGroup factory chaining them in nightly order.

::

    from firn_airflow.operators import FirnRewriteDataFilesOperator, SparkSettings, firn_table_maintenance

    FirnRewriteDataFilesOperator(
        task_id="compact",
        table="db.events",
        execution="auto",
        options={"min_input_files": 2},
        spark=SparkSettings(conn_id="spark_default", driver_memory="2g"),
    )
    FirnRewriteDataFilesOperator.partial(task_id="compact", execution="worker").expand(table=tables)
    firn_table_maintenance("db.events", skip_if_not_recommended=True)
"""

from firn_airflow.hooks.spark_job import SparkSettings
from firn_airflow.operators.base import FirnMaintenanceBaseOperator
from firn_airflow.operators.group import firn_table_maintenance
from firn_airflow.operators.maintenance import (
    FirnExpireSnapshotsOperator,
    FirnFlushRootManifestOperator,
    FirnRemoveOrphanFilesOperator,
    FirnRewriteDataFilesOperator,
    FirnRewriteDeletionVectorsOperator,
    FirnRewriteManifestsOperator,
)
from firn_airflow.operators.outlets import maintenance_alias
from firn_airflow.operators.recommended import FirnMaintenanceOperator
from firn_airflow.operators.spark_submit import FirnSparkSubmitOperator

__all__ = [
    "FirnExpireSnapshotsOperator",
    "FirnFlushRootManifestOperator",
    "FirnMaintenanceBaseOperator",
    "FirnMaintenanceOperator",
    "FirnRemoveOrphanFilesOperator",
    "FirnRewriteDataFilesOperator",
    "FirnRewriteDeletionVectorsOperator",
    "FirnRewriteManifestsOperator",
    "FirnSparkSubmitOperator",
    "SparkSettings",
    "firn_table_maintenance",
    "maintenance_alias",
]
