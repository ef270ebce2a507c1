"""Test DAG: FirnNewSnapshotSensor on ``db.events`` (connection ``firn_sensor_test``).

* ``wait_for_delete`` (deferrable, no watermark: commits after the head at start) waits for a
  ``delete`` commit;
* ``after_its_parent`` (poke mode) takes the delete's parent from XCom as a templated
  ``after_snapshot_id`` and finds the delete at once;
* ``after_run_start`` (poke mode) uses a templated ``after_timestamp`` (the run's start) and
  finds the delete at once too.

Used by tests/firn_airflow/sensors/test_new_snapshot_sensor.py, which commits an append and a
delete from another thread once ``wait_for_delete`` has deferred.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.sensors import FirnNewSnapshotSensor

CONN_ID = "firn_sensor_test"
TABLE = "db.events"

with DAG(
    dag_id="firn_test_sensor_new_snapshot",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    wait_for_delete = FirnNewSnapshotSensor(
        task_id="wait_for_delete",
        table=TABLE,
        operation="delete",
        firn_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=0.2,
        timeout=120,
    )
    after_its_parent = FirnNewSnapshotSensor(
        task_id="after_its_parent",
        table=TABLE,
        after_snapshot_id="{{ ti.xcom_pull(task_ids='wait_for_delete')['parent_snapshot_id'] }}",
        firn_conn_id=CONN_ID,
        deferrable=False,
        poke_interval=0.2,
        timeout=30,
    )
    after_run_start = FirnNewSnapshotSensor(
        task_id="after_run_start",
        table=TABLE,
        after_timestamp="{{ dag_run.start_date }}",
        operation=["delete"],
        firn_conn_id=CONN_ID,
        deferrable=False,
        poke_interval=0.2,
        timeout=30,
    )
    wait_for_delete >> [after_its_parent, after_run_start]
