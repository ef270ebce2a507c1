"""Test DAG: maintenance tasks whose real task logs tests/firn_airflow/operators/test_task_log.py
reads (run with ``dag.test(use_executor=True)``, so each task runs in its own supervised process
and writes a log file through Airflow's secrets masker).

``flush_with_secrets`` flushes ``db.events`` on Spark through connection ``firn_op_secret``,
whose catalog password and storage keys must appear neither on the spark-submit command line
nor in the log. The other tasks fail on purpose, each with one clear task error.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.operators import FirnFlushRootManifestOperator, FirnRewriteDataFilesOperator

GOOD = {"firn_conn_id": "firn_op_errors", "execution": "worker"}

with DAG(
    dag_id="firn_test_op_task_log",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    FirnFlushRootManifestOperator(
        task_id="flush_with_secrets",
        table="db.events",
        firn_conn_id="firn_op_secret",
        execution="spark",
        options={"force": True},
        spark={"conf": {"spark.ui.enabled": "false"}},
    )
    FirnRewriteDataFilesOperator(task_id="missing_table", table="db.nope", **GOOD)
    # A malformed literal name fails when the DAG is parsed; a rendered one when the task runs.
    FirnRewriteDataFilesOperator(task_id="not_a_table_name", table="{{ 'events' }}", **GOOD)
    FirnRewriteDataFilesOperator(
        task_id="missing_firn_conn", table="db.events", firn_conn_id="firn_op_missing"
    )
    FirnRewriteDataFilesOperator(
        task_id="missing_spark_conn",
        table="db.events",
        firn_conn_id="firn_op_errors",
        spark={"conn_id": "spark_op_missing"},
    )
    FirnRewriteDataFilesOperator(
        task_id="unknown_option", table="db.events", options={"min-input-filez": 2}, **GOOD
    )
