"""Where a catalog's tables and views may live (issue 18, item 2; DESIGN "Maintenance", safety).

A maintenance product deletes files unattended. What a table may delete is decided by where
the table lives, so the catalog holds every table and view to these rules:

1. **Normalised.** A location is absolute (a URI or an absolute path), without ``..``
   segments or control characters (:func:`firn.spec.locations.normalize_location`).
2. **Confined.** A table's or view's places (its location, and its ``write.data.path`` and
   ``write.metadata.path`` when set) lie inside a *root*: the catalog's warehouse or a prefix
   listed in the catalog property ``allowed-locations`` (comma-separated). A table or view is
   never placed at the warehouse itself (it holds every namespace). A catalog with neither a
   warehouse nor ``allowed-locations`` has no roots and refuses every location: safe by
   default, and the error says which property to set.
3. **Apart.** No place of a table or view equals, contains or lies inside the location of
   another table or view of the catalog (:meth:`BaseCatalog.entry_locations`); an entry whose
   location cannot be determined refuses the change, as it could be anywhere.
4. **Findable.** A metadata directory named ``metadata`` is the one directly in the location:
   the catalog reads an entry's location from its metadata file's path
   (:func:`~firn.catalog.base_catalog.location_of_metadata_file`), so
   ``write.metadata.path = s3://other/t/metadata`` would make the table look as if it lived
   at ``s3://other/t``.
5. **Own files only.** A commit may add files (statistics, partition statistics, the manifest
   list or root manifest of a new snapshot) only inside the table's own places; a registered
   metadata file lies inside the table's places too.

Apache Polaris holds tables to rules 1-3 by default (``ALLOW_TABLE_LOCATION_OVERLAP`` and
``ALLOW_EXTERNAL_TABLE_LOCATION`` are false); Iceberg Java's JDBC catalog checks none of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firn.core.metadata_io import metadata_dir
from firn.core.updates import AddSnapshot
from firn.errors import ValidationError
from firn.spec.locations import METADATA_DIR, LocationKey, has_scheme, location_key, normalize_location
from firn.spec.properties import WRITE_DATA_PATH, WRITE_METADATA_PATH
from firn.spec.view_properties import WRITE_METADATA_PATH as VIEW_WRITE_METADATA_PATH

if TYPE_CHECKING:
    from firn.catalog.base import Identifier
    from firn.catalog.base_catalog import CatalogEntryLocation
    from firn.core.handle import TableCommit
    from firn.spec.table_metadata import TableMetadata
    from firn.spec.view_metadata import ViewMetadata

# Catalog property: more prefixes (comma-separated) where tables and views may live, besides
# the warehouse (Polaris's ``allowedLocations`` of a catalog's storage configuration).
ALLOWED_LOCATIONS = "allowed-locations"


@dataclass(frozen=True, slots=True)
class Place:
    """One place of a table or view: what it is (``location``, ``write.data.path``, ...), the
    value as given, and its comparison key."""

    what: str
    location: str
    key: LocationKey


def shown(location: str) -> str:
    """A location for an error message: quoted, and cut in the middle when very long."""
    return repr(location if len(location) <= 200 else f"{location[:120]}...{location[-60:]}")


def config_location(value: str, *, what: str) -> str:
    """A location from the operator's own configuration (the warehouse, ``allowed-locations``),
    normalised; a plain relative path is made absolute against the working directory, as the
    operator who wrote it meant (a *caller's* relative location is refused instead)."""
    value = value.strip()
    if value and not has_scheme(value) and not value.startswith("/"):
        value = os.path.abspath(value)
    return normalize_location(value, what=what)


def table_places(metadata: TableMetadata) -> list[tuple[str, str]]:
    """``(what, location)`` of every place a table writes to: its location and its custom
    ``write.data.path`` / ``write.metadata.path`` (the code honours no other write path)."""
    places = [("location", metadata.location)]
    for key in (WRITE_DATA_PATH, WRITE_METADATA_PATH):
        value = metadata.properties.get(key)
        if value:
            places.append((key, str(value)))
    return places


def view_places(metadata: ViewMetadata) -> list[tuple[str, str]]:
    """``(what, location)`` of every place a view writes to: its location and its custom
    ``write.metadata.path``."""
    places = [("location", metadata.location)]
    custom = metadata.view_properties.write_metadata_path
    if custom:
        places.append((VIEW_WRITE_METADATA_PATH, custom))
    return places


def table_places_changed(base: TableMetadata, new: TableMetadata) -> bool:
    """Whether a commit moves any place of the table (O(1): the properties are looked up)."""
    return (
        new.location != base.location
        or new.properties.get(WRITE_DATA_PATH) != base.properties.get(WRITE_DATA_PATH)
        or new.properties.get(WRITE_METADATA_PATH) != base.properties.get(WRITE_METADATA_PATH)
    )


def view_places_changed(base: ViewMetadata, new: ViewMetadata) -> bool:
    return (
        new.location != base.location
        or new.view_properties.write_metadata_path != base.view_properties.write_metadata_path
    )


@dataclass(frozen=True, slots=True)
class LocationRules:
    """The roots of one catalog and the checks of rules 1-4 (see the module docstring)."""

    catalog: str
    warehouse: str | None
    allowed: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, catalog: str, warehouse: str | None, properties: Mapping[str, str]) -> LocationRules:
        """The rules of a catalog with this (normalised) warehouse and these properties."""
        allowed = tuple(
            config_location(item, what=f"catalog {catalog!r} property {ALLOWED_LOCATIONS!r} entry")
            for item in properties.get(ALLOWED_LOCATIONS, "").split(",")
            if item.strip()
        )
        return cls(catalog, warehouse, allowed)

    @property
    def roots(self) -> tuple[str, ...]:
        """Where tables and views may live: the warehouse, then the allowed locations."""
        return ((self.warehouse,) if self.warehouse else ()) + self.allowed

    def _where(self) -> str:
        parts = []
        if self.warehouse:
            parts.append(f"the warehouse {self.warehouse!r}")
        if self.allowed:
            parts.append(f"{ALLOWED_LOCATIONS} {list(self.allowed)!r}")
        return " or ".join(parts)

    def place(self, subject: str, what: str, location: str) -> Place:
        """``location`` checked by rules 1 and 2 (``ValidationError`` naming ``subject``)."""
        clean = normalize_location(location, what=f"{what} of {subject}")
        key = location_key(clean)
        if not self.roots:
            raise ValidationError(
                f"{what} {shown(location)} of {subject} is refused: catalog {self.catalog!r} has no "
                f"warehouse and no {ALLOWED_LOCATIONS!r} property, so no location is allowed; set "
                "one of them to say where its tables and views may live"
            )
        if not any(location_key(root).contains(key) for root in self.roots):
            raise ValidationError(
                f"{what} {shown(location)} of {subject} lies outside the places of catalog "
                f"{self.catalog!r} ({self._where()}): a table or view must stay where the catalog "
                "manages its files; "
                f"an operator can widen this with the catalog property {ALLOWED_LOCATIONS!r}"
            )
        return Place(what, location, key)

    def check_places(
        self,
        subject: str,
        ident: Identifier,
        places: Iterable[tuple[str, str]],
        entries: Sequence[CatalogEntryLocation],
        metadata_directory: str,
    ) -> list[Place]:
        """Rules 1-4 for the places of the table or view ``ident`` (named ``subject`` in
        errors), against every other entry of the catalog; returns the checked places."""
        checked = [self.place(subject, what, location) for what, location in places]
        if self.warehouse:
            warehouse = location_key(self.warehouse)
            for place in checked:
                if place.key.contains(warehouse):
                    relation = "is" if place.key == warehouse else "contains"
                    raise ValidationError(
                        f"{place.what} {shown(place.location)} of {subject} {relation} the warehouse "
                        f"of catalog {self.catalog!r} itself, which holds every namespace: give the "
                        "table or view a directory of its own"
                    )
        check_findable(subject, checked[0], metadata_directory)
        check_apart(subject, ident, checked, entries)
        return checked


