"""Pure view metadata operations: create, replace (a new version), rollback, properties.

:class:`ViewMetadataBuilder` follows Iceberg Java's ``ViewMetadata.Builder`` rule for rule, so
metadata written by either looks alike:

* schemas and versions are added with fresh ids (highest + 1, schemas from 0, versions from
  1), but an added schema equal to a known one, or a version equal to a known one except for
  its id and timestamp, reuses the known id instead (spec "Versions": versions are immutable,
  so an identical definition is the same version);
* every change of ``current-version-id`` appends a version-log entry, stamped with the
  version's own timestamp when the version was added in the same change, else with "now"
  (a rollback);
* a new current version may not lose a SQL dialect of the previous current version unless
  ``replace.drop-dialect.allowed`` is true, and no version may hold two SQL representations
  of one dialect (spec "SQL representation");
* ``version.history.num-entries`` versions are kept (at least the current one and those added
  in the change); the version log is cut before the newest entry of an expired version.

The builder records a :class:`~firn.views.updates.ViewUpdate` per change; nothing is written
anywhere — the catalog writes the metadata file and swaps the pointer.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from firn.errors import ValidationError
from firn.spec.schema import INITIAL_SCHEMA_ID, Schema
from firn.spec.table_metadata import now_ms
from firn.spec.view_metadata import (
    SUMMARY_ENGINE_NAME,
    SUMMARY_ENGINE_VERSION,
    VIEW_FORMAT_VERSION,
    SQLViewRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewRepresentation,
    ViewVersion,
    normalize_dialect,
)
from firn.spec.view_properties import REPLACE_DROP_DIALECT_ALLOWED, ViewProperties
from firn.views.updates import (
    LAST_ADDED,
    AddViewSchema,
    AddViewVersion,
    AssignViewUUID,
    RemoveProperties,
    SetCurrentViewVersion,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
    ViewUpdate,
)

ENGINE_NAME = "firn"
INITIAL_VERSION_ID = 1
DEFAULT_DIALECT = "spark"

ViewChange = tuple[ViewMetadata, tuple[ViewUpdate, ...]]


def default_summary() -> dict[str, str]:
    """``engine-name`` / ``engine-version`` of this library (spec "Summary")."""
    # Imported here: firn/__init__.py imports the catalogs, which import this module.
    from firn.util.version import __version__

    return {SUMMARY_ENGINE_NAME: ENGINE_NAME, SUMMARY_ENGINE_VERSION: __version__}


def sql_representations(
    sql: str | Mapping[str, str], dialect: str = DEFAULT_DIALECT
) -> tuple[SQLViewRepresentation, ...]:
    """SQL representations from one statement and its dialect, or a ``{dialect: sql}`` map."""
    items = list(sql.items()) if isinstance(sql, Mapping) else [(dialect, sql)]
    if not items:
        raise ValidationError("a view needs at least one SQL representation")
    seen: set[str] = set()
    out = []
    for d, text in items:
        if not isinstance(d, str) or not d.strip():
            raise ValidationError(f"a SQL dialect must be a non-empty string, got {d!r}")
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"the SQL of dialect {d!r} must be a non-empty string")
        key = normalize_dialect(d)
        if key in seen:
            raise ValidationError(
                f"two SQL representations of dialect {key!r}: a version has one per dialect"
            )
        seen.add(key)
        out.append(SQLViewRepresentation(sql=text, dialect=d))
    return tuple(out)


def _check_dialects(representations: Sequence[ViewRepresentation], version_id: int) -> None:
    seen: set[str] = set()
    for r in representations:
        if isinstance(r, SQLViewRepresentation):
            key = normalize_dialect(r.dialect)
            if key in seen:
                raise ValidationError(
                    f"view version {version_id} has two SQL representations of dialect {key!r}; "
                    "the view spec allows one per dialect"
                )
            seen.add(key)


class ViewMetadataBuilder:
    """Builds new view metadata from a base (or from nothing), recording each update."""

    def __init__(self, base: ViewMetadata | None = None, *, timestamp_ms: int | None = None) -> None:
        self._now = timestamp_ms
        self._base = base
        self._updates: list[ViewUpdate] = []
        self._last_added_schema_id: int | None = None
        self._last_added_version_id: int | None = None
        self._history_entry: ViewHistoryEntry | None = None
        if base is None:
            self._uuid: str | None = None
            self._format_version = VIEW_FORMAT_VERSION
            self._location: str | None = None
            self._schemas: list[Schema] = []
            self._versions: list[ViewVersion] = []
            self._history: list[ViewHistoryEntry] = []
            self._properties: dict[str, str] = {}
            self._current_version_id: int | None = None
            self._previous_version: ViewVersion | None = None
        else:
            self._uuid = base.view_uuid
            self._format_version = base.format_version
            self._location = base.location
            self._schemas = list(base.schemas)
            self._versions = list(base.versions)
            self._history = list(base.version_log)
            self._properties = dict(base.properties)
            self._current_version_id = base.current_version_id
            self._previous_version = base.current_version

    @property
    def updates(self) -> tuple[ViewUpdate, ...]:
        return tuple(self._updates)

    def _timestamp(self) -> int:
        if self._now is None:
            self._now = now_ms()
        return self._now

    # -- simple fields -------------------------------------------------------------------------
    def assign_uuid(self, value: str) -> ViewMetadataBuilder:
        if not value:
            raise ValidationError("a view UUID must be non-empty")
        if self._uuid is not None and self._uuid != value:
            raise ValidationError(f"cannot reassign the view UUID {self._uuid} to {value}")
        if self._uuid != value:
            self._uuid = value
            self._updates.append(AssignViewUUID(value))
        return self

    def upgrade_format_version(self, format_version: int) -> ViewMetadataBuilder:
        if format_version < self._format_version:
            raise ValidationError(
                f"cannot downgrade a view from format version {self._format_version} to {format_version}"
            )
        if format_version != VIEW_FORMAT_VERSION:
            raise ValidationError(
                f"unsupported view format version {format_version}; the view spec defines 1"
            )
        if format_version != self._format_version:
            self._format_version = format_version
            self._updates.append(UpgradeFormatVersion(format_version))
        return self

    def set_location(self, location: str) -> ViewMetadataBuilder:
        if not location:
            raise ValidationError("a view location must be non-empty")
        if location != self._location:
            self._location = location
            self._updates.append(SetLocation(location))
        return self

    def set_properties(self, updates: Mapping[str, str]) -> ViewMetadataBuilder:
        changed = {str(k): str(v) for k, v in updates.items() if self._properties.get(str(k)) != str(v)}
        if any(not k for k in changed):
            raise ValidationError("view property keys must be non-empty")
        if changed:
            self._properties.update(changed)
            self._updates.append(SetProperties(MappingProxyType(changed)))
        return self

    def remove_properties(self, keys: Iterable[str]) -> ViewMetadataBuilder:
        present = tuple(sorted(k for k in set(keys) if k in self._properties))
        if present:
            for key in present:
                del self._properties[key]
            self._updates.append(RemoveProperties(present))
        return self

    # -- schemas and versions ------------------------------------------------------------------
    def add_schema(self, schema: Schema) -> int:
        """Add ``schema`` (or find an equal known one) and return its id."""
        schema.field_ids  # noqa: B018 - validates: duplicate field ids raise ValidationError
        new_id = INITIAL_SCHEMA_ID
        for known in self._schemas:
            if known == schema:  # same fields and identifier ids, whatever the schema id
                return known.schema_id
            new_id = max(new_id, known.schema_id + 1)
        if schema.schema_id != new_id:
            schema = Schema(
                *schema.fields, schema_id=new_id, identifier_field_ids=schema.identifier_field_ids
            )
        self._schemas.append(schema)
        self._updates.append(AddViewSchema(schema))
        self._last_added_schema_id = new_id
        return new_id

    def _reuse_or_new_version_id(self, version: ViewVersion) -> int:
        new_id = version.version_id
        for known in self._versions:
            if known.same_definition(version):
                return known.version_id
            if known.version_id >= new_id:
                new_id = known.version_id + 1
        return new_id

    def _added_here(self, version_id: int) -> bool:
        return any(
            isinstance(u, AddViewVersion) and u.version.version_id == version_id for u in self._updates
        )

    def add_version(self, version: ViewVersion) -> int:
        """Add ``version`` (or find an identical known one) and return its id."""
        if version.schema_id == LAST_ADDED:
            if self._last_added_schema_id is None:
                raise ValidationError("cannot use the last added schema: no schema was added")
            version = dataclasses.replace(version, schema_id=self._last_added_schema_id)
        new_id = self._reuse_or_new_version_id(version)
        if new_id != version.version_id:
            version = dataclasses.replace(version, version_id=new_id)
        if any(v.version_id == new_id for v in self._versions):
            self._last_added_version_id = new_id if self._added_here(new_id) else None
            return new_id
        if not any(s.schema_id == version.schema_id for s in self._schemas):
            known = [s.schema_id for s in self._schemas]
            raise ValidationError(
                f"cannot add view version {new_id}: unknown schema {version.schema_id} (schemas: {known})"
            )
        if not version.representations:
            raise ValidationError(f"view version {new_id} has no representations")
        _check_dialects(version.representations, new_id)
        self._versions.append(version)
        recorded = version
        if self._last_added_schema_id is not None and version.schema_id == self._last_added_schema_id:
            recorded = dataclasses.replace(version, schema_id=LAST_ADDED)
        self._updates.append(AddViewVersion(recorded))
        self._last_added_version_id = new_id
        return new_id

    def set_current_version_id(self, version_id: int) -> ViewMetadataBuilder:
        """Make a known version current (a rollback when it is an earlier one)."""
        if version_id == LAST_ADDED:
            if self._last_added_version_id is None:
                raise ValidationError("cannot set the last added version: no version was added")
            return self.set_current_version_id(self._last_added_version_id)
        if version_id == self._current_version_id:
            return self
        version = next((v for v in self._versions if v.version_id == version_id), None)
        if version is None:
            known = ", ".join(str(v.version_id) for v in self._versions)
            raise ValidationError(f"view version {version_id} does not exist (versions kept: {known})")
        self._current_version_id = version_id
        added = self._added_here(version_id)
        self._updates.append(
            SetCurrentViewVersion(LAST_ADDED if self._last_added_version_id == version_id else version_id)
        )
        # Spec "Version log": the time the current version changed; a version added in this
        # change became current when it was created.
        self._history_entry = ViewHistoryEntry(
            timestamp_ms=version.timestamp_ms if added else self._timestamp(), version_id=version_id
        )
        return self

    def set_current_version(self, version: ViewVersion, schema: Schema) -> int:
        """Add ``schema`` and ``version`` (on that schema) and make the version current."""
        schema_id = self.add_schema(schema)
        version_id = self.add_version(dataclasses.replace(version, schema_id=schema_id))
        self.set_current_version_id(version_id)
        return version_id

    # -- build -----------------------------------------------------------------------------------
    def build(self) -> ViewMetadata:
        """The new metadata; ``ValidationError`` if it breaks a rule of the spec."""
        if self._location is None:
            raise ValidationError("a view needs a location")
        if not self._versions or self._current_version_id is None:
            raise ValidationError("a view needs a current version")
        props = ViewProperties.parse(self._properties)
        current = next(v for v in self._versions if v.version_id == self._current_version_id)
        if self._previous_version is not None and not props.replace_drop_dialect_allowed:
            before, after = self._previous_version.dialects, current.dialects
            dropped = [d for d in before if d not in after]
            if dropped:
                raise ValidationError(
                    f"the new view version would drop SQL dialect(s) {dropped} (current version "
                    f"{self._previous_version.version_id} has {list(before)}, version "
                    f"{current.version_id} has {list(after)}); set view property "
                    f"{REPLACE_DROP_DIALECT_ALLOWED!r} to 'true' to allow it"
                )
        history = [*self._history, self._history_entry] if self._history_entry else list(self._history)
        versions = list(self._versions)
        added = {u.version.version_id for u in self._updates if isinstance(u, AddViewVersion)}
        keep = max(len(added | {current.version_id}), props.version_history_size)
        if len(versions) > keep:
            versions = _expire_versions(versions, keep, current.version_id)
            history = _trim_history(history, {v.version_id for v in versions})
        return ViewMetadata(
            view_uuid=self._uuid if self._uuid is not None else str(uuid.uuid4()),
            format_version=self._format_version,
            location=self._location,
            schemas=tuple(self._schemas),
            current_version_id=current.version_id,
            versions=tuple(versions),
            version_log=tuple(history),
            properties=MappingProxyType(dict(self._properties)),
        )


def _expire_versions(versions: list[ViewVersion], keep: int, current_id: int) -> list[ViewVersion]:
    """Keep the current version and the newest others (ids are assigned in order), ``keep`` in all."""
    newest_first = sorted((v.version_id for v in versions if v.version_id != current_id), reverse=True)
    kept = {current_id, *newest_first[: keep - 1]}
    return [v for v in versions if v.version_id in kept]


def _trim_history(history: list[ViewHistoryEntry], kept_ids: set[int]) -> list[ViewHistoryEntry]:
    """Drop every entry up to the last one of an expired version (Java ``updateHistory``):
    the log must stay a contiguous record of the versions the metadata still holds."""
    out: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in kept_ids:
            out.append(entry)
        else:
            out.clear()
    return out


# -- operations ---------------------------------------------------------------------------------
def new_view_metadata(
    schema: Schema,
    representations: Sequence[ViewRepresentation],
    *,
    location: str,
    default_namespace: Sequence[str],
    default_catalog: str | None = None,
    properties: Mapping[str, str] | None = None,
    summary: Mapping[str, str] | None = None,
    timestamp_ms: int | None = None,
    view_uuid: str | None = None,
) -> ViewMetadata:
    """The first metadata of a new view: version 1, current, on ``schema``."""
    ts = timestamp_ms if timestamp_ms is not None else now_ms()
    builder = ViewMetadataBuilder(timestamp_ms=ts)
    builder.assign_uuid(view_uuid or str(uuid.uuid4()))
    builder.set_location(location)
    builder.set_properties(properties or {})
    version = ViewVersion(
        version_id=INITIAL_VERSION_ID,
        timestamp_ms=ts,
        schema_id=schema.schema_id,
        summary=MappingProxyType(dict(summary if summary is not None else default_summary())),
        representations=tuple(representations),
        default_namespace=tuple(default_namespace),
        default_catalog=default_catalog,
    )
    builder.set_current_version(version, schema)
    return builder.build()


def replace_view_version(
    base: ViewMetadata,
    schema: Schema,
    representations: Sequence[ViewRepresentation],
    *,
    default_namespace: Sequence[str],
    default_catalog: str | None = None,
    properties: Mapping[str, str] | None = None,
    summary: Mapping[str, str] | None = None,
    location: str | None = None,
    timestamp_ms: int | None = None,
) -> ViewChange:
    """A new current version (or an identical earlier one made current again).

    ``properties`` are merged into the view's properties, as Java's ``replace`` does. If the
    definition equals the current version and nothing else changes, the base is returned
    with no updates (nothing to commit).
    """
    ts = timestamp_ms if timestamp_ms is not None else now_ms()
    builder = ViewMetadataBuilder(base, timestamp_ms=ts)
    builder.set_properties(properties or {})
    version = ViewVersion(
        version_id=max(v.version_id for v in base.versions) + 1,
        timestamp_ms=ts,
        schema_id=schema.schema_id,
        summary=MappingProxyType(dict(summary if summary is not None else default_summary())),
        representations=tuple(representations),
        default_namespace=tuple(default_namespace),
        default_catalog=default_catalog,
    )
    builder.set_current_version(version, schema)
    if location is not None:
        builder.set_location(location)
    return _finish(base, builder)


def rollback_view_version(
    base: ViewMetadata, version_id: int, *, timestamp_ms: int | None = None
) -> ViewChange:
    """Make an earlier version current again (spec "Version log": it is logged once more)."""
    builder = ViewMetadataBuilder(base, timestamp_ms=timestamp_ms)
    builder.set_current_version_id(version_id)
    return _finish(base, builder)


def update_view_properties(
    base: ViewMetadata,
    updates: Mapping[str, str] | None = None,
    removals: Iterable[str] = (),
) -> ViewChange:
    """Set and remove properties; a key may not be both set and removed."""
    removals = set(removals)
    updates = dict(updates or {})
    if overlap := removals & set(updates):
        raise ValidationError(f"view properties both removed and set: {sorted(overlap)}")
    builder = ViewMetadataBuilder(base)
    builder.remove_properties(removals)
    builder.set_properties(updates)
    return _finish(base, builder)


def apply_view_updates(
    base: ViewMetadata | None, updates: Iterable[ViewUpdate], *, timestamp_ms: int | None = None
) -> ViewChange:
    """Replay updates (for instance from a REST ``commitView`` request) on ``base``."""
    builder = ViewMetadataBuilder(base, timestamp_ms=timestamp_ms)
    for u in updates:
        if isinstance(u, AssignViewUUID):
            builder.assign_uuid(u.uuid)
        elif isinstance(u, UpgradeFormatVersion):
            builder.upgrade_format_version(u.format_version)
        elif isinstance(u, AddViewSchema):
            builder.add_schema(u.schema)
        elif isinstance(u, SetLocation):
            builder.set_location(u.location)
        elif isinstance(u, SetProperties):
            builder.set_properties(u.updates)
        elif isinstance(u, RemoveProperties):
            builder.remove_properties(u.removals)
        elif isinstance(u, AddViewVersion):
            builder.add_version(u.version)
        elif isinstance(u, SetCurrentViewVersion):
            builder.set_current_version_id(u.version_id)
        else:
            raise ValidationError(f"unknown view update {type(u).__name__}")
    if base is not None:
        return _finish(base, builder)
    return builder.build(), builder.updates


def _finish(base: ViewMetadata, builder: ViewMetadataBuilder) -> ViewChange:
    if not builder.updates:
        return base, ()
    return builder.build(), builder.updates


__all__ = [
    "DEFAULT_DIALECT",
    "ENGINE_NAME",
    "INITIAL_VERSION_ID",
    "ViewChange",
    "ViewMetadataBuilder",
    "apply_view_updates",
    "default_summary",
    "new_view_metadata",
    "replace_view_version",
    "rollback_view_version",
    "sql_representations",
    "update_view_properties",
]
