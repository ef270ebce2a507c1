"""The trigger behind :class:`~firn_airflow.sensors.health.FirnTableHealthSensor` in deferrable mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.triggers.conditions import (
    check_match,
    evaluate,
    impossible_message,
    parse_conditions,
)
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import check_poll_interval, check_table_name

CLASSPATH = "firn_airflow.triggers.health.FirnTableHealthTrigger"


def measure(reader: TableReader) -> dict[str, Any]:
    """``table.health().to_dict()`` of the table's current metadata (blocking)."""
    return reader.load().health().to_dict()


class FirnTableHealthTrigger(BaseTrigger):
    """Polls ``table.health()`` until the conditions hold, then fires one event.

    The health is read in a worker thread (``asyncio.to_thread``); between polls the trigger
    sleeps with ``asyncio.sleep``. The event is ``{"status": "success", "table", "health",
    "met"}`` (``health`` is ``TableHealth.to_dict()``, ``met`` the conditions that held, as
    ``"small_files >= 50"``), or ``{"status": "error", "table", "error", "message"}``
    (``error`` names the exception) when the table cannot be read or the conditions can
    never hold for it.

    :param table: ``"<namespace>.<table>"``.
    :param conditions: metric to ``"<op> <number>"``, e.g. ``{"small_files": ">= 50"}``
        (see :mod:`firn_airflow.triggers.conditions`).
    :param match: ``"all"`` conditions must hold, or ``"any"`` one of them.
    :param firn_conn_id: the Firn connection.
    :param poll_interval: seconds between polls.
    """

    def __init__(
        self,
        *,
        table: str,
        conditions: Mapping[str, str],
        match: str = "all",
        firn_conn_id: str = DEFAULT_CONN_ID,
        poll_interval: float = 30.0,
    ) -> None:
        super().__init__()
        self.table = check_table_name(table)
        self._conditions = parse_conditions(conditions)
        self.conditions = dict(conditions)
        self.match = check_match(match)
        self.firn_conn_id = firn_conn_id
        self.poll_interval = check_poll_interval(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "table": self.table,
                "conditions": dict(self.conditions),
                "match": self.match,
                "firn_conn_id": self.firn_conn_id,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        reader = TableReader(self.firn_conn_id, self.table)
        try:
            while True:
                try:
                    health = await asyncio.to_thread(measure, reader)
                except Exception as e:  # any failure ends the wait with one clear task error
                    yield self._error(
                        f"cannot read the health of table {self.table!r}: {e}", type(e).__name__
                    )
                    return
                evaluation = evaluate(health, self._conditions, self.match)
                described = evaluation.describe(self._conditions, health)
                if evaluation.satisfied:
                    self.log.info("Table %s is ready: %s", self.table, described)
                    yield TriggerEvent(
                        {
                            "status": "success",
                            "table": self.table,
                            "health": health,
                            "met": [str(c) for c in evaluation.met],
                        }
                    )
                    return
                if evaluation.impossible:
                    yield self._error(
                        impossible_message(self.table, health, evaluation, self.match), "ValidationError"
                    )
                    return
                self.log.info("Table %s: %s; next poll in %ss", self.table, described, self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        finally:
            await asyncio.to_thread(reader.close)

    def _error(self, message: str, kind: str) -> TriggerEvent:
        self.log.error("%s", message)
        return TriggerEvent({"status": "error", "table": self.table, "error": kind, "message": message})


__all__ = ["FirnTableHealthTrigger", "measure"]
