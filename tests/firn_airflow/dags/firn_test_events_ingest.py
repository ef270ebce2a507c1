"""Test DAG: an ingest -- one append to ``db.events`` (connection ``firn_events_test``) with the
table's asset as its outlet, as ``firn_ingest_events`` does on Spark.

Used by tests/firn_airflow/test_maintenance_events.py.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from firn_airflow.assets import firn_asset

CONN_ID = "firn_events_test"
TABLE = "db.events"

with DAG(
    dag_id="firn_test_events_ingest",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task(outlets=[firn_asset(CONN_ID, TABLE)])
    def ingest() -> int:
        import pyarrow as pa

        from firn_airflow.hooks.firn import FirnHook

        hook = FirnHook(CONN_ID)
        try:
            table = hook.load_table(TABLE)
            snapshot = table.append(pa.table({"id": pa.array([1000, 1001], pa.int64()), "kind": ["b", "b"]}))
            assert snapshot is not None
            return snapshot.snapshot_id
        finally:
            hook.close()

    ingest()
