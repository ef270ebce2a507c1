"""Reading only what reachability needs from a v1-v3 Avro manifest: each entry's status, its
snapshot id, and the tracked file's content, path, format and size.

Expiry and orphan removal ask "which files does this manifest track, and are they live?",
never for partitions or column stats. A fastavro *reader schema* holding just those fields
makes fastavro skip the rest of each entry instead of building dicts for the six stats maps
(notes perf §4a: the stats are what a full decode pays for). Fields are found by field id in
the file's own schema (spec Appendix A), so manifests from Java, PyIceberg and Firn all read.

Inheritance (spec "Sequence Number Inheritance"): an ADDED entry with a null snapshot id takes
the manifest's ``added_snapshot_id``; sequence numbers are not read.
"""

from __future__ import annotations

import copy
import functools
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from firn.errors import FirnError, InvalidMetadata
from firn.io.base import FileIO
from firn.manifests import _entry_codec as codec
from firn.manifests import avro_schemas as ids
from firn.manifests._avro_io import (
    check_array_items,
    corrupt,
    named_types,
    nested_record,
    open_avro,
    record_fields_by_id,
    require_field,
)
from firn.spec.content import EntryStatus, FileContent, ManifestFile

_ENTRY_IDS = (ids.STATUS_ID, ids.SNAPSHOT_ID_ID, ids.DATA_FILE_ID)
_FILE_IDS = (ids.CONTENT_ID, ids.FILE_PATH_ID, ids.FILE_FORMAT_ID, ids.FILE_SIZE_ID)


@dataclass(frozen=True, slots=True)
class ManifestPaths:
    """The entries of one manifest, column by column, in file order (position ``i`` is the
    entry's ordinal, which V4 manifest DVs address)."""

    location: str
    status: tuple[int, ...]
    snapshot_id: tuple[int | None, ...]
    content: tuple[int, ...]
    path: tuple[str, ...]
    file_format: tuple[str, ...]
    size: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.path)

    def live(self) -> list[int]:
        """Ordinals of the entries that are not DELETED."""
        deleted = int(EntryStatus.DELETED)
        return [i for i, s in enumerate(self.status) if s != deleted]


@dataclass(frozen=True, slots=True)
class _Projection:
    reader_schema: Any
    status: str
    snapshot_id: str | None
    data_file: str
    content: str | None
    path: str
    file_format: str
    size: str


def _inline(t: Any, named: Mapping[str, Any]) -> Any:
    """``t`` with named references to records replaced by their definitions, so a projected
    record schema is self-contained."""
    if isinstance(t, str):
        ref = named.get(t)
        return copy.deepcopy(ref) if ref is not None and ref.get("type") == "record" else t
    if isinstance(t, list):
        return [_inline(b, named) for b in t]
    return t


@functools.lru_cache(maxsize=128)
def _projection(schema_json: str) -> _Projection:
    # Keyed by the schema text: every manifest of one spec (and writer) shares it.
    writer = json.loads(schema_json)
    named = named_types(writer)
    entry = record_fields_by_id(writer, _ENTRY_IDS)
    n_status = require_field(entry, ids.STATUS_ID, "manifest_entry")
    n_df = require_field(entry, ids.DATA_FILE_ID, "manifest_entry")
    data_file = nested_record(entry[ids.DATA_FILE_ID], named)
    f = record_fields_by_id(data_file, _FILE_IDS)
    names = {fid: str(f[fid]["name"]) for fid in _FILE_IDS if fid in f}
    for required in (ids.FILE_PATH_ID, ids.FILE_FORMAT_ID, ids.FILE_SIZE_ID):
        require_field(f, required, "data_file")
    file_record = {
        **{k: v for k, v in data_file.items() if k != "fields"},
        "fields": [copy.deepcopy(f[fid]) for fid in _FILE_IDS if fid in f],
    }
    entry_fields = []
    for fid in _ENTRY_IDS:
        fld = entry.get(fid)
        if fld is None:
            continue
        if fid == ids.DATA_FILE_ID:
            entry_fields.append({**fld, "type": file_record})
        else:
            entry_fields.append({**fld, "type": _inline(fld["type"], named)})
    reader = {**{k: v for k, v in writer.items() if k != "fields"}, "fields": entry_fields}
    snap = entry.get(ids.SNAPSHOT_ID_ID)
    return _Projection(
        reader_schema=fastavro.parse_schema(reader),
        status=n_status,
        snapshot_id=None if snap is None else str(snap["name"]),
        data_file=n_df,
        content=names.get(ids.CONTENT_ID),
        path=names[ids.FILE_PATH_ID],
        file_format=names[ids.FILE_FORMAT_ID],
        size=names[ids.FILE_SIZE_ID],
    )


