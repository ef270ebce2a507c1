"""The data pipeline: events land in a Firn table through Spark, in small batches, with late deletes.

Each run submits ``jobs/ingest_events.py`` with ``spark-submit`` (the ``spark_default``
connection: ``local[*]`` on one machine, ``spark://...`` on a cluster). The job appends a few
micro-batches through the ``firn`` PySpark data source, one small commit each, then retracts
the events of a couple of users with a merge-on-read delete (deletion vectors on V4/v3 tables).
The Firn catalog comes from the ``firn_default`` connection: ``FirnSparkSubmitOperator`` hands
it to the Spark driver through its environment, so no secret is on the command line.

The task's outlet is the table's asset, so ``firn_compact_after_ingest`` runs after each
ingest. Left alone, the table gathers small files, deletion vectors and (V4) root entries:
``firn_nightly_maintenance`` and ``firn_root_flush_on_growth`` keep it in shape.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param

from firn_airflow.assets import firn_asset
from firn_airflow.operators import FirnSparkSubmitOperator

FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"
TABLE = "demo.events"
EVENTS = firn_asset(FIRN_CONN_ID, TABLE)
JOB = Path(__file__).resolve().parent / "jobs" / "ingest_events.py"

with DAG(
    dag_id="firn_ingest_events",
    schedule="@hourly",
    start_date=pendulum.datetime(2024, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["firn", "ingest", "spark"],
    params={
        "commits": Param(4, type="integer", minimum=0, description="micro-batches (one commit each)"),
        "rows": Param(400, type="integer", minimum=1, description="events per micro-batch"),
        "late_delete_users": Param(
            2, type="integer", minimum=0, description="users whose events are retracted"
        ),
    },
) as dag:
    FirnSparkSubmitOperator(
        task_id="ingest",
        application=str(JOB),
        name="firn-ingest-events",
        firn_conn_id=FIRN_CONN_ID,
        conn_id=SPARK_CONN_ID,
        application_args=[
            "--table",
            TABLE,
            "--run-key",
            "{{ run_id }}",
            "--commits",
            "{{ params.commits }}",
            "--rows",
            "{{ params.rows }}",
            "--late-delete-users",
            "{{ params.late_delete_users }}",
        ],
        outlets=[EVENTS],
    )
