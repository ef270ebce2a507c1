"""Which files the snapshots of a table reach, read with as little decoding as possible.

A snapshot reaches (spec "Snapshots", seed 004 "V4 layout"):

* its **top** file: the manifest list (v1-v3, and snapshots of an upgraded table written
  before the upgrade) or the root manifest (V4);
* the **manifests** the top lists as live: v1-v3 Avro manifests (also when a V4 root points
  at them after an upgrade) and V4 leaf manifests (Parquet);
* the **Puffin files of manifest DVs** too large to be inline in a V4 root;
* the **content files** of its live entries: entries of those manifests, or of the V4 root
  itself, that are not DELETED and (for a leaf) not removed by the root's manifest DV.

A Puffin file of deletion vectors is reached while any of its blobs is: reachability is by
path, so one live DV keeps the whole file. Statistics, partition statistics and metadata JSON
files hang off the table metadata, not a snapshot tree; their owners handle them.

Manifests are read only for their paths (``manifest_paths``; V4 leaves by a column
projection), each distinct manifest once, in parallel threads (reads release the GIL).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from firn.core.legacy.reader import snapshot_manifests
from firn.core.trees import snapshot_changes
from firn.core.v4.reader import ManifestRef, decode_mdv, live_mdvs, manifest_refs, root_table, status_np
from firn.errors import InvalidMetadata
from firn.io.base import FileIO
from firn.maintenance.manifest_paths import ManifestPaths, read_manifest_paths
from firn.manifests.v4_io import ManifestKind, conform, read_v4_manifest
from firn.manifests.v4_layout import V4Layout
from firn.spec.content import EntryStatus, FileContent, FileFormat, ManifestContent, ManifestFile
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata

# File kinds, as results and plans report them (Iceberg's output columns, plus V4's files).
DATA_FILES = "data_files"
POSITION_DELETE_FILES = "position_delete_files"
EQUALITY_DELETE_FILES = "equality_delete_files"
PUFFIN_FILES = "puffin_files"  # deletion vectors (v3 / V4)
MANIFESTS = "manifests"  # v1-v3 Avro manifests (also when a V4 root points at them)
MANIFEST_LISTS = "manifest_lists"
ROOT_MANIFESTS = "root_manifests"
LEAF_MANIFESTS = "leaf_manifests"
MANIFEST_DV_FILES = "manifest_dv_files"  # Puffin files of large V4 manifest DVs
STATISTICS_FILES = "statistics_files"
PARTITION_STATISTICS_FILES = "partition_statistics_files"
METADATA_FILES = "metadata_files"  # table metadata JSON

FILE_KINDS = (
    DATA_FILES,
    POSITION_DELETE_FILES,
    EQUALITY_DELETE_FILES,
    PUFFIN_FILES,
    MANIFESTS,
    MANIFEST_LISTS,
    ROOT_MANIFESTS,
    LEAF_MANIFESTS,
    MANIFEST_DV_FILES,
    STATISTICS_FILES,
    PARTITION_STATISTICS_FILES,
    METADATA_FILES,
)
CONTENT_KINDS = (DATA_FILES, POSITION_DELETE_FILES, EQUALITY_DELETE_FILES, PUFFIN_FILES)

# Manifest reads are I/O plus decoding; like planning, a few threads per core.
MAX_READ_THREADS = min(16, 4 * (os.cpu_count() or 2))

_DELETED = int(EntryStatus.DELETED)
_LEAF_COLUMNS = ("location", "content_type", "file_format", "file_size_in_bytes", "version_info")

T = TypeVar("T")
R = TypeVar("R")

FileSizes = dict[str, int]  # path -> bytes (-1: unknown)


def content_kind(content: int, file_format: str) -> str:
    """The kind of a content file from its entry's ``content`` and ``file_format``."""
    if content == FileContent.DATA:
        return DATA_FILES
    if content == FileContent.EQUALITY_DELETES:
        return EQUALITY_DELETE_FILES
    if content == FileContent.POSITION_DELETES:
        return PUFFIN_FILES if file_format.lower() == FileFormat.PUFFIN.value else POSITION_DELETE_FILES
    raise InvalidMetadata(f"content type {content} is not a data or delete file")


