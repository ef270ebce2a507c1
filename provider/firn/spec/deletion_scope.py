"""Where a destructive step may delete: one table's (or view's) own places, minus every other
catalog entry's (DESIGN "Maintenance", safety invariant; STYLE 21).

A :class:`DeletionScope` is pure data, JSON round-trippable so it travels inside maintenance
work units to the machine that deletes. Its :meth:`DeletionScope.check` is the lexical half of
the confinement rule, the half that needs no I/O:

* the path must be an absolute path or URI without control characters and without a ``..``
  segment (also percent-encoded): a path that climbs is never resolved, it is kept;
* it must lie strictly below one of the owner's own places: for a table its location,
  ``write.data.path`` and ``write.metadata.path``;
* it must not lie inside the place of another catalog entry (table or view) that overlaps the
  owner's places, whether nested below one of them, equal to one, or containing one. The
  last case is deliberately strict: an entry whose location contains this table's may name
  files anywhere below it, so nothing under it is deleted while it exists;
* an entry whose location is unknown (its metadata could not be read) is taken to live at the
  directory that holds its metadata directory; an entry of which nothing is known (not even a
  metadata file) makes the scope refuse every deletion.

The other half, never following a symlink on the local filesystem, is in
:func:`firn.io.deletion.delete_confined`, the one function every delete goes through.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from firn.errors import ValidationError
from firn.spec.locations import LocationKey, location_key, normalize_location
from firn.spec.properties import WRITE_DATA_PATH, WRITE_METADATA_PATH
from firn.spec.table_metadata import TableMetadata

# Why a file was kept (the ``kind`` of a kept file; results count them as kept-outside-location).
KEPT_OUTSIDE = "outside-location"  # not below any of the owner's own places
KEPT_OTHER_ENTRY = "other-entry"  # inside the place of another table or view of the catalog
KEPT_UNSAFE_PATH = "unsafe-path"  # relative, climbing with '..', control characters
KEPT_UNKNOWN_ENTRY = "unknown-entry"  # an entry of the catalog could not be located at all
KEPT_SYMLINK = "symlink"  # reached through a symlink (set by firn.io.deletion)
KEPT_KINDS = (KEPT_OUTSIDE, KEPT_OTHER_ENTRY, KEPT_UNSAFE_PATH, KEPT_UNKNOWN_ENTRY, KEPT_SYMLINK)


class EntryLocation(Protocol):
    """One table or view of a catalog and where it lives (``firn.catalog``'s
    ``CatalogEntryLocation`` has this shape; ``location`` is None when unknown)."""

    @property
    def identifier(self) -> tuple[str, ...]: ...

    @property
    def location(self) -> str | None: ...

    @property
    def metadata_location(self) -> str: ...


@dataclass(frozen=True, slots=True)
class OtherPlace:
    """The place of another catalog entry that overlaps the owner's places."""

    location: str
    owner: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a path may not be deleted: a ``KEPT_*`` kind and a sentence naming the path."""

    kind: str
    reason: str


def table_places(metadata: TableMetadata) -> list[str]:
    """A table's own places: its location, ``write.data.path`` and ``write.metadata.path``."""
    places = [metadata.location]
    for key in (WRITE_DATA_PATH, WRITE_METADATA_PATH):
        value = metadata.properties.get(key)
        if value:
            places.append(str(value))
    return places


def _has_climb(path: str) -> bool:
    return any(s == ".." or unquote(s) == ".." for s in path.split("/"))


def _unsafe(path: str) -> str | None:
    """Why ``path`` cannot be checked safely (None: it can)."""
    if not path or not path.strip():
        return "is empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "contains a control character"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in path):
        return "contains a lone surrogate"
    if _has_climb(path):
        return "has a '..' segment (a path that climbs is never resolved for a delete)"
    parts = urlsplit(path)
    if len(parts.scheme) > 1:  # one letter would be a drive, not a scheme
        if not parts.path.startswith("/") and not (parts.netloc and not parts.path):
            return "is relative"
    elif not path.startswith("/"):
        return "is relative"
    return None


def _place(location: str) -> str | None:
    """``location`` as an own place, or None when it cannot be one (relative, climbing, the
    root of the local filesystem)."""
    try:
        clean = normalize_location(location)
    except ValidationError:
        return None
    key = location_key(clean)
    if key.scheme == "file" and not key.segments:
        return None
    return clean


def _fallback_place(metadata_location: str) -> str | None:
    """Where an entry of unknown location is taken to live: the directory holding the
    directory of its metadata file (``<location>`` for ``<location>/metadata/<file>``)."""
    if not metadata_location or _unsafe(metadata_location) is not None:
        return None
    key = location_key(metadata_location)
    if len(key.segments) < 2:
        return None
    parent = posixpath.dirname(posixpath.dirname(metadata_location.rstrip("/")))
    return parent or None


