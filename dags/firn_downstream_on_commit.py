"""A downstream aggregate kept up to date on every data commit to ``demo.events``, exactly once.

Scheduled by an ``AssetWatcher`` whose :class:`~firn_airflow.triggers.FirnCommitTrigger`
watches ``demo.events``: each ``append``, ``overwrite`` or ``delete`` commit (whoever made it)
updates the table's asset and wakes this DAG; compaction's and the other maintenance
``replace`` commits change no rows and wake nothing. Each event carries the snapshot range it
reports (``from_snapshot_id``, ``to_snapshot_id``), the operations in it and
``maintenance_only``.

``aggregate`` submits ``jobs/aggregate_events.py`` to Spark. The job folds the source's
changelog into ``demo.events_by_kind`` (live events and amount in cents per kind and region),
and records in the same target commit the last source snapshot it covers
(``firn.source.demo.events.snapshot-id`` in the snapshot summary). An event is only a wake-up:
the job reads that record and processes (recorded, event's snapshot], so a retried task, a
duplicate or late event and a crash between the commit and the task's success neither process
a range twice nor skip one. A run started by hand (no event) processes up to the current
snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher, get_current_context, task

from firn_airflow.assets import asset_name, table_asset_uri
from firn_airflow.constants import ASSET_GROUP
from firn_airflow.operators import FirnSparkSubmitOperator
from firn_airflow.triggers import FirnCommitTrigger

FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"
SOURCE = "demo.events"
TARGET = "demo.events_by_kind"
JOB = Path(__file__).resolve().parent / "jobs" / "aggregate_events.py"

EVENTS = Asset(
    name=asset_name(FIRN_CONN_ID, SOURCE),
    uri=table_asset_uri(FIRN_CONN_ID, SOURCE),
    group=ASSET_GROUP,
    watchers=[
        AssetWatcher(
            name="firn_demo_events_commits",
            trigger=FirnCommitTrigger(
                table=SOURCE,
                firn_conn_id=FIRN_CONN_ID,
                poll_interval=30.0,
                operation=["append", "overwrite", "delete"],  # no replace: maintenance
            ),
        )
    ],
)


def newest_data_commit(extras: list[dict[str, Any]]) -> int | str | None:
    """The end of the newest commit range among the triggering events that changed rows.

    ``None`` when no event says (a manual run, or events from the ingest task's outlet: the
    job then reads up to the current snapshot); ``"skip"`` when every event reports a
    maintenance-only range."""
    ranges = [e["payload"] for e in extras if isinstance(e.get("payload"), dict)]
    ranges = [r for r in ranges if "to_snapshot_id" in r]
    if ranges and len(ranges) == len(extras) and all(r.get("maintenance_only") for r in ranges):
        return "skip"
    data = [r for r in ranges if not r.get("maintenance_only")]
    if not data or len(ranges) < len(extras):
        return None
    return max(data, key=lambda r: r.get("timestamp_ms") or 0)["to_snapshot_id"]


with DAG(
    dag_id="firn_downstream_on_commit",
    schedule=[EVENTS],
    start_date=pendulum.datetime(2024, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # runs one after another; the target's record makes each exactly once
    doc_md=__doc__,
    tags=["firn", "pipeline", "spark"],
) as dag:

    @task.short_circuit(inlets=[EVENTS])
    def wake() -> str:
        """The range end to process up to ("" for the source's current snapshot); short-circuits
        when every triggering event reports a maintenance-only range."""
        events = get_current_context()["triggering_asset_events"].get(EVENTS, [])
        end = newest_data_commit([dict(event.extra or {}) for event in events])
        if end == "skip":
            return ""  # falsy: skip the aggregate
        return str(end) if end is not None else "current"

    end = wake()
    aggregate = FirnSparkSubmitOperator(
        task_id="aggregate",
        application=str(JOB),
        name="firn-aggregate-events",
        firn_conn_id=FIRN_CONN_ID,
        conn_id=SPARK_CONN_ID,
        application_args=[
            "--source",
            SOURCE,
            "--target",
            TARGET,
            "--to-snapshot-id",
            "{{ ti.xcom_pull(task_ids='wake') }}",
        ],
        retries=2,
        retry_delay=pendulum.duration(seconds=30),
    )
    end >> aggregate
