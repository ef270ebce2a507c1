"""Test DAG: a task defers on :class:`~firn_airflow.triggers.FirnCommitTrigger` from the head it
sees (``last_seen_snapshot_id``) and returns the event of the next commit to ``db.events``
(connection ``firn_sensor_test``).

Used by tests/firn_airflow/triggers/test_commit_watcher.py to run the commit trigger under
``dag.test()``, which runs triggers inline.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, BaseOperator, Context

from firn_airflow.hooks.firn import FirnHook
from firn_airflow.triggers import FirnCommitTrigger

CONN_ID = "firn_sensor_test"
TABLE = "db.events"


class WaitForNextCommit(BaseOperator):
    """Defers until the table's next commit; returns that commit's event payload."""

    def execute(self, context: Context) -> None:
        hook = FirnHook(CONN_ID)
        head = hook.load_table(TABLE).current_snapshot()
        hook.close()
        self.defer(
            trigger=FirnCommitTrigger(
                table=TABLE,
                firn_conn_id=CONN_ID,
                poll_interval=0.2,
                last_seen_snapshot_id=head.snapshot_id if head is not None else None,
            ),
            method_name="resume",
        )

    def resume(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        return event


with DAG(
    dag_id="firn_test_sensor_commit_wait",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    WaitForNextCommit(task_id="next_commit")
