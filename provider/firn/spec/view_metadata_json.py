"""View metadata JSON (view spec "View Metadata" and its Appendix A example).

Reading accepts what Iceberg Java and PyIceberg write, plain or gzip-compressed, and checks
what a reader relies on: the required fields and their types, format-version 1, one schema
and one version per id, and a current version whose schema exists. Like Java's parser it
tolerates two SQL representations of one dialect in an existing version (the builder refuses
to create such a version). Every error names the file.

Writing emits the keys in the order of the spec's Appendix A example (``view-uuid``,
``format-version``, ``location``, ``current-version-id``, ``properties``, ``versions``,
``schemas``, ``version-log``; in a version ``version-id``, ``timestamp-ms``, ``schema-id``,
``default-catalog``, ``default-namespace``, ``summary``, ``representations``; in a schema
``schema-id`` first). JSON objects are unordered (RFC 8259 §4), so readers do not care — Java
writes another order — but this one reproduces the published example exactly. Schemas and
fields are serialized by :mod:`firn.spec.schema_json`, the table serde.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from firn.errors import InvalidMetadata, Unsupported
from firn.spec.json_fields import get_int, get_list, get_long, get_object, get_str, opt_str, require
from firn.spec.schema import Schema
from firn.spec.schema_json import schema_from_json, schema_to_json
from firn.spec.view_metadata import (
    SQL_REPRESENTATION_TYPE,
    SUPPORTED_VIEW_FORMAT_VERSIONS,
    SQLViewRepresentation,
    UnknownViewRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewRepresentation,
    ViewVersion,
)

GZIP_MAGIC = b"\x1f\x8b"

# Field names (view spec "View Metadata", "Versions", "Version log", "SQL representation").
VIEW_UUID = "view-uuid"
FORMAT_VERSION = "format-version"
LOCATION = "location"
CURRENT_VERSION_ID = "current-version-id"
PROPERTIES = "properties"
VERSIONS = "versions"
SCHEMAS = "schemas"
VERSION_LOG = "version-log"
VERSION_ID = "version-id"
TIMESTAMP_MS = "timestamp-ms"
SCHEMA_ID = "schema-id"
DEFAULT_CATALOG = "default-catalog"
DEFAULT_NAMESPACE = "default-namespace"
SUMMARY = "summary"
REPRESENTATIONS = "representations"
TYPE = "type"
SQL = "sql"
DIALECT = "dialect"


# -- writing ----------------------------------------------------------------------------------
def representation_to_dict(r: ViewRepresentation) -> dict[str, Any]:
    if isinstance(r, SQLViewRepresentation):
        return {TYPE: SQL_REPRESENTATION_TYPE, SQL: r.sql, DIALECT: r.dialect}
    return {TYPE: r.type, **r.fields}


def version_to_dict(v: ViewVersion) -> dict[str, Any]:
    out: dict[str, Any] = {VERSION_ID: v.version_id, TIMESTAMP_MS: v.timestamp_ms, SCHEMA_ID: v.schema_id}
    # Spec: "When default-catalog is null or not set, the catalog in which the view is stored
    # must be used"; like Java, an absent default catalog is omitted rather than written null.
    if v.default_catalog is not None:
        out[DEFAULT_CATALOG] = v.default_catalog
    out[DEFAULT_NAMESPACE] = list(v.default_namespace)
    out[SUMMARY] = dict(v.summary)
    out[REPRESENTATIONS] = [representation_to_dict(r) for r in v.representations]
    return out


def view_schema_to_dict(schema: Schema) -> dict[str, Any]:
    """The table schema JSON with ``schema-id`` moved first, as in the spec's example."""
    body = schema_to_json(schema)
    return {SCHEMA_ID: body.pop(SCHEMA_ID), **body}


