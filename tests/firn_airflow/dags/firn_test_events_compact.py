"""Test DAG: compaction scheduled on the table's (data) asset, as ``firn_compact_after_ingest``.

Used by tests/firn_airflow/test_maintenance_events.py: an ingest triggers it; its own
compaction, recorded on the table's maintenance asset, does not.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.assets import firn_asset
from firn_airflow.operators import FirnRewriteDataFilesOperator

CONN_ID = "firn_events_test"
TABLE = "db.events"

with DAG(
    dag_id="firn_test_events_compact",
    schedule=[firn_asset(CONN_ID, TABLE)],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    FirnRewriteDataFilesOperator(task_id="compact", table=TABLE, firn_conn_id=CONN_ID, execution="worker")
