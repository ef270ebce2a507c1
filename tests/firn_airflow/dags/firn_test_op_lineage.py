"""Test DAG: two maintenance runs on ``db.events`` of connection ``firn_op_lineage``, in the
worker, whose OpenLineage events tests/firn_airflow/operators/test_lineage.py reads back: a
compaction (files and bytes rewritten and written) and a snapshot expiry (files deleted)."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, chain

from firn_airflow.operators import FirnExpireSnapshotsOperator, FirnRewriteDataFilesOperator

COMMON = {"table": "db.events", "firn_conn_id": "firn_op_lineage", "execution": "worker"}

with DAG(
    dag_id="firn_test_op_lineage",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"expire_before": Param("2000-01-01T00:00:00+00:00", type="string")},
) as dag:
    chain(
        FirnRewriteDataFilesOperator(
            task_id="compact", options={"min_input_files": 2, "where": "region = 'eu'"}, **COMMON
        ),
        FirnExpireSnapshotsOperator(
            task_id="expire", older_than="{{ params.expire_before }}", retain_last=1, **COMMON
        ),
    )
