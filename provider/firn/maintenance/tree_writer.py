"""The tree writer a maintenance commit hands the snapshot producer (``make_tree_writer``).

A rewrite of metadata (a root flush, a manifest rewrite) writes the new snapshot's tree itself
instead of adding files to the parent's: :class:`MaintenanceTreeWriter` adapts the producer's
``write`` call to one method, :meth:`MaintenanceTreeWriter.write_tree`, which returns the
tree and the files it keeps in use (what the commit must not delete when it retries).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from firn.core.commit import CommitContext
from firn.core.tree_types import PendingFiles, TreeResult
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata

A = TypeVar("A")


class MaintenanceTreeWriter(ABC, Generic[A]):
    """The tree writer of the maintenance action ``action`` (see the module docstring)."""

    def __init__(self, action: A) -> None:
        self.action = action
        self._in_use: set[str] = set()

    @abstractmethod
    def write_tree(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        ctx: CommitContext,
        snapshot_id: int,
        sequence_number: int,
    ) -> tuple[TreeResult, set[str]]:
        """The new snapshot's tree, and the files it keeps in use."""

    def write(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
        ctx: CommitContext,
    ) -> TreeResult:
        # The action's own changes are in its plan; the producer's pending files are unused.
        result, self._in_use = self.write_tree(base, parent, ctx, snapshot_id, sequence_number)
        return result

    def files_in_use(self) -> set[str]:
        return set(self._in_use)


__all__ = ["MaintenanceTreeWriter"]
