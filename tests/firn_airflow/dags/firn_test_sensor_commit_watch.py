"""Test DAG: scheduled on the asset of ``db.events`` (connection ``firn_sensor_test``), which an
``AssetWatcher`` with a :class:`~firn_airflow.triggers.FirnCommitTrigger` updates on every
data commit (compaction's ``replace`` commits excluded), as ``firn_compact_after_ingest`` is.

Used by tests/firn_airflow/triggers/test_commit_watcher.py: the DAG parses and serializes, its
watcher is registered in the metadata database, and the trigger rebuilt from that row reports
commits and keeps its watermark in the asset's state store.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher, task

from firn_airflow.assets import asset_name, table_asset_uri
from firn_airflow.constants import ASSET_GROUP
from firn_airflow.triggers import FirnCommitTrigger

CONN_ID = "firn_sensor_test"
TABLE = "db.events"

EVENTS = Asset(
    name=asset_name(CONN_ID, TABLE),
    uri=table_asset_uri(CONN_ID, TABLE),
    group=ASSET_GROUP,
    watchers=[
        AssetWatcher(
            name="firn_test_events_commits",
            trigger=FirnCommitTrigger(
                table=TABLE,
                firn_conn_id=CONN_ID,
                poll_interval=0.2,
                operation=["append", "overwrite", "delete"],
            ),
        )
    ],
)

with DAG(
    dag_id="firn_test_sensor_commit_watch",
    schedule=[EVENTS],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task(inlets=[EVENTS])
    def commits_seen() -> list[int]:
        from airflow.sdk import get_current_context

        events = get_current_context()["triggering_asset_events"][EVENTS]
        return [event.extra.get("payload", event.extra).get("snapshot_id") for event in events]

    commits_seen()