@dataclass
class FileSet:
    """Files by kind: ``files[kind][path] = size``."""

    files: dict[str, FileSizes] = field(default_factory=dict)

    def add(self, kind: str, path: str, size: int) -> None:
        self.files.setdefault(kind, {})[path] = size

    def kind(self, kind: str) -> FileSizes:
        return self.files.get(kind, {})

    def paths(self) -> set[str]:
        return {p for group in self.files.values() for p in group}

    def minus(self, other: FileSet) -> FileSet:
        """These files less every path ``other`` holds (of any kind)."""
        taken = other.paths()
        out = FileSet()
        for kind, group in self.files.items():
            kept = {p: s for p, s in group.items() if p not in taken}
            if kept:
                out.files[kind] = kept
        return out

    def update(self, other: FileSet) -> None:
        for kind, group in other.files.items():
            self.files.setdefault(kind, {}).update(group)

    def count(self) -> int:
        return sum(len(g) for g in self.files.values())


@dataclass(frozen=True, slots=True)
class ManifestNode:
    """A live manifest of a snapshot's top file."""

    path: str
    kind: str  # MANIFESTS (Avro) or LEAF_MANIFESTS (V4 Parquet)
    size: int
    content: ManifestContent
    spec_id: int
    added_snapshot_id: int | None
    may_have_deleted: bool  # its DELETED entry count is unknown or positive
    manifest_file: ManifestFile  # how to read it (inheritance for Avro)
    leaf_ref: ManifestRef | None = None  # V4 leaves


@dataclass
class SnapshotTree:
    """The top level of one snapshot's metadata tree (no manifest opened yet)."""

    snapshot: Snapshot
    top: str
    top_kind: str  # MANIFEST_LISTS or ROOT_MANIFESTS
    manifests: dict[str, ManifestNode]
    root_files: FileSet = field(default_factory=FileSet)  # V4: live content entries in the root
    manifest_dv_files: FileSizes = field(default_factory=dict)  # V4: live Puffin manifest DVs
    root: pa.Table | None = None
    _mdvs: dict[str, BitMap] | None = None

    def mdvs(self, io: FileIO) -> dict[str, BitMap]:
        """Live manifest DVs of a V4 root by leaf location (decoded on first use)."""
        if self._mdvs is None:
            self._mdvs = (
                {} if self.root is None else {k: bm for k, (_, bm) in live_mdvs(io, self.root).items()}
            )
        return self._mdvs


def parallel_map(fn: Callable[[T], R], items: Sequence[T], threads: int = MAX_READ_THREADS) -> list[R]:
    """``[fn(x) for x in items]`` on a thread pool (results in order)."""
    if len(items) <= 1 or threads <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def read_tree(io: FileIO, md: TableMetadata, snapshot: Snapshot) -> SnapshotTree:
    """The top level of ``snapshot``'s tree: its manifest list or root, and what it lists."""
    if snapshot.root_manifest is None:
        if snapshot.manifest_list is None:
            # A v1 snapshot listing manifests inline: snapshot_manifests names the problem.
            snapshot_manifests(io, snapshot)
        assert snapshot.manifest_list is not None
        nodes = {
            m.manifest_path: ManifestNode(
                m.manifest_path,
                MANIFESTS,
                m.manifest_length,
                m.content,
                m.partition_spec_id,
                m.added_snapshot_id,
                m.has_deleted_files(),
                m,
            )
            for m in snapshot_manifests(io, snapshot)
        }
        return SnapshotTree(snapshot, snapshot.manifest_list, MANIFEST_LISTS, nodes)
    root = _tree_root(io, md, snapshot)
    nodes = {}
    for ref in manifest_refs(root):
        avro = ref.file_format is FileFormat.AVRO
        nodes[ref.location] = ManifestNode(
            ref.location,
            MANIFESTS if avro else LEAF_MANIFESTS,
            ref.file_size_in_bytes,
            ManifestContent.DATA if ref.content is FileContent.DATA_MANIFEST else ManifestContent.DELETES,
            ref.spec_id,
            ref.snapshot_id,
            True,
            ref.as_manifest_file(),
            None if avro else ref,
        )
    tree = SnapshotTree(snapshot, snapshot.root_manifest, ROOT_MANIFESTS, nodes, root=root)
    if root.num_rows:
        live = status_np(root) != _DELETED
        ct = root.column("content_type").to_numpy()
        cols = root.select(["location", "file_format", "file_size_in_bytes"])
        content_rows = np.nonzero(live & (ct <= int(FileContent.EQUALITY_DELETES)))[0]
        if len(content_rows):
            rows = cols.take(pa.array(content_rows))
            for c, loc, fmt, size in zip(
                ct[content_rows].tolist(),
                rows.column("location").to_pylist(),
                rows.column("file_format").to_pylist(),
                rows.column("file_size_in_bytes").to_pylist(),
            ):
                tree.root_files.add(content_kind(c, fmt), loc, -1 if size is None else size)
        mdv_rows = np.nonzero(live & (ct == int(FileContent.MANIFEST_DV)))[0]
        if len(mdv_rows):
            rows = cols.take(pa.array(mdv_rows))
            for loc, size in zip(
                rows.column("location").to_pylist(), rows.column("file_size_in_bytes").to_pylist()
            ):
                if loc is not None:  # inline manifest DVs have no file
                    tree.manifest_dv_files[loc] = -1 if size is None else size
    return tree


