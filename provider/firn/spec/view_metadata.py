"""View metadata (view spec: "View Metadata", "Versions", "Representations", "Version log").

Everything here is immutable data. A view's metadata lists its schemas, its versions (each an
immutable definition: SQL per dialect, default catalog and namespace, schema id, summary), the
current version id, and the version log recording every change of the current version. New
metadata is made by :mod:`firn.views.builder`; JSON is in :mod:`firn.spec.view_metadata_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from firn.errors import NotFound
from firn.spec.schema import Schema
from firn.spec.view_properties import ViewProperties

# View spec "View Metadata": format-version "must be 1".
VIEW_FORMAT_VERSION = 1
SUPPORTED_VIEW_FORMAT_VERSIONS = (1,)
# View spec "Representations": the only representation type the spec defines.
SQL_REPRESENTATION_TYPE = "sql"
# View spec "Summary": the documented keys.
SUMMARY_ENGINE_NAME = "engine-name"
SUMMARY_ENGINE_VERSION = "engine-version"

EMPTY_MAP: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SQLViewRepresentation:
    """A SQL SELECT in one dialect (spec "SQL representation")."""

    sql: str
    dialect: str

    @property
    def type(self) -> str:
        return SQL_REPRESENTATION_TYPE


@dataclass(frozen=True, slots=True)
class UnknownViewRepresentation:
    """A representation of a type this spec version does not define, kept as read.

    Iceberg Java keeps such representations too (as ``UnknownViewRepresentation``); Firn also
    keeps their fields, so rewriting the metadata does not lose them.
    """

    type: str
    fields: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


ViewRepresentation = SQLViewRepresentation | UnknownViewRepresentation


def normalize_dialect(dialect: str) -> str:
    """Dialects compare case-insensitively (Java lower-cases them with ``Locale.ROOT``)."""
    return dialect.lower()


@dataclass(frozen=True, slots=True)
class ViewVersion:
    """One immutable version of a view's definition (spec "Versions")."""

    version_id: int
    timestamp_ms: int
    schema_id: int
    summary: Mapping[str, str]
    representations: tuple[ViewRepresentation, ...]
    default_namespace: tuple[str, ...]
    default_catalog: str | None = None

    @property
    def sql_representations(self) -> tuple[SQLViewRepresentation, ...]:
        return tuple(r for r in self.representations if isinstance(r, SQLViewRepresentation))

    @property
    def dialects(self) -> tuple[str, ...]:
        """The SQL dialects of this version, lower-cased, in representation order."""
        seen: dict[str, None] = {}
        for r in self.sql_representations:
            seen.setdefault(normalize_dialect(r.dialect), None)
        return tuple(seen)

    def sql_for(self, dialect: str) -> SQLViewRepresentation | None:
        """The SQL representation of ``dialect`` (case-insensitive), or None."""
        wanted = normalize_dialect(dialect)
        for r in self.sql_representations:
            if normalize_dialect(r.dialect) == wanted:
                return r
        return None

    def same_definition(self, other: ViewVersion) -> bool:
        """True if both versions would behave the same: equal but for id and timestamp.

        This is how Iceberg Java decides to reuse an earlier version instead of adding an
        identical one (``ViewMetadata.Builder.sameViewVersion``).
        """
        return (
            dict(self.summary) == dict(other.summary)
            and self.representations == other.representations
            and self.default_catalog == other.default_catalog
            and self.default_namespace == other.default_namespace
            and self.schema_id == other.schema_id
        )


@dataclass(frozen=True, slots=True)
class ViewHistoryEntry:
    """A version-log entry: when ``current-version-id`` was set to ``version_id``."""

    timestamp_ms: int
    version_id: int


@dataclass(frozen=True, eq=False)
class ViewMetadata:
    """The content of one view metadata file."""

    view_uuid: str
    format_version: int
    location: str
    schemas: tuple[Schema, ...]
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    properties: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAP)

    @cached_property
    def _versions_by_id(self) -> dict[int, ViewVersion]:
        return {v.version_id: v for v in self.versions}

    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def view_properties(self) -> ViewProperties:
        """The properties, parsed and validated once."""
        return ViewProperties.parse(self.properties)

    @property
    def current_version(self) -> ViewVersion:
        return self.version(self.current_version_id)

    def version(self, version_id: int) -> ViewVersion:
        """The version with that id; ``NotFound`` if this metadata does not keep it."""
        try:
            return self._versions_by_id[version_id]
        except KeyError:
            known = ", ".join(str(v.version_id) for v in self.versions)
            raise NotFound(f"view version {version_id} does not exist (versions kept: {known})") from None

    def has_version(self, version_id: int) -> bool:
        return version_id in self._versions_by_id

    def schema_by_id(self, schema_id: int) -> Schema:
        try:
            return self._schemas_by_id[schema_id]
        except KeyError:
            known = ", ".join(str(s.schema_id) for s in self.schemas)
            raise NotFound(f"view schema {schema_id} does not exist (schemas: {known})") from None

    def has_schema(self, schema_id: int) -> bool:
        return schema_id in self._schemas_by_id

    def schema(self) -> Schema:
        """The schema of the current version."""
        return self.schema_by_id(self.current_version.schema_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ViewMetadata):
            return NotImplemented
        return (
            self.view_uuid == other.view_uuid
            and self.format_version == other.format_version
            and self.location == other.location
            and self.current_version_id == other.current_version_id
            and self.versions == other.versions
            and self.version_log == other.version_log
            and dict(self.properties) == dict(other.properties)
            and len(self.schemas) == len(other.schemas)
            and all(
                a.schema_id == b.schema_id and a == b
                for a, b in zip(self.schemas, other.schemas, strict=True)
            )
        )

    __hash__ = None  # type: ignore[assignment]


__all__ = [
    "EMPTY_MAP",
    "SQL_REPRESENTATION_TYPE",
    "SUMMARY_ENGINE_NAME",
    "SUMMARY_ENGINE_VERSION",
    "SUPPORTED_VIEW_FORMAT_VERSIONS",
    "VIEW_FORMAT_VERSION",
    "SQLViewRepresentation",
    "UnknownViewRepresentation",
    "ViewHistoryEntry",
    "ViewMetadata",
    "ViewRepresentation",
    "ViewVersion",
    "normalize_dialect",
]