@dataclass(frozen=True, slots=True)
class DeletionScope:
    """The places ``owner`` may delete in (see the module docstring).

    ``places``: the owner's own places, normalised. ``others``: places of other catalog
    entries overlapping them. ``unknown``: entries of which nothing is known; while there is
    one, nothing is deleted."""

    owner: str
    places: tuple[str, ...]
    others: tuple[OtherPlace, ...] = ()
    unknown: tuple[str, ...] = ()
    _place_keys: tuple[LocationKey, ...] = field(init=False, repr=False, compare=False)
    _other_keys: tuple[LocationKey, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_place_keys", tuple(location_key(p) for p in self.places))
        object.__setattr__(self, "_other_keys", tuple(location_key(o.location) for o in self.others))

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        owner: str,
        places: Iterable[str],
        entries: Iterable[EntryLocation] = (),
        *,
        self_identifier: Sequence[str] | None = None,
    ) -> DeletionScope:
        """The scope of ``owner`` whose own ``places`` are given, against every other catalog
        entry in ``entries`` (the entry named ``self_identifier`` is the owner itself)."""
        own: list[str] = []
        for p in places:
            clean = _place(p)
            if clean is not None and clean not in own:
                own.append(clean)
        keys = [location_key(p) for p in own]
        me = tuple(self_identifier) if self_identifier is not None else None
        others: list[OtherPlace] = []
        unknown: list[str] = []
        for e in entries:
            ident = tuple(e.identifier)
            if ident == me:
                continue
            name = ".".join(ident)
            where = e.location if e.location is not None else _fallback_place(e.metadata_location)
            if where is None:
                unknown.append(name)
                continue
            k = location_key(where)
            if any(k.contains(o) or o.contains(k) for o in keys):
                others.append(OtherPlace(location=str(k), owner=name))
        return cls(owner=owner, places=tuple(own), others=tuple(others), unknown=tuple(sorted(unknown)))

    @classmethod
    def for_table(
        cls,
        owner: str,
        metadata: TableMetadata,
        entries: Iterable[EntryLocation] = (),
        *,
        self_identifier: Sequence[str] | None = None,
    ) -> DeletionScope:
        """A table's scope: :func:`table_places` against ``entries``."""
        return cls.build(owner, table_places(metadata), entries, self_identifier=self_identifier)

    @classmethod
    def for_written(cls, owner: str, *metadata: TableMetadata) -> DeletionScope:
        """The scope for removing files this process has just written for a table under
        fresh, unique names (a failed commit's manifests, a failed write's data files): the
        table's own places in any of the ``metadata`` versions, with no catalog lookup. A
        file nobody has referenced yet cannot be another entry's; the places and the
        no-symlink rule still hold, and a failing commit does not depend on the catalog
        answering one more query."""
        places = [p for md in metadata for p in table_places(md)]
        return cls.build(owner, places)

    # -- checking ------------------------------------------------------------------------------
    def place_of(self, path: str) -> str | None:
        """The own place ``path`` lies strictly below (None: none)."""
        key = location_key(path)
        for place, pk in zip(self.places, self._place_keys):
            if pk.contains(key) and len(key.segments) > len(pk.segments):
                return place
        return None

    def check(self, path: str) -> Verdict | None:
        """None when ``path`` may be deleted under this scope, else why it is kept."""
        problem = _unsafe(path)
        if problem is not None:
            return Verdict(KEPT_UNSAFE_PATH, f"{path!r} {problem}")
        if self.unknown:
            return Verdict(
                KEPT_UNKNOWN_ENTRY,
                f"where catalog entries {', '.join(self.unknown[:3])} live is unknown "
                f"(their metadata cannot be read): nothing is deleted for {self.owner}",
            )
        if self.place_of(path) is None:
            return Verdict(KEPT_OUTSIDE, f"outside the locations of {self.owner} ({', '.join(self.places)})")
        key = location_key(path)
        for other, ok in zip(self.others, self._other_keys):
            if ok.contains(key) or key.contains(ok):
                whole = any(ok.contains(pk) for pk in self._place_keys)
                return Verdict(
                    KEPT_OTHER_ENTRY,
                    f"inside the location of {other.owner} ({other.location}"
                    + (f", which contains {self.owner}'s)" if whole else ")"),
                )
        return None

    def excludes(self, path: str) -> bool:
        """True when ``path`` lies inside another entry's place (orphan listing skips those)."""
        if not self._other_keys:
            return False  # the usual case: no key to compute for each listed file
        key = location_key(path)
        return any(ok.contains(key) for ok in self._other_keys)

    # -- JSON (work units carry the scope to the machine that deletes) ---------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "places": list(self.places),
            "others": [{"location": o.location, "owner": o.owner} for o in self.others],
            "unknown": list(self.unknown),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeletionScope:
        """The scope ``data`` describes; anything malformed is a ``ValidationError``."""
        try:
            owner = data["owner"]
            places = data["places"]
            others = data.get("others") or []
            unknown = data.get("unknown") or []
            if not isinstance(owner, str) or not isinstance(places, list):
                raise TypeError("owner must be text and places a list")
            # Re-checked on arrival: a place that could not have been built is dropped.
            return cls(
                owner=owner,
                places=tuple(str(p) for p in places if _place(str(p)) == str(p)),
                others=tuple(OtherPlace(location=str(o["location"]), owner=str(o["owner"])) for o in others),
                unknown=tuple(str(u) for u in unknown),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValidationError(f"not a deletion scope: {e}") from e


__all__ = [
    "KEPT_KINDS",
    "KEPT_OTHER_ENTRY",
    "KEPT_OUTSIDE",
    "KEPT_SYMLINK",
    "KEPT_UNKNOWN_ENTRY",
    "KEPT_UNSAFE_PATH",
    "DeletionScope",
    "EntryLocation",
    "OtherPlace",
    "Verdict",
    "table_places",
]