# What reachability reads of a V4 root: no stats, no partition values.
_ROOT_COLUMNS = (
    "location",
    "content_type",
    "file_format",
    "file_size_in_bytes",
    "record_count",
    "version_info",
    "partition_spec_id",
    "first_row_id",
    "referenced_file",
    "deletion_vector",
)


def _tree_root(io: FileIO, md: TableMetadata, snapshot: Snapshot) -> pa.Table:
    """A V4 snapshot's root with the columns reachability uses (others null), read past the
    manifest cache: a walk over every snapshot of a long history would otherwise fill the
    cache with roots nobody reads again, and hold them."""
    if snapshot.root_manifest is None:
        return root_table(io, md, snapshot)
    table = read_v4_manifest(
        io,
        snapshot.root_manifest,
        expected="root",
        use_cache=False,
        columns=_ROOT_COLUMNS,
        arrow_threads=True,
    )
    return conform(table, V4Layout.for_metadata(md))


def read_trees(io: FileIO, md: TableMetadata, snapshots: Sequence[Snapshot]) -> list[SnapshotTree]:
    """:func:`read_tree` of each snapshot, in parallel."""
    return parallel_map(lambda s: read_tree(io, md, s), snapshots)


def _leaf_kind(node: ManifestNode) -> ManifestKind:
    return "data" if node.content is ManifestContent.DATA else "delete"


def read_entries(io: FileIO, md: TableMetadata, node: ManifestNode) -> ManifestPaths:
    """The entries of one manifest (every status, in file order), paths and sizes only."""
    if node.leaf_ref is None:
        return read_manifest_paths(io, node.manifest_file)
    # Past the manifest cache: reachability reads each leaf once, and a walk over a large
    # table would otherwise hold every leaf's columns in the cache.
    table = read_v4_manifest(
        io, node.path, expected=_leaf_kind(node), columns=_LEAF_COLUMNS, use_cache=False, arrow_threads=True
    )
    vi = table.column("version_info")
    sids = pc.struct_field(vi, "snapshot_id").to_pylist()
    inherited = node.added_snapshot_id
    sizes = table.column("file_size_in_bytes").to_pylist()
    # A leaf spells its formats a few ways: one str object per spelling, not per entry.
    fmt = table.column("file_format")
    spellings = {f: f for f in pc.unique(fmt).to_pylist()}
    formats = tuple(map(spellings.__getitem__, fmt.to_pylist()))
    return ManifestPaths(
        node.path,
        tuple(status_np(table).tolist()),
        tuple(inherited if s is None else s for s in sids),
        tuple(table.column("content_type").to_pylist()),
        tuple(table.column("location").to_pylist()),
        formats,
        tuple(-1 if s is None else s for s in sizes),
    )


