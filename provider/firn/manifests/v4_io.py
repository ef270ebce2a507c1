"""Reading and writing V4 root and leaf manifests (Parquet; seed 004 "V4 Manifest Key Value
Metadata": ``format-version`` and ``content`` = ``root``/``data``/``delete``).

Reads validate the two-level tree (seed 004 "Root Manifests"): leaves hold only data files
(data manifests) or DVs and equality deletes (delete manifests); manifests and manifest DVs
appear only in the root; at most one live manifest DV per leaf; each entry type carries the
fields it must. Violations raise :class:`InvalidMetadata` naming the file. Parsed manifests
are cached by location (files are immutable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from firn.errors import InvalidMetadata
from firn.io.base import FileIO
from firn.manifests.v4_layout import V4Layout
from firn.spec.content import EntryStatus, FileContent, FileFormat
from firn.util.arrow_chunks import single_array
from firn.util.lru import LRUCache

ManifestKind = Literal["root", "data", "delete"]
FORMAT_VERSION_KEY = b"format-version"
CONTENT_KEY = b"content"
V4_FORMAT_VERSION = b"4"
_KINDS: tuple[ManifestKind, ...] = ("root", "data", "delete")

ALLOWED_CONTENT: dict[str, frozenset[int]] = {
    "root": frozenset(int(c) for c in FileContent),
    "data": frozenset({int(FileContent.DATA)}),
    "delete": frozenset({int(FileContent.POSITION_DELETES), int(FileContent.EQUALITY_DELETES)}),
}
DICTIONARY_COLUMNS = ("location", "file_format", "referenced_file")
REQUIRED_COLUMNS = (
    "content_type",
    "location",
    "file_format",
    "version_info",
    "partition_spec_id",
    "record_count",
)


# Manifests read or written by this process, by location (or location and projection),
# bounded by their entries (rows). Manifests are immutable, so the first table cached under a
# key stays; the newest one is kept even when it alone exceeds the bound, so a commit always
# finds the root it just wrote.
_cache: LRUCache[pa.Table] = LRUCache(2_000_000, keep_newest=True)


def clear_v4_cache() -> None:
    _cache.clear()


def write_v4_manifest(io: FileIO, location: str, table: pa.Table, kind: ManifestKind) -> int:
    """Write a V4 manifest (Parquet: Snappy for a root, zstd for a leaf) and return its size in
    bytes; primes the cache."""
    if kind not in _KINDS:
        raise ValueError(f"unknown manifest kind {kind!r}")
    # One chunk per column: roots are built by concatenating the parent's entries with the new
    # ones, and a cached root with a chunk per commit would make every Arrow kernel on the next
    # commit's root cost O(commits) calls.
    full = table.replace_schema_metadata(None).combine_chunks()
    table = _drop_all_null(full)
    sink = pa.BufferOutputStream()
    # Manifests are small and read whole: one row group, no page statistics and no embedded
    # Arrow schema (both would only bloat the footer; pruning uses the stats columns). The
    # seed's key-value metadata goes into the Parquet footer directly.
    # Dictionaries only on the repetitive path columns. Codec by role: every commit rewrites
    # the root, so it favours encoding speed (Snappy encodes a root in about half zstd-1's time,
    # for somewhat more bytes; bench/README.md 9a); a leaf is written once and read by every
    # planning, so it favours size (zstd level 1, as small as default zstd and faster).
    dictionary = [c for c in DICTIONARY_COLUMNS if c in table.column_names]
    codec: dict[str, Any] = (
        {"compression": "snappy"} if kind == "root" else {"compression": "zstd", "compression_level": 1}
    )
    with pq.ParquetWriter(
        sink,
        table.schema,
        **codec,
        use_dictionary=dictionary,
        write_statistics=False,
        store_schema=False,
    ) as writer:
        writer.write_table(table, row_group_size=max(1, table.num_rows))
        writer.add_key_value_metadata({FORMAT_VERSION_KEY: V4_FORMAT_VERSION, CONTENT_KEY: kind.encode()})
    data = sink.getvalue().to_pybytes()
    io.new_output(location).write(data, overwrite=False)
    # Cache the entries in the layout they were built with, so the next commit's root needs
    # no reshaping (``conform`` is then a schema comparison).
    _cache.setdefault(location, full, weight=full.num_rows)
    return len(data)


def _drop_all_null(table: pa.Table) -> pa.Table:
    """Omit optional columns (and per-column stats structs) that are null in every entry.

    Each Parquet column costs footer metadata whether or not it holds data, and a small root
    is mostly footer; readers treat an absent optional column as null (``conform``)."""
    if table.num_rows == 0:
        return table
    keep = [
        name
        for name in table.column_names
        if name in REQUIRED_COLUMNS or table.column(name).null_count < table.num_rows
    ]
    if len(keep) != table.num_columns:
        table = table.select(keep)
    if "content_stats" in table.column_names:
        stats = table.column("content_stats").combine_chunks()
        t = stats.type
        live = [i for i in range(t.num_fields) if stats.field(i).null_count < len(stats)]
        if 0 < len(live) < t.num_fields:
            pruned = pa.StructArray.from_arrays(
                [stats.field(i) for i in live], fields=[t.field(i) for i in live], mask=stats.is_null()
            )
            table = table.set_column(
                table.schema.get_field_index("content_stats"),
                table.schema.field("content_stats").with_type(pruned.type),
                pruned,
            )
        elif not live:
            table = table.drop_columns(["content_stats"])
    return table


def read_v4_manifest(
    io: FileIO,
    location: str,
    *,
    expected: ManifestKind | None = None,
    use_cache: bool = True,
    columns: Sequence[str] | None = None,
    arrow_threads: bool = False,
) -> pa.Table:
    """Read and validate a V4 manifest as an Arrow table (columns as written).

    The file is decoded on the calling thread unless ``arrow_threads`` (Arrow's own pool):
    callers read many manifests from their own threads, where a per-file pool costs more
    than it saves. Walks that hold little and read many files pass ``arrow_threads=True``:
    each Python thread decoding Parquet keeps its own allocator heap, which stays resident.

    ``columns`` (top-level names or ``parent.child`` paths) reads only those, plus what
    validation needs; names the file lacks are skipped. Planning uses it to leave out stats it
    does not filter on, which are most of a leaf's columns. A cached full read serves every
    projection.
    """
    key = location if columns is None else _projection_key(location, columns)
    if use_cache:
        cached = _cache.get(location)
        if cached is None and columns is not None:
            cached = _cache.get(key)
        if cached is not None:
            return cached
    file = io.new_input(location)
    try:
        with file.open_arrow() as f:
            # Parquet is read whole here (it is cached): refuse a file past the manifest cap.
            file.read_limits.manifest.check(location, f.size())
            pf = pq.ParquetFile(f)
            meta = pf.metadata.metadata or {}
            table = pf.read(
                columns=None if columns is None else _present(pf.schema_arrow, columns, expected),
                use_threads=arrow_threads,
            )
    except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
        raise InvalidMetadata(f"not a readable V4 manifest (Parquet): {e}", location=location) from e
    version = meta.get(FORMAT_VERSION_KEY)
    kind = meta.get(CONTENT_KEY, b"").decode("utf-8", errors="replace")
    if version != V4_FORMAT_VERSION:
        raise InvalidMetadata(f"manifest format-version is {version!r}, expected '4'", location=location)
    if kind not in _KINDS:
        raise InvalidMetadata(
            f"manifest content is {kind!r}; must be root, data or delete", location=location
        )
    if expected is not None and kind != expected:
        raise InvalidMetadata(f"expected a {expected} manifest, found a {kind} manifest", location=location)
    table = table.replace_schema_metadata(None)
    try:
        validate_entries(table, kind, location)
    except (pa.ArrowException, KeyError) as e:  # e.g. a struct child whose name was damaged
        raise InvalidMetadata(f"malformed V4 manifest entries: {e}", location=location) from e
    if use_cache:
        _cache.setdefault(key, table, weight=table.num_rows)
    return table


# Columns validation reads (``validate_entries``), so a projected read is still validated.
# The per-type checks only need their columns where those types may appear: a data leaf
# holding anything but data files fails the content check, so it needs no more than the
# required columns; ``manifest_stats`` only matters in a root.
_DELETE_VALIDATION = (*REQUIRED_COLUMNS, "deletion_vector", "referenced_file", "equality_ids")
VALIDATION_COLUMNS: dict[ManifestKind | None, tuple[str, ...]] = {
    "data": REQUIRED_COLUMNS,
    "delete": _DELETE_VALIDATION,
    "root": (*_DELETE_VALIDATION, "manifest_stats"),
    None: (*_DELETE_VALIDATION, "manifest_stats"),
}


def _projection_key(location: str, columns: Sequence[str]) -> str:
    return f"{location}#{','.join(sorted(set(columns)))}"


def _present(schema: pa.Schema, columns: Sequence[str], expected: ManifestKind | None) -> list[str]:
    """``columns`` plus the validation columns, restricted to paths that exist in ``schema``."""
    wanted = [*VALIDATION_COLUMNS[expected], *columns]
    return [p for p in dict.fromkeys(wanted) if _has_path(schema, p.split("."))]


def _has_path(schema: pa.Schema, parts: list[str]) -> bool:
    if schema.get_field_index(parts[0]) < 0:
        return False
    t = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return False
        t = t.field(part).type
    return True


_FORMATS = frozenset(f.value for f in FileFormat)


def validate_entries(table: pa.Table, kind: ManifestKind, location: str) -> None:
    """Check seed 004's structural rules for a manifest of ``kind`` (vectorized)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise InvalidMetadata(f"V4 manifest lacks required columns {missing}", location=location)
    if table.num_rows == 0:
        return
    ct = table.column("content_type")
    if ct.null_count:
        raise InvalidMetadata("content_type is null in some entries", location=location)
    present = set(pc.unique(ct).to_pylist())
    bad = present - ALLOWED_CONTENT[kind]
    if bad:
        names = sorted(FileContent(b).name if b in FileContent._value2member_map_ else str(b) for b in bad)
        raise InvalidMetadata(
            f"a {kind} manifest may not hold {', '.join(names)} entries (the tree has two levels; "
            "manifests and manifest DVs live only in the root)",
            location=location,
        )
    status = pc.struct_field(table.column("version_info"), "status")
    if status.null_count or not set(pc.unique(status).to_pylist()) <= {int(s) for s in EntryStatus}:
        raise InvalidMetadata("entries have a missing or unknown status", location=location)
    _validate_strings(table, location)
    _validate_per_type(table, kind, present, location)


def _validate_strings(table: pa.Table, location: str) -> None:
    """Strings are checked once here (UTF-8, known formats), so later conversions to Python
    cannot fail with a decoding error far from the file (a vectorized check, cheap next to the
    read)."""
    for name in ("file_format", "location", "referenced_file"):
        if name in table.column_names:
            try:
                table.column(name).validate(full=True)
            except pa.ArrowInvalid as e:
                raise InvalidMetadata(
                    f"column {name} is not valid UTF-8 text ({e})", location=location
                ) from e
    formats = table.column("file_format")
    unknown = set(pc.unique(formats).to_pylist()) - _FORMATS
    if formats.null_count or unknown:
        raise InvalidMetadata(
            f"entries have a missing or unknown file_format {sorted(map(str, unknown))}", location=location
        )


def _validate_per_type(table: pa.Table, kind: ManifestKind, present: set[int], location: str) -> None:
    """What each entry type requires (manifest stats, DV positions and targets, equality ids,
    one live manifest DV per leaf). These checks only apply when that entry type is present: a
    data leaf (the common read) skips them all."""
    has_manifests = bool(present & {int(FileContent.DATA_MANIFEST), int(FileContent.DELETE_MANIFEST)})
    has_dvs = bool(present & {int(FileContent.POSITION_DELETES), int(FileContent.MANIFEST_DV)})
    has_eq = int(FileContent.EQUALITY_DELETES) in present
    if not (has_manifests or has_dvs or has_eq):
        return
    ct = table.column("content_type")
    live = pc.not_equal(pc.struct_field(table.column("version_info"), "status"), int(EntryStatus.DELETED))

    def check(mask: pa.ChunkedArray | pa.Array, what: str) -> None:
        if pc.any(pc.and_(live, mask)).as_py():
            raise InvalidMetadata(what, location=location)

    is_manifest = pc.is_in(
        ct, pa.array([int(FileContent.DATA_MANIFEST), int(FileContent.DELETE_MANIFEST)], pa.int32())
    )
    if has_manifests and "manifest_stats" in table.column_names:
        check(
            pc.and_(is_manifest, pc.is_null(table.column("manifest_stats"))),
            "a manifest entry has no manifest_stats",
        )
    is_dv = pc.equal(ct, int(FileContent.POSITION_DELETES))
    is_mdv = pc.equal(ct, int(FileContent.MANIFEST_DV))
    dv = table.column("deletion_vector") if "deletion_vector" in table.column_names else None
    ref = table.column("referenced_file") if "referenced_file" in table.column_names else None
    if has_dvs and dv is not None:
        check(
            pc.and_(pc.or_(is_dv, is_mdv), pc.is_null(dv)), "a deletion vector entry has no deletion_vector"
        )
    if has_dvs and ref is not None:
        check(
            pc.and_(pc.or_(is_dv, is_mdv), pc.is_null(ref)), "a deletion vector entry has no referenced_file"
        )
    if has_eq and "equality_ids" in table.column_names:
        check(
            pc.and_(
                pc.equal(ct, int(FileContent.EQUALITY_DELETES)), pc.is_null(table.column("equality_ids"))
            ),
            "an equality delete entry has no equality_ids",
        )
    if kind == "root" and ref is not None and pc.any(pc.and_(live, is_mdv)).as_py():
        targets = pc.filter(ref, pc.and_(live, is_mdv))
        if len(pc.unique(targets)) != len(targets):
            raise InvalidMetadata("more than one live manifest DV for one leaf manifest", location=location)


def conform(table: pa.Table, layout: V4Layout, columns: Sequence[str] | None = None) -> pa.Table:
    """Reshape a manifest table written with another layout (older schema, other specs) to
    ``layout`` (restricted to ``columns``, see :meth:`V4Layout.projected_schema`): columns and
    struct children matched by name, missing ones null, types cast."""
    target = layout.arrow_schema if columns is None else layout.projected_schema(columns)
    if table.schema.equals(target, check_metadata=False):
        return table
    arrays = []
    for field in target:
        if field.name in table.column_names:
            arrays.append(_conform_array(table.column(field.name), field.type))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _conform_array(arr: pa.ChunkedArray | pa.Array, t: pa.DataType) -> pa.Array:
    arr = single_array(arr)
    if arr.type.equals(t):
        return arr
    if pa.types.is_struct(t) and pa.types.is_struct(arr.type):
        have = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        children = []
        for i in range(t.num_fields):
            child = t.field(i)
            if child.name in have:
                children.append(_conform_array(arr.field(have[child.name]), child.type))
            else:
                children.append(pa.nulls(len(arr), child.type))
        return pa.StructArray.from_arrays(children, fields=list(t), mask=arr.is_null())
    try:
        return arr.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(arr), t)


__all__ = [
    "ManifestKind",
    "clear_v4_cache",
    "conform",
    "read_v4_manifest",
    "validate_entries",
    "write_v4_manifest",
]
