"""Table metadata JSON for format versions 1-4 (spec "Table Metadata Fields", Appendix C).

Reading accepts what Iceberg Java and PyIceberg write (``current-snapshot-id: -1`` as none,
v1's ``schema``/``partition-spec``, missing ``refs``). Writing emits exactly the keys a given
format version defines. Each snapshot's JSON text is cached on the snapshot object, so
writing metadata with a long history is string concatenation rather than re-encoding.
"""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from collections.abc import Callable, Mapping
from itertools import chain
from types import MappingProxyType
from typing import Any

from firn.errors import InvalidMetadata
from firn.spec.json_fields import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    all_longs,
    get_int,
    get_list,
    get_long,
    get_object,
    get_str,
    opt_int,
    opt_int_list,
    opt_list,
    opt_long,
    opt_str,
    optional,
)
from firn.spec.partitioning import PARTITION_FIELD_ID_START, PartitionSpec
from firn.spec.schema import Schema
from firn.spec.schema_json import (
    partition_field_to_json,
    partition_fields_from_json,
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from firn.spec.snapshots import (
    MAIN_BRANCH,
    BlobMetadata,
    EncryptionKey,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    RefType,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    StatisticsFile,
    summary_from_dict,
)
from firn.spec.sorting import UNSORTED, SortOrder
from firn.spec.summary import OPERATION
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import (
    MIN_FORMAT_VERSION_LISTS_ONLY,
    MIN_FORMAT_VERSION_NULL_CURRENT_SNAPSHOT,
    MIN_FORMAT_VERSION_REFS,
    MIN_FORMAT_VERSION_REQUIRED_TABLE_UUID,
    MIN_FORMAT_VERSION_ROOT_MANIFEST,
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
    check_format_version,
)
from firn.util.lru import LRUCache

GZIP_MAGIC = b"\x1f\x8b"


# -- snapshots --------------------------------------------------------------------------------
def snapshot_to_dict(s: Snapshot, format_version: int) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot-id": s.snapshot_id}
    if s.parent_snapshot_id is not None:
        out["parent-snapshot-id"] = s.parent_snapshot_id
    if format_version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        out["sequence-number"] = s.sequence_number
    out["timestamp-ms"] = s.timestamp_ms
    if s.root_manifest is not None:
        out["root-manifest"] = s.root_manifest
    if s.manifest_list is not None:
        out["manifest-list"] = s.manifest_list
    elif s.manifests is not None:
        out["manifests"] = list(s.manifests)
    out["summary"] = s.summary.to_dict()
    if s.schema_id is not None:
        out["schema-id"] = s.schema_id
    if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        if s.first_row_id is not None:
            out["first-row-id"] = s.first_row_id
        if s.added_rows is not None:
            out["added-rows"] = s.added_rows
    if s.key_id is not None:
        out["key-id"] = s.key_id
    return out


def _snapshot_json_text(s: Snapshot, format_version: int) -> str:
    cache: dict[int, str] = s.__dict__.setdefault("_json_cache", {})
    text = cache.get(format_version)
    if text is None:
        text = json.dumps(snapshot_to_dict(s, format_version), separators=(",", ":"))
        cache[format_version] = text
    return text


class _ItemsCache:
    """Values computed from a tuple of items (JSON texts, gzip members), keyed by a caller's
    prefix plus the identity of the last item, and checked against the cached items by tuple
    equality — a C loop that stops at the first difference and short-cuts on identical objects,
    so the common case (a commit's tuple extends its parent's) costs no per-item Python work,
    where a key holding every item would cost work proportional to the history on every commit.
    The cached tuple keeps its last item alive, so the identity in a key cannot be reused by
    another object while the entry exists. Stored in an :class:`LRUCache` of ``capacity``
    entries (thread-safe: commits to different tables may run in threads)."""

    def __init__(self, capacity: int) -> None:
        self._lru: LRUCache[tuple[tuple[Any, ...], Any]] = LRUCache(capacity)

    def get(self, prefix: tuple[object, ...], items: tuple[Any, ...]) -> Any:
        hit = self._lru.get((*prefix, id(items[-1])))
        if hit is not None and (hit[0] is items or hit[0] == items):
            return hit[1]
        return None

    def put(self, prefix: tuple[object, ...], items: tuple[Any, ...], value: Any) -> None:
        self._lru.put((*prefix, id(items[-1])), (items, value))


class _JoinCache:
    """Joined JSON texts of growing lists (snapshots, snapshot log), so a commit appends one
    item to its parent's text instead of re-joining the history (DESIGN: commit cost must not
    grow with history)."""

    def __init__(self, capacity: int = 64) -> None:
        self._cache = _ItemsCache(capacity)

    def join(self, marker: object, items: tuple[Any, ...], text_of: Callable[[Any], str]) -> str:
        if not items:
            return ""
        text: str | None = self._cache.get((marker, len(items)), items)
        if text is not None:
            return text
        prefix = self._cache.get((marker, len(items) - 1), items[:-1]) if len(items) > 1 else None
        if prefix is not None:
            text = f"{prefix},{text_of(items[-1])}"
        else:
            text = ",".join(map(text_of, items))
        self._cache.put((marker, len(items)), items, text)
        return text


_join_cache = _JoinCache()


def _snapshots_text(snapshots: tuple[Snapshot, ...], version: int) -> str:
    return _join_cache.join(("snapshots", version), snapshots, lambda s: _snapshot_json_text(s, version))


def _snapshot_log_entry_text(e: SnapshotLogEntry) -> str:
    return f'{{"timestamp-ms":{e.timestamp_ms},"snapshot-id":{e.snapshot_id}}}'


def _snapshot_log_text(log: tuple[SnapshotLogEntry, ...]) -> str:
    return _join_cache.join("snapshot-log", log, _snapshot_log_entry_text)


def snapshot_from_dict(d: Mapping[str, Any], format_version: int) -> Snapshot:
    """A snapshot from its JSON object; a field of the wrong type or width is an
    ``InvalidMetadata`` naming the snapshot and the field."""
    if type(d) is dict:
        # Every snapshot of a metadata file passes here, so the common case is checked
        # inline (field readers would add a third to the parse time); anything else goes
        # through the field readers below, which raise the precise error.
        get = d.get
        sid, ts, parent, seq = (
            get("snapshot-id"),
            get("timestamp-ms"),
            get("parent-snapshot-id"),
            get("sequence-number"),
        )
        schema_id, first, added = get("schema-id"), get("first-row-id"), get("added-rows")
        manifest_list, root, key_id = get("manifest-list"), get("root-manifest"), get("key-id")
        summary = get("summary")
        if (
            type(sid) is int
            and type(ts) is int
            and type(parent) in _INT_OR_NONE
            and type(seq) in _INT_OR_NONE
            and type(schema_id) in _INT_OR_NONE
            and type(first) in _INT_OR_NONE
            and type(added) in _INT_OR_NONE
            and type(manifest_list) in _STR_OR_NONE
            and type(root) in _STR_OR_NONE
            and type(key_id) in _STR_OR_NONE
            and type(summary) is dict
            and "manifests" not in d
            and LONG_MIN <= sid <= LONG_MAX
            and LONG_MIN <= ts <= LONG_MAX
            and (parent is None or LONG_MIN <= parent <= LONG_MAX)
            and (seq is None or LONG_MIN <= seq <= LONG_MAX)
            and (schema_id is None or INT_MIN <= schema_id <= INT_MAX)
            and (first is None or LONG_MIN <= first <= LONG_MAX)
            and (added is None or LONG_MIN <= added <= LONG_MAX)
        ):
            return Snapshot(
                snapshot_id=sid,
                parent_snapshot_id=parent,
                sequence_number=seq or 0,
                timestamp_ms=ts,
                summary=summary_from_dict(summary, snapshot_id=sid),
                manifest_list=manifest_list,
                schema_id=schema_id,
                first_row_id=first,
                added_rows=added,
                key_id=key_id,
                root_manifest=root,
            )
    what = f"snapshot {get_long(d, 'snapshot-id', 'snapshot')}"
    summary = get_object(
        optional(d, "summary", what) or {OPERATION: Operation.APPEND.value}, f"{what} summary"
    )
    manifests = optional(d, "manifests", what)
    if manifests is not None and not (
        isinstance(manifests, list) and all(isinstance(m, str) for m in manifests)
    ):
        raise InvalidMetadata(f"{what}: 'manifests' must be a list of strings, got {manifests!r}")
    return Snapshot(
        snapshot_id=d["snapshot-id"],
        parent_snapshot_id=opt_long(d, "parent-snapshot-id", what),
        sequence_number=opt_long(d, "sequence-number", what) or 0,
        timestamp_ms=get_long(d, "timestamp-ms", what),
        summary=summary_from_dict(summary, snapshot_id=d["snapshot-id"]),
        manifest_list=opt_str(d, "manifest-list", what),
        schema_id=opt_int(d, "schema-id", what),
        first_row_id=opt_long(d, "first-row-id", what),
        added_rows=opt_long(d, "added-rows", what),
        key_id=opt_str(d, "key-id", what),
        root_manifest=opt_str(d, "root-manifest", what),
        manifests=tuple(manifests) if manifests is not None else None,
    )


# Types of JSON values the inline check of snapshot_from_dict accepts.
_INT_OR_NONE = frozenset((int, type(None)))
_STR_OR_NONE = frozenset((str, type(None)))


# Parsed snapshots of recently read tables (16), by table, then by snapshot id: reused when a
# later metadata file of the same table holds an identical snapshot object. Snapshots are
# immutable, so a refresh after another writer's commit builds only the new ones (DESIGN:
# commit cost, including a retry's refresh, must not grow with history). Reuse requires the
# JSON objects to be equal, so a hit is exactly what parsing would have produced; but Python
# finds ``1.0`` and ``true`` equal to ``1``, and a file holding them where an integer belongs
# must be refused, not served what an earlier, valid file parsed. So equality decides a hit
# only when no top-level value of the file's snapshots is a float or a bool (one C-level pass
# over them, at the first hit); otherwise every snapshot is parsed. (The nested values the
# parser reads, summary values and v1 manifest paths, must be strings, and a string equals
# only a string.)
_parse_cache: LRUCache[dict[int, tuple[Mapping[str, Any], Snapshot]]] = LRUCache(16)
_NOT_INTEGERS = frozenset((float, bool))


def _no_floats_or_bools(raw: list[Any]) -> bool:
    try:
        return _NOT_INTEGERS.isdisjoint(map(type, chain.from_iterable(map(dict.values, raw))))
    except TypeError:  # an item is not a JSON object: parsing it raises the error
        return False


def _snapshots_from_dicts(raw: list[Any], v: int, table_key: object) -> tuple[Snapshot, ...]:
    if not raw:
        return ()
    known = _parse_cache.setdefault(table_key, {})
    reusable: bool | None = None  # decided at the first hit
    seen: dict[int, tuple[Mapping[str, Any], Snapshot]] = {}
    out = []
    for d in raw:
        sid = d.get("snapshot-id") if type(d) is dict else None
        hit = known.get(sid) if type(sid) is int else None
        if hit is not None and hit[0] == d:
            if reusable is None:
                reusable = _no_floats_or_bools(raw)
            if reusable:
                seen[hit[1].snapshot_id] = hit
                out.append(hit[1])
                continue
        snap = snapshot_from_dict(d, v)
        seen[snap.snapshot_id] = (d, snap)
        out.append(snap)
    # Keep exactly this file's snapshots: expired ones drop out, the cache stays bounded.
    known.clear()
    known.update(seen)
    return tuple(out)


# -- refs, stats, logs ------------------------------------------------------------------------
def ref_to_dict(r: SnapshotRef) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot-id": r.snapshot_id, "type": r.ref_type.value}
    if r.min_snapshots_to_keep is not None:
        out["min-snapshots-to-keep"] = r.min_snapshots_to_keep
    if r.max_snapshot_age_ms is not None:
        out["max-snapshot-age-ms"] = r.max_snapshot_age_ms
    if r.max_ref_age_ms is not None:
        out["max-ref-age-ms"] = r.max_ref_age_ms
    return out


def ref_from_dict(d: Mapping[str, Any], *, name: str | None = None) -> SnapshotRef:
    what = f"ref {name!r}" if name is not None else "ref"
    kind = get_str(d, "type", what)
    try:
        ref_type = RefType(kind.lower())
    except ValueError:
        raise InvalidMetadata(f"{what}: 'type' must be 'branch' or 'tag', got {kind!r}") from None
    return SnapshotRef(
        snapshot_id=get_long(d, "snapshot-id", what),
        ref_type=ref_type,
        min_snapshots_to_keep=opt_int(d, "min-snapshots-to-keep", what),
        max_snapshot_age_ms=opt_long(d, "max-snapshot-age-ms", what),
        max_ref_age_ms=opt_long(d, "max-ref-age-ms", what),
    )


def statistics_to_dict(s: StatisticsFile) -> dict[str, Any]:
    out: dict[str, Any] = {
        "snapshot-id": s.snapshot_id,
        "statistics-path": s.statistics_path,
        "file-size-in-bytes": s.file_size_in_bytes,
        "file-footer-size-in-bytes": s.file_footer_size_in_bytes,
    }
    if s.key_metadata is not None:
        out["key-metadata"] = s.key_metadata
    blobs = []
    for b in s.blob_metadata:
        item: dict[str, Any] = {
            "type": b.type,
            "snapshot-id": b.snapshot_id,
            "sequence-number": b.sequence_number,
            "fields": list(b.fields),
        }
        if b.properties:
            item["properties"] = dict(b.properties)
        blobs.append(item)
    out["blob-metadata"] = blobs
    return out


def statistics_from_dict(d: Mapping[str, Any]) -> StatisticsFile:
    what = f"statistics file of snapshot {get_long(d, 'snapshot-id', 'statistics file')}"
    return StatisticsFile(
        snapshot_id=d["snapshot-id"],
        statistics_path=get_str(d, "statistics-path", what),
        file_size_in_bytes=get_long(d, "file-size-in-bytes", what),
        file_footer_size_in_bytes=get_long(d, "file-footer-size-in-bytes", what),
        key_metadata=opt_str(d, "key-metadata", what),
        blob_metadata=tuple(_blob_from_dict(b, f"{what} blob") for b in opt_list(d, "blob-metadata", what)),
    )


def _blob_from_dict(b: Mapping[str, Any], what: str) -> BlobMetadata:
    properties = optional(b, "properties", what)
    return BlobMetadata(
        type=get_str(b, "type", what),
        snapshot_id=get_long(b, "snapshot-id", what),
        sequence_number=get_long(b, "sequence-number", what),
        fields=opt_int_list(b, "fields", what) or (),
        properties=MappingProxyType(dict(get_object(properties, f"{what} properties")))
        if properties
        else None,
    )


# -- table metadata ---------------------------------------------------------------------------
def metadata_to_json(md: TableMetadata) -> str:
    """Serialize to the JSON text a given format version defines."""
    head_text, tail_text = _head_and_tail(md)
    snapshots = _snapshots_text(md.snapshots, md.format_version)
    log = _snapshot_log_text(md.snapshot_log)
    return f'{head_text[:-1]},"snapshots":[{snapshots}],"snapshot-log":[{log}],{tail_text[1:]}'


def _head_and_tail(md: TableMetadata) -> tuple[str, str]:
    """The JSON objects of every field before ``snapshots`` and after ``snapshot-log``."""
    v = md.format_version
    head: dict[str, Any] = {"format-version": v, "table-uuid": str(md.table_uuid), "location": md.location}
    if v >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        head["last-sequence-number"] = md.last_sequence_number
    head["last-updated-ms"] = md.last_updated_ms
    head["last-column-id"] = md.last_column_id
    if v < MIN_FORMAT_VERSION_LISTS_ONLY:
        head["schema"] = schema_to_json(md.schema())
    head["current-schema-id"] = md.current_schema_id
    head["schemas"] = [schema_to_json(s) for s in md.schemas]
    if v < MIN_FORMAT_VERSION_LISTS_ONLY:
        head["partition-spec"] = [partition_field_to_json(f) for f in md.spec().fields]
    head["default-spec-id"] = md.default_spec_id
    head["partition-specs"] = [partition_spec_to_json(s) for s in md.partition_specs]
    head["last-partition-id"] = md.last_partition_id
    head["default-sort-order-id"] = md.default_sort_order_id
    head["sort-orders"] = [sort_order_to_json(o) for o in md.sort_orders]
    head["properties"] = dict(md.properties)
    if md.current_snapshot_id is not None:
        head["current-snapshot-id"] = md.current_snapshot_id
    elif v < MIN_FORMAT_VERSION_NULL_CURRENT_SNAPSHOT:
        head["current-snapshot-id"] = -1
    if v >= MIN_FORMAT_VERSION_REFS:
        head["refs"] = {name: ref_to_dict(r) for name, r in md.refs.items()}
    tail: dict[str, Any] = {
        "statistics": [statistics_to_dict(s) for s in md.statistics],
        "partition-statistics": [
            {
                "snapshot-id": p.snapshot_id,
                "statistics-path": p.statistics_path,
                "file-size-in-bytes": p.file_size_in_bytes,
            }
            for p in md.partition_statistics
        ],
        "metadata-log": [
            {"timestamp-ms": e.timestamp_ms, "metadata-file": e.metadata_file} for e in md.metadata_log
        ],
    }
    if v >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        tail["next-row-id"] = md.next_row_id if md.next_row_id is not None else 0
        if md.encryption_keys:
            tail["encryption-keys"] = [
                {
                    "key-id": k.key_id,
                    "encrypted-key-metadata": k.encrypted_key_metadata,
                    **({"encrypted-by-id": k.encrypted_by_id} if k.encrypted_by_id else {}),
                    **({"properties": dict(k.properties)} if k.properties else {}),
                }
                for k in md.encryption_keys
            ]
    return json.dumps(head, separators=(",", ":")), json.dumps(tail, separators=(",", ":"))


# -- gzip ---------------------------------------------------------------------------------------
# A gzip file may hold several members, one after another, that decompress as one stream
# (RFC 1952 2.2; Python's gzip module and Java's GZIPInputStream read them; PyIceberg reading
# such a file is tested). So the snapshot list is written in blocks of a fixed number of
# snapshots: a full block never changes while its snapshots stay, so each is compressed once
# and its member reused by every later commit; only the head, the last partial blocks and the
# tail are compressed per commit. At 1,000 snapshots that is about 5% of the text.
SNAPSHOT_BLOCK = 32
SNAPSHOT_LOG_BLOCK = 256
_FRESH_LEVEL = 1  # compressed on every commit: speed first
_BLOCK_LEVEL = 6  # compressed once per block


# Compressed gzip members of full blocks, by (marker, block index) and the block's items.
_member_cache = _ItemsCache(capacity=4096)


def metadata_to_gzip(md: TableMetadata) -> bytes:
    """The metadata JSON gzip-compressed as several members; decompresses to exactly
    :func:`metadata_to_json`. Compression work per commit does not grow with the history."""
    v = md.format_version
    head_text, tail_text = _head_and_tail(md)
    members: list[bytes] = []
    fresh: list[str] = [head_text[:-1], ',"snapshots":[']

    def flush() -> None:
        if fresh:
            members.append(gzip.compress("".join(fresh).encode("utf-8"), compresslevel=_FRESH_LEVEL, mtime=0))
            fresh.clear()

    def blocks(marker: object, items: tuple[Any, ...], size: int, text_of: Callable[[Any], str]) -> None:
        full = len(items) // size
        for k in range(full):
            block = items[k * size : (k + 1) * size]
            sep = "," if k else ""
            member = _member_cache.get((marker, k), block)
            if member is None:
                text = sep + ",".join(map(text_of, block))
                member = gzip.compress(text.encode("utf-8"), compresslevel=_BLOCK_LEVEL, mtime=0)
                _member_cache.put((marker, k), block, member)
            flush()
            members.append(member)
        rest = items[full * size :]
        if rest:
            fresh.append(("," if full else "") + ",".join(map(text_of, rest)))

    blocks(("snapshots", v), md.snapshots, SNAPSHOT_BLOCK, lambda s: _snapshot_json_text(s, v))
    fresh.append('],"snapshot-log":[')
    blocks("snapshot-log", md.snapshot_log, SNAPSHOT_LOG_BLOCK, _snapshot_log_entry_text)
    fresh.append("],")
    fresh.append(tail_text[1:])
    flush()
    return b"".join(members)


def metadata_from_json(text: str | bytes, *, location: str | None = None) -> TableMetadata:
    """Parse metadata JSON (optionally gzip-compressed). Errors name ``location``."""
    try:
        if isinstance(text, bytes):
            if text[:2] == GZIP_MAGIC:
                text = gzip.decompress(text)
            text = text.decode("utf-8")
        data = json.loads(text)
    except (OSError, EOFError, zlib.error, ValueError) as e:  # ValueError: bad UTF-8, JSON, huge ints
        raise InvalidMetadata(f"table metadata is not valid JSON ({e})", location=location) from e
    except RecursionError:
        raise InvalidMetadata(
            "table metadata is not valid JSON (nested too deeply)", location=location
        ) from None
    if not isinstance(data, dict):
        raise InvalidMetadata("table metadata must be a JSON object", location=location)
    try:
        return metadata_from_dict(data, location=location)
    except InvalidMetadata as e:
        if location and e.location is None:
            raise InvalidMetadata(str(e), location=location) from e
        raise


def metadata_from_dict(d: Mapping[str, Any], *, location: str | None = None) -> TableMetadata:
    if "format-version" not in d:
        raise InvalidMetadata("table metadata is missing format-version", location=location)
    v = check_format_version(d["format-version"], location=location)
    try:
        return _metadata_from_dict(d, v)
    except InvalidMetadata:
        raise
    except KeyError as e:
        raise InvalidMetadata(
            f"table metadata is missing required field {e.args[0]!r}", location=location
        ) from None
    except (TypeError, ValueError, AttributeError) as e:
        raise InvalidMetadata(f"invalid table metadata: {e}", location=location) from e


def _schemas_from_dict(d: Mapping[str, Any]) -> tuple[tuple[Schema, ...], int]:
    """The schemas and the current schema id; v1 may carry only the deprecated ``schema``."""
    if d.get("schemas"):
        schemas = tuple(schema_from_json(s) for s in get_list(d, "schemas", "table metadata"))
        current_schema_id = opt_int(d, "current-schema-id", "table metadata")
        if current_schema_id is None:
            current_schema_id = schemas[0].schema_id
    elif "schema" in d:
        s = schema_from_json(d["schema"])
        schemas = (s,)
        current_schema_id = s.schema_id
    else:
        raise KeyError("schemas")
    if current_schema_id not in {s.schema_id for s in schemas}:
        raise InvalidMetadata(f"current-schema-id {current_schema_id} is not among the schemas")
    return schemas, current_schema_id


def _specs_from_dict(d: Mapping[str, Any]) -> tuple[tuple[PartitionSpec, ...], int, int]:
    """The partition specs, the default spec id and the last partition id; v1 may carry only
    the deprecated ``partition-spec`` (its field ids then count from 1000)."""
    if d.get("partition-specs"):
        specs = tuple(partition_spec_from_json(s) for s in get_list(d, "partition-specs", "table metadata"))
        default_spec_id = opt_int(d, "default-spec-id", "table metadata")
        if default_spec_id is None:
            default_spec_id = specs[0].spec_id
    elif "partition-spec" in d:
        specs = (PartitionSpec(0, partition_fields_from_json(d["partition-spec"], implicit_ids=True)),)
        default_spec_id = 0
    else:
        raise KeyError("partition-specs")
    if default_spec_id not in {s.spec_id for s in specs}:
        raise InvalidMetadata(f"default-spec-id {default_spec_id} is not among the partition specs")
    last_partition_id = opt_int(d, "last-partition-id", "table metadata")
    if last_partition_id is None:
        last_partition_id = max(
            (f.field_id for s in specs for f in s.fields), default=PARTITION_FIELD_ID_START - 1
        )
    return specs, default_spec_id, last_partition_id


def _sort_orders_from_dict(d: Mapping[str, Any]) -> tuple[tuple[SortOrder, ...], int]:
    if d.get("sort-orders"):
        sort_orders = tuple(sort_order_from_json(o) for o in get_list(d, "sort-orders", "table metadata"))
        default_id = opt_int(d, "default-sort-order-id", "table metadata")
        return sort_orders, sort_orders[0].order_id if default_id is None else default_id
    return (UNSORTED,), UNSORTED.order_id


def _refs_from_dict(d: Mapping[str, Any], current_snapshot_id: int | None) -> dict[str, SnapshotRef]:
    """The refs; metadata without ``refs`` (v1) gets ``main`` at the current snapshot."""
    refs = {
        str(k): ref_from_dict(r, name=str(k))
        for k, r in get_object(d.get("refs") or {}, "table metadata 'refs'").items()
    }
    if current_snapshot_id is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id, RefType.BRANCH)
    return refs


