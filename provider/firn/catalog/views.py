"""View operations shared by Firn's catalogs (view spec; Iceberg Java's ``ViewCatalog``).

:class:`ViewCatalogMixin` adds create / load / replace / rollback / drop / list / rename /
register of views to :class:`~firn.catalog.base_catalog.BaseCatalog`, on top of six storage
primitives per backend (``_view_*``: the SQL catalog's rows with ``iceberg_type = 'VIEW'``, the
in-memory catalog's dict). The rules live here so every backend raises the same errors:

* a view and a table never share a name (the SQL catalog's primary key enforces it too, so a
  race between a table and a view creator cannot break it);
* every change writes a new metadata file and swaps the catalog pointer from the metadata the
  change was based on (spec "Metadata Location": optimistic, atomic swap). A change that
  loses the swap to another writer is re-applied to the new metadata, up to
  ``commit.retry.num-retries`` times, then ``CommitConflict`` is raised; the rules of the
  change (dialects, known versions) are checked again on each attempt.
"""

from __future__ import annotations

import logging
import random
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping

from firn.catalog.base import Identifier, IdentifierLike
from firn.catalog.base_catalog import BaseCatalog, namespace_to_string
from firn.catalog.confinement import check_own_files, view_places, view_places_changed
from firn.core.create import SchemaLike, to_firn_schema
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    NoSuchNamespace,
    NoSuchView,
    NotFound,
    Unsupported,
    ValidationConflict,
    ValidationError,
)
from firn.io.deletion import delete_confined, delete_quietly
from firn.spec.deletion_scope import DeletionScope
from firn.spec.locations import normalize_location
from firn.spec.view_metadata import ViewMetadata
from firn.views.builder import (
    DEFAULT_DIALECT,
    ViewChange,
    new_view_metadata,
    replace_view_version,
    rollback_view_version,
    sql_representations,
)
from firn.views.builder import update_view_properties as _update_properties
from firn.views.metadata_io import (
    new_view_metadata_location,
    read_view_metadata,
    view_metadata_dir,
    write_view_metadata,
)
from firn.views.view import View

logger = logging.getLogger(__name__)


def _view_scope(ident: Identifier, metadata: ViewMetadata) -> DeletionScope:
    """The own places of a view, for removing a metadata file a failed change just wrote."""
    return DeletionScope.build(".".join(ident), [metadata.location, view_metadata_dir(metadata)])


