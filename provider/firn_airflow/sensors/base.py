"""``FirnTableSensor``: what the Firn sensors share -- one table, poke once, then defer.

A subclass names its trigger (:meth:`FirnTableSensor.trigger`), checks one condition in
:meth:`~airflow.sdk.BaseSensorOperator.poke`, and says which key of the trigger's success
event holds its result (:attr:`FirnTableSensor.event_key`). The base class gives it:

* the ``table`` / ``firn_conn_id`` arguments, checked at parse time unless templated;
* ``deferrable`` defaulting to ``[operators] default_deferrable``;
* a :class:`~firn_airflow.triggers.reader.TableReader` kept for one execution and closed after it;
* deferrable execution: one poke on the worker (a condition that already holds, or a bad
  table, ends there), then :meth:`defer` to the trigger with the sensor's ``timeout``;
* :meth:`execute_complete`: the event's result, or the trigger's error as the same Firn error.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.sensors.events import event_result, is_template
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import check_table_name

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.triggers.base import BaseTrigger


class FirnTableSensor(BaseSensorOperator):
    """Base of the sensors that wait on one Firn table (not used directly).

    :param table: ``"<namespace>.<table>"`` (templated).
    :param firn_conn_id: the Firn connection (templated).
    :param deferrable: defer to the triggerer while waiting (default: ``[operators]
        default_deferrable``).
    :param poke_interval: seconds between checks, on the worker or in the triggerer.
    """

    template_fields: Sequence[str] = ("table", "firn_conn_id")
    event_key: ClassVar[str]
    """The key of the trigger's success event that holds the sensor's result."""

    def __init__(
        self,
        *,
        table: str,
        firn_conn_id: str = DEFAULT_CONN_ID,
        deferrable: bool | None = None,
        poke_interval: timedelta | float = 30,
        **kwargs: Any,
    ) -> None:
        super().__init__(poke_interval=poke_interval, **kwargs)
        if not is_template(table):
            check_table_name(table)
        self.table = table
        self.firn_conn_id = firn_conn_id
        self.deferrable = (
            conf.getboolean("operators", "default_deferrable", fallback=False)
            if deferrable is None
            else deferrable
        )
        self._reader: TableReader | None = None

    def _table_reader(self) -> TableReader:
        """The reader of the rendered table, opened on first use and kept for this execution."""
        if self._reader is None:
            self._reader = TableReader(self.firn_conn_id, check_table_name(self.table))
        return self._reader

    def start(self) -> None:
        """Reset per-execution state before the first poke (a retry starts afresh)."""

    @abstractmethod
    def poke(self, context: Context) -> PokeReturnValue:
        """One check on the worker: done (with the sensor's result as ``xcom_value``) or not."""

    @abstractmethod
    def trigger(self) -> BaseTrigger:
        """The trigger that goes on waiting in the triggerer after the first poke."""

    def execute(self, context: Context) -> Any:
        self.start()
        try:
            if not self.deferrable:
                return super().execute(context)
            first = self.poke(context)
            if first.is_done:
                return first.xcom_value
        finally:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        self.defer(
            trigger=self.trigger(),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resumed after the trigger fired: its result, or its error as the same Firn error."""
        return event_result(event, self.event_key, task=self.task_id)


__all__ = ["FirnTableSensor"]