def _check_required(d: Mapping[str, Any], v: int) -> None:
    """Fields a format version requires beyond those every version needs."""
    if d.get("table-uuid") is None and v >= MIN_FORMAT_VERSION_REQUIRED_TABLE_UUID:
        raise KeyError("table-uuid")
    if v >= MIN_FORMAT_VERSION_ROW_LINEAGE and "next-row-id" not in d:
        raise KeyError("next-row-id")
    if d.get("location") is None and v < MIN_FORMAT_VERSION_ROOT_MANIFEST:
        raise KeyError("location")


def _metadata_from_dict(d: Mapping[str, Any], v: int) -> TableMetadata:
    schemas, current_schema_id = _schemas_from_dict(d)
    specs, default_spec_id, last_partition_id = _specs_from_dict(d)
    sort_orders, default_sort_order_id = _sort_orders_from_dict(d)
    current_snapshot_id = opt_long(d, "current-snapshot-id", _TABLE)
    if current_snapshot_id == -1:
        current_snapshot_id = None
    snapshots = _snapshots_from_dicts(opt_list(d, "snapshots", _TABLE), v, (d.get("table-uuid"), v))
    if current_snapshot_id is not None and current_snapshot_id not in {s.snapshot_id for s in snapshots}:
        raise InvalidMetadata(f"current-snapshot-id {current_snapshot_id} is not among the snapshots")
    refs = _refs_from_dict(d, current_snapshot_id)
    _check_required(d, v)
    uuid_text = opt_str(d, "table-uuid", _TABLE)
    return TableMetadata(
        format_version=v,
        table_uuid=uuid.UUID(uuid_text) if uuid_text is not None else uuid.uuid4(),
        location=opt_str(d, "location", _TABLE) or "",
        last_sequence_number=opt_long(d, "last-sequence-number", _TABLE) or 0,
        last_updated_ms=get_long(d, "last-updated-ms", _TABLE),
        last_column_id=get_int(d, "last-column-id", _TABLE),
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        sort_orders=sort_orders,
        default_sort_order_id=default_sort_order_id,
        properties=MappingProxyType({str(k): str(val) for k, val in (d.get("properties") or {}).items()}),
        current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=_snapshot_log_from_list(opt_list(d, "snapshot-log", _TABLE)),
        metadata_log=tuple(
            MetadataLogEntry(
                get_str(e, "metadata-file", _METADATA_LOG), get_long(e, "timestamp-ms", _METADATA_LOG)
            )
            for e in opt_list(d, "metadata-log", _TABLE)
        ),
        refs=MappingProxyType(refs),
        statistics=tuple(statistics_from_dict(s) for s in opt_list(d, "statistics", _TABLE)),
        partition_statistics=tuple(
            _partition_statistics_from_dict(p) for p in opt_list(d, "partition-statistics", _TABLE)
        ),
        next_row_id=opt_long(d, "next-row-id", _TABLE),
        encryption_keys=tuple(_encryption_key_from_dict(k) for k in opt_list(d, "encryption-keys", _TABLE)),
    )