def read_all_entries(
    io: FileIO,
    md: TableMetadata,
    nodes: Iterable[ManifestNode],
    cache: dict[str, ManifestPaths] | None = None,
) -> dict[str, ManifestPaths]:
    """:func:`read_entries` of each distinct manifest, in parallel, by path; ``cache`` holds
    manifests read before (and receives the new ones)."""
    cache = {} if cache is None else cache
    wanted = {n.path: n for n in nodes}
    todo = [n for p, n in wanted.items() if p not in cache]
    for n, e in zip(todo, parallel_map(lambda n: read_entries(io, md, n), todo)):
        cache[n.path] = e
    return {p: cache[p] for p in wanted}


def _add_live(out: FileSet, entries: ManifestPaths, removed: BitMap | None) -> None:
    for i in entries.live():
        if removed is not None and i in removed:
            continue
        out.add(content_kind(entries.content[i], entries.file_format[i]), entries.path[i], entries.size[i])


def reachable(
    io: FileIO,
    md: TableMetadata,
    trees: Sequence[SnapshotTree],
    cache: dict[str, ManifestPaths] | None = None,
) -> FileSet:
    """Every file the snapshots of ``trees`` reach (see the module docstring); ``cache`` as
    for :func:`read_all_entries`."""
    out = FileSet()
    referencing: dict[str, list[SnapshotTree]] = {}
    nodes: dict[str, ManifestNode] = {}
    for t in trees:
        out.add(t.top_kind, t.top, -1)
        out.update(t.root_files)
        for path, size in t.manifest_dv_files.items():
            out.add(MANIFEST_DV_FILES, path, size)
        for path, node in t.manifests.items():
            out.add(node.kind, path, node.size)
            nodes[path] = node
            referencing.setdefault(path, []).append(t)
    entries = read_all_entries(io, md, nodes.values(), cache)
    for path, refs in referencing.items():
        # An entry is reached when some snapshot listing this manifest has it live: removed
        # only if every referencing root's manifest DV removes it (a manifest list has none).
        masks = [t.mdvs(io).get(path) if t.root is not None else None for t in refs]
        removed: BitMap | None = None
        if all(m is not None for m in masks):
            removed = masks[0]
            for m in masks[1:]:
                removed = removed & m  # type: ignore[operator]
        _add_live(out, entries[path], removed)
    return out


# Snapshots whose tops are held at once by :func:`reachable_streaming`, and manifests read per
# round: memory follows these, not the history or the number of manifests.
STREAM_TREES = 16
STREAM_MANIFESTS = 64


def reachable_streaming(io: FileIO, md: TableMetadata, snapshots: Sequence[Snapshot]) -> FileSet:
    """:func:`reachable` of ``snapshots``, holding a batch of snapshot tops at a time.

    The tops are read :data:`STREAM_TREES` at a time and dropped once their files are noted;
    per distinct manifest only its node and the intersection of the manifest DVs of the roots
    that list it are kept (an entry is reached unless every listing root removes it). Each
    distinct manifest is then read once, :data:`STREAM_MANIFESTS` at a time, and only the
    paths of its reached entries are kept. The result holds one path per file, never one
    object per file per snapshot."""
    out = FileSet()
    nodes: dict[str, ManifestNode] = {}
    removed: dict[str, BitMap | None] = {}
    for start in range(0, len(snapshots), STREAM_TREES):
        for t in read_trees(io, md, snapshots[start : start + STREAM_TREES]):
            out.add(t.top_kind, t.top, -1)
            out.update(t.root_files)
            for path, size in t.manifest_dv_files.items():
                out.add(MANIFEST_DV_FILES, path, size)
            mdvs = t.mdvs(io) if t.root is not None else None
            for path, node in t.manifests.items():
                out.add(node.kind, path, node.size)
                mask = None if mdvs is None else mdvs.get(path)
                if path not in nodes:
                    nodes[path] = node
                    removed[path] = mask
                else:
                    prev = removed[path]
                    removed[path] = None if prev is None or mask is None else prev & mask
        _release_arrow_memory()
    todo = list(nodes.values())
    for start in range(0, len(todo), STREAM_MANIFESTS):
        chunk = todo[start : start + STREAM_MANIFESTS]
        for node, entries in zip(chunk, parallel_map(lambda n: read_entries(io, md, n), chunk), strict=True):
            _add_live(out, entries, removed[node.path])
        _release_arrow_memory()
    return out


