"""``table.health()``: how much a table needs maintenance, from its metadata alone.

A :class:`TableHealth` is read from the table metadata (snapshots, properties), the current
snapshot's manifest list (v1-v3) or root manifest (V4), and a *projected* read of the
manifests (or V4 leaves) it names: only each entry's status, content, file format, record
count and size. Data and delete files are never opened.

It is cheap enough for a sensor polling every 30 s. Manifests, leaves, manifest lists and
roots are immutable, so what each manifest contributes (files, bytes, small files, deletes)
and each snapshot's totals are cached in this process by path: polling an unchanged table
reads nothing, and a poll after one append reads the new manifest list (or root) and one
manifest. ``bench/bench_health.py`` measures it.

Definitions (all counts are of *live* entries of the current snapshot: ADDED or EXISTING,
minus V4 entries a manifest DV removes):

* ``small_files``: data files smaller than ``0.75 x write.target-file-size-bytes``, which is
  Iceberg's default ``min-file-size-bytes`` for ``rewrite_data_files``, so these are the files
  bin-pack compaction would pick up.
* ``deletion_vectors``: delete files in Puffin (v3 DVs, V4 DVs); ``position_delete_files``:
  v2-style position delete files; ``equality_delete_files``; ``delete_files`` is their sum.
* ``position_deletes``: rows deleted by position delete files and DVs (their record counts,
  which for a DV is its cardinality), as Iceberg's ``total-position-deletes``;
  ``equality_deletes``: rows of equality delete files.
* ``delete_ratio``: ``(position_deletes + equality_deletes) / records``, capped at 1 (0 for
  an empty table). It estimates the share of rows a reader must filter out. It overcounts
  when deletes are dangling (their data file is gone) and is only a proxy for equality
  deletes, one of which may match no row or many.
* ``manifests``: manifests of the manifest list (v1-v3) or leaf manifests of the root (V4);
  ``small_manifests``: v1-v3 manifests smaller than ``0.75 x commit.manifest.target-size-bytes``;
  V4 leaves holding fewer than ``0.75 x commit.leaf.target-entries`` live entries.
* V4 only: ``root_entries`` (live entries in the root manifest, the rows every commit rewrites;
  the DELETED entries a commit records for its own removals are dropped by the next commit),
  ``root_bytes`` (its size), ``root_data_files``, ``root_delete_files`` (DVs and equality
  deletes), ``root_manifest_dvs`` (live entries of each kind in the root).
* ``last_commit_ms``: when the metadata was last committed (``last-updated-ms``); sensors
  that wait for new data compare ``snapshot_id``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from firn.core.handle import TableHandle
from firn.core.legacy.reader import snapshot_manifests
from firn.core.planning import MAX_PLANNING_THREADS
from firn.core.v4.reader import decode_mdv, legacy_root, mdv_keep_mask
from firn.errors import InvalidMetadata
from firn.io.base import FileIO
from firn.maintenance.serde import from_jsonable, to_jsonable
from firn.manifests import avro_schemas as ids
from firn.manifests.projected import read_entry_columns
from firn.manifests.v4_io import CONTENT_KEY, FORMAT_VERSION_KEY, V4_FORMAT_VERSION
from firn.spec import summary as S
from firn.spec.content import EntryStatus, FileContent, FileFormat
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.arrow_chunks import bool_np
from firn.util.lru import CacheStats, LRUCache

# Iceberg's ``rewrite_data_files`` default ``min-file-size-bytes`` is 75% of the target size
# (Spark procedures, "rewrite_data_files" options); files below it are "small".
SMALL_FILE_RATIO = 0.75
# How many per-manifest summaries to keep (one small tuple each, about 200 bytes).
SUMMARY_CACHE_MANIFESTS = 200_000

_DELETED = int(EntryStatus.DELETED)
_DATA = int(FileContent.DATA)
_POSITION = int(FileContent.POSITION_DELETES)
_EQUALITY = int(FileContent.EQUALITY_DELETES)
_DATA_MANIFEST = int(FileContent.DATA_MANIFEST)
_DELETE_MANIFEST = int(FileContent.DELETE_MANIFEST)
_MANIFEST_DV = int(FileContent.MANIFEST_DV)
_PUFFIN = FileFormat.PUFFIN.value
_AVRO_FIELDS = (ids.CONTENT_ID, ids.FILE_FORMAT_ID, ids.RECORD_COUNT_ID, ids.FILE_SIZE_ID)
_LEAF_COLUMNS = ["content_type", "version_info.status", "file_format", "record_count", "file_size_in_bytes"]
_ROOT_COLUMNS = (
    "content_type",
    "version_info",
    "location",
    "file_format",
    "record_count",
    "file_size_in_bytes",
    "deletion_vector",
    "referenced_file",
)


@dataclass(frozen=True, kw_only=True)
class TableHealth:
    """Maintenance metrics of a table's current snapshot (see the module docstring for each).

    JSON-serializable (``to_dict`` / ``to_json`` / ``from_dict``); the ``root_*`` fields are
    None below format version 4.
    """

    table: str
    format_version: int
    snapshot_id: int | None
    measured_at_ms: int
    snapshots: int
    oldest_snapshot_age_ms: int | None
    last_commit_ms: int | None
    records: int
    data_files: int
    data_bytes: int
    small_files: int
    target_file_size_bytes: int
    delete_files: int
    deletion_vectors: int
    position_delete_files: int
    equality_delete_files: int
    position_deletes: int
    equality_deletes: int
    delete_ratio: float
    manifests: int
    small_manifests: int
    root_entries: int | None = None
    root_bytes: int | None = None
    root_data_files: int | None = None
    root_delete_files: int | None = None
    root_manifest_dvs: int | None = None

    @property
    def small_file_ratio(self) -> float:
        """``small_files / data_files`` (0 for a table without data files)."""
        return self.small_files / self.data_files if self.data_files else 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = to_jsonable(self)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableHealth:
        """The health ``to_dict`` produced (unknown keys are ignored, so older readers cope
        with newer fields)."""
        known = {f.name for f in fields(cls)}
        return from_jsonable(cls, {k: v for k, v in data.items() if k in known}, where="table health")


# -- per-manifest summaries ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Counts:
    """What the live entries of one manifest (or of the root itself) add up to."""

    entries: int = 0
    data_files: int = 0
    records: int = 0
    data_bytes: int = 0
    small_files: int = 0
    deletion_vectors: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    position_deletes: int = 0
    equality_deletes: int = 0

    def __add__(self, other: _Counts) -> _Counts:
        return _Counts(*(a + b for a, b in zip(_astuple(self), _astuple(other))))


def _astuple(c: _Counts) -> tuple[int, ...]:
    return (
        c.entries,
        c.data_files,
        c.records,
        c.data_bytes,
        c.small_files,
        c.deletion_vectors,
        c.position_delete_files,
        c.equality_delete_files,
        c.position_deletes,
        c.equality_deletes,
    )


_SUMMARIES: LRUCache[_Counts] = LRUCache(SUMMARY_CACHE_MANIFESTS)
# Whole snapshots' results by manifest list or root location (also immutable), so polling an
# unchanged table reads nothing at all.
_TREES: LRUCache[Any] = LRUCache(256)


def clear_health_cache() -> None:
    """Forget every cached summary (tests and benchmarks measure cold calls with it)."""
    _SUMMARIES.clear()
    _TREES.clear()


def health_cache_stats() -> CacheStats:
    """Hits and misses of the manifest-summary cache (a miss is a manifest read)."""
    return _SUMMARIES.stats()


def _count(
    status: np.ndarray,
    content: np.ndarray,
    puffin: np.ndarray,
    records: np.ndarray,
    sizes: np.ndarray,
    small_below: int,
    keep: np.ndarray | None = None,
) -> _Counts:
    live = status != _DELETED
    if keep is not None:
        live &= keep
    data = live & (content == _DATA)
    position = live & (content == _POSITION)
    dvs = position & puffin
    equality = live & (content == _EQUALITY)
    data_sizes = sizes[data]
    return _Counts(
        entries=int(live.sum()),
        data_files=int(data.sum()),
        records=int(records[data].sum()),
        data_bytes=int(data_sizes.sum()),
        small_files=int((data_sizes < small_below).sum()),
        deletion_vectors=int(dvs.sum()),
        position_delete_files=int((position & ~puffin).sum()),
        equality_delete_files=int(equality.sum()),
        position_deletes=int(records[position].sum()),
        equality_deletes=int(records[equality].sum()),
    )


def _is_puffin(formats: Sequence[str | None] | pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(formats, pa.Array | pa.ChunkedArray):
        lowered = pc.utf8_lower(formats)
        return bool_np(pc.equal(lowered, FileFormat.PUFFIN.value))
    # A manifest spells its formats a few ways ("PARQUET", "PUFFIN"): lower each distinct one
    # once, then look every entry up (C-level map, no Python frame per entry).
    is_puffin = {f: (f or "").lower() == _PUFFIN for f in set(formats)}
    if not any(is_puffin.values()):
        return np.zeros(len(formats), dtype=bool)
    return np.fromiter(map(is_puffin.__getitem__, formats), bool, len(formats))


def _avro_counts(io: FileIO, location: str, small_below: int, keep_ordinals: Any = None) -> _Counts:
    cols = read_entry_columns(io.new_input(location), _AVRO_FIELDS)
    n = len(cols)
    status = np.asarray(cols.status, dtype=np.int64)
    content_list = cols.fields[ids.CONTENT_ID]
    # Appendix E: v1 manifests have no content field; every entry is a data file.
    content = (
        np.zeros(n, dtype=np.int64) if content_list is None else np.asarray(content_list, dtype=np.int64)
    )
    formats = cols.fields[ids.FILE_FORMAT_ID] or [None] * n
    records = np.asarray(cols.fields[ids.RECORD_COUNT_ID] or [0] * n, dtype=np.int64)
    sizes = np.asarray(cols.fields[ids.FILE_SIZE_ID] or [0] * n, dtype=np.int64)
    keep = None if keep_ordinals is None else mdv_keep_mask(keep_ordinals, n)
    return _count(status, content, _is_puffin(formats), records, sizes, small_below, keep)


def _int_column(t: pa.Table, name: str) -> np.ndarray:
    """An integer column as int64 NumPy, nulls as 0; a column the writer omitted (all null,
    see ``v4_io._drop_all_null``) is all zeros."""
    if name not in t.column_names:
        return np.zeros(t.num_rows, dtype=np.int64)
    return np.asarray(pc.fill_null(t.column(name), 0).to_numpy(), dtype=np.int64)


# The columns every V4 manifest has (v4_io.REQUIRED_COLUMNS): without them it is not one.
_REQUIRED = ("content_type", "version_info", "file_format", "record_count")


def _read_v4(io: FileIO, location: str, columns: Sequence[str], kinds: tuple[bytes, ...]) -> pa.Table:
    """The named columns of a V4 manifest (those it has), after checking its key-value metadata
    (seed 004 "V4 Manifest Key Value Metadata"). Single-threaded: these files are small, and a
    thread pool costs more than it saves (and competes with the writers on a busy machine)."""
    file = io.new_input(location)
    try:
        with file.open_arrow() as f:
            file.read_limits.manifest.check(location, f.size())
            pf = pq.ParquetFile(f)
            meta = pf.metadata.metadata or {}
            present = set(pf.schema_arrow.names)
            t = pf.read(columns=[c for c in columns if c.split(".")[0] in present], use_threads=False)
    except (pa.ArrowException, OSError) as e:
        raise InvalidMetadata(f"not a readable V4 manifest (Parquet): {e}", location=location) from e
    if meta.get(FORMAT_VERSION_KEY) != V4_FORMAT_VERSION or meta.get(CONTENT_KEY) not in kinds:
        names = "/".join(k.decode() for k in kinds)
        raise InvalidMetadata(f"expected a V4 {names} manifest (format-version 4)", location=location)
    missing = [c for c in _REQUIRED if c not in present]
    if missing:
        raise InvalidMetadata(f"V4 manifest lacks required columns {missing}", location=location)
    return t


def _leaf_counts(io: FileIO, location: str, small_below: int, keep_ordinals: Any = None) -> _Counts:
    """A V4 leaf's counts from a Parquet read of five columns (no paths, no stats)."""
    t = _read_v4(io, location, _LEAF_COLUMNS, (b"data", b"delete"))
    n = t.num_rows
    status = pc.struct_field(t.column("version_info"), "status").to_numpy()
    keep = None if keep_ordinals is None else mdv_keep_mask(keep_ordinals, n)
    return _count(
        np.asarray(status, dtype=np.int64),
        _int_column(t, "content_type"),
        _is_puffin(t.column("file_format")),
        _int_column(t, "record_count"),
        _int_column(t, "file_size_in_bytes"),
        small_below,
        keep,
    )


