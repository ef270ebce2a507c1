"""Locations: where a table's new data files go, and which locations contain which.

Two concerns live here, both pure string logic (no I/O):

* :class:`DefaultLocationProvider`, the spec's "File System Operations" rule with
  ``write.data.path``;
* the identity of a location for confinement (DESIGN "Maintenance", safety invariant;
  STYLE 21): :func:`normalize_location` refuses what cannot be a table's own place (relative
  paths, ``..`` segments, control characters) and cleans the rest, and :func:`location_key` /
  :func:`location_contains` / :func:`locations_overlap` compare locations by path segment, so
  ``wh/t`` never contains ``wh/t2`` and ``file:/x``, ``file:///x`` and ``/x`` are one place.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from firn.errors import ValidationError
from firn.spec.properties import WRITE_DATA_PATH
from firn.spec.table_metadata import TableMetadata

DATA_DIR = "data"
METADATA_DIR = "metadata"

# Schemes that name the same store (Hadoop's s3a/s3n connectors and pyarrow's s3; Iceberg
# Java's remove_orphan_files equal-schemes default says the same).
_EQUAL_SCHEMES = {"s3a": "s3", "s3n": "s3", "": "file"}
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# RFC 3986 scheme syntax.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
# Authorities that mean "this machine" for file URIs.
_LOCAL_AUTHORITIES = {"", "localhost"}


class LocationProvider(Protocol):
    """Where new data files go."""

    def new_data_location(self, file_name: str, partition_path: str | None = None) -> str:
        """The full location of a data file named ``file_name`` in a partition directory."""
        ...


@dataclass(frozen=True, slots=True)
class DefaultLocationProvider:
    """``<write.data.path or <table location>/data>/<partition path>/<file name>`` (as Java)."""

    data_path: str

    @classmethod
    def for_table(cls, metadata: TableMetadata) -> DefaultLocationProvider:
        configured = metadata.properties.get(WRITE_DATA_PATH)
        base = str(configured) if configured else f"{metadata.location.rstrip('/')}/{DATA_DIR}"
        return cls(base.rstrip("/"))

    def new_data_location(self, file_name: str, partition_path: str | None = None) -> str:
        if partition_path:
            return f"{self.data_path}/{partition_path}/{file_name}"
        return f"{self.data_path}/{file_name}"


# -- location identity ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LocationKey:
    """A location as compared for confinement: canonical scheme, authority, path segments."""

    scheme: str
    authority: str
    segments: tuple[str, ...]

    def contains(self, other: LocationKey) -> bool:
        """True when ``other`` is this location or lies below it."""
        return (
            self.scheme == other.scheme
            and self.authority == other.authority
            and other.segments[: len(self.segments)] == self.segments
        )

    def __str__(self) -> str:
        path = "/" + "/".join(self.segments)
        return path if self.scheme == "file" else f"{self.scheme}://{self.authority}{path}"


def _split(location: str) -> tuple[str, str, str]:
    """(scheme, authority, path); a plain path (or a one-letter "scheme", a drive) has none.

    ``?`` and ``#`` are part of the path: object stores and file systems take them as
    characters of a name, not as a query or fragment (``urlsplit`` would cut ``t#1`` to ``t``,
    making two tables one place)."""
    scheme, colon, rest = location.partition(":")
    if not colon or len(scheme) <= 1 or not _SCHEME.fullmatch(scheme):
        return "", "", location
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        return scheme.lower(), authority, slash + path
    return scheme.lower(), "", rest


def has_scheme(location: str) -> bool:
    """True when ``location`` is a URI (``s3://...``, ``file:/...``), not a plain path."""
    return bool(_split(location)[0])


def _check_text(location: str, what: str) -> None:
    if not location.strip():
        raise ValidationError(f"{what} is empty")
    # One regex scan each (commits check every file they reference: keep it cheap).
    bad = _CONTROL.search(location)
    if bad is not None:
        raise ValidationError(f"{what} {location!r} contains the control character {bad.group()!r}")
    if _SURROGATE.search(location) is not None:
        raise ValidationError(f"{what} {location!r} contains a lone surrogate")


def normalize_location(location: str, *, what: str = "location") -> str:
    """``location`` cleaned for use as a table, view, data or metadata location.

    Refused (``ValidationError``, naming ``what``): empty text, control characters, lone
    surrogates, a relative plain path, a URI without a path, and any ``..`` segment (also
    percent-encoded): a location must say where it is, not climb out of somewhere. Kept as
    given: the scheme and authority. Cleaned: duplicate slashes, ``.`` segments and the
    trailing slash. ``file:`` URIs and plain paths stay in the form given (Java writes
    ``file:/...``, Firn plain paths), and compare equal through :func:`location_key`.
    """
    _check_text(location, what)
    scheme, authority, path = _split(location)
    if not scheme and not path.startswith("/"):
        raise ValidationError(f"{what} {location!r} is relative: give an absolute path or a URI")
    if scheme and not path.startswith("/"):
        if not path and authority:
            # s3://bucket is a bucket root: a place, with the empty path.
            path = "/"
        else:
            raise ValidationError(f"{what} {location!r} has no absolute path after {scheme}:")
    segments = [s for s in path.split("/") if s not in ("", ".")]
    for s in segments:
        if s == ".." or unquote(s) == "..":
            raise ValidationError(f"{what} {location!r} has a '..' segment; locations must not climb")
    clean = "/" + "/".join(segments)
    if not scheme:
        return clean
    given_scheme = location.split(":", 1)[0]
    if location[len(given_scheme) :].startswith("://"):
        return f"{given_scheme}://{authority}{clean if segments else ''}"
    return f"{given_scheme}:{clean}"


def location_key(location: str) -> LocationKey:
    """The comparison key of ``location`` (no validation: for paths read from metadata too).

    Schemes compare case-insensitively with s3a/s3n as s3 and a plain path as ``file``; a
    ``file`` authority of ``localhost`` is the local machine; paths compare by segment after
    removing empty and ``.`` segments and resolving ``..`` lexically."""
    scheme, authority, path = _split(location)
    scheme = _EQUAL_SCHEMES.get(scheme, scheme)
    if scheme == "file" and authority in _LOCAL_AUTHORITIES:
        authority = ""
    resolved = posixpath.normpath("/" + path) if path else "/"
    segments = tuple(s for s in resolved.split("/") if s not in ("", "."))
    return LocationKey(scheme, authority, segments)


def location_contains(outer: str, inner: str) -> bool:
    """True when ``inner`` is ``outer`` or lies below it (``wh/t`` does not contain ``wh/t2``)."""
    return location_key(outer).contains(location_key(inner))


def locations_overlap(a: str, b: str) -> bool:
    """True when one of the two locations equals or contains the other."""
    ka, kb = location_key(a), location_key(b)
    return ka.contains(kb) or kb.contains(ka)


__all__ = [
    "DATA_DIR",
    "METADATA_DIR",
    "DefaultLocationProvider",
    "LocationKey",
    "LocationProvider",
    "has_scheme",
    "location_contains",
    "location_key",
    "locations_overlap",
    "normalize_location",
]
