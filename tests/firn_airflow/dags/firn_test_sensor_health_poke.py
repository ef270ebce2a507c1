"""Test DAG: a FirnTableHealthSensor in poke mode (no deferral) on the table named by the
``table`` param (default ``db.events``, connection ``firn_sensor_test``), waiting for 4 data
files or 4 snapshots.

Used by tests/firn_airflow/sensors/test_health_sensor.py: it waits while another thread
commits, and a bad table name (``run_conf={"table": ...}``) fails the task with one error.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param

from firn_airflow.sensors import FirnTableHealthSensor

with DAG(
    dag_id="firn_test_sensor_health_poke",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"table": Param("db.events", type="string")},
) as dag:
    FirnTableHealthSensor(
        task_id="wait_for_files",
        table="{{ params.table }}",
        conditions={"data_files": ">= 4", "snapshots": ">= 4"},
        match="any",
        firn_conn_id="firn_sensor_test",
        deferrable=False,
        poke_interval=0.2,
        timeout=120,
    )
