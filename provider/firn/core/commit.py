"""Transactions: apply pending actions to a base, write metadata, swap it in the catalog, retry.

DESIGN "Commit protocol": each action is pure with respect to the catalog — it reads a base
and returns ``(updates, requirements)`` (it may write data-independent files such as
manifests, which later attempts reuse when still valid). The transaction owns the loop:
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
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from firn.core.metadata_builder import apply_updates, with_metadata_log
from firn.core.metadata_io import new_metadata_location, write_metadata
from firn.core.updates import TableRequirement, TableUpdate
from firn.errors import CommitConflict, CommitStateUnknown, FirnError, ValidationConflict
from firn.io.base import FileIO
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.table.table import Table

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
        """Files this action wrote that the last successful ``apply`` references."""
        ...


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What one commit did: the new metadata location, attempts used and files written."""

    metadata_location: str
    attempts: int
    snapshot_id: int | None


def _backoff_ms(attempt: int, min_ms: int, max_ms: int) -> float:
    # Exponential backoff with "full jitter": the losers of one race spread over the whole
    # window instead of waking together for the next one.
    cap = min(max_ms, min_ms * (2 ** min(attempt - 1, 32)))
    return random.uniform(0, cap)


class Transaction:
    """A set of changes to one table that commit atomically (one new metadata version)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._start = table.metadata
        self._actions: list[Action] = []
        self._committed = False

    @property
    def table(self) -> Table:
        return self._table

    @property
    def start_metadata(self) -> TableMetadata:
        return self._start

    def add_action(self, action: Action) -> Transaction:
        if self._committed:
            raise FirnError("this transaction has already been committed")
        self._actions.append(action)
        return self

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None and not self._committed:
            self.commit()

    # -- the commit loop ------------------------------------------------------------------------
    def commit(self) -> CommitResult:
        """Apply every action and swap the new metadata in; retries conflicts per ``commit.retry.*``."""
        if self._committed:
            raise FirnError("this transaction has already been committed")
        table = self._table
        io = table.io
        base = table.metadata
        base_location = table.metadata_location
        props = base.table_properties
        deadline = time.monotonic() + props.commit_total_retry_time_ms / 1000
        ctx = CommitContext(io=io, start=self._start)
        attempt = lost_races = stalls = 0
        while True:
            attempt += 1
            ctx.attempt = attempt
            new_location: str | None = None
            try:
                if base.table_uuid != self._start.table_uuid:
                    # Refreshed into a different table (dropped and re-created under the same
                    # name): re-applying would commit these changes to a table they were not
                    # planned for. Requirements built from the refreshed base cannot see this.
                    raise ValidationConflict(
                        f"table {table.name} was replaced concurrently (UUID {self._start.table_uuid} "
                        f"is now {base.table_uuid}); nothing was committed"
                    )
                new_md, _updates, requirements = self._apply_all(base, ctx)
                if new_md is base:
                    self._committed = True
                    return CommitResult(base_location, attempt, None)
                for req in requirements:
                    req.validate(base)
                new_md = with_metadata_log(new_md, base_location, base)
                new_location = new_metadata_location(new_md, base_location)
                write_metadata(io, new_md, new_location)
                table.catalog.commit_table(table.identifier, base_location, new_location, new_md)
            except ValidationConflict:
                self._cleanup(ctx, keep=set())
                self._delete_quietly(new_location)
                raise
            except CommitStateUnknown:
                # The swap may have happened: keep every file, they may be referenced.
                raise
            except CommitConflict as e:
                self._delete_quietly(new_location)
                # A lost race (another writer's commit landed: the pointer moved) proves progress
                # and the refreshed re-apply re-validates, so it only spends time; a conflict that
                # made no progress (e.g. a database lock timeout) spends commit.retry.num-retries.
                if self._table_moved(base_location):
                    lost_races += 1
                else:
                    stalls += 1
                if stalls > props.commit_num_retries or time.monotonic() > deadline:
                    self._cleanup(ctx, keep=set())
                    raise CommitConflict(
                        f"commit to {table.name} failed after {attempt} attempts "
                        f"({lost_races} lost to concurrent commits): {e}"
                    ) from e
                wait = _backoff_ms(attempt, props.commit_min_retry_wait_ms, props.commit_max_retry_wait_ms)
                log.debug(
                    "commit conflict on %s (attempt %d), retrying in %.0f ms", table.name, attempt, wait
                )
                time.sleep(wait / 1000)
                try:
                    table.refresh()
                except BaseException:
                    self._cleanup(ctx, keep=set())
                    raise
                base, base_location = table.metadata, table.metadata_location
                continue
            except BaseException:
                self._cleanup(ctx, keep=set())
                self._delete_quietly(new_location)
                raise
            # Success.
            self._committed = True
            table._set_metadata(new_md, new_location)
            in_use: set[str] = set()
            for a in self._actions:
                in_use |= a.files_in_use()
            self._cleanup(ctx, keep=in_use)
            self._expire_old_metadata_files(base, new_md)
            snap = new_md.current_snapshot()
            return CommitResult(new_location, attempt, snap.snapshot_id if snap else None)

    def _apply_all(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[TableMetadata, list[TableUpdate], list[TableRequirement]]:
        md = base
        updates: list[TableUpdate] = []
        requirements: list[TableRequirement] = []
        for action in self._actions:
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

    def _table_moved(self, base_location: str) -> bool:
        """Whether the catalog now points past ``base_location`` (another commit landed)."""
        table = self._table
        try:
            return table.catalog.load_metadata_location(table.identifier) != base_location
        except FirnError:  # unreachable or dropped: the refresh that follows reports it
            return False

    def _cleanup(self, ctx: CommitContext, keep: set[str]) -> None:
        """Delete files written by attempts that the committed metadata does not reference."""
        stale = [p for p in ctx.written if p not in keep]
        if stale:
            try:
                self._table.io.delete_many(stale)
            except Exception:  # cleanup is best effort; orphan removal catches leftovers
                log.warning("could not delete %d uncommitted files of %s", len(stale), self._table.name)
        ctx.written = [p for p in ctx.written if p in keep]

    def _delete_quietly(self, location: str | None) -> None:
        if location is None:
            return
        try:
            self._table.io.delete(location)
        except Exception:
            log.warning("could not delete uncommitted metadata file %s", location)

    def _expire_old_metadata_files(self, base: TableMetadata, new: TableMetadata) -> None:
        # write.metadata.delete-after-commit.enabled: drop files that fell off the metadata log.
        if not new.table_properties.metadata_delete_after_commit:
            return
        kept = {e.metadata_file for e in new.metadata_log}
        dropped = [e.metadata_file for e in base.metadata_log if e.metadata_file not in kept]
        if dropped:
            self._delete_quietly_many(dropped)

    def _delete_quietly_many(self, locations: Sequence[str]) -> None:
        try:
            self._table.io.delete_many(locations)
        except Exception:
            log.warning("could not delete %d old metadata files", len(locations))


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


__all__ = ["Action", "CommitContext", "CommitResult", "SimpleAction", "Transaction"]
