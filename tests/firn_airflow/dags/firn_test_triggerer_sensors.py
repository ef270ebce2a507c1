"""Test DAG: three deferrable Firn sensors on ``db.events`` (connection ``firn_triggerer_test``)
that the real ``airflow triggerer`` runs: one waits for the V4 root to reach the table's own
``commit.root.max-data-files``, one until ``recommend()`` lists compaction, one for a new append.

Used by tests/firn_airflow/triggers/test_sensors_triggerer.py.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.sensors import FirnNewSnapshotSensor, FirnTableHealthSensor

CONN_ID = "firn_triggerer_test"
TABLE = "db.events"

with DAG(
    dag_id="firn_test_triggerer_sensors",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    common = {
        "table": TABLE,
        "firn_conn_id": CONN_ID,
        "deferrable": True,
        "poke_interval": 0.5,
        "timeout": 240,
    }
    FirnTableHealthSensor(
        task_id="root_at_threshold",
        conditions={"root_data_files": ">= property commit.root.max-data-files"},
        **common,
    )
    FirnTableHealthSensor(task_id="compaction_recommended", recommended="rewrite_data_files", **common)
    FirnNewSnapshotSensor(task_id="new_append", operation="append", **common)