def check_findable(subject: str, location: Place, metadata_directory: str) -> None:
    """Rule 4: a metadata directory named ``metadata`` is ``<location>/metadata``."""
    if metadata_directory.rstrip("/").rpartition("/")[2] != METADATA_DIR:
        return
    parent = location_key(metadata_directory.rstrip("/").rpartition("/")[0])
    if parent != location.key:
        raise ValidationError(
            f"metadata directory {shown(metadata_directory)} of {subject} is named {METADATA_DIR!r} "
            f"but is not the one in its location {shown(location.location)}: the catalog tells where a "
            f"table lives from its metadata file's path, and would place it at {str(parent)!r}; "
            f"name the directory differently or use {location.location.rstrip('/')}/{METADATA_DIR}"
        )


def check_apart(
    subject: str, ident: Identifier, places: Sequence[Place], entries: Sequence[CatalogEntryLocation]
) -> None:
    """Rule 3: no place equals, contains or lies inside another entry's location."""
    for entry in entries:
        if entry.identifier == ident:
            continue
        other = f"{entry.kind} {'.'.join(entry.identifier)!r}"
        if entry.location is None:
            raise ValidationError(
                f"cannot check where {subject} may live: the location of {other} is unknown (its "
                f"metadata file {shown(entry.metadata_location)} cannot be read), and it could overlap; "
                f"repair or drop {other} first"
            )
        entry_key = location_key(entry.location)
        for place in places:
            if entry_key.contains(place.key) or place.key.contains(entry_key):
                relation = (
                    "is"
                    if entry_key == place.key
                    else ("lies inside" if entry_key.contains(place.key) else "contains")
                )
                raise ValidationError(
                    f"{place.what} {shown(place.location)} of {subject} {relation} the location "
                    f"{shown(entry.location)} of {other}: tables and views of a catalog never share, "
                    "contain or lie inside each other's locations (removing the files of one "
                    "would remove the other's)"
                )