@dataclass(frozen=True, slots=True)
class _Manifest:
    """A manifest to summarize: where, how big, which reader, and a manifest DV if one applies."""

    location: str
    length: int
    avro: bool
    mdv_key: bytes | None = None
    mdv: Any = None  # the manifest DV's bitmap (ordinals removed), when there is one


def _summarize(io: FileIO, manifests: Sequence[_Manifest], small_below: int) -> list[_Counts]:
    """Counts per manifest: from the cache, reading (in parallel) only the ones not seen."""
    out: list[_Counts | None] = []
    missing: list[int] = []
    for i, m in enumerate(manifests):
        hit = _SUMMARIES.get((m.location, m.length, small_below, m.mdv_key))
        out.append(hit)
        if hit is None:
            missing.append(i)

    def read(i: int) -> _Counts:
        m = manifests[i]
        reader = _avro_counts if m.avro else _leaf_counts
        counts = reader(io, m.location, small_below, m.mdv)
        _SUMMARIES.put((m.location, m.length, small_below, m.mdv_key), counts)
        return counts

    if len(missing) <= 2:
        for i in missing:
            out[i] = read(i)
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_PLANNING_THREADS, len(missing))) as pool:
            for i, counts in zip(missing, pool.map(read, missing)):
                out[i] = counts
    return [c if c is not None else _Counts() for c in out]


