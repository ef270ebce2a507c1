"""fastavro plumbing shared by the manifest and manifest-list readers and writers.

Reading resolves fields **by field id** (STYLE 2; spec Appendix A "Field IDs"), not by name
or position: Java has renamed manifest-list fields over time (``added_data_files_count`` →
``added_files_count``) and writers differ in field order, but ids are stable.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import fastavro
from fastavro.write import Writer

from firn.errors import FirnError, InvalidMetadata, ValidationError
from firn.io.base import InputFile
from firn.spec.field_ids import MANIFEST_FIELD_NAMES

# Java's Avro block size (DataFileConstants.DEFAULT_SYNC_INTERVAL); fastavro defaults to 16000.
SYNC_INTERVAL = 64000
# Java writes manifests with deflate (write.avro.compression-codec "gzip"); so does PyIceberg.
DEFAULT_CODEC = "deflate"
SUPPORTED_CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz", "lz4")


@dataclass(frozen=True, slots=True)
class AvroContents:
    """An opened Avro object container file; ``records`` decodes lazily, block by block."""

    metadata: Mapping[str, str]
    schema_json: str
    writer_schema: dict[str, Any]
    records: Iterator[dict[Any, Any]]


def source_bytes(
    source: InputFile | bytes | bytearray | memoryview, location: str | None
) -> tuple[bytes, str]:
    """The bytes of ``source`` and the location to name in errors. A file is read whole,
    refused past its FileIO's manifest cap (``firn.io.limits``)."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), location or "<bytes>"
    return source.read(source.read_limits.manifest), location or source.location


def corrupt(location: str, error: BaseException) -> InvalidMetadata:
    """The error for a file that fastavro (or our decoding of its records) could not read."""
    return InvalidMetadata(
        f"not a readable Avro file ({type(error).__name__}: {error}); it may be truncated or corrupt",
        location=location,
    )


