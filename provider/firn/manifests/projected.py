"""Projected reads of v1-v3 Avro manifests: the entry status and a few ``data_file`` fields.

Readers that need only some fields of every entry (``table.health()`` wants content, format,
record count and size) decode the manifest with an Avro *reader schema* holding just those
fields; fastavro then skips the rest (partition tuples, column stats) instead of building
Python objects for them. Fields are picked by field id (spec Appendix A "Field IDs"), so
manifests from Iceberg Java and PyIceberg read too. Nothing is cached here: callers cache
what they derive, keyed by the manifest's path (manifests are immutable).
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import fastavro

from firn.errors import FirnError, InvalidMetadata
from firn.io.base import InputFile
from firn.manifests import _entry_codec as codec
from firn.manifests._avro_io import (
    check_array_items,
    check_types,
    corrupt,
    named_types,
    nested_record,
    open_avro,
    record_fields_by_id,
    require_field,
    source_bytes,
)
from firn.spec import field_ids as ids
from firn.util.gc import gc_paused

_ENTRY_IDS = (
    ids.STATUS_ID,
    ids.SNAPSHOT_ID_ID,
    ids.SEQUENCE_NUMBER_ID,
    ids.FILE_SEQUENCE_NUMBER_ID,
    ids.DATA_FILE_ID,
)
_FILE_IDS = ids.DATA_FILE_FIELD_IDS
# The projectable data_file fields and their Avro types (the full list is in manifest.py).
PROJECTABLE_TYPES = {
    ids.CONTENT_ID: "int",
    ids.FILE_PATH_ID: "string",
    ids.FILE_FORMAT_ID: "string",
    ids.RECORD_COUNT_ID: "long",
    ids.FILE_SIZE_ID: "long",
    ids.REFERENCED_DATA_FILE_ID: "string",
}


@dataclass(frozen=True, slots=True)
class EntryColumns:
    """Every entry of one manifest (DELETED ones included, in file order): ``status`` and the
    requested ``data_file`` fields by field id; a field the file lacks (``content`` in a v1
    manifest) maps to None."""

    status: list[int]
    fields: Mapping[int, list[Any] | None]

    def __len__(self) -> int:
        return len(self.status)


@dataclass(frozen=True, slots=True)
class _Projection:
    schema: dict[str, Any]
    status: str  # record keys fastavro uses
    data_file: str
    names: dict[int, str]  # data_file field id -> key, for the fields the file has


def _projection(writer_schema: Mapping[str, Any], field_ids: Sequence[int], where: str) -> _Projection:
    """The writer schema cut down to ``status`` and the ``data_file`` fields ``field_ids``
    (names and record names kept, so Avro schema resolution matches them)."""
    named = named_types(writer_schema)
    entry = record_fields_by_id(writer_schema, _ENTRY_IDS)
    status = require_field(entry, ids.STATUS_ID, "manifest_entry")
    data_file = require_field(entry, ids.DATA_FILE_ID, "manifest_entry")
    file_record = nested_record(entry[ids.DATA_FILE_ID], named)
    file_fields = record_fields_by_id(file_record, _FILE_IDS)
    check_types(entry, {ids.STATUS_ID: "int"}, named, "manifest_entry")
    check_types(file_fields, {i: PROJECTABLE_TYPES[i] for i in field_ids}, named, "data_file")
    kept = [file_fields[i] for i in field_ids if i in file_fields]
    names = {i: str(file_fields[i]["name"]) for i in field_ids if i in file_fields}
    projected_file = {k: v for k, v in file_record.items() if k != "fields"}
    projected_file["fields"] = [dict(f) for f in kept]
    top = {k: v for k, v in writer_schema.items() if k != "fields"}
    top["fields"] = [
        dict(entry[ids.STATUS_ID]),
        {**entry[ids.DATA_FILE_ID], "type": projected_file},
    ]
    if not names and field_ids:
        raise InvalidMetadata(f"manifest data_file has none of the fields {list(field_ids)}", location=where)
    return _Projection(top, status, data_file, names)


def read_entry_columns(
    source: InputFile | bytes, field_ids: Sequence[int], *, location: str | None = None
) -> EntryColumns:
    """``status`` and the ``data_file`` fields ``field_ids`` (keys of :data:`PROJECTABLE_TYPES`)
    of every entry of a v1-v3 manifest, decoding nothing else."""
    unknown = [i for i in field_ids if i not in PROJECTABLE_TYPES]
    if unknown:
        raise ValueError(
            f"cannot project data_file fields {unknown}; projectable: {sorted(PROJECTABLE_TYPES)}"
        )
    data, where = source_bytes(source, location)
    generated = _read_generated(data, tuple(field_ids), where)
    if generated is not None:
        return generated
    contents = open_avro(data, where)
    try:
        p = _projection(contents.writer_schema, field_ids, where)
        n_status, n_file = p.status, p.data_file
        # The top-level schema is a record, so every datum is a dict.
        reader = cast(
            Iterator[dict[str, Any]], iter(fastavro.reader(io.BytesIO(data), reader_schema=p.schema))
        )
        status: list[int] = []
        columns: dict[int, list[Any]] = {i: [] for i in p.names}
        pairs = [(columns[i].append, name) for i, name in p.names.items()]
        with gc_paused():
            for rec in reader:
                status.append(rec[n_status])
                f = rec[n_file]
                for append, name in pairs:
                    append(f[name])
    except FirnError:
        raise
    except Exception as e:  # truncated blocks surface while iterating; bad records as Key/TypeError
        raise corrupt(where, e) from e
    return EntryColumns(status, {i: columns.get(i) for i in field_ids})


@functools.lru_cache(maxsize=128)
def _checked(schema_json: str, field_ids: tuple[int, ...]) -> tuple[int, ...]:
    """The requested fields the file has, after the same checks as the fastavro path (cached
    by schema text; a failing schema raises every time)."""
    p = _projection(json.loads(schema_json), field_ids, "<schema>")
    return tuple(p.names)


def _read_generated(data: bytes, field_ids: tuple[int, ...], where: str) -> EntryColumns | None:
    """The columns by the decoder generated for the file's schema (``_entry_codec``); None when
    it does not handle the schema or codec."""
    try:
        container = codec.read_container(data)
    except Exception as e:
        raise corrupt(where, e) from e
    if container.codec not in codec.GENERATED_CODECS:
        return None
    check_array_items(container.schema_json, where)
    try:
        try:
            present = set(_checked(container.schema_json, field_ids))
        except InvalidMetadata:
            _projection(json.loads(container.schema_json), field_ids, where)  # raises, naming the file
            raise
        decoder = codec.entry_decoder(container.schema_json, (ids.STATUS_ID,), field_ids, frozenset())
        with gc_paused():
            rows = codec.decode_entries(data, container, decoder)
    except codec.NotGenerated:
        return None
    except FirnError:
        raise
    except Exception as e:  # truncated blocks, bad varints, a schema that fails the type checks
        raise corrupt(where, e) from e
    if not rows:
        return EntryColumns([], {i: ([] if i in present else None) for i in field_ids})
    columns = list(zip(*rows, strict=True))
    return EntryColumns(
        list(columns[0]),
        {i: (list(columns[k + 1]) if i in present else None) for k, i in enumerate(field_ids)},
    )


__all__ = ["PROJECTABLE_TYPES", "EntryColumns", "read_entry_columns"]
