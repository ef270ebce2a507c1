"""Flush a V4 table's root manifest as soon as it grows past a size, on Spark.

Every commit to a V4 table rewrites its root manifest, so a root that keeps growing makes
every small commit slower. ``FirnTableHealthSensor`` waits (deferred to the triggerer, so no
worker slot is held) until the root holds as many data files as the table's own
``commit.root.max-data-files`` says (200 unless the table sets it; the demo table sets 8),
read from the table at every poll -- so the DAG fires wherever the table's threshold is, and
follows a change of it -- then the flush moves the root's entries into leaf manifests with a
spark-submit of ``firn.spark.job``. A run that sees no growth within its timeout ends skipped
(``soft_fail``); the next hourly run waits again.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from firn_airflow.operators import FirnFlushRootManifestOperator
from firn_airflow.sensors import FirnTableHealthSensor

FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"
TABLE = "demo.events"

with DAG(
    dag_id="firn_root_flush_on_growth",
    schedule="@hourly",
    start_date=pendulum.datetime(2024, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["firn", "maintenance", "v4"],
) as dag:
    root_grew = FirnTableHealthSensor(
        task_id="root_grew",
        table=TABLE,
        firn_conn_id=FIRN_CONN_ID,
        conditions={"root_data_files": ">= property commit.root.max-data-files"},
        deferrable=True,
        poke_interval=60,
        timeout=timedelta(minutes=55).total_seconds(),
        soft_fail=True,
    )
    flush = FirnFlushRootManifestOperator(
        task_id="flush_root",
        table=TABLE,
        firn_conn_id=FIRN_CONN_ID,
        # The sensor has decided: move every root entry, whatever the table's commit.root.*
        # thresholds say (a flush on its own acts only above them).
        options={"force": True},
        execution="spark",
        spark={"conn_id": SPARK_CONN_ID},
    )
    root_grew >> flush
