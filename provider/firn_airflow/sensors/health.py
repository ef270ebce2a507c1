"""``FirnTableHealthSensor``: wait until ``table.health()`` meets conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import PokeReturnValue

from firn.errors import ValidationError
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.sensors.base import FirnTableSensor
from firn_airflow.sensors.events import event_result
from firn_airflow.triggers.conditions import (
    check_match,
    evaluate,
    impossible_message,
    parse_conditions,
)
from firn_airflow.triggers.health import FirnTableHealthTrigger, measure

if TYPE_CHECKING:
    from airflow.sdk import Context


class FirnTableHealthSensor(FirnTableSensor):
    """Waits until a table's health meets conditions; returns (XCom) that health as a dict.

    ::

        FirnTableHealthSensor(
            task_id="wait_for_small_files",
            table="db.events",
            conditions={"small_files": ">= 50", "delete_ratio": "> 0.1"},
            match="any",
        )

    Conditions map a :class:`~firn.maintenance.health.TableHealth` metric (or
    ``small_file_ratio``) to ``"<op> <number>"`` with op one of ``>= > <= < == !=``; an
    unknown metric or a malformed expression fails at DAG parse time with the list of valid
    metrics. A condition on a metric the table does not define (``root_*`` below format
    version 4) is not met, and a set that can therefore never be met fails the task.

    Deferrable (default: ``[operators] default_deferrable``): the task first checks once on
    the worker, so a condition that already holds (or a bad table name) ends there; otherwise
    it defers to :class:`~firn_airflow.triggers.FirnTableHealthTrigger`, which polls every
    ``poke_interval`` seconds in the triggerer. ``timeout`` applies in both modes.

    :param table: ``"<namespace>.<table>"`` (templated).
    :param conditions: metric to expression, e.g. ``{"root_data_files": ">= 200"}``.
    :param match: ``"all"`` (default) or ``"any"``.
    :param firn_conn_id: the Firn connection (templated).
    :param deferrable: defer to the triggerer while waiting.
    """

    template_fields: Sequence[str] = ("table", "firn_conn_id")
    event_key = "health"
    ui_color = "#d7ecf7"

    def __init__(
        self,
        *,
        table: str,
        conditions: Mapping[str, str],
        match: str = "all",
        firn_conn_id: str = DEFAULT_CONN_ID,
        deferrable: bool | None = None,
        poke_interval: timedelta | float = 30,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            table=table,
            firn_conn_id=firn_conn_id,
            deferrable=deferrable,
            poke_interval=poke_interval,
            **kwargs,
        )
        self._conditions = parse_conditions(conditions)
        self.conditions = dict(conditions)
        self.match = check_match(match)

    def poke(self, context: Context) -> PokeReturnValue:
        health = measure(self._table_reader())
        evaluation = evaluate(health, self._conditions, self.match)
        described = evaluation.describe(self._conditions, health)
        if evaluation.satisfied:
            self.log.info("Table %s is ready: %s", self.table, described)
            return PokeReturnValue(is_done=True, xcom_value=health)
        if evaluation.impossible:
            raise ValidationError(impossible_message(self.table, health, evaluation, self.match))
        self.log.info("Table %s: %s", self.table, described)
        return PokeReturnValue(is_done=False)

    def trigger(self) -> FirnTableHealthTrigger:
        return FirnTableHealthTrigger(
            table=self.table,
            conditions=self.conditions,
            match=self.match,
            firn_conn_id=self.firn_conn_id,
            poll_interval=self.poke_interval,
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resumed after the trigger fired: the health that met the conditions, or its error."""
        health = event_result(event, self.event_key, task=self.task_id)
        self.log.info("Table %s met %s", self.table, ", ".join((event or {}).get("met", [])))
        return health


__all__ = ["FirnTableHealthSensor"]
