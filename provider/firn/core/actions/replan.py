"""Writes that plan again when the only conflicts are concurrent rewrites.

A row-level write (``delete``, ``overwrite``, ``upsert``) plans against the files of the
snapshot it started from: which files it removes, which it rewrites, where its deletion
vectors point. A concurrent ``replace`` commit (compaction, deletion-vector or position-delete
rewrite, manifest rewrite, V4 root flush) moves rows to other files without changing any of
them, so such a plan may no longer apply; Iceberg Java refuses the write. Since the rows the
write meant to change are all still there, in other files, :class:`Replanning` plans it again
on the refreshed table and commits that instead (``RewrittenConcurrently`` from the
validation in ``actions.overwrite`` says that this is the case).

Why the result is correct: the validation history was checked first, and every non-replace
commit in it passed the table's isolation rules (a concurrent delete or overwrite of the same
rows, or matching data added under ``serializable``, still refuses the write). Planning again
at the branch head makes the write equivalent to running it after every concurrent commit,
one of the serial orders the isolation level allows.

A write planned on a stale table object whose metadata lost files to a concurrent expiry
(``NotFound`` while planning) refreshes the table and plans again, when the catalog has
moved past the metadata it held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from firn.core.actions.overwrite import OverwriteFiles
from firn.core.commit import CommitContext
from firn.core.handle import CommittedMetadata, TableCommit, TableHandle
from firn.core.updates import TableRequirement, TableUpdate
from firn.errors import FirnError, NotFound, RewrittenConcurrently
from firn.io.deletion import delete_quietly
from firn.spec.deletion_scope import DeletionScope
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.io.base import FileIO

# Bounds the re-plans of one commit (each follows a concurrent rewrite that landed, so a
# steady stream of rewrites cannot hold a writer for long; the commit loop's timeout bounds
# the rest).
MAX_REPLANS = 20
# Re-plans after planning on metadata whose files a concurrent expiry removed.
MAX_STALE_PLANS = 5

Planner = Callable[[TableHandle], OverwriteFiles | None]


class PinnedTable:
    """A :class:`TableHandle` whose metadata is fixed (the base of a commit attempt): what a
    planner reads when it plans again inside the commit loop. It cannot commit."""

    def __init__(self, table: TableHandle, metadata: TableMetadata) -> None:
        self._table = table
        self._metadata = metadata

    @property
    def name(self) -> str:
        return self._table.name

    @property
    def io(self) -> FileIO:
        return self._table.io

    @property
    def metadata(self) -> TableMetadata:
        return self._metadata

    @property
    def metadata_location(self) -> str:
        return self._table.metadata_location

    def refresh(self) -> object:
        return self

    def catalog_metadata_location(self) -> str:
        return self._table.catalog_metadata_location()

    def commit_metadata(self, commit: TableCommit) -> CommittedMetadata:
        raise FirnError("a pinned table view cannot commit")


def plan_fresh(table: TableHandle, planner: Planner) -> OverwriteFiles | None:
    """``planner(table)``; when its metadata lost files to a concurrent expiry (``NotFound``
    while the catalog points past it), refresh and plan again."""
    for _ in range(MAX_STALE_PLANS):
        location = table.metadata_location
        try:
            return planner(table)
        except NotFound:
            try:
                moved = table.catalog_metadata_location() != location
            except FirnError:
                moved = False
            if not moved:
                raise
            table.refresh()
    return planner(table)


class Replanning:
    """An action committing ``planner``'s write, planned again on the commit's base whenever
    validation finds only concurrent rewrites in the way (see the module docstring)."""

    def __init__(self, table: TableHandle, planner: Planner) -> None:
        self._table = table
        self._planner = planner
        self._action = plan_fresh(table, planner)
        self.replans = 0

    @property
    def is_noop(self) -> bool:
        return self._action is None or self._action.is_noop

    @property
    def action(self) -> OverwriteFiles | None:
        """The plan the next attempt commits."""
        return self._action

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        while self._action is not None:
            try:
                return self._action.apply(base, ctx)
            except RewrittenConcurrently:
                if self.replans >= MAX_REPLANS:
                    raise
                self._replan(base)
        return [], []

    def _replan(self, base: TableMetadata) -> None:
        old = self._action
        self.replans += 1
        new = self._planner(PinnedTable(self._table, base))
        if old is not None:
            # The superseded plan's data and delete files were never committed (its attempt
            # failed validation); files the new plan still adds (a caller's) stay.
            keep = set(new.written_files()) if new is not None else set()
            stale = [p for p in old.written_files() if p not in keep]
            delete_quietly(
                self._table.io,
                DeletionScope.for_written(self._table.name, base, self._table.metadata),
                stale,
                "superseded plan",
            )
        self._action = new

    def files_in_use(self) -> set[str]:
        return self._action.files_in_use() if self._action is not None else set()

    def written_files(self) -> Sequence[str]:
        return self._action.written_files() if self._action is not None else ()


__all__ = ["MAX_REPLANS", "PinnedTable", "Replanning", "plan_fresh"]