def _release_arrow_memory() -> None:
    # Arrow's allocator keeps freed pages for reuse; a walk that reads thousands of Parquet
    # manifests one batch after another would otherwise keep the high-water mark of every
    # batch resident.
    pa.default_memory_pool().release_unused()


def removed_by(io: FileIO, md: TableMetadata, tree: SnapshotTree) -> FileSet:
    """The content files ``tree``'s snapshot removed (live in its parent, not in it).

    v1-v3: the DELETED entries stamped with the snapshot's id in the manifests it wrote that
    have deleted entries (the manifest list's counts skip the rest unread). V4: the snapshot's
    changes from its root (``snapshot_changes``: DELETED root entries and newly removed leaf
    ordinals), work proportional to the change."""
    sid = tree.snapshot.snapshot_id
    out = FileSet()
    if tree.root is not None:
        if tree.snapshot.root_manifest is None:  # an upgraded table's legacy snapshot
            changes = snapshot_changes(io, md, tree.snapshot)
            for f in (*changes.removed_data_files, *changes.removed_delete_files):
                out.add(content_kind(int(f.content), f.file_format.value), f.file_path, f.file_size_in_bytes)
            return out
        _root_removed(io, md, tree, out)
        return out
    own = [n for n in tree.manifests.values() if n.added_snapshot_id == sid and n.may_have_deleted]
    for entries in read_all_entries(io, md, own).values():
        for i, status in enumerate(entries.status):
            if status == _DELETED and entries.snapshot_id[i] == sid:
                kind = content_kind(entries.content[i], entries.file_format[i])
                out.add(kind, entries.path[i], entries.size[i])
    return out


def _add_rows(
    out: FileSet,
    content: Sequence[int],
    paths: Sequence[str],
    formats: Sequence[str],
    sizes: Sequence[int | None],
) -> None:
    for c, path, fmt, size in zip(content, paths, formats, sizes, strict=True):
        out.add(content_kind(c, fmt), path, -1 if size is None else size)


def _root_removed(io: FileIO, md: TableMetadata, tree: SnapshotTree, out: FileSet) -> None:
    """What a V4 snapshot removed, from its root (already read) alone: its DELETED content
    entries, and the leaf entries its new manifest DVs remove beyond the DVs they replace
    (``snapshot_changes``'s rules), read as paths only — the files it added are not opened."""
    root = tree.root
    assert root is not None
    sid = tree.snapshot.snapshot_id
    vi = root.column("version_info")
    status = status_np(root)
    snap = pc.fill_null(pc.struct_field(vi, "snapshot_id"), -1).to_numpy()
    ct = root.column("content_type").to_numpy()
    mine = snap == sid
    deleted = mine & (status == _DELETED)
    added = mine & (status == int(EntryStatus.ADDED))
    rows = np.nonzero(deleted & (ct <= int(FileContent.EQUALITY_DELETES)))[0]
    if len(rows):
        sub = root.select(["content_type", "location", "file_format", "file_size_in_bytes"]).take(
            pa.array(rows)
        )
        _add_rows(
            out,
            sub.column("content_type").to_pylist(),
            sub.column("location").to_pylist(),
            sub.column("file_format").to_pylist(),
            sub.column("file_size_in_bytes").to_pylist(),
        )
    is_mdv = ct == int(FileContent.MANIFEST_DV)
    new_rows = np.nonzero(added & is_mdv)[0]
    if not len(new_rows):
        return
    mdv_rows = root.select(["location", "deletion_vector", "referenced_file"])
    old: dict[str, BitMap] = {}
    for i in np.nonzero(deleted & is_mdv)[0]:
        row = mdv_rows.slice(int(i), 1).to_pylist()[0]
        old[row["referenced_file"]] = decode_mdv(io, row)
    newly: dict[str, BitMap] = {}
    for i in new_rows:
        row = mdv_rows.slice(int(i), 1).to_pylist()[0]
        ords = decode_mdv(io, row) - old.get(row["referenced_file"], BitMap())
        if ords:
            newly[row["referenced_file"]] = ords
    for path, node in tree.manifests.items():
        gone = newly.get(path)
        if gone is None:
            continue
        entries = read_entries(io, md, node)
        for ordinal in gone:
            k = int(ordinal)
            if k >= len(entries):
                raise InvalidMetadata(
                    f"manifest DV removes ordinal {k} of a leaf with {len(entries)} entries", location=path
                )
            out.add(
                content_kind(entries.content[k], entries.file_format[k]), entries.path[k], entries.size[k]
            )