class ViewCatalogMixin(BaseCatalog):
    """Catalog view operations; backends implement the ``_view_*`` primitives."""

    # -- helpers -------------------------------------------------------------------------------
    def _read_view_location(self, metadata_location: str) -> str | None:
        return read_view_metadata(self._io, metadata_location).location

    def _view_parts(self, identifier: IdentifierLike) -> tuple[Identifier, str, str]:
        return self._table(identifier)

    def _check_view_row(self, ns: str, name: str) -> None:
        """Refuse a namespace or name the backend cannot store, before any file is written."""

    def _require_view_location(self, ns: Identifier, ns_str: str, name: str) -> str:
        location = self._view_get(ns_str, name)
        if location is None:
            hint = " (it is a table)" if self._tbl_get(ns_str, name) is not None else ""
            raise NoSuchView(f"view {self._fmt(ns, name)!r} does not exist in catalog {self._name!r}{hint}")
        return location

    def _check_name_free(self, ns: Identifier, ns_str: str, name: str, action: str) -> None:
        if self._tbl_get(ns_str, name) is not None:
            raise AlreadyExists(
                f"cannot {action} {self._fmt(ns, name)!r}: a table of that name exists "
                "(a view and a table never share a name)"
            )
        if self._view_get(ns_str, name) is not None:
            raise AlreadyExists(f"cannot {action} {self._fmt(ns, name)!r}: a view of that name exists")

    def _make_view(self, ident: Identifier, metadata: ViewMetadata, location: str) -> View:
        return View(ident, metadata, location, self._io, self)

    # -- where a view may live (firn.catalog.confinement) ---------------------------------------
    def check_view_places(
        self, identifier: IdentifierLike, metadata: ViewMetadata, *, metadata_location: str | None = None
    ) -> None:
        """Refuse (``ValidationError``) a view whose location or ``write.metadata.path`` breaks
        the rules of :mod:`firn.catalog.confinement` (the same as a table's), or whose
        ``metadata_location`` lies outside its own places."""
        ns, _, name = self._view_parts(identifier)
        ident = (*ns, name)
        subject = f"view {self._fmt(ident)!r}"
        places = self._rules.check_places(
            subject, ident, view_places(metadata), self.entry_locations(), view_metadata_dir(metadata)
        )
        if metadata_location is not None:
            check_own_files(subject, places, [("metadata file", metadata_location)])

    def check_view_change(self, identifier: IdentifierLike, base: ViewMetadata, new: ViewMetadata) -> None:
        """Before a change of the view is written: a change that moves its location or
        ``write.metadata.path`` is checked like a new view's; any other costs nothing."""
        if view_places_changed(base, new):
            self.check_view_places(identifier, new)

    # -- create, load, exists, list ------------------------------------------------------------
    def create_view(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        sql: str | Mapping[str, str],
        dialect: str = DEFAULT_DIALECT,
        *,
        default_namespace: IdentifierLike | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """Create a view: version 1 with the SQL of one dialect (or ``{dialect: sql, ...}``).

        ``schema`` (a firn ``Schema`` or ``pyarrow.Schema``) is the view's output schema: its
        field names are the column aliases and field docs the column comments (see
        :func:`firn.views.with_field_aliases`). ``default_namespace`` (default: the view's
        own namespace) resolves single-part table names in the SQL; ``default_catalog``
        (default: none, meaning the view's own catalog) resolves names without a catalog.
        ``summary`` defaults to ``engine-name: firn`` and the Firn version.
        """
        ns, ns_str, name = self._view_parts(identifier)
        ident = (*ns, name)
        if not self._ns_exists(ns_str):
            raise NoSuchNamespace(
                f"cannot create view {self._fmt(ident)!r}: namespace {ns_str!r} does not exist"
            )
        self._check_view_row(ns_str, name)
        self._check_name_free(ns, ns_str, name, "create view")
        representations = sql_representations(sql, dialect)
        view_location = (
            normalize_location(location, what=f"location of view {self._fmt(ident)!r}")
            if location
            else self.default_table_location(ident)
        )
        metadata = new_view_metadata(
            to_firn_schema(schema),
            representations,
            location=view_location,
            default_namespace=self._namespace(default_namespace) if default_namespace is not None else ns,
            default_catalog=default_catalog,
            properties=properties,
            summary=summary,
        )
        self.check_view_places(ident, metadata)
        metadata_location = new_view_metadata_location(metadata, None)
        write_view_metadata(self._io, metadata, metadata_location)
        try:
            self._view_insert(ns_str, name, metadata_location)
        except (AlreadyExists, Unsupported, ValidationError):
            # The row was certainly not inserted, so nothing references the file. (After
            # other errors the insert may have landed: the file is kept.)
            delete_quietly(self._io, _view_scope(ident, metadata), [metadata_location], "view metadata")
            raise
        return self._make_view(ident, metadata, metadata_location)

    def load_view(self, identifier: IdentifierLike) -> View:
        """Load a view; ``NoSuchView`` if there is none (also when the name is a table's)."""
        ns, ns_str, name = self._view_parts(identifier)
        location = self._require_view_location(ns, ns_str, name)
        return self._make_view((*ns, name), read_view_metadata(self._io, location), location)

    def view_exists(self, identifier: IdentifierLike) -> bool:
        _, ns_str, name = self._view_parts(identifier)
        return self._view_get(ns_str, name) is not None

    def list_views(self, namespace: IdentifierLike) -> list[Identifier]:
        """The views directly in ``namespace`` (tables are not listed)."""
        ns = self._namespace(namespace)
        ns_str = namespace_to_string(ns)
        if not ns or not self._ns_exists(ns_str):
            raise NoSuchNamespace(f"namespace {ns_str!r} does not exist in catalog {self._name!r}")
        return [(*ns, name) for name in sorted(self._view_names(ns_str))]

    def load_view_metadata_location(self, identifier: IdentifierLike) -> str:
        """The view's current metadata file (``NoSuchView`` if there is no such view)."""
        ns, ns_str, name = self._view_parts(identifier)
        return self._require_view_location(ns, ns_str, name)

    def register_view(self, identifier: IdentifierLike, metadata_location: str) -> View:
        """Add an existing view by its metadata file, which is read and validated first.

        As for tables: the file must lie inside the catalog's places before it is read, and
        the view it describes is held to the rules of :mod:`firn.catalog.confinement`."""
        ns, ns_str, name = self._view_parts(identifier)
        ident = (*ns, name)
        subject = f"view {self._fmt(ident)!r}"
        metadata_location = normalize_location(metadata_location, what=f"metadata location of {subject}")
        self._rules.place(subject, "metadata file", metadata_location)
        if not self._ns_exists(ns_str):
            raise NoSuchNamespace(
                f"cannot register view {self._fmt(ident)!r}: namespace {ns_str!r} does not exist"
            )
        self._check_view_row(ns_str, name)
        self._check_name_free(ns, ns_str, name, "register view")
        metadata = read_view_metadata(self._io, metadata_location)
        self.check_view_places(ident, metadata, metadata_location=metadata_location)
        self._view_insert(ns_str, name, metadata_location)
        return self._make_view(ident, metadata, metadata_location)

    # -- changes -------------------------------------------------------------------------------
    def replace_view(
        self,
        identifier: IdentifierLike,
        schema: SchemaLike,
        sql: str | Mapping[str, str],
        dialect: str = DEFAULT_DIALECT,
        *,
        default_namespace: IdentifierLike | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        summary: Mapping[str, str] | None = None,
        expected_uuid: str | None = None,
    ) -> View:
        """A new version of the view's definition, made current (``CREATE OR REPLACE VIEW``).

        Each replace is a complete definition: the defaults are those of :meth:`create_view`.
        ``properties`` are merged into the view's. A definition equal to an earlier version
        makes that version current again instead of adding a copy; one equal to the current
        version changes nothing. A replace that drops a SQL dialect of the current version
        is refused (``ValidationError``) unless ``replace.drop-dialect.allowed`` is true
        (it may be set by this same call).
        """
        ns, _, _ = self._view_parts(identifier)
        representations = sql_representations(sql, dialect)
        firn_schema = to_firn_schema(schema)
        namespace = self._namespace(default_namespace) if default_namespace is not None else ns

        def change(base: ViewMetadata) -> ViewChange:
            return replace_view_version(
                base,
                firn_schema,
                representations,
                default_namespace=namespace,
                default_catalog=default_catalog,
                properties=properties,
                summary=summary,
            )

        return self._commit_view_change(identifier, change, expected_uuid=expected_uuid)

    def rollback_view(
        self, identifier: IdentifierLike, version_id: int, *, expected_uuid: str | None = None
    ) -> View:
        """Make an earlier version (still kept in the metadata) current again.

        The version log records the change; ``ValidationError`` if the version is not kept
        or the rollback would drop a dialect while ``replace.drop-dialect.allowed`` is false.
        """

        def change(base: ViewMetadata) -> ViewChange:
            return rollback_view_version(base, version_id)

        return self._commit_view_change(identifier, change, expected_uuid=expected_uuid)

    def update_view_properties(
        self,
        identifier: IdentifierLike,
        updates: Mapping[str, str] | None = None,
        removals: set[str] | None = None,
    ) -> View:
        """Set and remove view properties (a new metadata file; versions unchanged)."""

        def change(base: ViewMetadata) -> ViewChange:
            return _update_properties(base, updates, removals or ())

        return self._commit_view_change(identifier, change)

    def commit_view(self, identifier: IdentifierLike, expected_location: str, new_location: str) -> None:
        """Swap the view's metadata pointer atomically (the new file must be written already).

        ``CommitConflict`` if the pointer is not ``expected_location``; ``NoSuchView`` if the
        view is gone; ``CommitStateUnknown`` if the outcome cannot be determined.
        """
        _, ns_str, name = self._view_parts(identifier)
        if not new_location or new_location == expected_location:
            raise ValidationError(
                f"new view metadata location must differ from the current one ({expected_location})"
            )
        self._view_swap(ns_str, name, expected_location, new_location)

    def _commit_view_change(
        self,
        identifier: IdentifierLike,
        change: Callable[[ViewMetadata], ViewChange],
        *,
        expected_uuid: str | None = None,
    ) -> View:
        ns, ns_str, name = self._view_parts(identifier)
        ident = (*ns, name)
        attempt = 0
        while True:
            location = self._require_view_location(ns, ns_str, name)
            base = read_view_metadata(self._io, location)
            if expected_uuid is not None and base.view_uuid != expected_uuid:
                raise ValidationConflict(
                    f"view {self._fmt(ident)!r} is not the view this change was made for: UUID "
                    f"{base.view_uuid}, expected {expected_uuid} (it was dropped and re-created)"
                )
            metadata, updates = change(base)
            if not updates:
                return self._make_view(ident, base, location)
            self.check_view_change(ident, base, metadata)
            new_location = new_view_metadata_location(metadata, location)
            write_view_metadata(self._io, metadata, new_location)
            try:
                self.commit_view(ident, location, new_location)
            except CommitStateUnknown:
                raise  # the file may be referenced now: keep it
            except CommitConflict as e:
                delete_quietly(self._io, _view_scope(ident, metadata), [new_location], "view metadata")
                props = base.view_properties
                if attempt >= props.commit_num_retries:
                    raise CommitConflict(
                        f"view {self._fmt(ident)!r} changed concurrently {attempt + 1} time(s); "
                        f"gave up after {props.commit_num_retries} retries: {e}"
                    ) from e
                attempt += 1
                wait_ms = min(
                    props.commit_max_retry_wait_ms, props.commit_min_retry_wait_ms * 2 ** (attempt - 1)
                )
                logger.info(
                    "view %s: commit conflict, retry %d in ~%d ms", self._fmt(ident), attempt, wait_ms
                )
                time.sleep(wait_ms * random.uniform(0.5, 1.0) / 1000)
                continue
            except FirnError:
                delete_quietly(self._io, _view_scope(ident, metadata), [new_location], "view metadata")
                raise
            return self._make_view(ident, metadata, new_location)

    # -- drop and rename -----------------------------------------------------------------------
    def drop_view(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Remove the view from the catalog; ``purge=True`` also deletes its metadata files.

        Purge deletes the current metadata file and every other file in the view's metadata
        directory that is metadata of this same view (same ``view-uuid``); files of anything
        else that shares the directory are left alone.
        """
        ns, ns_str, name = self._view_parts(identifier)
        ident = (*ns, name)
        location = self._require_view_location(ns, ns_str, name)
        metadata: ViewMetadata | None = None
        if purge:
            try:
                metadata = read_view_metadata(self._io, location)
            except (NotFound, InvalidMetadata, Unsupported) as e:
                logger.warning("purging view %s without readable metadata (%s)", self._fmt(ident), e)
        if not self._view_delete(ns_str, name):
            raise NoSuchView(f"view {self._fmt(ident)!r} does not exist in catalog {self._name!r}")
        if purge:
            self._purge_view(ident, location, metadata)

    def _purge_view(self, ident: Identifier, location: str, metadata: ViewMetadata | None) -> None:
        files = [location]
        if metadata is not None:
            places = [metadata.location, view_metadata_dir(metadata)]
            for info in self._io.list_prefix(view_metadata_dir(metadata)):
                other = info.location
                if other == location or not other.endswith((".metadata.json", ".metadata.json.gz")):
                    continue
                try:
                    if read_view_metadata(self._io, other).view_uuid == metadata.view_uuid:
                        files.append(other)
                except FirnError:
                    continue  # not this view's metadata (a table's, or damaged): leave it
        else:
            # Unreadable metadata: the view lives where its metadata directory is.
            places = [location.rpartition("/")[0]]
        try:
            # The row is gone already: every entry listed now is another table or view.
            scope = DeletionScope.build(
                self._fmt(ident), places, self.entry_locations(), self_identifier=ident
            )
        except FirnError as e:
            raise FirnError(
                f"view {self._fmt(ident)!r} was dropped but deleting its metadata failed: {e}"
            ) from e
        report = delete_confined(self._io, scope, files)
        logger.info("purged dropped view %s: %s", self._fmt(ident), report.summary())
        if report.failed:
            raise FirnError(
                f"view {self._fmt(ident)!r} was dropped but deleting its metadata failed: "
                f"{report.failed[0].path}: {report.failed[0].error}"
            )

    def rename_view(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> View:
        """Rename (or move to another existing namespace); the view's files stay where they are."""
        src_ns, src_str, src_name = self._view_parts(from_identifier)
        dst_ns, dst_str, dst_name = self._view_parts(to_identifier)
        if (src_ns, src_name) == (dst_ns, dst_name):
            return self.load_view(from_identifier)
        if not self._ns_exists(dst_str):
            raise NoSuchNamespace(
                f"cannot rename view {self._fmt(src_ns, src_name)!r}: namespace {dst_str!r} does not exist"
            )
        self._require_view_location(src_ns, src_str, src_name)
        self._check_view_row(dst_str, dst_name)
        self._check_name_free(dst_ns, dst_str, dst_name, "rename view to")
        self._view_rename(src_str, src_name, dst_str, dst_name)
        return self.load_view((*dst_ns, dst_name))

    # -- storage primitives (namespaces are dot-joined strings) --------------------------------
    @abstractmethod
    def _view_names(self, ns: str) -> list[str]:
        """Names of the views directly in ``ns``."""

    @abstractmethod
    def _view_get(self, ns: str, name: str) -> str | None:
        """The view's metadata location, or None if there is no such view."""

    @abstractmethod
    def _view_insert(self, ns: str, name: str, metadata_location: str) -> None:
        """Insert a view row; ``AlreadyExists`` if a table or view of that name exists."""

    @abstractmethod
    def _view_delete(self, ns: str, name: str) -> bool:
        """Delete a view row; False if there was none."""

    @abstractmethod
    def _view_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:
        """Move a view row; ``NoSuchView`` / ``AlreadyExists`` as appropriate."""

    @abstractmethod
    def _view_swap(self, ns: str, name: str, expected: str, new: str) -> None:
        """Atomic check-and-put of the view's metadata pointer."""


__all__ = ["ViewCatalogMixin"]
