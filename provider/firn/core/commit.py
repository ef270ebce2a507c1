"""The commit loop: apply pending actions to a base, land the result through the catalog, retry.

DESIGN "Commit protocol": each action is pure with respect to the catalog — it reads a base
and returns ``(updates, requirements)`` (it may write data-independent files such as
manifests, which later attempts reuse when still valid). The loop here owns it:
on a :class:`CommitConflict` it refreshes, re-applies every action on the new base (which
re-validates), and retries with exponential backoff and full jitter (``commit.retry.*``).
A :class:`ValidationConflict` is not retried: the operation's assumptions no longer hold.

Retry budget. A conflict after which the catalog points past the attempt's base is a *lost
race*: another writer's commit landed, so the system made progress, and the re-apply on the
refreshed base re-validates. Lost races are retried until ``commit.retry.total-timeout-ms``.
``commit.retry.num-retries`` bounds the conflicts that made no progress (the pointer did not
move: a database lock timeout, a requirement that fails against the refreshed base). Counting
lost races against ``num-retries`` (as Iceberg Java does) starves writers under steady
contention: the writer that just committed starts its next attempt on a fresh base at once,
so a loser tends to keep losing: four processes appending in a loop on a busy machine saw
commits fail after 5 attempts.

A base that loses files while an attempt reads it (a concurrent ``expire_snapshots`` removed
the snapshot it built on, and with it the manifest list or root the attempt was reading) is a
lost race too when the catalog has moved past it: the attempt is retried on the refreshed
table instead of failing with ``NotFound``. It counts against ``num-retries``, so a file that
stays missing still fails the commit.
"""

from __future__ import annotations

import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self

from firn.core.handle import TableCommit, TableHandle
from firn.core.metadata_builder import apply_updates
from firn.core.updates import AddSnapshot, TableRequirement, TableUpdate
from firn.errors import CommitConflict, CommitStateUnknown, FirnError, NotFound, ValidationConflict
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.spec.deletion_scope import DeletionScope
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata

log = logging.getLogger(__name__)


@dataclass
class CommitContext:
    """What an action may use while applying: the FileIO, the metadata the transaction started
    from (for conflict validation), the attempt number, and a registry of files it wrote."""

    io: FileIO
    start: TableMetadata
    attempt: int = 0
    written: list[str] = field(default_factory=list)


