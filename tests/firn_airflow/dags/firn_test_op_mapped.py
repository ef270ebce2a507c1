"""Test DAG: maintenance over every table of namespace ``db`` (connection ``firn_op_mapped``),
by dynamic task mapping over ``FirnHook.list_tables``: one mapped compaction, then the nightly
chain as a mapped ``firn_table_maintenance`` group that runs only what ``recommend()`` says;
and the group on one named table, ``ops.solo``. Used by
tests/firn_airflow/operators/test_mapping.py.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, task

from firn_airflow.operators import FirnRewriteDataFilesOperator, firn_table_maintenance

CONN_ID = "firn_op_mapped"

with DAG(
    dag_id="firn_test_op_mapped",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"expire_before": Param("2000-01-01T00:00:00+00:00", type="string")},
) as dag:

    @task
    def list_tables() -> list[str]:
        from firn_airflow.hooks.firn import FirnHook

        return FirnHook(CONN_ID).list_tables("db")

    tables = list_tables()
    compact = FirnRewriteDataFilesOperator.partial(
        task_id="compact", firn_conn_id=CONN_ID, execution="worker", options={"min-input-files": 2}
    ).expand(table=tables)
    nightly = firn_table_maintenance(
        tables, group_id="nightly", firn_conn_id=CONN_ID, execution="worker", skip_if_not_recommended=True
    )
    compact >> nightly
    firn_table_maintenance(
        "ops.solo",
        firn_conn_id=CONN_ID,
        execution="worker",
        operations=["flush", "expire"],
        operation_options={"flush_root": {"force": True}},
        older_than="{{ params.expire_before }}",
        retain_last=1,
    )