def view_metadata_to_dict(md: ViewMetadata) -> dict[str, Any]:
    """The metadata as a JSON-ready dict, keys in the spec's Appendix A order."""
    out: dict[str, Any] = {
        VIEW_UUID: md.view_uuid,
        FORMAT_VERSION: md.format_version,
        LOCATION: md.location,
        CURRENT_VERSION_ID: md.current_version_id,
    }
    # Optional: omitted when empty, as Java does.
    if md.properties:
        out[PROPERTIES] = dict(md.properties)
    out[VERSIONS] = [version_to_dict(v) for v in md.versions]
    out[SCHEMAS] = [view_schema_to_dict(s) for s in md.schemas]
    out[VERSION_LOG] = [{TIMESTAMP_MS: e.timestamp_ms, VERSION_ID: e.version_id} for e in md.version_log]
    return out


def view_metadata_to_json(md: ViewMetadata, *, indent: int | None = None) -> str:
    """JSON text; compact unless ``indent`` is given. Non-ASCII text is written as UTF-8."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(view_metadata_to_dict(md), indent=indent, separators=separators, ensure_ascii=False)


def view_metadata_to_gzip(md: ViewMetadata) -> bytes:
    """The JSON text gzip-compressed (``.gz.metadata.json`` files)."""
    return gzip.compress(view_metadata_to_json(md).encode("utf-8"), mtime=0)


# -- reading ----------------------------------------------------------------------------------
# Typed fields are read by firn.spec.json_fields (Java's ViewMetadataParser: ids are ints,
# timestamps longs), shared with the table metadata reader.
def _string_map(value: Any, what: str) -> Mapping[str, str]:
    obj = get_object(value, what)
    bad = [k for k, v in obj.items() if not isinstance(v, str)]
    if bad:
        raise InvalidMetadata(f"{what} must map strings to strings; {bad[0]!r} is {obj[bad[0]]!r}")
    return MappingProxyType(dict(obj))


def representation_from_dict(data: Any, where: str) -> ViewRepresentation:
    d = get_object(data, f"{where} representation")
    kind = get_str(d, TYPE, f"{where} representation").lower()
    if kind == SQL_REPRESENTATION_TYPE:
        what = f"{where} SQL representation"
        return SQLViewRepresentation(sql=get_str(d, SQL, what), dialect=get_str(d, DIALECT, what))
    return UnknownViewRepresentation(kind, MappingProxyType({k: v for k, v in d.items() if k != TYPE}))


def version_from_dict(data: Any) -> ViewVersion:
    d = get_object(data, "view version")
    version_id = get_int(d, VERSION_ID, "view version")
    what = f"view version {version_id}"
    namespace = get_list(d, DEFAULT_NAMESPACE, what)
    if not all(isinstance(level, str) for level in namespace):
        raise InvalidMetadata(f"{what}: {DEFAULT_NAMESPACE!r} must be a list of strings, got {namespace!r}")
    catalog = opt_str(d, DEFAULT_CATALOG, what)
    return ViewVersion(
        version_id=version_id,
        timestamp_ms=get_long(d, TIMESTAMP_MS, what),
        schema_id=get_int(d, SCHEMA_ID, what),
        summary=_string_map(require(d, SUMMARY, what), f"{what} summary"),
        representations=tuple(representation_from_dict(r, what) for r in get_list(d, REPRESENTATIONS, what)),
        default_namespace=tuple(namespace),
        default_catalog=catalog,
    )


def _history_entry_from_dict(data: Any) -> ViewHistoryEntry:
    d = get_object(data, "version-log entry")
    return ViewHistoryEntry(
        timestamp_ms=get_long(d, TIMESTAMP_MS, "version-log entry"),
        version_id=get_int(d, VERSION_ID, "version-log entry"),
    )


def check_view_format_version(value: object, *, location: str | None = None) -> int:
    """Validate a view ``format-version``: an integer Firn supports (the spec allows only 1)."""
    where = f"{location}: " if location else ""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidMetadata(
            f"view metadata field 'format-version' must be an integer, got {value!r}", location=location
        )
    if value not in SUPPORTED_VIEW_FORMAT_VERSIONS:
        raise Unsupported(
            f"{where}unsupported view format version {value}; Firn reads view format version "
            f"{', '.join(map(str, SUPPORTED_VIEW_FORMAT_VERSIONS))} (the view spec defines only 1)"
        )
    return value


def view_metadata_from_dict(d: Mapping[str, Any]) -> ViewMetadata:
    """Parse and validate; errors are ``InvalidMetadata`` (``Unsupported`` for a format version)."""
    what = "view metadata"
    if "table-uuid" in d and VIEW_UUID not in d:
        raise InvalidMetadata("this is table metadata (it has 'table-uuid'), not view metadata")
    version = check_view_format_version(require(d, FORMAT_VERSION, what))
    view_uuid = get_str(d, VIEW_UUID, what)
    location = get_str(d, LOCATION, what)
    schemas = tuple(schema_from_json(get_object(s, "view schema")) for s in get_list(d, SCHEMAS, what))
    current_version_id = get_int(d, CURRENT_VERSION_ID, what)
    versions = tuple(version_from_dict(v) for v in get_list(d, VERSIONS, what))
    log = tuple(_history_entry_from_dict(e) for e in get_list(d, VERSION_LOG, what))
    properties = _string_map(d[PROPERTIES], "view properties") if d.get(PROPERTIES) is not None else None

    schema_ids = [s.schema_id for s in schemas]
    if len(set(schema_ids)) != len(schema_ids):
        raise InvalidMetadata(f"view metadata has two schemas with one schema-id: {schema_ids}")
    version_ids = [v.version_id for v in versions]
    if len(set(version_ids)) != len(version_ids):
        raise InvalidMetadata(f"view metadata has two versions with one version-id: {version_ids}")
    if current_version_id not in version_ids:
        raise InvalidMetadata(
            f"current-version-id {current_version_id} is not among the versions {version_ids}"
        )
    current = versions[version_ids.index(current_version_id)]
    if current.schema_id not in schema_ids:
        raise InvalidMetadata(
            f"current version {current_version_id} has schema-id {current.schema_id}, "
            f"which is not among the schemas {schema_ids}"
        )
    return ViewMetadata(
        view_uuid=view_uuid,
        format_version=version,
        location=location,
        schemas=schemas,
        current_version_id=current_version_id,
        versions=versions,
        version_log=log,
        properties=properties if properties is not None else MappingProxyType({}),
    )


def view_metadata_from_json(text: str | bytes, *, location: str | None = None) -> ViewMetadata:
    """Parse view metadata JSON (optionally gzip-compressed). Errors name ``location``."""
    try:
        if isinstance(text, bytes):
            if text[:2] == GZIP_MAGIC:
                text = gzip.decompress(text)
            text = text.decode("utf-8")
        data = json.loads(text)
    except (OSError, EOFError, zlib.error, ValueError) as e:  # ValueError: bad UTF-8, JSON, huge ints
        raise InvalidMetadata(f"view metadata is not valid JSON ({e})", location=location) from e
    except RecursionError:
        raise InvalidMetadata(
            "view metadata is not valid JSON (nested too deeply)", location=location
        ) from None
    if not isinstance(data, dict):
        raise InvalidMetadata(
            f"view metadata must be a JSON object, got {type(data).__name__}", location=location
        )
    try:
        return view_metadata_from_dict(data)
    except Unsupported as e:
        if location and not str(e).startswith(location):
            raise Unsupported(f"{location}: {e}") from e
        raise
    except InvalidMetadata as e:
        if location and e.location is None:
            raise InvalidMetadata(str(e), location=location) from e
        raise
    except (TypeError, ValueError, AttributeError) as e:
        # Anything the checks above did not anticipate (a schema field of the wrong shape).
        raise InvalidMetadata(f"invalid view metadata: {e}", location=location) from e


__all__ = [
    "check_view_format_version",
    "representation_from_dict",
    "representation_to_dict",
    "version_from_dict",
    "version_to_dict",
    "view_metadata_from_dict",
    "view_metadata_from_json",
    "view_metadata_to_dict",
    "view_metadata_to_gzip",
    "view_metadata_to_json",
    "view_schema_to_dict",
]