class Action(Protocol):
    """A pending change. ``apply`` must be repeatable: it is called again on every retry."""

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]: ...

    def files_in_use(self) -> set[str]:
        """Files this action wrote during ``apply`` that the last successful apply references."""
        ...

    def written_files(self) -> Sequence[str]:
        """Files the action wrote before the commit (data and delete files); they are deleted
        when the commit fails, unless its outcome is unknown."""
        ...


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What one commit did.

    ``metadata_location``: the table's metadata after it; ``attempts``: how many tries it took;
    ``snapshot``: the snapshot the commit added (on its branch, or staged; the last one when it
    added several; None when it added none); ``snapshot_id``: main's current snapshot after it.
    A commit with nothing to change writes nothing and reports the unchanged location.
    """

    metadata_location: str
    attempts: int
    snapshot_id: int | None
    snapshot: Snapshot | None = None


def _backoff_ms(attempt: int, min_ms: int, max_ms: int) -> float:
    # Exponential backoff with "full jitter": the losers of one race spread over the whole
    # window instead of waking together for the next one.
    cap = min(max_ms, min_ms * (2 ** min(attempt - 1, 32)))
    return random.uniform(0, cap)


def commit_actions(table: TableHandle, actions: Sequence[Action], start: TableMetadata) -> CommitResult:
    """Apply ``actions`` in order and land them as one metadata version, retrying conflicts per
    ``commit.retry.*``. ``start`` is the metadata the changes were planned on."""
    base = table.metadata
    base_location = table.metadata_location
    props = base.table_properties
    deadline = time.monotonic() + props.commit_total_retry_time_ms / 1000
    ctx = CommitContext(io=table.io, start=start)
    attempt = lost_races = stalls = 0
    try:
        while True:
            attempt += 1
            ctx.attempt = attempt
            try:
                if base.table_uuid != start.table_uuid:
                    # Refreshed into a different table (dropped and re-created under the same
                    # name): re-applying would commit these changes to a table they were not
                    # planned for. Requirements built from the refreshed base cannot see this.
                    raise ValidationConflict(
                        f"table {table.name} was replaced concurrently (UUID {start.table_uuid} "
                        f"is now {base.table_uuid}); nothing was committed"
                    )
                try:
                    new_md, updates, requirements = _apply_all(actions, base, ctx)
                except NotFound as e:
                    if not _table_moved(table, base_location):
                        raise
                    # The base's files are gone because the table moved on: a concurrent expiry
                    # removed the snapshot this attempt built on (its manifest list or root). A
                    # lost race, not a missing input: retry on the refreshed table. Counted as a
                    # stall, so a file that stays missing fails after commit.retry.num-retries.
                    stalls += 1
                    raise _VanishedBase(
                        f"{table.name} moved on while this commit read its base ({e}); "
                        "retrying on the refreshed table"
                    ) from e
                if new_md is base:
                    _cleanup(table, ctx, keep=set())
                    return CommitResult(base_location, attempt, None)
                for req in requirements:
                    req.validate(base)
                committed = table.commit_metadata(
                    TableCommit(base, base_location, new_md, tuple(updates), tuple(requirements))
                )
            except CommitConflict as e:
                if isinstance(e, ValidationConflict):
                    raise
                # A lost race (another writer's commit landed: the pointer moved) proves progress
                # and the refreshed re-apply re-validates, so it only spends time; a conflict that
                # made no progress (e.g. a database lock timeout) spends commit.retry.num-retries.
                if isinstance(e, _VanishedBase):
                    pass  # counted where it was raised
                elif _table_moved(table, base_location):
                    lost_races += 1
                else:
                    stalls += 1
                if stalls > props.commit_num_retries or time.monotonic() > deadline:
                    raise CommitConflict(
                        f"commit to {table.name} failed after {attempt} attempts "
                        f"({lost_races} lost to concurrent commits): {e}"
                    ) from e
                wait = _backoff_ms(attempt, props.commit_min_retry_wait_ms, props.commit_max_retry_wait_ms)
                log.debug(
                    "commit conflict on %s (attempt %d), retrying in %.0f ms", table.name, attempt, wait
                )
                time.sleep(wait / 1000)
                table.refresh()
                base, base_location = table.metadata, table.metadata_location
                continue
            in_use: set[str] = set()
            for a in actions:
                in_use |= a.files_in_use()
            _cleanup(table, ctx, keep=in_use)
            current = committed.metadata.current_snapshot()
            return CommitResult(
                committed.metadata_location,
                attempt,
                current.snapshot_id if current is not None else None,
                _added_snapshot(updates, committed.metadata),
            )
    except CommitStateUnknown:
        # The swap may have happened: keep every file, they may be referenced.
        raise
    except BaseException:
        _cleanup(table, ctx, keep=set())
        _delete_quietly(table, ctx, [p for a in actions for p in a.written_files()], "uncommitted data")
        raise


class _VanishedBase(CommitConflict):
    """An attempt's base lost files to a concurrent commit (an expiry) while it was applied."""


def _apply_all(
    actions: Sequence[Action], base: TableMetadata, ctx: CommitContext
) -> tuple[TableMetadata, list[TableUpdate], list[TableRequirement]]:
    md = base
    updates: list[TableUpdate] = []
    requirements: list[TableRequirement] = []
    for action in actions:
        u, r = action.apply(md, ctx)
        if md is not base:
            # A later action states requirements against the earlier actions' output (e.g. a
            # second append asserts main is at the first one's snapshot). The commit is checked
            # against ``base``: keep what holds there; the rest is implied by earlier actions.
            r = [req for req in r if _holds(req, base)]
        md = apply_updates(md, u)
        updates.extend(u)
        requirements.extend(r)
    return md, updates, requirements


