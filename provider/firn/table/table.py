"""The user-facing Table (work in progress: the constructor is the contract catalogs use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firn.io.base import FileIO
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.catalog.base import Catalog, Identifier


class Table:
    """A table loaded from a catalog: metadata, where it lives, and how to change it."""

    def __init__(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog."""
        fresh = self.catalog.load_table(self.identifier)
        self.metadata = fresh.metadata
        self.metadata_location = fresh.metadata_location
        return self

    def __repr__(self) -> str:
        return f"Table({self.name!r}, format_version={self.metadata.format_version})"