def live_delete_paths(io: FileIO, md: TableMetadata, tree: SnapshotTree, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` (Puffin paths) hold a DV that is live in ``tree``'s snapshot; reads
    the root and the delete manifests only."""
    if not wanted:
        return set()
    found = {p for p in tree.root_files.kind(PUFFIN_FILES) if p in wanted}
    deletes = [n for n in tree.manifests.values() if n.content is ManifestContent.DELETES]
    entries = read_all_entries(io, md, deletes)
    mdvs = tree.mdvs(io) if tree.root is not None else {}
    for path, e in entries.items():
        removed = mdvs.get(path)
        found.update(
            e.path[i] for i in e.live() if e.path[i] in wanted and (removed is None or i not in removed)
        )
    return found


def file_sizes(io: FileIO, paths: Iterable[str]) -> dict[str, int]:
    """The size of each file (-1 when it is gone or cannot be read), in parallel."""

    def one(p: str) -> int:
        try:
            return int(io.new_input(p).length())
        except Exception:  # a missing file still goes on the list: deleting it is harmless
            return -1

    todo = list(paths)
    return dict(zip(todo, parallel_map(one, todo)))


def spec_ids_in_use(io: FileIO, md: TableMetadata, trees: Sequence[SnapshotTree]) -> set[int]:
    """Partition spec ids that the snapshots of ``trees`` use (manifests, V4 root entries and
    the entries of V4 leaves, which may mix specs)."""
    used: set[int] = set()
    leaves: list[ManifestNode] = []
    for t in trees:
        for node in t.manifests.values():
            used.add(node.spec_id)
            if node.leaf_ref is not None:
                leaves.append(node)
        if t.root is not None and t.root.num_rows:
            used.update(int(x) for x in pc.unique(t.root.column("partition_spec_id")).to_pylist())

    def leaf_specs(node: ManifestNode) -> list[int]:
        table = read_v4_manifest(io, node.path, expected=_leaf_kind(node), columns=("partition_spec_id",))
        return [int(x) for x in pc.unique(table.column("partition_spec_id")).to_pylist()]

    distinct = list({n.path: n for n in leaves}.values())
    for specs in parallel_map(leaf_specs, distinct):
        used.update(specs)
    return used


def metadata_paths(md: TableMetadata, metadata_location: str) -> Mapping[str, str]:
    """Files hanging off the metadata (path -> kind): the metadata JSON and its log,
    statistics and partition statistics."""
    out: dict[str, str] = {metadata_location: METADATA_FILES}
    for entry in md.metadata_log:
        out[entry.metadata_file] = METADATA_FILES
    for s in md.statistics:
        out[s.statistics_path] = STATISTICS_FILES
    for p in md.partition_statistics:
        out[p.statistics_path] = PARTITION_STATISTICS_FILES
    return out


__all__ = [
    "CONTENT_KINDS",
    "DATA_FILES",
    "EQUALITY_DELETE_FILES",
    "FILE_KINDS",
    "LEAF_MANIFESTS",
    "MANIFESTS",
    "MANIFEST_DV_FILES",
    "MANIFEST_LISTS",
    "METADATA_FILES",
    "PARTITION_STATISTICS_FILES",
    "POSITION_DELETE_FILES",
    "PUFFIN_FILES",
    "ROOT_MANIFESTS",
    "STATISTICS_FILES",
    "FileSet",
    "ManifestNode",
    "SnapshotTree",
    "content_kind",
    "file_sizes",
    "live_delete_paths",
    "metadata_paths",
    "parallel_map",
    "reachable",
    "reachable_streaming",
    "read_all_entries",
    "read_entries",
    "read_tree",
    "read_trees",
    "removed_by",
    "spec_ids_in_use",
]
