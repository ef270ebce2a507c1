"""Compact a table after new data lands, when its health says so.

Scheduled on the table's asset, which ``firn_ingest_events`` updates after every ingest (an
``AssetWatcher`` with ``FirnCommitTrigger`` works too: see ``firn_airflow.triggers.commit``).
Maintenance records its results on the table's *maintenance* asset
(``firn://firn_default/demo/events?kind=maintenance``), not on this one, so this DAG runs for
new data only: its own compaction does not trigger it again, and no task has to check why it
was triggered.

Compaction runs when the table crosses its health thresholds: ``recommend()`` asks for it
once ``maintenance.compact.min-small-files`` small files make up at least
``maintenance.compact.min-small-file-ratio`` of the data files (table properties; 100 and
0.1 by default); otherwise the task skips. Large tables compact on Spark, small ones in the
worker (``execution="auto"``).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from firn_airflow.assets import firn_asset
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
    FirnRewriteDataFilesOperator(
        task_id="compact",
        table=TABLE,
        firn_conn_id=FIRN_CONN_ID,
        spark={"conn_id": SPARK_CONN_ID},
        execution="auto",
        skip_if_not_recommended=True,
    )
