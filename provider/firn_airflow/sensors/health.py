"""``FirnTableHealthSensor``: wait until ``table.health()`` meets conditions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
    needs_recommend,
    parse_condition_set,
    properties_needed,
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
    ``small_file_ratio``) to ``"<op> <number>"`` with op one of ``>= > <= < == !=``, or to
    ``"<op> property <key>"`` to compare with the table's own property (its value, else Firn's
    default, read at each poll)::

        FirnTableHealthSensor(
            task_id="root_grew",
            table="db.events",
            conditions={"root_data_files": ">= property commit.root.max-data-files"},
        )

    ``recommended="flush_root"`` waits until ``table.maintenance.recommend()`` lists that
    operation (with or instead of conditions; each listed operation is one more condition
    under ``match``). An unknown metric or operation, or a malformed expression, fails at DAG
    parse time with the list of valid ones. A condition on a metric the table does not define (``root_*`` below format
    version 4) is not met, and a set that can therefore never be met fails the task.

    Deferrable (default: ``[operators] default_deferrable``): the task first checks once on
    the worker, so a condition that already holds (or a bad table name) ends there; otherwise
    it defers to :class:`~firn_airflow.triggers.FirnTableHealthTrigger`, which polls every
    ``poke_interval`` seconds in the triggerer. ``timeout`` applies in both modes.

    :param table: ``"<namespace>.<table>"`` (templated).
    :param conditions: metric to expression, e.g. ``{"root_data_files": ">= 200"}``.
    :param recommended: an operation (or several) that ``recommend()`` must list.
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
        conditions: Mapping[str, str] | None = None,
        recommended: str | Iterable[str] | None = None,
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

    def poke(self, context: Context) -> PokeReturnValue:
        measured = measure(
            self._table_reader(),
            properties=properties_needed(self._conditions),
            recommend=needs_recommend(self._conditions),
        )
        evaluation = evaluate(measured, self._conditions, self.match)
        described = evaluation.describe(self._conditions, measured)
        if evaluation.satisfied:
            self.log.info("Table %s is ready: %s", self.table, described)
            return PokeReturnValue(is_done=True, xcom_value=measured.health)
        if evaluation.impossible:
            raise ValidationError(impossible_message(self.table, measured.health, evaluation, self.match))
        self.log.info("Table %s: %s", self.table, described)
        return PokeReturnValue(is_done=False)

    def trigger(self) -> FirnTableHealthTrigger:
        return FirnTableHealthTrigger(
            table=self.table,
            conditions=self.conditions,
            recommended=self.recommended,
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
