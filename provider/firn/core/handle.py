"""The table as the core sees it (STYLE 16: a lower layer calls up only through a protocol).

The core never imports the ``Table`` front object or a catalog. Transactions, actions and
scans take a :class:`TableHandle`; ``firn.table.Table`` implements it, and its catalog decides
how a :class:`TableCommit` lands (a metastore catalog writes the metadata file and swaps its
pointer; a REST catalog sends the updates and requirements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from firn.core.updates import TableRequirement, TableUpdate
from firn.io.base import FileIO
from firn.spec.table_metadata import TableMetadata


@dataclass(frozen=True, slots=True)
class TableCommit:
    """One commit attempt: the base it was computed on, the metadata it produces, and the
    updates and requirements that lead from one to the other (the REST commit request)."""

    base: TableMetadata
    base_location: str
    metadata: TableMetadata
    updates: Sequence[TableUpdate]
    requirements: Sequence[TableRequirement]


@dataclass(frozen=True, slots=True)
class CommittedMetadata:
    """What a catalog committed: the table's new metadata and where it is stored."""

    metadata: TableMetadata
    metadata_location: str


class TableHandle(Protocol):
    """What the core needs of a table: its name, files, current metadata and catalog commits."""

    @property
    def name(self) -> str: ...

    @property
    def io(self) -> FileIO: ...

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def metadata_location(self) -> str: ...

    def refresh(self) -> object:
        """Reload the current metadata from the catalog."""
        ...

    def catalog_metadata_location(self) -> str:
        """Where the catalog's pointer is now (to tell a lost race from a stalled commit)."""
        ...

    def commit_metadata(self, commit: TableCommit) -> CommittedMetadata:
        """Land ``commit`` atomically through the catalog and hold the committed metadata.

        Raises ``CommitConflict`` when the table moved past ``commit.base_location`` (nothing
        was committed) and ``CommitStateUnknown`` when the outcome cannot be determined.
        """
        ...


__all__ = ["CommittedMetadata", "TableCommit", "TableHandle"]
