"""``FirnNewSnapshotSensor``: wait for a commit to a table after a watermark."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import PokeReturnValue

from firn.errors import NotFound, ValidationError
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.sensors.base import FirnTableSensor
from firn_airflow.sensors.events import is_template
from firn_airflow.triggers.new_snapshot import FirnNewSnapshotTrigger, find_new_snapshot
from firn_airflow.triggers.snapshots import (
    branch_head,
    check_branch,
    parse_operations,
    parse_snapshot_id,
    parse_timestamp_ms,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class FirnNewSnapshotSensor(FirnTableSensor):
    """Waits for a commit to a table's branch after a watermark; returns (XCom) that commit.

    ::

        FirnNewSnapshotSensor(
            task_id="wait_for_ingest",
            table="db.events",
            after_timestamp="{{ data_interval_end }}",
            operation="append",
        )

    The watermark is ``after_snapshot_id`` (a snapshot of the table) or ``after_timestamp``
    (a datetime, an ISO-8601 string or epoch ms; naive times are UTC), both templated, not
    both. Without either, it is the branch head when the sensor starts (so ``mode="reschedule"``,
    which restarts the task for every poke, needs an explicit watermark). What counts as
    "after" is defined in :mod:`firn_airflow.triggers.snapshots`.

    The result is the newest matching commit: ``table``, ``branch``, ``snapshot_id``,
    ``parent_snapshot_id``, ``sequence_number``, ``timestamp_ms``, ``operation``, ``summary``
    (the snapshot summary), ``new_snapshots`` (how many matching commits came after the
    watermark), and the snapshot range from the watermark to that commit:
    ``from_snapshot_id`` (exclusive), ``to_snapshot_id``, ``operations`` (every commit's in the
    range, matching or not) and ``maintenance_only`` (all ``replace``: no row changed).

    Deferrable (default: ``[operators] default_deferrable``): the task checks once on the
    worker, then defers to :class:`~firn_airflow.triggers.FirnNewSnapshotTrigger`.

    :param table: ``"<namespace>.<table>"`` (templated).
    :param after_snapshot_id: wait for commits after this snapshot (templated).
    :param after_timestamp: ... or for commits after this time (templated).
    :param operation: only commits with this operation count (``append``, ``delete``,
        ``overwrite``, ``replace``), or one of several; None (default) for any.
    :param branch: the branch to watch (templated), default ``main``.
    :param firn_conn_id: the Firn connection (templated).
    :param deferrable: defer to the triggerer while waiting.
    """

    template_fields: Sequence[str] = (
        "table",
        "firn_conn_id",
        "after_snapshot_id",
        "after_timestamp",
        "branch",
    )
    event_key = "snapshot"
    ui_color = "#d7f0e0"

    def __init__(
        self,
        *,
        table: str,
        after_snapshot_id: int | str | None = None,
        after_timestamp: datetime | str | int | None = None,
        operation: str | Iterable[str] | None = None,
        branch: str = "main",
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
        if not is_template(branch):
            check_branch(branch)
        if not is_template(after_snapshot_id):
            parse_snapshot_id(after_snapshot_id)
        if not is_template(after_timestamp):
            parse_timestamp_ms(after_timestamp)
        if after_snapshot_id is not None and after_timestamp is not None:
            raise ValidationError(f"{self.task_id}: give after_snapshot_id or after_timestamp, not both")
        self.after_snapshot_id = after_snapshot_id
        self.after_timestamp = after_timestamp
        self.operations = parse_operations(operation)
        self.branch = branch
        if self.reschedule and not self.deferrable and after_snapshot_id is None and after_timestamp is None:
            raise ValidationError(
                f"{self.task_id}: mode='reschedule' starts the task again for every poke, so "
                "'after the head at start' would move each time; give after_snapshot_id or after_timestamp"
            )
        self._watermark: tuple[int | None, int | None] | None = None

    def _resolve_watermark(self) -> tuple[int | None, int | None]:
        """``(after_snapshot_id, after_timestamp_ms)`` from the rendered fields, checked against the table."""
        after_id = parse_snapshot_id(self.after_snapshot_id)
        after_ms = parse_timestamp_ms(self.after_timestamp)
        if after_id is not None and after_ms is not None:
            raise ValidationError(f"{self.task_id}: give after_snapshot_id or after_timestamp, not both")
        branch = check_branch(self.branch)
        table = self._table_reader().load()
        if after_id is not None and table.snapshot_by_id(after_id) is None:
            raise NotFound(
                f"{self.task_id}: after_snapshot_id {after_id} is not a snapshot of table {self.table!r} "
                "(expired, or never existed); use after_timestamp to wait by time"
            )
        if after_id is None and after_ms is None:
            head = branch_head(table, branch)
            after_id = head.snapshot_id if head is not None else None
            self.log.info(
                "Waiting for commits to %s branch %s after its head at start, %s",
                self.table,
                branch,
                after_id,
            )
        return after_id, after_ms

    def _find(self) -> dict[str, Any] | None:
        if self._watermark is None:
            self._watermark = self._resolve_watermark()
        after_id, after_ms = self._watermark
        return find_new_snapshot(
            self._table_reader(),
            branch=check_branch(self.branch),
            after_snapshot_id=after_id,
            after_timestamp_ms=after_ms,
            operations=self.operations,
        )

    def poke(self, context: Context) -> PokeReturnValue:
        found = self._find()
        if found is None:
            self.log.info("No new commit to %s branch %s yet", self.table, self.branch)
            return PokeReturnValue(is_done=False)
        self.log.info("New %s commit %s to %s", found["operation"], found["snapshot_id"], self.table)
        return PokeReturnValue(is_done=True, xcom_value=found)

    def start(self) -> None:
        self._watermark = None

    def trigger(self) -> FirnNewSnapshotTrigger:
        if self._watermark is None:  # set by the first poke
            raise RuntimeError(f"{self.task_id}: deferring before the first poke resolved the watermark")
        after_id, after_ms = self._watermark
        return FirnNewSnapshotTrigger(
            table=self.table,
            firn_conn_id=self.firn_conn_id,
            branch=self.branch,
            after_snapshot_id=after_id,
            after_timestamp_ms=after_ms,
            operation=self.operations,
            poll_interval=self.poke_interval,
        )


__all__ = ["FirnNewSnapshotSensor"]
