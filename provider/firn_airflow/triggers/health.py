"""The trigger behind :class:`~firn_airflow.sensors.health.FirnTableHealthSensor` in deferrable mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.triggers.conditions import (
    Measurement,
    check_match,
    evaluate,
    impossible_message,
    needs_recommend,
    parse_condition_set,
    properties_needed,
)
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import check_poll_interval, check_table_name

if TYPE_CHECKING:
    from firn.table.table import Table

CLASSPATH = "firn_airflow.triggers.health.FirnTableHealthTrigger"


def property_threshold(table: Table, key: str) -> float:
    """The table's value of property ``key`` as a number: its own, else Firn's default (blocking
    import of the property model; call it in the polling thread)."""
    from firn.errors import ValidationError
    from firn.spec.properties import effective_property

    props = table.metadata.properties
    value: Any = effective_property(props, key)
    if value is None:
        value = props.get(key)
        if value is None:
            raise ValidationError(
                f"table {table.name!r} has no property {key!r} and Firn has no default for it; "
                "a health condition compares with it"
            )
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValidationError(f"table property {key!r} of {table.name!r} is not a number: {value!r}")
    try:
        return float(value)
    except ValueError:
        raise ValidationError(
            f"table property {key!r} of {table.name!r} is {value!r}, not a number a health condition can compare with"
        ) from None


def measure(reader: TableReader, *, properties: Iterable[str] = (), recommend: bool = False) -> Measurement:
    """One poll (blocking; run it in a thread): ``table.health()`` of the current metadata, the
    table's value of each of ``properties``, and -- when asked -- the operations
    ``recommend()`` lists for that same health."""
    table = reader.load()
    health = table.health()
    recommended = None
    if recommend:
        from firn.maintenance.recommend import recommend as recommend_for

        recommended = tuple(r.operation for r in recommend_for(health, table.metadata.properties))
    return Measurement(
        health=health.to_dict(),
        properties={key: property_threshold(table, key) for key in properties},
        recommended=recommended,
    )


class FirnTableHealthTrigger(BaseTrigger):
    """Polls ``table.health()`` until the conditions hold, then fires one event.

    The health is read in a worker thread (``asyncio.to_thread``), which also imports the Firn
    library on the first poll; between polls the trigger sleeps with ``asyncio.sleep``. The
    event is ``{"status": "success", "table", "health", "met", "properties", "recommended"}``
    (``health`` is ``TableHealth.to_dict()``, ``met`` the conditions that held, as
    ``"small_files >= 50"``, ``properties`` the table property values compared with,
    ``recommended`` what ``recommend()`` listed or None), or ``{"status": "error", "table",
    "error", "message"}`` (``error`` names the exception) when the table cannot be read or the
    conditions can never hold for it.

    :param table: ``"<namespace>.<table>"``.
    :param conditions: metric to ``"<op> <number>"`` or ``"<op> property <key>"``, e.g.
        ``{"small_files": ">= 50"}`` (see :mod:`firn_airflow.triggers.conditions`).
    :param recommended: also (or only) wait until ``recommend()`` lists this operation (or
        one of these, under ``match``).
    :param match: ``"all"`` conditions must hold, or ``"any"`` one of them.
    :param firn_conn_id: the Firn connection.
    :param poll_interval: seconds between polls.
    """

    def __init__(
        self,
        *,
        table: str,
        conditions: Mapping[str, str] | None = None,
        recommended: str | Iterable[str] | None = None,
        match: str = "all",
        firn_conn_id: str = DEFAULT_CONN_ID,
        poll_interval: float = 30.0,
    ) -> None:
        super().__init__()
        self.table = check_table_name(table)
        self._conditions = parse_condition_set(conditions, recommended)
        self.conditions = dict(conditions) if conditions is not None else None
        self.recommended = (
            None
            if recommended is None
            else [recommended]
            if isinstance(recommended, str)
            else list(recommended)
        )
        self.match = check_match(match)
        self.firn_conn_id = firn_conn_id
        self.poll_interval = check_poll_interval(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "table": self.table,
            "conditions": dict(self.conditions) if self.conditions is not None else None,
            "match": self.match,
            "firn_conn_id": self.firn_conn_id,
            "poll_interval": self.poll_interval,
        }
        if self.recommended is not None:
            kwargs["recommended"] = list(self.recommended)
        return CLASSPATH, kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        reader = TableReader(self.firn_conn_id, self.table)
        properties = properties_needed(self._conditions)
        recommend = needs_recommend(self._conditions)
        try:
            while True:
                try:
                    measured = await asyncio.to_thread(
                        measure, reader, properties=properties, recommend=recommend
                    )
                except Exception as e:  # any failure ends the wait with one clear task error
                    yield self._error(
                        f"cannot read the health of table {self.table!r}: {e}", type(e).__name__
                    )
                    return
                evaluation = evaluate(measured, self._conditions, self.match)
                described = evaluation.describe(self._conditions, measured)
                if evaluation.satisfied:
                    self.log.info("Table %s is ready: %s", self.table, described)
                    yield TriggerEvent(
                        {
                            "status": "success",
                            "table": self.table,
                            "health": measured.health,
                            "met": [str(c) for c in evaluation.met],
                            "properties": measured.properties,
                            "recommended": (
                                None if measured.recommended is None else list(measured.recommended)
                            ),
                        }
                    )
                    return
                if evaluation.impossible:
                    yield self._error(
                        impossible_message(self.table, measured.health, evaluation, self.match),
                        "ValidationError",
                    )
                    return
                self.log.info("Table %s: %s; next poll in %ss", self.table, described, self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        finally:
            await asyncio.to_thread(reader.close)

    def _error(self, message: str, kind: str) -> TriggerEvent:
        self.log.error("%s", message)
        return TriggerEvent({"status": "error", "table": self.table, "error": kind, "message": message})


__all__ = ["FirnTableHealthTrigger", "measure", "property_threshold"]
