"""The trigger behind :class:`~firn_airflow.sensors.new_snapshot.FirnNewSnapshotSensor` in deferrable mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from firn.errors import ValidationError
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import (
    check_branch,
    check_poll_interval,
    check_table_name,
    matching,
    parse_operations,
    parse_snapshot_id,
    parse_timestamp_ms,
    range_payload,
    snapshot_payload,
    snapshots_after,
)

CLASSPATH = "firn_airflow.triggers.new_snapshot.FirnNewSnapshotTrigger"


def find_new_snapshot(
    reader: TableReader,
    *,
    branch: str,
    after_snapshot_id: int | None,
    after_timestamp_ms: int | None,
    operations: tuple[str, ...] | None,
) -> dict[str, Any] | None:
    """The newest matching commit on ``branch`` after the watermark, as a payload (blocking).

    The payload is :func:`~firn_airflow.triggers.snapshots.snapshot_payload` plus
    ``new_snapshots``: how many matching commits came after the watermark, and the range
    from the watermark to that commit (:func:`~firn_airflow.triggers.snapshots.range_payload`:
    ``from_snapshot_id``, ``to_snapshot_id``, ``operations``, ``maintenance_only``; commits
    of other operations in between are part of it). None while there is none.
    """
    table = reader.load()
    after = snapshots_after(
        table, branch=branch, after_snapshot_id=after_snapshot_id, after_timestamp_ms=after_timestamp_ms
    )
    found = matching(after, operations)
    if not found:
        return None
    newest = found[-1]
    in_range = after[: next(i for i, s in enumerate(after) if s.snapshot_id == newest.snapshot_id) + 1]
    return {
        **snapshot_payload(reader.table, branch, newest),
        "new_snapshots": len(found),
        **range_payload(in_range),
    }


class FirnNewSnapshotTrigger(BaseTrigger):
    """Polls a table until its branch has a commit after a watermark, then fires one event.

    Without a watermark any commit on the branch counts (the sensor passes the head it saw
    when it started, so that "after now" survives deferral). The event is ``{"status":
    "success", "snapshot": {...}}`` (see :func:`find_new_snapshot`) or ``{"status": "error",
    "table", "error", "message"}`` (``error`` names the exception) when the table cannot be read.

    :param table: ``"<namespace>.<table>"``.
    :param firn_conn_id: the Firn connection.
    :param branch: the branch to watch.
    :param after_snapshot_id: wait for commits after this snapshot ...
    :param after_timestamp_ms: ... or after this commit time (epoch ms); not both.
    :param operation: only commits with this snapshot operation (or one of these) count.
    :param poll_interval: seconds between polls.
    """

    def __init__(
        self,
        *,
        table: str,
        firn_conn_id: str = DEFAULT_CONN_ID,
        branch: str = "main",
        after_snapshot_id: int | None = None,
        after_timestamp_ms: int | None = None,
        operation: str | Iterable[str] | None = None,
        poll_interval: float = 30.0,
    ) -> None:
        super().__init__()
        self.table = check_table_name(table)
        self.firn_conn_id = firn_conn_id
        self.branch = check_branch(branch)
        self.after_snapshot_id = parse_snapshot_id(after_snapshot_id)
        self.after_timestamp_ms = parse_timestamp_ms(after_timestamp_ms, what="after_timestamp_ms")
        if self.after_snapshot_id is not None and self.after_timestamp_ms is not None:
            raise ValidationError("give after_snapshot_id or after_timestamp_ms, not both")
        self.operations = parse_operations(operation)
        self.poll_interval = check_poll_interval(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "table": self.table,
                "firn_conn_id": self.firn_conn_id,
                "branch": self.branch,
                "after_snapshot_id": self.after_snapshot_id,
                "after_timestamp_ms": self.after_timestamp_ms,
                "operation": list(self.operations) if self.operations is not None else None,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        reader = TableReader(self.firn_conn_id, self.table)
        try:
            while True:
                try:
                    found = await asyncio.to_thread(
                        find_new_snapshot,
                        reader,
                        branch=self.branch,
                        after_snapshot_id=self.after_snapshot_id,
                        after_timestamp_ms=self.after_timestamp_ms,
                        operations=self.operations,
                    )
                except Exception as e:  # any failure ends the wait with one clear task error
                    message = f"cannot read table {self.table!r}: {e}"
                    self.log.error("%s", message)
                    yield TriggerEvent(
                        {
                            "status": "error",
                            "table": self.table,
                            "error": type(e).__name__,
                            "message": message,
                        }
                    )
                    return
                if found is not None:
                    self.log.info(
                        "Table %s branch %s: new %s commit %s",
                        self.table,
                        self.branch,
                        found["operation"],
                        found["snapshot_id"],
                    )
                    yield TriggerEvent({"status": "success", "snapshot": found})
                    return
                self.log.info(
                    "Table %s branch %s: no new commit yet; next poll in %ss",
                    self.table,
                    self.branch,
                    self.poll_interval,
                )
                await asyncio.sleep(self.poll_interval)
        finally:
            await asyncio.to_thread(reader.close)


__all__ = ["FirnNewSnapshotTrigger", "find_new_snapshot"]