_TABLE = "table metadata"
_SNAPSHOT_LOG = "snapshot-log entry"
_METADATA_LOG = "metadata-log entry"


def _snapshot_log_from_list(entries: list[Any]) -> tuple[SnapshotLogEntry, ...]:
    """The snapshot log; as long as the history, so the common case is checked a column at a
    time in C loops, and only a log that fails the check is read entry by entry for the error."""
    try:
        ids = [e["snapshot-id"] for e in entries]
        stamps = [e["timestamp-ms"] for e in entries]
    except (KeyError, TypeError, IndexError):
        pass
    else:
        if all_longs(ids) and all_longs(stamps):
            return tuple(map(SnapshotLogEntry, ids, stamps))
    return tuple(
        SnapshotLogEntry(
            get_long(e, "snapshot-id", _SNAPSHOT_LOG), get_long(e, "timestamp-ms", _SNAPSHOT_LOG)
        )
        for e in entries
    )


def _partition_statistics_from_dict(p: Mapping[str, Any]) -> PartitionStatisticsFile:
    what = f"partition statistics file of snapshot {get_long(p, 'snapshot-id', 'partition statistics file')}"
    return PartitionStatisticsFile(
        p["snapshot-id"], get_str(p, "statistics-path", what), get_long(p, "file-size-in-bytes", what)
    )


def _encryption_key_from_dict(k: Mapping[str, Any]) -> EncryptionKey:
    what = f"encryption key {get_str(k, 'key-id', 'encryption key')!r}"
    properties = optional(k, "properties", what)
    return EncryptionKey(
        k["key-id"],
        get_str(k, "encrypted-key-metadata", what),
        opt_str(k, "encrypted-by-id", what),
        MappingProxyType(dict(get_object(properties, f"{what} properties"))) if properties else None,
    )


__all__ = [
    "metadata_from_dict",
    "metadata_from_json",
    "metadata_to_gzip",
    "metadata_to_json",
    "ref_from_dict",
    "ref_to_dict",
    "snapshot_from_dict",
    "snapshot_to_dict",
]