def committed_files(commit: TableCommit) -> list[tuple[str, str]]:
    """``(what, path)`` of every file a commit starts to reference without writing it through
    the catalog: the manifest list or root manifest of each new snapshot (read from the
    updates, so the cost follows the change, not the history) and each new statistics or
    partition-statistics file (the lists are compared only when the commit replaced them)."""
    files: list[tuple[str, str]] = []
    for update in commit.updates:
        if isinstance(update, AddSnapshot):
            snapshot = update.snapshot
            for what, path in (
                ("manifest list", snapshot.manifest_list),
                ("root manifest", snapshot.root_manifest),
            ):
                if path:
                    files.append((f"{what} of snapshot {snapshot.snapshot_id}", path))
    base, new = commit.base, commit.metadata
    if new.statistics is not base.statistics:
        known = {s.statistics_path for s in base.statistics}
        files += [
            (f"statistics file of snapshot {s.snapshot_id}", s.statistics_path)
            for s in new.statistics
            if s.statistics_path not in known
        ]
    if new.partition_statistics is not base.partition_statistics:
        known = {s.statistics_path for s in base.partition_statistics}
        files += [
            (f"partition statistics file of snapshot {s.snapshot_id}", s.statistics_path)
            for s in new.partition_statistics
            if s.statistics_path not in known
        ]
    return files


def check_table(
    rules: LocationRules,
    ident: Identifier,
    metadata: TableMetadata,
    entries: Sequence[CatalogEntryLocation],
    *,
    metadata_location: str | None = None,
) -> list[Place]:
    """Rules 1-4 for table ``ident`` with ``metadata`` against the catalog's ``entries``, and
    rule 5 for its ``metadata_location`` when given; returns the checked places."""
    subject = f"table {'.'.join(ident)!r}"
    places = rules.check_places(subject, ident, table_places(metadata), entries, metadata_dir(metadata))
    if metadata_location is not None:
        check_own_files(subject, places, [("metadata file", metadata_location)])
    return places


def check_commit(
    rules: LocationRules,
    ident: Identifier,
    commit: TableCommit,
    entries: Callable[[], Sequence[CatalogEntryLocation]],
) -> None:
    """The rules for one commit of table ``ident``: places it moves (``set-location``,
    ``write.data.path``, ``write.metadata.path``) are checked like a new table's; the files
    it starts to reference must lie inside the table's own places (rule 5). A commit that does
    neither costs a look at its updates, not at the history, and does not list ``entries``."""
    files = committed_files(commit)
    moved = table_places_changed(commit.base, commit.metadata)
    if not files and not moved:
        return
    if moved:
        places = check_table(rules, ident, commit.metadata, entries())
    else:
        places = own_places(table_places(commit.metadata))
    check_own_files(f"table {'.'.join(ident)!r}", places, files)


def own_places(places: Iterable[tuple[str, str]]) -> list[Place]:
    """The table's places as they are, unchecked: a commit that moves none of them is held
    to rule 5 only, so a table registered before these rules keeps working."""
    return [Place(what, location, location_key(location)) for what, location in places]


def check_own_files(subject: str, places: Sequence[Place], files: Iterable[tuple[str, str]]) -> None:
    """Rule 5: every ``(what, path)`` lies inside one of the table's own places."""
    for what, path in files:
        clean = normalize_location(path, what=f"{what} of {subject}")
        key = location_key(clean)
        if not any(place.key.contains(key) for place in places):
            own = ", ".join(f"{p.what} {shown(p.location)}" for p in places)
            raise ValidationError(
                f"{what} {shown(path)} of {subject} lies outside the table's own places ({own}): "
                "a table references only files it may also delete"
            )


__all__ = [
    "ALLOWED_LOCATIONS",
    "LocationRules",
    "Place",
    "check_apart",
    "check_commit",
    "check_findable",
    "check_own_files",
    "check_table",
    "committed_files",
    "own_places",
    "config_location",
    "table_places",
    "table_places_changed",
    "view_places",
    "view_places_changed",
]
