"""Test DAG: maintenance driven by ``recommend()`` on connection ``firn_op_recommend``.

``db.busy`` has small files past its (lowered) compaction thresholds, ``db.quiet`` needs
nothing and ``db.legacy`` is a v3 table (no root manifest). Used by
tests/firn_airflow/operators/test_local_runs.py.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.operators import (
    FirnFlushRootManifestOperator,
    FirnMaintenanceOperator,
    FirnRewriteDataFilesOperator,
)

CONN = {"firn_conn_id": "firn_op_recommend", "execution": "worker"}

with DAG(
    dag_id="firn_test_op_recommend",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    FirnRewriteDataFilesOperator(
        task_id="compact_busy",
        table="db.busy",
        skip_if_not_recommended=True,
        options={"min-input-files": 2},
        **CONN,
    )
    FirnRewriteDataFilesOperator(
        task_id="compact_quiet", table="db.quiet", skip_if_not_recommended=True, **CONN
    )
    FirnFlushRootManifestOperator(task_id="flush_legacy", table="db.legacy", **CONN)
    FirnMaintenanceOperator(
        task_id="maintain_busy2",
        table="db.busy2",
        operation_options={"compact": {"min-input-files": 2}},
        **CONN,
    )
    FirnMaintenanceOperator(task_id="maintain_quiet", table="db.quiet", **CONN)
