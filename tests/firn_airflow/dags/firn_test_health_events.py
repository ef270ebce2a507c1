"""Test DAG: flush the root of ``db.events_v4`` (connection ``firn_health``) and record the
result and the table's health as an event of the table's maintenance asset, as the maintenance
operators do.

Used by tests/firn_airflow/health_view/test_page.py to give the health view a real
maintenance history.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, get_current_context, task

from firn_airflow.assets import maintenance_asset
from firn_airflow.constants import EVENT_HEALTH, EVENT_OPERATION, EVENT_RESULT

CONN_ID = "firn_health"
TABLE = "db.events_v4"
ASSET = maintenance_asset(CONN_ID, TABLE)

with DAG(
    dag_id="firn_test_health_events",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task(outlets=[ASSET])
    def flush_root() -> dict[str, int]:
        from firn_airflow.health_view.data import table_health
        from firn_airflow.hooks.firn import FirnHook

        hook = FirnHook(CONN_ID)
        table = hook.load_table(TABLE)
        flush = table.maintenance.flush_root(force=True)
        result = flush.run()
        table.refresh()
        get_current_context()["outlet_events"][ASSET].extra = {
            EVENT_OPERATION: "flush_root",
            EVENT_RESULT: result.to_dict(),
            EVENT_HEALTH: table_health(table),
        }
        hook.close()
        return {"data_files_moved": result.data_files_moved}

    flush_root()