# -- the table ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Tree:
    counts: _Counts
    manifests: int
    small_manifests: int
    root: tuple[int, int, int, int, int] | None = None  # entries, bytes, data files, deletes, mdvs


def _legacy_tree(io: FileIO, md: TableMetadata, snapshot: Snapshot, small_below: int) -> _Tree:
    listed = snapshot_manifests(io, snapshot)
    small_manifest = SMALL_FILE_RATIO * md.table_properties.manifest_target_size_bytes
    per = _summarize(io, [_Manifest(m.manifest_path, m.manifest_length, True) for m in listed], small_below)
    total = sum(per, _Counts())
    return _Tree(total, len(listed), sum(1 for m in listed if m.manifest_length < small_manifest))


def _v4_tree(io: FileIO, md: TableMetadata, snapshot: Snapshot, small_below: int) -> _Tree:
    if snapshot.root_manifest is None:
        # Upgraded to V4 but not committed to since: the manifest list stands in for a root
        # (seed 004 "Upgrade"); there is no root manifest file yet.
        root = legacy_root(io, md, snapshot)
        root_bytes = 0
    else:
        root = _read_v4(io, snapshot.root_manifest, _ROOT_COLUMNS, (b"root",))
        size = snapshot.summary.get(S.ROOT_MANIFEST_SIZE)
        root_bytes = int(size) if size and size.isdigit() else io.new_input(snapshot.root_manifest).length()
    status = np.asarray(pc.struct_field(root.column("version_info"), "status").to_numpy(), dtype=np.int64)
    content = _int_column(root, "content_type")
    live = status != _DELETED
    n = int(np.count_nonzero(live))
    records = _int_column(root, "record_count")
    sizes = _int_column(root, "file_size_in_bytes")
    inline = _count(status, content, _is_puffin(root.column("file_format")), records, sizes, small_below)

    # Manifest DVs, by the leaf they apply to (seed 004 "Manifest Deletion Vectors").
    mdv_rows = np.nonzero(live & (content == _MANIFEST_DV))[0]
    mdvs: dict[str, tuple[bytes | None, Any]] = {}
    if len(mdv_rows):
        for row in (
            root.select(["location", "deletion_vector", "referenced_file"])
            .take(pa.array(mdv_rows))
            .to_pylist()
        ):
            bitmap = decode_mdv(io, row)
            mdvs[str(row["referenced_file"])] = (bitmap.serialize(), bitmap)
    leaf_rows = np.nonzero(live & ((content == _DATA_MANIFEST) | (content == _DELETE_MANIFEST)))[0]
    locations = root.column("location").take(pa.array(leaf_rows)).to_pylist() if len(leaf_rows) else []
    formats = root.column("file_format").take(pa.array(leaf_rows)).to_pylist() if len(leaf_rows) else []
    leaves = []
    for loc, fmt, row in zip(locations, formats, leaf_rows):
        key, bitmap = mdvs.get(loc, (None, None))
        is_avro = str(fmt).lower() == FileFormat.AVRO.value  # a legacy manifest of an upgraded table
        leaves.append(_Manifest(loc, int(sizes[row]), is_avro, key, bitmap))
    per = _summarize(io, leaves, small_below)
    small_leaf = SMALL_FILE_RATIO * md.table_properties.leaf_target_entries
    root_info = (
        n,
        root_bytes,
        inline.data_files,
        inline.deletion_vectors + inline.position_delete_files + inline.equality_delete_files,
        len(mdv_rows),
    )
    return _Tree(
        sum(per, inline),
        len(leaves),
        sum(1 for c in per if c.entries < small_leaf),
        root_info,
    )


