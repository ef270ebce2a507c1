"""Event-driven scheduling on a table's commits: ``AssetWatcher(trigger=FirnCommitTrigger(...))``.

::

    from airflow.sdk import Asset, AssetWatcher

    events = Asset(
        name="db.events",
        uri="firn://firn_default/db/events",
        watchers=[AssetWatcher(name="db_events_commits", trigger=FirnCommitTrigger(table="db.events"))],
    )

    with DAG("compact_db_events", schedule=[events], ...): ...

The watermark (the branch head last reported) is kept in the watched asset's
``asset_state_store`` (Airflow 3.3), because ``serialize()`` is captured once when the trigger
row is written: after a triggerer restart the stored watermark wins over the
``last_seen_snapshot_id`` kwarg, so commits are not reported twice. The watermark is stored
just before each event is handed to the triggerer, which queues events in memory before it
records them: a triggerer killed in that instant loses the event (as it would any trigger's).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from firn.errors import NoSuchNamespace, NoSuchTable
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.triggers.reader import TableReader
from firn_airflow.triggers.snapshots import (
    branch_head,
    check_branch,
    check_poll_interval,
    check_table_name,
    parse_operations,
    parse_snapshot_id,
    range_payload,
    snapshots_after,
)

if TYPE_CHECKING:
    from firn.spec.snapshots import Snapshot

CLASSPATH = "firn_airflow.triggers.commit.FirnCommitTrigger"
# The accessor Airflow injects serves exactly one asset; with several watched assets sharing
# this trigger (triggers are deduplicated by their kwargs) its get() raises a ValueError
# saying how many "concrete inlets and outlets" there are. There is then no single place for
# the watermark, and the trigger runs without one.
_SEVERAL_ASSETS = "concrete inlets and outlets"


@dataclass(frozen=True)
class CommitPoll:
    """What one poll saw: whether the table exists, its branch head, and the commits to report."""

    exists: bool
    head: int | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


def poll_commits(
    reader: TableReader,
    *,
    branch: str,
    watermark: int | None,
    operations: tuple[str, ...] | None,
) -> CommitPoll:
    """The branch's commits after ``watermark`` as event payloads, oldest first (blocking).

    One payload per commit, each naming the head before it (``previous_snapshot_id``). When
    the head moved without a newer commit (a rollback, or a reset to another snapshot) the new
    head is reported; when the branch first appears (``watermark`` None), its head is.
    Commits whose operation is not in ``operations`` move the watermark without an event.
    """
    try:
        table = reader.load()
    except (NoSuchTable, NoSuchNamespace):
        return CommitPoll(exists=False)
    head = branch_head(table, branch)
    if head is None or head.snapshot_id == watermark:
        return CommitPoll(exists=True, head=watermark if head is None else head.snapshot_id)
    new = snapshots_after(table, branch=branch, after_snapshot_id=watermark) if watermark is not None else []
    if not new:
        new = [head]
    events = []
    previous = watermark
    unreported: list[Snapshot] = []  # this event's range: the commits since the last event
    for snapshot in new:
        unreported.append(snapshot)
        if operations is None or snapshot.operation.value in operations:
            events.append(
                {
                    "table": reader.table,
                    "branch": branch,
                    "snapshot_id": snapshot.snapshot_id,
                    "previous_snapshot_id": previous,
                    "operation": snapshot.operation.value,
                    "sequence_number": snapshot.sequence_number,
                    "timestamp_ms": snapshot.timestamp_ms,
                    "summary": snapshot.summary.to_dict(),
                    **range_payload(unreported),
                }
            )
            unreported = []
        previous = snapshot.snapshot_id
    return CommitPoll(exists=True, head=head.snapshot_id, events=events)


class FirnCommitTrigger(BaseEventTrigger):
    """Fires one event per commit to a Firn table's branch, for ``AssetWatcher`` scheduling.

    Silent while the branch head is unchanged. When it starts without a watermark (none
    stored, no ``last_seen_snapshot_id``) it takes the current head as the watermark and
    reports only later commits. A table (or namespace, or branch) that does not exist yet is
    waited for; other read failures are logged and retried at the next poll, so the trigger
    never dies into a restart loop.

    The event payload: ``table``, ``branch``, ``snapshot_id``, ``previous_snapshot_id`` (the
    head before this commit, as seen by the trigger; None for the first head of a new table
    or branch), ``operation`` (``append``, ``overwrite``, ``delete``, ``replace``),
    ``sequence_number``, ``timestamp_ms`` and ``summary`` (the snapshot summary); and the
    snapshot range the event covers (:func:`~firn_airflow.triggers.snapshots.range_payload`):
    ``from_snapshot_id`` (exclusive) to ``to_snapshot_id`` (this commit), ``operations`` and
    ``maintenance_only``. Consecutive events' ranges tile the branch's history: commits that
    ``operation`` filters out belong to the range of the next event (their operations listed).

    :param table: ``"<namespace>.<table>"``.
    :param firn_conn_id: the Firn connection.
    :param branch: the branch to watch.
    :param poll_interval: seconds between polls.
    :param operation: report only commits with this operation (or one of these), e.g.
        ``["append", "overwrite", "delete"]`` so that compaction's ``replace`` commits do not
        schedule the DAG that compacts; other commits still move the watermark.
    :param last_seen_snapshot_id: the head already reported, used when no watermark is stored.
    """

    def __init__(
        self,
        *,
        table: str,
        firn_conn_id: str = DEFAULT_CONN_ID,
        branch: str = "main",
        poll_interval: float = 30.0,
        operation: str | Iterable[str] | None = None,
        last_seen_snapshot_id: int | None = None,
    ) -> None:
        super().__init__()
        self.table = check_table_name(table)
        self.firn_conn_id = firn_conn_id
        self.branch = check_branch(branch)
        self.poll_interval = check_poll_interval(poll_interval)
        self.operations = parse_operations(operation)
        self.last_seen_snapshot_id = parse_snapshot_id(last_seen_snapshot_id, what="last_seen_snapshot_id")

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "table": self.table,
                "firn_conn_id": self.firn_conn_id,
                "branch": self.branch,
                "poll_interval": self.poll_interval,
                "operation": list(self.operations) if self.operations is not None else None,
                "last_seen_snapshot_id": self.last_seen_snapshot_id,
            },
        )

    @property
    def watermark_key(self) -> str:
        """The asset-state-store key of this trigger's watermark (one per connection, table, branch)."""
        return f"firn.commit_watermark:{self.firn_conn_id}:{self.table}@{self.branch}"

    async def _stored_watermark(self, store: Any) -> tuple[Any, bool, int | None]:
        """``(store or None, found, snapshot_id)`` from the asset state store."""
        try:
            # The accessor's sync get() works from a worker thread under the real triggerer and
            # under dag.test()'s in-process supervisor (which has no async channel).
            stored = await asyncio.to_thread(store.get, self.watermark_key)
        except ValueError as e:
            if _SEVERAL_ASSETS not in str(e):
                raise
            self.log.warning(
                "Table %s is watched by several assets sharing one trigger; its watermark is not "
                "persisted, so a triggerer restart starts again from the head it then sees",
                self.table,
            )
            return None, False, None
        if isinstance(stored, dict) and "snapshot_id" in stored:
            return store, True, parse_snapshot_id(stored["snapshot_id"], what="stored watermark")
        return store, False, None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        store = getattr(self, "asset_state_store", None)
        known = self.last_seen_snapshot_id is not None
        watermark = self.last_seen_snapshot_id
        if store is not None:
            store, found, stored = await self._stored_watermark(store)
            if found:
                if known and stored != watermark:
                    self.log.info(
                        "Table %s: resuming from the stored watermark %s (not the kwarg's %s)",
                        self.table,
                        stored,
                        watermark,
                    )
                known, watermark = True, stored
        reader = TableReader(self.firn_conn_id, self.table)
        waiting = False
        try:
            while True:
                try:
                    poll = await asyncio.to_thread(
                        poll_commits,
                        reader,
                        branch=self.branch,
                        watermark=watermark,
                        operations=self.operations,
                    )
                except Exception as e:  # a watcher outlives outages: log, reconnect, poll again
                    self.log.warning(
                        "Table %s: poll failed, retrying in %ss: %s", self.table, self.poll_interval, e
                    )
                    await asyncio.to_thread(reader.close)
                    await asyncio.sleep(self.poll_interval)
                    continue
                if not poll.exists:
                    if not waiting:
                        self.log.info("Table %s does not exist (yet); waiting for it", self.table)
                    waiting = True
                    poll = CommitPoll(exists=False, head=watermark if known else None)
                elif waiting:
                    self.log.info("Table %s exists now", self.table)
                    waiting = False
                if not known:
                    # First sight: what is there now is the starting point, not news.
                    known, watermark = True, poll.head
                    self.log.info(
                        "Table %s branch %s: watching from snapshot %s", self.table, self.branch, watermark
                    )
                    await self._store(store, watermark)
                elif poll.head != watermark:
                    for payload in poll.events:
                        self.log.info(
                            "Table %s branch %s: %s commit %s",
                            self.table,
                            self.branch,
                            payload["operation"],
                            payload["snapshot_id"],
                        )
                        # Stored before the event is handed over: the triggerer queues it in
                        # memory either way, and a consumer that takes one event and stops
                        # (dag.test()) must still leave the watermark where the event was.
                        watermark = payload["snapshot_id"]
                        await self._store(store, watermark)
                        yield TriggerEvent(payload)
                    if watermark != poll.head:
                        watermark = poll.head
                        await self._store(store, watermark)
                await asyncio.sleep(self.poll_interval)
        finally:
            await asyncio.to_thread(reader.close)

    async def _store(self, store: Any, watermark: int | None) -> None:
        if store is not None:
            await asyncio.to_thread(store.set, self.watermark_key, {"snapshot_id": watermark})


__all__ = ["CommitPoll", "FirnCommitTrigger", "poll_commits"]
