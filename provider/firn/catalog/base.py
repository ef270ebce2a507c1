"""The Catalog protocol: namespaces, tables, and the atomic metadata-location swap.

INTERFACE — implemented by ``firn.catalog.sql.SqlCatalog`` and
``firn.catalog.memory.InMemoryCatalog`` (shared behaviour in ``BaseCatalog``).

Identifiers are ``"db.table"`` strings or tuples (``("db", "table")``); namespaces are
``"db"``/``"a.b"`` or tuples. Table commits go through :meth:`Catalog.commit_table`, which the
commit loop (``firn.core.commit``) calls with the updates and requirements of one attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from firn.catalog.identifiers import name_problem, shown_name
from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.spec.deletion_scope import EntryLocation

if TYPE_CHECKING:
    from firn.catalog.lease import LeaseInfo, MaintenanceLease
    from firn.core.create import PartitionSpecLike, SchemaLike, SortOrderLike
    from firn.core.handle import CommittedMetadata, TableCommit
    from firn.spec.table_metadata import TableMetadata
    from firn.table.table import Table

Identifier = tuple[str, ...]
IdentifierLike = str | tuple[str, ...] | list[str]


def to_identifier(value: IdentifierLike) -> Identifier:
    """``"a.b.t"`` -> ``("a", "b", "t")``; tuples pass through.

    Every part must be a valid name (:mod:`firn.catalog.identifiers`: not empty, ``.``,
    ``..``, a path, control characters, lone surrogates or over-long): every catalog and
    the REST server read identifiers through here, so one rule holds everywhere.
    """
    parts = tuple(value.split(".")) if isinstance(value, str) else tuple(value)
    if not parts:
        raise ValidationError(f"invalid identifier {value!r}: it is empty")
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            shown = shown_name(part) if isinstance(part, str) else repr(part)
            whole = shown_name(value) if isinstance(value, str) else repr(value)[:200]
            raise ValidationError(f"invalid identifier {whole}: the name {shown} {problem}")
    return parts


def table_identifier(value: IdentifierLike) -> tuple[Identifier, str]:
    """Split a table identifier into (namespace, name); a namespace is required."""
    ident = to_identifier(value)
    if len(ident) < 2:
        raise ValidationError(f"table identifier {value!r} needs a namespace, e.g. 'db.{ident[-1]}'")
    return ident[:-1], ident[-1]


@dataclass(frozen=True, slots=True)
class PropertiesUpdateSummary:
    removed: tuple[str, ...]
    updated: tuple[str, ...]
    missing: tuple[str, ...]


@runtime_checkable
class Catalog(Protocol):
    """What every Firn catalog offers."""

    @property
    def name(self) -> str: ...

    @property
    def io(self) -> FileIO: ...

    # namespaces
    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None: ...
    def list_namespaces(self, parent: IdentifierLike = ()) -> list[Identifier]: ...
    def namespace_exists(self, namespace: IdentifierLike) -> bool: ...
    def drop_namespace(self, namespace: IdentifierLike) -> None: ...
    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]: ...
    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: set[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary: ...

    # tables
    def create_table(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        *,
        location: str | None = None,
        partition_spec: PartitionSpecLike = None,
        sort_order: SortOrderLike = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create a table in an existing namespace and commit its first metadata file."""
        ...

    def load_table(self, identifier: IdentifierLike) -> Table: ...
    def table_exists(self, identifier: IdentifierLike) -> bool: ...
    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]: ...
    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None: ...
    def rename_table(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> Table: ...
    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table: ...

    def entry_locations(self) -> Sequence[EntryLocation]:
        """Where every table and view of the catalog lives (``location`` None when unknown);
        destructive steps keep out of every other entry's place (DESIGN "Maintenance")."""
        ...

    # commits
    def load_metadata_location(self, identifier: IdentifierLike) -> str:
        """The table's current metadata location (raises ``NoSuchTable``)."""
        ...

    def commit_table(self, identifier: IdentifierLike, commit: TableCommit) -> CommittedMetadata:
        """Land one commit attempt of a transaction atomically (the transaction retries).

        Raises ``CommitConflict`` when the table moved past ``commit.base_location`` (nothing
        was committed) and ``CommitStateUnknown`` when the outcome cannot be determined.
        """
        ...

    # maintenance
    def maintenance_lease(
        self,
        identifier: IdentifierLike,
        operation: str,
        *,
        owner: str | None = None,
        duration_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
    ) -> MaintenanceLease:
        """The per-table maintenance lease for a run of ``operation`` (``firn.catalog.lease``):
        a context manager raising ``LeaseHeld`` on entry while another run holds it."""
        ...

    def maintenance_lease_holder(self, identifier: IdentifierLike) -> LeaseInfo | None:
        """The unexpired maintenance lease on the table, or None."""
        ...


@runtime_checkable
class ConfinesLocations(Protocol):
    """A catalog that decides where its tables may live (Firn's SQL and in-memory catalogs,
    :mod:`firn.catalog.confinement`). Code that writes a new table's first metadata file
    itself (the REST server's create transaction) asks it first, so nothing is written to a
    place the catalog would refuse."""

    def check_table_places(
        self, identifier: IdentifierLike, metadata: TableMetadata, *, metadata_location: str | None = None
    ) -> object:
        """``ValidationError`` if a table ``identifier`` with ``metadata`` may not live there."""
        ...


__all__ = [
    "Catalog",
    "ConfinesLocations",
    "Identifier",
    "IdentifierLike",
    "PropertiesUpdateSummary",
    "table_identifier",
    "to_identifier",
]