def read_manifest_paths(io_: FileIO, manifest: ManifestFile) -> ManifestPaths:
    """The entries of ``manifest`` (every status), reading only status, snapshot id, content,
    path, format and size. Raises ``InvalidMetadata`` naming the file when it is unreadable."""
    location = manifest.manifest_path
    file = io_.new_input(location)
    data = file.read(file.read_limits.manifest)
    generated = _read_generated(data, manifest)
    if generated is not None:
        return generated
    contents = open_avro(data, location)
    try:
        p = _projection(contents.schema_json)
        records: Iterator[dict[str, Any]] = iter(
            fastavro.reader(io.BytesIO(data), reader_schema=p.reader_schema)  # type: ignore[arg-type]
        )
        status: list[int] = []
        snaps: list[int | None] = []
        content: list[int] = []
        paths: list[str] = []
        formats: list[str] = []
        sizes: list[int] = []
        inherited = manifest.added_snapshot_id
        data_content = int(FileContent.DATA)
        n_status, n_snap, n_df = p.status, p.snapshot_id, p.data_file
        n_content, n_path, n_format, n_size = p.content, p.path, p.file_format, p.size
        for rec in records:
            f = rec[n_df]
            status.append(rec[n_status])
            sid = rec.get(n_snap) if n_snap is not None else None
            snaps.append(inherited if sid is None else sid)
            content.append(data_content if n_content is None else f[n_content])
            paths.append(f[n_path])
            formats.append(f[n_format])
            sizes.append(f[n_size])
    except FirnError:
        raise
    except Exception as e:  # truncated blocks, a schema fastavro cannot project, bad records
        raise corrupt(location, e) from e
    if any(s not in (0, 1, 2) for s in status):
        raise InvalidMetadata("manifest entry status outside 0..2", location=location)
    return ManifestPaths(
        location, tuple(status), tuple(snaps), tuple(content), tuple(paths), tuple(formats), tuple(sizes)
    )


def _read_generated(data: bytes, manifest: ManifestFile) -> ManifestPaths | None:
    """The columns by the decoder generated for the file's schema (``_entry_codec``), which
    steps over partitions and stats without building them; None when it does not handle the
    schema or codec (the caller then uses fastavro)."""
    location = manifest.manifest_path
    try:
        container = codec.read_container(data)
    except Exception as e:
        raise corrupt(location, e) from e
    if container.codec not in codec.GENERATED_CODECS:
        return None
    check_array_items(container.schema_json, location)
    try:
        _projection(container.schema_json)  # the required fields exist (raises ValueError)
        decoder = codec.entry_decoder(
            container.schema_json, (ids.STATUS_ID, ids.SNAPSHOT_ID_ID), _FILE_IDS, frozenset()
        )
        rows = codec.decode_entries(data, container, decoder)
    except codec.NotGenerated:
        return None
    except FirnError:
        raise
    except Exception as e:  # truncated blocks, bad varints, a schema without the fields
        raise corrupt(location, e) from e
    if not rows:
        return ManifestPaths(location, (), (), (), (), (), ())
    status, snaps, content, paths, formats, sizes = zip(*rows, strict=True)
    if not set(status) <= {0, 1, 2}:
        raise InvalidMetadata("manifest entry status outside 0..2", location=location)
    inherited = manifest.added_snapshot_id
    if None in snaps:
        snaps = tuple(inherited if s is None else s for s in snaps)
    if None in content:  # v1 manifests have no content field: every file is data
        data_content = int(FileContent.DATA)
        content = tuple(data_content if c is None else c for c in content)
    if not all(type(p) is str for p in paths) or not all(type(f) is str for f in formats):
        raise InvalidMetadata("data_file path or format is not a string", location=location)
    # A manifest spells its formats a few ways: keep one str object per spelling.
    spellings = {f: f for f in set(formats)}
    formats = tuple(map(spellings.__getitem__, formats))
    return ManifestPaths(location, status, snaps, content, paths, formats, sizes)


__all__ = ["ManifestPaths", "read_manifest_paths"]
