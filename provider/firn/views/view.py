"""The :class:`View` front object: a loaded view's metadata plus the catalog it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from firn.errors import NotFound, ValidationConflict
from firn.io.base import FileIO
from firn.spec.schema import Schema
from firn.spec.view_metadata import ViewHistoryEntry, ViewMetadata, ViewVersion


class ViewCatalog(Protocol):
    """What a :class:`View` needs from its catalog (the catalogs implement much more)."""

    @property
    def name(self) -> str: ...

    def load_view(self, identifier: tuple[str, ...]) -> View: ...

    def rollback_view(
        self, identifier: tuple[str, ...], version_id: int, *, expected_uuid: str | None = None
    ) -> View: ...


class View:
    """A view as loaded from a catalog: immutable metadata and the file it was read from.

    The object does not change; :meth:`refresh` and :meth:`rollback` return a new one.
    """

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: ViewMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: ViewCatalog,
    ) -> None:
        self._identifier = tuple(identifier)
        self._metadata = metadata
        self._metadata_location = metadata_location
        self._io = io
        self._catalog = catalog

    # -- identity ----------------------------------------------------------------------------------
    @property
    def identifier(self) -> tuple[str, ...]:
        return self._identifier

    @property
    def name(self) -> str:
        """The dotted identifier, ``"db.view"``."""
        return ".".join(self._identifier)

    @property
    def catalog(self) -> ViewCatalog:
        return self._catalog

    @property
    def io(self) -> FileIO:
        return self._io

    @property
    def metadata(self) -> ViewMetadata:
        return self._metadata

    @property
    def metadata_location(self) -> str:
        return self._metadata_location

    @property
    def uuid(self) -> str:
        return self._metadata.view_uuid

    @property
    def location(self) -> str:
        return self._metadata.location

    @property
    def properties(self) -> Mapping[str, str]:
        return self._metadata.properties

    # -- versions ------------------------------------------------------------------------------
    @property
    def current_version(self) -> ViewVersion:
        return self._metadata.current_version

    @property
    def versions(self) -> tuple[ViewVersion, ...]:
        """The versions this metadata keeps (``version.history.num-entries``), oldest first."""
        return self._metadata.versions

    def version(self, version_id: int) -> ViewVersion:
        """A kept version by id (``NotFound`` otherwise)."""
        return self._metadata.version(version_id)

    @property
    def history(self) -> tuple[ViewHistoryEntry, ...]:
        """The version log: every time the current version changed, oldest first."""
        return self._metadata.version_log

    def schema(self) -> Schema:
        """The schema of the current version: field names are the view's column aliases."""
        return self._metadata.schema()

    @property
    def dialects(self) -> tuple[str, ...]:
        """The SQL dialects of the current version (lower-cased)."""
        return self.current_version.dialects

    @property
    def default_namespace(self) -> tuple[str, ...]:
        return self.current_version.default_namespace

    @property
    def default_catalog(self) -> str | None:
        """The catalog for unqualified references; None means the view's own catalog."""
        return self.current_version.default_catalog

    def sql_for(self, dialect: str) -> str:
        """The current version's SQL in ``dialect`` (case-insensitive).

        ``NotFound`` names the dialects the view has when it has none for ``dialect``.
        """
        rep = self.current_version.sql_for(dialect)
        if rep is None:
            have = ", ".join(self.dialects) or "none"
            raise NotFound(
                f"view {self.name!r} has no SQL representation for dialect {dialect!r}; its dialects: {have}"
            )
        return rep.sql

    # -- changes -------------------------------------------------------------------------------
    def refresh(self) -> View:
        """The view as the catalog has it now.

        Spec "View Metadata": the UUID must not change on refresh; if it did, the view was
        dropped and another created under the name, and ``ValidationConflict`` is raised.
        """
        fresh = self._catalog.load_view(self._identifier)
        if fresh.uuid != self.uuid:
            raise ValidationConflict(
                f"view {self.name!r} changed identity: UUID {self.uuid} became {fresh.uuid} "
                "(it was dropped and re-created); load it again to use the new view"
            )
        return fresh

    def rollback(self, version_id: int) -> View:
        """Make an earlier version current again (a new metadata file; logged in the history)."""
        return self._catalog.rollback_view(self._identifier, version_id, expected_uuid=self.uuid)

    def __repr__(self) -> str:
        return (
            f"View({self.name!r}, version={self._metadata.current_version_id}, "
            f"dialects={list(self.dialects)}, location={self.location!r})"
        )


__all__ = ["View", "ViewCatalog"]
