"""Compact a table after new data lands, when its health says so.

Scheduled on the table's asset, which ``firn_ingest_events`` updates after every ingest (an
``AssetWatcher`` with ``FirnCommitTrigger`` works too: see ``firn_airflow.triggers.commit``).
Maintenance on the table records its results on the same asset, so the first task looks at
what triggered the run and goes on only for new data, never for a maintenance event (which
would otherwise re-trigger this DAG after its own compaction).

Compaction runs when the table crosses its health thresholds: ``recommend()`` asks for it
once ``maintenance.compact.min-small-files`` small files make up at least
``maintenance.compact.min-small-file-ratio`` of the data files (table properties; 100 and
0.1 by default); otherwise the task skips. Large tables compact on Spark, small ones in the
worker (``execution="auto"``).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, get_current_context, task

from firn_airflow.assets import firn_asset
from firn_airflow.constants import EVENT_OPERATION
from firn_airflow.operators import FirnRewriteDataFilesOperator

FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"
TABLE = "demo.events"
EVENTS = firn_asset(FIRN_CONN_ID, TABLE)

with DAG(
    dag_id="firn_compact_after_ingest",
    schedule=[EVENTS],
    start_date=pendulum.datetime(2024, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["firn", "maintenance"],
) as dag:

    @task.short_circuit(inlets=[EVENTS])
    def new_data() -> bool:
        """True unless every triggering event is a maintenance result (a manual run: True)."""
        events = get_current_context()["triggering_asset_events"].get(EVENTS, [])
        return not events or any(EVENT_OPERATION not in (event.extra or {}) for event in events)

    compact = FirnRewriteDataFilesOperator(
        task_id="compact",
        table=TABLE,
        firn_conn_id=FIRN_CONN_ID,
        spark={"conn_id": SPARK_CONN_ID},
        execution="auto",
        skip_if_not_recommended=True,
    )
    new_data() >> compact
