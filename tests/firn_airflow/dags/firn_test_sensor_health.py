"""Test DAG: a deferrable FirnTableHealthSensor on ``db.events`` (connection ``firn_sensor_test``)
waiting for 4 data files, polling every 0.2 s.

Used by tests/firn_airflow/sensors/test_health.py, which crosses the threshold from another
thread once the sensor has deferred.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.sensors import FirnTableHealthSensor

with DAG(
    dag_id="firn_test_sensor_health",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    FirnTableHealthSensor(
        task_id="wait_for_files",
        table="db.events",
        conditions={"data_files": ">= 4"},
        firn_conn_id="firn_sensor_test",
        deferrable=True,
        poke_interval=0.2,
        timeout=120,
    )
