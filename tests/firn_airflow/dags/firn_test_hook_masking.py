"""Test DAG: a task reads the ``firn_masking`` connection (full of secrets) and logs them.

Used by tests/firn_airflow/hooks/test_firn_masking.py, which checks that the real task log
shows ``***`` where each secret was.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

CONN_ID = "firn_masking"

with DAG(
    dag_id="firn_test_hook_masking",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task
    def log_connection() -> None:
        from firn_airflow.hooks.firn import FirnHook

        hook = FirnHook(CONN_ID)
        config = hook.get_config()
        print(f"catalog uri: {config.uri}")
        print(f"client credential: {config.properties['client.credential']}")
        print(f"storage secret: {config.properties['s3.secret-access-key']}")
        hook.log.info("catalog properties: %s", dict(config.properties))
        ok, message = hook.test_connection()
        hook.log.info("test_connection ok=%s message=%s", ok, message)

    log_connection()
