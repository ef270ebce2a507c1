"""Behaviour shared by Firn's catalogs: validation, table creation, loading, purge, the swap.

:class:`BaseCatalog` implements the :class:`~firn.catalog.base.Catalog` protocol on top of a
small set of storage primitives (rows of namespace properties and of table pointers) that
each backend provides: :class:`~firn.catalog.sql.SqlCatalog` over SQL tables and
:class:`~firn.catalog.memory.InMemoryCatalog` over dicts. Keeping the rules here means every
backend raises the same errors for the same situations.

Namespaces follow the JDBC catalog's model (Iceberg Java, PyIceberg): a namespace is stored as
its dot-joined name; it exists when it has a property row (an ``exists=true`` row is always
written so a namespace without properties still exists), a table row, or a descendant that
does. Commits follow the spec's "Metastore Tables" scheme: the new metadata file is written
first, then the catalog swaps the table's pointer with an atomic check-and-put.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from firn.catalog.base import (
    Identifier,
    IdentifierLike,
    PropertiesUpdateSummary,
    table_identifier,
    to_identifier,
)
from firn.catalog.confinement import LocationRules, Place, check_commit, check_table, config_location
from firn.catalog.identifiers import MAX_NAME_BYTES
from firn.catalog.lease import LeaseInfo, MaintenanceLease, acquire_lease, current_holder
from firn.core.create import new_table_metadata
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.metadata_builder import with_metadata_log
from firn.core.metadata_io import new_metadata_location, read_metadata, write_metadata
from firn.errors import (
    AlreadyExists,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotFound,
    Unsupported,
    ValidationError,
)
from firn.io.base import FileIO
from firn.io.deletion import DeletionReport, delete_confined, delete_quietly
from firn.io.pyarrow_io import load_file_io
from firn.spec.deletion_scope import DeletionScope, table_places
from firn.spec.locations import METADATA_DIR, normalize_location
from firn.table.table import Table
from firn.util.lru import LRUCache
from firn.util.secrets import mask_secrets

if TYPE_CHECKING:
    from firn.core.create import PartitionSpecLike, SchemaLike, SortOrderLike
    from firn.spec.table_metadata import TableMetadata

logger = logging.getLogger(__name__)

WAREHOUSE = "warehouse"
# Namespace property with the namespace's own default location for its tables (Java, PyIceberg).
NAMESPACE_LOCATION = "location"
# Marker row that makes a namespace without properties exist (Java JdbcCatalog, PyIceberg).
NAMESPACE_EXISTS_PROPERTY = "exists"
# How many parsed metadata files to keep per catalog (metadata files are immutable, so the
# cache, keyed by location, can never be stale).
METADATA_CACHE_SIZE = "metadata-cache-size"
DEFAULT_METADATA_CACHE_SIZE = 32


def namespace_to_string(namespace: Identifier) -> str:
    """``("a", "b")`` -> ``"a.b"``: how namespaces are stored (JDBC catalog convention)."""
    return ".".join(namespace)


def namespace_from_string(value: str) -> Identifier:
    return tuple(value.split(".")) if value else ()


EntryKind = Literal["table", "view"]


@dataclass(frozen=True, slots=True)
class CatalogEntryLocation:
    """Where one table or view of the catalog lives: its identifier, its kind, the location
    its metadata names (``None`` when its metadata could not be read and its metadata file
    is not in the usual ``<location>/metadata/`` directory) and its metadata file."""

    identifier: Identifier
    kind: EntryKind
    location: str | None
    metadata_location: str


def location_of_metadata_file(metadata_location: str) -> str | None:
    """``<location>`` for a metadata file at ``<location>/metadata/<file>`` (the spec's
    layout, which Firn, Java and PyIceberg write by default), else ``None``."""
    head, _, _ = metadata_location.rpartition("/")
    parent, _, last = head.rpartition("/")
    return parent if last == METADATA_DIR and parent else None


def _make_table(
    catalog: BaseCatalog, ident: Identifier, metadata: TableMetadata, metadata_location: str
) -> Table:
    return Table(ident, metadata, metadata_location, catalog.io, catalog)


class BaseCatalog(ABC):
    """Shared catalog logic; subclasses implement the ``_ns_*`` and ``_tbl_*`` primitives.

    Namespaces passed to primitives are dot-joined strings; table names are plain strings.
    """

    def __init__(
        self,
        name: str,
        *,
        warehouse: str | None = None,
        io: FileIO | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        if not name:
            raise ValidationError("a catalog needs a non-empty name")
        self._name = name
        self._properties = {str(k): str(v) for k, v in (properties or {}).items()}
        warehouse = warehouse or self._properties.get(WAREHOUSE)
        # The operator's own configuration: a relative warehouse means the working directory's.
        self._warehouse = (
            config_location(warehouse, what=f"warehouse of catalog {name!r}") if warehouse else None
        )
        if self._warehouse:
            self._properties[WAREHOUSE] = self._warehouse
        self._rules = LocationRules.from_config(name, self._warehouse, self._properties)
        self._io = io if io is not None else load_file_io(self._properties, self._warehouse)
        size = self._properties.get(METADATA_CACHE_SIZE)
        # Metadata files are immutable: parsed metadata by location (0 or less: no cache).
        self._cache: LRUCache[TableMetadata] = LRUCache(
            max(0, int(size) if size else DEFAULT_METADATA_CACHE_SIZE)
        )

    # -- properties ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def io(self) -> FileIO:
        """The FileIO for the warehouse (built from the catalog properties unless passed in)."""
        return self._io

    @property
    def warehouse(self) -> str | None:
        return self._warehouse

    @property
    def properties(self) -> Mapping[str, str]:
        return dict(self._properties)

    @property
    def location_rules(self) -> LocationRules:
        """Where this catalog's tables and views may live (:mod:`firn.catalog.confinement`)."""
        return self._rules

    def close(self) -> None:
        """Release what the catalog holds (backends add their connections)."""
        self._cache.clear()

    def __enter__(self) -> BaseCatalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return mask_secrets(f"{type(self).__name__}({self._name!r}, warehouse={self._warehouse!r})")

    # -- identifiers ---------------------------------------------------------------------------
    @staticmethod
    def _namespace(value: IdentifierLike) -> Identifier:
        """A namespace by the one identifier rule (``to_identifier``), plus this catalog's
        storage rule: levels are stored dot-joined, and the joined name is one directory of
        a default table location, so a level holds no ``.`` and the whole fits a path segment."""
        ns = to_identifier(value) if value else ()
        for level in ns:
            if "." in level:
                raise ValidationError(
                    f"namespace level {level!r} may not contain '.' (levels are dot-joined)"
                )
        joined = namespace_to_string(ns)
        if len(joined.encode("utf-8")) > MAX_NAME_BYTES:
            raise ValidationError(
                f"namespace {joined[:80]!r}... is longer than {MAX_NAME_BYTES} bytes once its levels "
                "are dot-joined (it is stored so, and names one directory of its tables' locations)"
            )
        return ns

    def _table(self, value: IdentifierLike) -> tuple[Identifier, str, str]:
        """(namespace tuple, namespace string, table name)."""
        ns, name = table_identifier(value)
        self._namespace(ns)
        return ns, namespace_to_string(ns), name

    @staticmethod
    def _fmt(ns: Identifier, name: str | None = None) -> str:
        return ".".join((*ns, name)) if name is not None else ".".join(ns)

    # -- namespaces ----------------------------------------------------------------------------
    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace; ``AlreadyExists`` if it (or a descendant) already exists."""
        ns = self._namespace(namespace)
        if not ns:
            raise ValidationError("cannot create the root namespace")
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        if NAMESPACE_EXISTS_PROPERTY in props:
            raise ValidationError(f"namespace property {NAMESPACE_EXISTS_PROPERTY!r} is reserved")
        self._check_properties(props)
        self._check_namespace_location(ns, props)
        if self._ns_exists(namespace_to_string(ns)):
            raise AlreadyExists(f"namespace {self._fmt(ns)!r} already exists in catalog {self._name!r}")
        props[NAMESPACE_EXISTS_PROPERTY] = "true"
        self._ns_insert(namespace_to_string(ns), props)

    def list_namespaces(self, parent: IdentifierLike = ()) -> list[Identifier]:
        """The namespaces one level below ``parent`` (top-level namespaces by default)."""
        parent_ns = self._namespace(parent)
        parent_str = namespace_to_string(parent_ns)
        if parent_ns and not self._ns_exists(parent_str):
            raise NoSuchNamespace(f"namespace {parent_str!r} does not exist in catalog {self._name!r}")
        depth = len(parent_ns) + 1
        children = {
            ns[:depth]
            for ns in map(namespace_from_string, self._ns_names(parent_str))
            if len(ns) >= depth and ns[: depth - 1] == parent_ns
        }
        return sorted(children)

    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = self._namespace(namespace)
        return bool(ns) and self._ns_exists(namespace_to_string(ns))

    def drop_namespace(self, namespace: IdentifierLike) -> None:
        """Drop an empty namespace: ``NamespaceNotEmpty`` if it holds tables, views or children."""
        ns = self._namespace(namespace)
        ns_str = namespace_to_string(ns)
        if not ns or not self._ns_exists(ns_str):
            raise NoSuchNamespace(f"namespace {ns_str!r} does not exist in catalog {self._name!r}")
        entries = self._ns_entries(ns_str)
        if entries:
            shown = ", ".join(f"{ns_str}.{e}" for e in sorted(entries)[:5])
            raise NamespaceNotEmpty(
                f"namespace {ns_str!r} is not empty: it holds {len(entries)} table(s) or view(s) ({shown})"
            )
        children = self.list_namespaces(ns)
        if children:
            shown = ", ".join(self._fmt(c) for c in children[:5])
            raise NamespaceNotEmpty(f"namespace {ns_str!r} is not empty: it has child namespaces ({shown})")
        self._ns_delete(ns_str)

    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        """The namespace's properties (the internal ``exists`` marker is not included)."""
        ns = self._namespace(namespace)
        ns_str = namespace_to_string(ns)
        if not ns or not self._ns_exists(ns_str):
            raise NoSuchNamespace(f"namespace {ns_str!r} does not exist in catalog {self._name!r}")
        props = self._ns_load(ns_str)
        props.pop(NAMESPACE_EXISTS_PROPERTY, None)
        return props

    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: set[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set properties in one step; a key may not be both removed and set."""
        ns = self._namespace(namespace)
        ns_str = namespace_to_string(ns)
        removals = set(removals or ())
        new = {str(k): str(v) for k, v in (updates or {}).items()}
        if overlap := removals & set(new):
            raise ValidationError(f"properties both removed and updated: {sorted(overlap)}")
        if NAMESPACE_EXISTS_PROPERTY in new:
            raise ValidationError(f"namespace property {NAMESPACE_EXISTS_PROPERTY!r} is reserved")
        self._check_properties(new)
        self._check_namespace_location(ns, new)
        if not ns or not self._ns_exists(ns_str):
            raise NoSuchNamespace(f"namespace {ns_str!r} does not exist in catalog {self._name!r}")
        current = self._ns_load(ns_str)
        current.pop(NAMESPACE_EXISTS_PROPERTY, None)
        removed = tuple(sorted(k for k in removals if k in current))
        missing = tuple(sorted(k for k in removals if k not in current))
        # Keep the marker so removing every property does not make the namespace vanish.
        self._ns_update(ns_str, set(removed), {**new, NAMESPACE_EXISTS_PROPERTY: "true"})
        return PropertiesUpdateSummary(removed=removed, updated=tuple(sorted(new)), missing=missing)

    def _check_properties(self, props: Mapping[str, str]) -> None:
        """Reject unusable properties (backends with size limits extend this)."""
        for key, value in props.items():
            if not key:
                raise ValidationError("namespace property keys must be non-empty")
            if any("\ud800" <= c <= "\udfff" for c in key + value):
                # JSON's "\ud800" decodes to one; no UTF-8 database or answer can hold it.
                raise ValidationError(f"namespace property {key!r} holds a lone surrogate")

    def _check_namespace_location(self, ns: Identifier, props: Mapping[str, str]) -> None:
        """A namespace's ``location`` (its tables' default parent) is confined like a table's
        (:mod:`firn.catalog.confinement` rules 1-2); it may be the warehouse itself."""
        value = props.get(NAMESPACE_LOCATION)
        if value is not None:
            self._rules.place(f"namespace {self._fmt(ns)!r}", "location", value)

    # -- tables --------------------------------------------------------------------------------
    def default_table_location(self, identifier: IdentifierLike) -> str:
        """Where a new table goes when ``create_table`` is given no location.

        ``<namespace location>/<table>`` if the namespace sets ``location``, else
        ``<warehouse>/<namespace>/<table>`` with the namespace dot-joined (``wh/a.b/t``). That
        is PyIceberg's ``SqlCatalog`` rule, and Iceberg Java's ``JdbcCatalog`` rule for
        single-level namespaces (Java joins levels with ``/``), so a table lands in the same
        place whichever engine creates it. Dot-joining also keeps one table's directory from
        nesting inside another's (``a.t`` vs namespace ``a.t``'s table ``data``), which a purge
        of the outer table would otherwise reach.
        """
        ns, ns_str, name = self._table(identifier)
        ns_location = self._ns_load(ns_str).get(NAMESPACE_LOCATION)
        if ns_location:
            clean = normalize_location(ns_location, what=f"location of namespace {ns_str!r}")
            return f"{clean.rstrip('/')}/{name}"
        if not self._warehouse:
            raise ValidationError(
                f"cannot place table {self._fmt(ns, name)!r}: catalog {self._name!r} has no warehouse "
                "and the namespace has no 'location' property; pass location="
            )
        return f"{self._warehouse}/{ns_str}/{name}"

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
        """Create a table: write its first metadata file, then insert the catalog row.

        A name or location the catalog cannot store is refused before anything is written,
        and so is a location that breaks the rules of :mod:`firn.catalog.confinement` (outside
        the warehouse and ``allowed-locations``, or overlapping another table or view).
        If the insert fails (another creator won the race, the database refused the row or
        went away), the metadata file just written is deleted, unless the catalog row turns
        out to point at it after all (the insert landed and only its reply was lost: the
        table then exists and is returned) or the row cannot be read (the file is kept, as
        the table may reference it).
        """
        ns, ns_str, name = self._table(identifier)
        ident = (*ns, name)
        if not self._ns_exists(ns_str):
            raise NoSuchNamespace(
                f"cannot create table {self._fmt(ident)!r}: namespace {ns_str!r} does not exist"
            )
        if self._tbl_get(ns_str, name) is not None:
            raise AlreadyExists(f"table {self._fmt(ident)!r} already exists in catalog {self._name!r}")
        table_location = (
            normalize_location(location, what=f"location of table {self._fmt(ident)!r}")
            if location
            else self.default_table_location(ident)
        )
        metadata = new_table_metadata(
            schema,
            location=table_location,
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=properties,
            format_version=format_version,
        )
        self.check_table_places(ident, metadata)
        metadata_location = new_metadata_location(metadata, None)
        self._check_table_row(ns_str, name, metadata_location)
        write_metadata(self._io, metadata, metadata_location)
        try:
            self._tbl_insert(ns_str, name, metadata_location)
        except BaseException as error:
            points_here = self._row_points_at(ns_str, name, metadata_location)
            if points_here is False:
                self._delete_quietly([metadata_location], metadata)
            if not (points_here and isinstance(error, Exception)):
                raise
            logger.warning(
                "creating table %s reported %r, but its catalog row points at the new metadata "
                "file %s: the insert landed",
                self._fmt(ident),
                error,
                metadata_location,
            )
        self._cache.put(metadata_location, metadata)
        return _make_table(self, ident, metadata, metadata_location)

    def _check_table_row(self, ns: str, name: str, metadata_location: str) -> None:  # noqa: B027
        """Refuse a namespace, name or metadata location the backend cannot store, before
        any file is written (``ValidationError``); backends with limits override this."""

    def _row_points_at(self, ns: str, name: str, metadata_location: str) -> bool | None:
        """Whether the table's catalog row points at ``metadata_location``; ``None`` when
        the row cannot be read."""
        try:
            return self._tbl_get(ns, name) == metadata_location
        except Exception:
            logger.warning("could not read the catalog row of '%s.%s'", ns, name, exc_info=True)
            return None

    def load_table(self, identifier: IdentifierLike) -> Table:
        ns, ns_str, name = self._table(identifier)
        location = self._require_location(ns, ns_str, name)
        return _make_table(self, (*ns, name), self._read_metadata(location), location)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        _, ns_str, name = self._table(identifier)
        return self._tbl_get(ns_str, name) is not None

    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = self._namespace(namespace)
        ns_str = namespace_to_string(ns)
        if not ns or not self._ns_exists(ns_str):
            raise NoSuchNamespace(f"namespace {ns_str!r} does not exist in catalog {self._name!r}")
        return [(*ns, name) for name in sorted(self._tbl_names(ns_str))]

    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Remove the table from the catalog; with ``purge=True`` also delete its files
        (what :meth:`purge_table` does, without its report)."""
        self._drop(identifier, purge=purge)

    def purge_table(self, identifier: IdentifierLike) -> DeletionReport:
        """Drop the table and delete its files; returns what was deleted, kept and failed.

        Purge lists ``<table location>/metadata/`` and ``<table location>/data/`` and adds the
        current and logged metadata files wherever they are; every one of them goes through
        :func:`~firn.io.deletion.delete_confined` under the table's deletion scope, so a file
        outside the table's own places (location, ``write.data.path``,
        ``write.metadata.path``), inside another table's or view's, or reached through a
        symlink is kept and reported, never deleted. Directories named by
        ``write.data.path`` / ``write.metadata.path`` are not listed (they may be shared).
        The catalog row is removed first, so a failed purge leaves orphan files, never a
        table with missing files."""
        return self._drop(identifier, purge=True)

    def _drop(self, identifier: IdentifierLike, *, purge: bool) -> DeletionReport:
        """Remove the catalog row, then (``purge``) the files; an empty report without purge."""
        ns, ns_str, name = self._table(identifier)
        ident = (*ns, name)
        metadata_location = self._require_location(ns, ns_str, name)
        metadata: TableMetadata | None = None
        if purge:
            try:
                metadata = self._read_metadata(metadata_location)
            except (NotFound, InvalidMetadata) as e:
                logger.warning("purging %s without readable metadata (%s)", self._fmt(ident), e)
        if not self._tbl_delete(ns_str, name):
            raise NoSuchTable(f"table {self._fmt(ident)!r} does not exist in catalog {self._name!r}")
        self._cache.pop(metadata_location)
        if purge:
            return self._purge(ident, metadata_location, metadata)
        return DeletionReport()

    def _purge(
        self, ident: Identifier, metadata_location: str, metadata: TableMetadata | None
    ) -> DeletionReport:
        if metadata is not None:
            table_location = metadata.location.rstrip("/")
            places = table_places(metadata)
        else:
            # Unreadable metadata: the table location is the parent of its metadata directory.
            head, _, _ = metadata_location.rpartition("/")
            table_location = head.rpartition("/")[0] if head.endswith("/metadata") else head
            places = [table_location]
        files = {metadata_location}
        if metadata is not None:
            files.update(entry.metadata_file for entry in metadata.metadata_log)
        try:
            # The row is gone already: every entry listed now is another table or view.
            scope = DeletionScope.build(
                self._fmt(ident), places, self.entry_locations(), self_identifier=ident
            )
            for sub in ("metadata", "data"):
                prefix = f"{table_location}/{sub}"
                if not scope.excludes(prefix):
                    files.update(info.location for info in self._io.list_prefix(prefix))
        except FirnError as e:
            raise FirnError(
                f"table {self._fmt(ident)!r} was dropped but purging its files failed: {e}"
            ) from e
        report = delete_confined(self._io, scope, sorted(files))
        logger.info("purged table %s: %s", self._fmt(ident), report.summary())
        if report.failed:
            raise FirnError(
                f"table {self._fmt(ident)!r} was dropped but {len(report.failed)} of its files could not be "
                f"deleted (e.g. {report.failed[0].path}: {report.failed[0].error}); orphan removal cannot "
                "reach them any more: delete them by hand"
            )
        return report

    def rename_table(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> Table:
        """Rename (or move to another existing namespace); the table's files stay where they are.

        The new name is held to the identifier rule. No location changes, so no location rule
        can newly break: the table keeps the places it was checked for. (A table later
        created under the old name would get the old default location, which this table
        still occupies: that create is refused by the overlap rule.)"""
        src_ns, src_str, src_name = self._table(from_identifier)
        dst_ns, dst_str, dst_name = self._table(to_identifier)
        if not self._ns_exists(dst_str):
            raise NoSuchNamespace(
                f"cannot rename {self._fmt(src_ns, src_name)!r}: namespace {dst_str!r} does not exist"
            )
        self._require_location(src_ns, src_str, src_name)
        if self._tbl_get(dst_str, dst_name) is not None:
            raise AlreadyExists(f"cannot rename to {self._fmt(dst_ns, dst_name)!r}: it already exists")
        self._tbl_rename(src_str, src_name, dst_str, dst_name)
        return self.load_table((*dst_ns, dst_name))

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        """Add an existing table by its metadata file, which is read and validated first.

        The metadata file must lie inside the catalog's places before it is read, and the
        table it describes is held to the rules of :mod:`firn.catalog.confinement` like a new
        table: its places inside the warehouse or ``allowed-locations``, apart from every
        other table and view (so another table's metadata cannot be registered a second
        time under a new name, where dropping or expiring the copy would delete the files
        of the original), and the metadata file inside the table's own places."""
        ns, ns_str, name = self._table(identifier)
        ident = (*ns, name)
        subject = f"table {self._fmt(ident)!r}"
        clean = normalize_location(metadata_location, what=f"metadata location of {subject}")
        self._rules.place(subject, "metadata file", clean)
        if not self._ns_exists(ns_str):
            raise NoSuchNamespace(
                f"cannot register {self._fmt(ident)!r}: namespace {ns_str!r} does not exist"
            )
        if self._tbl_get(ns_str, name) is not None:
            raise AlreadyExists(f"table {self._fmt(ident)!r} already exists in catalog {self._name!r}")
        metadata = self._read_metadata(clean)
        self.check_table_places(ident, metadata, metadata_location=clean)
        metadata_location = clean
        self._tbl_insert(ns_str, name, metadata_location)
        return _make_table(self, ident, metadata, metadata_location)

    # -- where every entry lives ---------------------------------------------------------------
    def check_table_places(
        self, identifier: IdentifierLike, metadata: TableMetadata, *, metadata_location: str | None = None
    ) -> list[Place]:
        """Refuse (``ValidationError``) a table whose places break the rules of
        :mod:`firn.catalog.confinement`, or a ``metadata_location`` outside its own places."""
        ns, _, name = self._table(identifier)
        return check_table(
            self._rules, (*ns, name), metadata, self.entry_locations(), metadata_location=metadata_location
        )

    def entry_locations(self) -> list[CatalogEntryLocation]:
        """The location of every table and view of this catalog (DESIGN "Maintenance": the
        safety rules compare a table's places with every other entry's).

        The location is taken from the metadata file's path when it sits in the usual
        ``<location>/metadata/`` directory (one catalog query for the whole catalog); any
        other metadata file is read for its ``location`` (a custom ``write.metadata.path``).
        An unreadable one gives ``location=None``: callers treat it as unknown, never as
        "nothing here"."""
        out: list[CatalogEntryLocation] = []
        for ns_str, name, metadata_location, kind in self._all_entries():
            location = location_of_metadata_file(metadata_location)
            if location is None:
                location = self._entry_location_from_file(kind, metadata_location)
            out.append(
                CatalogEntryLocation(
                    identifier=(*namespace_from_string(ns_str), name),
                    kind=kind,
                    location=location,
                    metadata_location=metadata_location,
                )
            )
        return out

    def _entry_location_from_file(self, kind: EntryKind, metadata_location: str) -> str | None:
        try:
            if kind == "table":
                return self._read_metadata(metadata_location).location
            return self._read_view_location(metadata_location)
        except FirnError as e:
            logger.warning("cannot read the location of %s %s: %s", kind, metadata_location, e)
            return None

    def _read_view_location(self, metadata_location: str) -> str | None:
        """A view's location from its metadata file (catalogs with views override this)."""
        return None

    # -- commits -------------------------------------------------------------------------------
    def load_metadata_location(self, identifier: IdentifierLike) -> str:
        ns, ns_str, name = self._table(identifier)
        return self._require_location(ns, ns_str, name)

    def commit_table(self, identifier: IdentifierLike, commit: TableCommit) -> CommittedMetadata:
        """Write the new metadata file, then swap the table's pointer to it (spec "Metastore
        Tables"). On a conflict or failure the new file is deleted; when the outcome is unknown
        it is kept, as the table may now point at it. After a successful swap, metadata files
        that fell off the metadata log go when ``write.metadata.delete-after-commit.enabled``."""
        self._check_commit(identifier, commit)
        metadata = with_metadata_log(commit.metadata, commit.base_location, commit.base)
        location = new_metadata_location(metadata, commit.base_location)
        try:
            write_metadata(self._io, metadata, location)
            self.swap_metadata_location(identifier, commit.base_location, location, metadata)
        except CommitStateUnknown:
            raise
        except BaseException:
            self._delete_quietly([location], metadata)
            raise
        if metadata.table_properties.metadata_delete_after_commit:
            kept = {e.metadata_file for e in metadata.metadata_log}
            self._delete_quietly(
                [e.metadata_file for e in commit.base.metadata_log if e.metadata_file not in kept], metadata
            )
        return CommittedMetadata(metadata, location)

    def _check_commit(self, identifier: IdentifierLike, commit: TableCommit) -> None:
        """:func:`firn.catalog.confinement.check_commit`, before anything is written."""
        ns, _, name = self._table(identifier)
        check_commit(self._rules, (*ns, name), commit, self.entry_locations)

    def swap_metadata_location(
        self,
        identifier: IdentifierLike,
        expected_location: str,
        new_location: str,
        new_metadata: TableMetadata,
    ) -> None:
        """Swap the pointer from ``expected_location`` to ``new_location`` atomically.

        ``CommitConflict``: the pointer moved (refresh and retry). ``NoSuchTable``: the table
        was dropped. ``CommitStateUnknown``: the outcome could not be determined; keep the
        files written for the attempt.
        """
        _, ns_str, name = self._table(identifier)
        if not new_location or new_location == expected_location:
            raise ValidationError(
                f"new metadata location must differ from the current one ({expected_location})"
            )
        self._tbl_swap(ns_str, name, expected_location, new_location)
        self._cache.put(new_location, new_metadata)

    def _delete_quietly(self, locations: list[str], metadata: TableMetadata) -> None:
        """Best effort: delete metadata files of the table ``metadata`` describes (a failed
        commit's new file, files that fell off the log) under its own places; orphan-file
        removal reclaims what is left."""
        if locations:
            delete_quietly(
                self._io, DeletionScope.for_written(metadata.location, metadata), locations, "metadata"
            )

    # -- the maintenance lease (firn.catalog.lease) ---------------------------------------------
    def maintenance_lease(
        self,
        identifier: IdentifierLike,
        operation: str,
        *,
        owner: str | None = None,
        duration_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
    ) -> MaintenanceLease:
        """The table's maintenance lease for a run of ``operation``: acquired when its ``with``
        block starts (``LeaseHeld`` if another run holds it), renewed in the background,
        released at the end. Defaults come from the ``maintenance.lease.*`` catalog properties;
        ``owner`` defaults to ``hostname:pid[:maintenance.lease.owner-label]``."""
        _, ns_str, name = self._table(identifier)
        return acquire_lease(
            self,
            self._name,
            ns_str,
            name,
            operation,
            properties=self._properties,
            owner=owner,
            duration_ms=duration_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
        )

    def maintenance_lease_holder(self, identifier: IdentifierLike) -> LeaseInfo | None:
        """The unexpired lease on the table (who runs what until when), or None."""
        _, ns_str, name = self._table(identifier)
        row, now = self._lease_get(ns_str, name)
        return current_holder(row, now)

    def _no_leases(self) -> Unsupported:
        return Unsupported(f"catalog {self._name!r} ({type(self).__name__}) has no maintenance lease store")

    def _lease_acquire(
        self, ns: str, name: str, lease_id: str, owner: str, operation: str, duration_ms: int
    ) -> tuple[LeaseInfo, int]:
        """See ``firn.catalog.lease.LeaseStore``; backends with a lease store override these."""
        raise self._no_leases()

    def _lease_renew(self, ns: str, name: str, lease_id: str, duration_ms: int) -> int | None:
        raise self._no_leases()

    def _lease_release(self, ns: str, name: str, lease_id: str) -> None:
        raise self._no_leases()

    def _lease_get(self, ns: str, name: str) -> tuple[LeaseInfo | None, int]:
        raise self._no_leases()

    # -- helpers -------------------------------------------------------------------------------
    def _require_location(self, ns: Identifier, ns_str: str, name: str) -> str:
        location = self._tbl_get(ns_str, name)
        if location is None:
            raise NoSuchTable(f"table {self._fmt(ns, name)!r} does not exist in catalog {self._name!r}")
        return location

    def _read_metadata(self, location: str) -> TableMetadata:
        cached = self._cache.get(location)
        if cached is not None:
            return cached
        metadata = read_metadata(self._io, location)
        self._cache.put(location, metadata)
        return metadata

    # -- storage primitives (namespaces are dot-joined strings) --------------------------------
    @abstractmethod
    def _ns_exists(self, ns: str) -> bool:
        """True if ``ns`` has property rows or table rows, or a descendant does."""

    @abstractmethod
    def _ns_names(self, prefix: str) -> set[str]:
        """Every stored namespace string equal to or below ``prefix`` (all when it is empty)."""

    @abstractmethod
    def _ns_entries(self, ns: str) -> list[str]:
        """Names of every table and view row directly in ``ns``."""

    @abstractmethod
    def _ns_load(self, ns: str) -> dict[str, str]:
        """The property rows of ``ns`` (empty if none)."""

    @abstractmethod
    def _ns_insert(self, ns: str, properties: Mapping[str, str]) -> None:
        """Insert property rows; ``AlreadyExists`` if any row exists."""

    @abstractmethod
    def _ns_delete(self, ns: str) -> None:
        """Delete every property row of ``ns``."""

    @abstractmethod
    def _ns_update(self, ns: str, removals: set[str], updates: Mapping[str, str]) -> None:
        """Delete ``removals`` and upsert ``updates`` in one transaction."""

    @abstractmethod
    def _tbl_names(self, ns: str) -> list[str]:
        """Names of the tables (not views) directly in ``ns``."""

    @abstractmethod
    def _tbl_get(self, ns: str, name: str) -> str | None:
        """The table's metadata location, or None if there is no such table."""

    @abstractmethod
    def _tbl_insert(self, ns: str, name: str, metadata_location: str) -> None:
        """Insert a table row; ``AlreadyExists`` if a table or view of that name exists."""

    @abstractmethod
    def _tbl_delete(self, ns: str, name: str) -> bool:
        """Delete a table row; False if there was none."""

    @abstractmethod
    def _tbl_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:
        """Move a table row; ``NoSuchTable`` / ``AlreadyExists`` as appropriate."""

    @abstractmethod
    def _tbl_swap(self, ns: str, name: str, expected: str, new: str) -> None:
        """Atomic check-and-put of the metadata pointer (spec "Metastore Tables")."""

    @abstractmethod
    def _all_entries(self) -> list[tuple[str, str, str, EntryKind]]:
        """Every table and view row of the catalog: (namespace, name, metadata location, kind)."""


__all__ = [
    "CatalogEntryLocation",
    "EntryKind",
    "NAMESPACE_EXISTS_PROPERTY",
    "NAMESPACE_LOCATION",
    "WAREHOUSE",
    "BaseCatalog",
    "location_of_metadata_file",
    "namespace_from_string",
    "namespace_to_string",
]