def open_avro(data: bytes, location: str) -> AvroContents:
    """Parse an Avro file's header. Errors while iterating ``records`` must be wrapped by the
    caller with :func:`corrupt`."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        metadata = reader.metadata
        writer_schema = reader.writer_schema
    except FirnError:
        raise
    except Exception as e:  # fastavro raises EOFError, ValueError, zlib.error, StopIteration, ...
        raise corrupt(location, e) from e
    if not isinstance(writer_schema, dict) or writer_schema.get("type") != "record":
        raise InvalidMetadata("Avro schema is not a record", location=location)
    check_array_items(str(metadata.get("avro.schema", "")), location)
    # The top-level schema is a record, so every datum fastavro yields is a dict.
    records = cast(Iterator[dict[Any, Any]], iter(reader))
    return AvroContents(metadata, str(metadata.get("avro.schema", "")), writer_schema, records)


def check_array_items(schema_json: str, location: str) -> None:
    """Refuse a schema with an array of zero-byte items (see :func:`_has_zero_byte_array_items`)."""
    if _has_zero_byte_array_items(schema_json):
        raise InvalidMetadata(
            "Avro schema has an array of zero-byte items; the file is corrupt or not an Iceberg file",
            location=location,
        )


_MIN_ENCODED_SIZE = {
    "null": 0,
    "boolean": 1,
    "int": 1,
    "long": 1,
    "float": 4,
    "double": 8,
    "bytes": 1,
    "string": 1,
}


@functools.lru_cache(maxsize=256)
def _has_zero_byte_array_items(schema_json: str) -> bool:
    """Whether the schema has an array whose items encode in zero bytes.

    A block of such items holds any count in a few bytes, so a damaged count makes a decoder
    build records until memory runs out (fastavro does: a flipped byte in a manifest's
    header turned an item record's fields into none, and decoding was killed by the OOM
    killer). No Iceberg manifest or manifest list has such a schema. Cached by the schema
    text, which every manifest of one spec shares."""
    try:
        schema = json.loads(schema_json)
    except ValueError:
        return False  # fastavro parsed the header; nothing else to check
    named: dict[str, Any] = {}
    found = False

    def min_size(s: Any, seen: frozenset[str]) -> int:
        if isinstance(s, str):
            if s in _MIN_ENCODED_SIZE:
                return _MIN_ENCODED_SIZE[s]
            if s in seen or s not in named:
                return 1  # recursive or unknown reference: fastavro rejects the unknown ones
            return min_size(named[s], seen | {s})
        if isinstance(s, list):  # a union: the branch index
            for branch in s:
                min_size(branch, seen)
            return 1
        if not isinstance(s, dict):
            return 1
        t = s.get("type")
        name = s.get("name")
        if isinstance(name, str) and t in ("record", "enum", "fixed"):
            named[name] = s
        if t == "record":
            return sum(min_size(f.get("type"), seen) for f in s.get("fields", ()))
        if t == "array":
            nonlocal found
            found = found or min_size(s.get("items"), seen) == 0
            return 1
        if t == "map":  # a map's keys are strings, so its items are never empty
            min_size(s.get("values"), seen)
            return 1
        if t == "fixed":
            return int(s.get("size", 0))
        if t == "enum":
            return 1
        return min_size(t, seen)

    min_size(schema, frozenset())
    return found


def write_avro(
    parsed_schema: Any,
    records: Iterable[dict[Any, Any]],
    metadata: Mapping[str, str],
    *,
    codec: str = DEFAULT_CODEC,
) -> bytes:
    """Encode records into an Avro object container file."""
    buf = io.BytesIO()
    writer = open_writer(buf, parsed_schema, metadata, codec=codec)
    write = writer.write
    for record in records:
        write(record)
    writer.flush()
    return buf.getvalue()


def open_writer(buf: io.BytesIO, parsed_schema: Any, metadata: Mapping[str, str], *, codec: str) -> Any:
    """A streaming fastavro writer (the header is written on the first flush)."""
    if codec not in SUPPORTED_CODECS:
        raise ValidationError(f"unsupported Avro codec {codec!r}; use one of {', '.join(SUPPORTED_CODECS)}")
    return Writer(buf, parsed_schema, codec=codec, sync_interval=SYNC_INTERVAL, metadata=dict(metadata))


# -- schema inspection (field-id resolution) ------------------------------------------------------
def non_null_branch(avro_type: Any) -> Any:
    """``T`` of an optional ``["null", T]`` union; other types unchanged."""
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        return branches[0] if len(branches) == 1 else avro_type
    return avro_type


# Both decode to Python ints, and writers differ (PyIceberg writes equality_ids as longs).
_NUMERIC_WIDENING = {"int": ("int", "long"), "long": ("int", "long")}


def check_types(
    fields: Mapping[int, Mapping[str, Any]], expected: Mapping[int, str], named: Mapping[str, Any], what: str
) -> None:
    """Raise ``ValueError`` when a present field's Avro type is not the expected one.

    ``expected`` maps field id to ``int``, ``long``, ``string``, ``bytes`` or ``array<T>``
    (``int`` and ``long`` accept each other). Records decode by the file's own schema, so a
    damaged header that retypes a field would otherwise hand a list or a number to code that
    wants a path (or split a string into "offsets") long after the file was read."""

    def base(t: Any) -> Any:
        t = non_null_branch(t)
        if isinstance(t, str):
            t = named.get(t, t)
        if isinstance(t, Mapping) and isinstance(t.get("type"), str) and t["type"] not in ("array", "record"):
            return t["type"]  # a primitive with attributes (logicalType, ...)
        return t

    for fid, want in expected.items():
        field = fields.get(fid)
        if field is None:
            continue
        got = base(field.get("type"))
        if want.startswith("array<"):
            item = want[len("array<") : -1]
            ok = (
                isinstance(got, Mapping)
                and got.get("type") == "array"
                and base(got.get("items")) in _NUMERIC_WIDENING.get(item, (item,))
            )
        else:
            ok = got in _NUMERIC_WIDENING.get(want, (want,))
        if not ok:
            raise ValueError(
                f"{what} field {field.get('name')!r} (id {fid}) has Avro type {got!r}, not {want}"
            )


def record_fields_by_id(record: Mapping[str, Any], known_ids: Iterable[int]) -> dict[int, Mapping[str, Any]]:
    """Map field id to the field object of an Avro record schema.

    Fields without a ``field-id`` fall back to the spec's name for one of ``known_ids`` (the
    ids this record may hold; names repeat across records, e.g. ``content`` is 134 and 517),
    so files from writers that omit ids still read.
    """
    by_id: dict[int, Mapping[str, Any]] = {}
    unnamed: list[Mapping[str, Any]] = []
    for f in record.get("fields", ()):
        fid = f.get("field-id")
        if fid is None:
            unnamed.append(f)
        else:
            by_id[int(fid)] = f
    if unnamed:
        ids_by_name = {MANIFEST_FIELD_NAMES[fid]: fid for fid in known_ids if fid in MANIFEST_FIELD_NAMES}
        for f in unnamed:
            fid = ids_by_name.get(f["name"])
            if fid is not None and fid not in by_id:
                by_id[fid] = f
    return by_id


def field_name(fields: Mapping[int, Mapping[str, Any]], field_id: int) -> str | None:
    """The record key fastavro uses for ``field_id``, or None when the file lacks the field."""
    f = fields.get(field_id)
    return None if f is None else str(f["name"])


def require_field(fields: Mapping[int, Mapping[str, Any]], field_id: int, what: str) -> str:
    """Like :func:`field_name` for a required field; raises ``ValueError`` when it is missing."""
    name = field_name(fields, field_id)
    if name is None:
        raise ValueError(
            f"{what} schema has no field with id {field_id} ({MANIFEST_FIELD_NAMES.get(field_id, '?')})"
        )
    return name


def nested_record(field: Mapping[str, Any], named: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record schema of a (possibly optional) record-typed field, resolving named references."""
    t = non_null_branch(field["type"])
    if isinstance(t, str):
        t = named.get(t, t)
    if isinstance(t, Mapping) and t.get("type") == "array":
        t = t["items"]
        if isinstance(t, str):
            t = named.get(t, t)
    if not isinstance(t, Mapping) or t.get("type") != "record":
        raise ValueError(f"field {field.get('name')!r} is not a record")
    return t


def named_types(schema: Any) -> dict[str, Any]:
    """Every named type (record, fixed, enum) defined in a schema, by name and full name."""
    out: dict[str, Any] = {}

    def visit(t: Any) -> None:
        if isinstance(t, list):
            for b in t:
                visit(b)
        elif isinstance(t, Mapping):
            name = t.get("name")
            if name and t.get("type") in ("record", "fixed", "enum"):
                out[str(name)] = t
                ns = t.get("namespace")
                if ns:
                    out[f"{ns}.{name}"] = t
            for f in t.get("fields", ()):
                visit(f.get("type"))
            if "items" in t:
                visit(t["items"])
            if "values" in t:
                visit(t["values"])

    visit(schema)
    return out


__all__ = [
    "DEFAULT_CODEC",
    "check_array_items",
    "check_types",
    "SUPPORTED_CODECS",
    "SYNC_INTERVAL",
    "AvroContents",
    "corrupt",
    "field_name",
    "named_types",
    "nested_record",
    "non_null_branch",
    "open_avro",
    "open_writer",
    "record_fields_by_id",
    "require_field",
    "source_bytes",
    "write_avro",
]