def table_health(table: TableHandle, *, now_ms: int | None = None) -> TableHealth:
    """The :class:`TableHealth` of ``table``'s current snapshot, from metadata only (see the
    module docstring). ``now_ms`` fixes the measurement time (default: now)."""
    md = table.metadata
    measured = int(time.time() * 1000) if now_ms is None else now_ms
    target = md.table_properties.write_target_file_size_bytes
    small_below = int(SMALL_FILE_RATIO * target)
    snapshot = md.current_snapshot()
    timestamps = [s.timestamp_ms for s in md.snapshots]
    v4 = md.uses_root_manifest
    if snapshot is None:
        tree = _Tree(_Counts(), 0, 0, (0, 0, 0, 0, 0) if v4 else None)
    else:
        p = md.table_properties
        key = (
            snapshot.root_manifest or snapshot.manifest_list,
            v4,
            small_below,
            p.manifest_target_size_bytes,
            p.leaf_target_entries,
        )
        cached = _TREES.get(key) if key[0] is not None else None
        if cached is not None:
            tree = cached
        else:
            if snapshot.root_manifest is not None or v4:
                tree = _v4_tree(table.io, md, snapshot, small_below)
            else:
                tree = _legacy_tree(table.io, md, snapshot, small_below)
            _TREES.put(key, tree)
    c = tree.counts
    deleted = c.position_deletes + c.equality_deletes
    root = tree.root
    return TableHealth(
        table=table.name,
        format_version=md.format_version,
        snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
        measured_at_ms=measured,
        snapshots=len(timestamps),
        oldest_snapshot_age_ms=max(0, measured - min(timestamps)) if timestamps else None,
        last_commit_ms=md.last_updated_ms,
        records=c.records,
        data_files=c.data_files,
        data_bytes=c.data_bytes,
        small_files=c.small_files,
        target_file_size_bytes=target,
        delete_files=c.deletion_vectors + c.position_delete_files + c.equality_delete_files,
        deletion_vectors=c.deletion_vectors,
        position_delete_files=c.position_delete_files,
        equality_delete_files=c.equality_delete_files,
        position_deletes=c.position_deletes,
        equality_deletes=c.equality_deletes,
        delete_ratio=min(1.0, deleted / c.records) if c.records else 0.0,
        manifests=tree.manifests,
        small_manifests=tree.small_manifests,
        root_entries=root[0] if root else None,
        root_bytes=root[1] if root else None,
        root_data_files=root[2] if root else None,
        root_delete_files=root[3] if root else None,
        root_manifest_dvs=root[4] if root else None,
    )


__all__ = ["SMALL_FILE_RATIO", "TableHealth", "clear_health_cache", "health_cache_stats", "table_health"]
