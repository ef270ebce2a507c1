"""Test DAG: what each ``on_lease_held`` policy does while another run holds the maintenance lease
of ``db.events`` (connection ``firn_op_lease``). Used by
tests/firn_airflow/operators/test_local_runs.py, which holds the lease from another thread.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.operators import FirnFlushRootManifestOperator

CONN = {
    "table": "db.events",
    "firn_conn_id": "firn_op_lease",
    "execution": "worker",
    "options": {"force": True},
}

with DAG(
    dag_id="firn_test_op_lease",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    FirnFlushRootManifestOperator(task_id="skip", on_lease_held="skip", **CONN)
    FirnFlushRootManifestOperator(task_id="fail", on_lease_held="fail", **CONN)
    FirnFlushRootManifestOperator(
        task_id="wait", on_lease_held="wait", lease_wait_timeout=60, lease_poll_interval=0.2, **CONN
    )