def _added_snapshot(updates: Sequence[TableUpdate], metadata: TableMetadata) -> Snapshot | None:
    for u in reversed(updates):
        if isinstance(u, AddSnapshot):
            return metadata.snapshot_by_id(u.snapshot.snapshot_id)
    return None


def _table_moved(table: TableHandle, base_location: str) -> bool:
    """Whether the catalog now points past ``base_location`` (another commit landed)."""
    try:
        return table.catalog_metadata_location() != base_location
    except FirnError:  # unreachable or dropped: the refresh that follows reports it
        return False


def _cleanup(table: TableHandle, ctx: CommitContext, keep: set[str]) -> None:
    """Delete files written by attempts that the committed metadata does not reference."""
    stale = [p for p in ctx.written if p not in keep]
    _delete_quietly(table, ctx, stale, "uncommitted metadata")
    ctx.written = [p for p in ctx.written if p in keep]


def _delete_quietly(table: TableHandle, ctx: CommitContext, paths: Sequence[str], what: str) -> None:
    """Best effort (orphan removal catches leftovers), confined to the table's own places in
    the metadata the transaction started from or holds now: these files were written by this
    transaction under fresh names (``DeletionScope.for_written``)."""
    if paths:
        delete_quietly(
            table.io, DeletionScope.for_written(table.name, ctx.start, table.metadata), paths, what
        )


def _holds(requirement: TableRequirement, metadata: TableMetadata) -> bool:
    try:
        requirement.validate(metadata)
    except CommitConflict:
        return False
    return True


class SimpleAction:
    """An action made of a function from base metadata to updates and requirements."""

    def __init__(
        self, fn: Callable[[TableMetadata], tuple[list[TableUpdate], list[TableRequirement]]]
    ) -> None:
        self._fn = fn

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        return self._fn(base)

    def files_in_use(self) -> set[str]:
        return set()

    def written_files(self) -> Sequence[str]:
        return ()


class Staging(Protocol):
    """Where a builder stages its change: a transaction (``firn.core.transaction``)."""

    @property
    def table(self) -> TableHandle: ...

    @property
    def autocommit(self) -> bool: ...

    def add_action(self, action: Action) -> object: ...

    def commit(self) -> CommitResult: ...


class PendingUpdate(ABC):
    """Base of the change builders (schema, partition spec, refs, row delta).

    A builder is part of the transaction that made it, as one of its actions, from the start.
    Made by ``table.update_schema()`` and friends, it has a transaction of its own and commits
    with :meth:`commit` or on a clean exit from a ``with`` block. Made by a transaction
    (``tx.update_schema()``), it commits when that transaction does.
    """

    def __init__(self, transaction: Staging) -> None:
        self._transaction = transaction
        self._committed = False
        transaction.add_action(self)

    @property
    def table(self) -> TableHandle:
        return self._transaction.table

    # -- the action protocol ------------------------------------------------------------------
    @abstractmethod
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        """The builder's change against ``base`` (called again on every commit attempt)."""

    def files_in_use(self) -> set[str]:
        return set()

    def written_files(self) -> Sequence[str]:
        return ()

    # -- committing ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._committed:
            raise FirnError(f"this {type(self).__name__} has already been committed")

    def commit(self) -> CommitResult:
        """Commit this change on its own (one new metadata version); see the class docstring."""
        return self._commit()

    def _commit(self) -> CommitResult:
        self._check_open()
        if not self._transaction.autocommit:
            raise FirnError(
                f"this {type(self).__name__} is part of a transaction; it commits with the transaction"
            )
        result = self._transaction.commit()
        self._committed = True
        return result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None and self._transaction.autocommit and not self._committed:
            self.commit()


__all__ = [
    "Action",
    "CommitContext",
    "CommitResult",
    "PendingUpdate",
    "SimpleAction",
    "Staging",
    "commit_actions",
]
