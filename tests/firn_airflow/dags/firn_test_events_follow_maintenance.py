"""Test DAG: scheduled on the table's *maintenance* asset -- runs after maintenance, not ingest.

Used by tests/firn_airflow/test_maintenance_events.py.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from firn_airflow.assets import maintenance_asset

with DAG(
    dag_id="firn_test_events_follow_maintenance",
    schedule=[maintenance_asset("firn_events_test", "db.events")],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task
    def report() -> None:
        pass

    report()
