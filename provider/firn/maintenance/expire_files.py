"""The files that expiring snapshots frees: every file an expired snapshot reaches and no
retained snapshot does (spec "Snapshot Retention Policy"; Iceberg Java's
``IncrementalFileCleanup`` / ``ReachableFileCleanup``).

Two strategies, chosen per expiry:

* **incremental**, when the history is linear: every snapshot of the table is an ancestor of
  ``main``'s current snapshot and the expired ones are the oldest of them. Then a content file
  that an expired snapshot reaches and no retained one does was removed by some snapshot from
  the second-oldest expired one up to the oldest retained one (history has no branches to
  bring it back), so the files to delete are what those snapshots *removed*; a manifest (or
  leaf, or manifest-DV Puffin) that an expired top lists is freed when the oldest retained top
  does not list it, since a manifest dropped from a linear history never returns. Only the
  expired tops, the oldest retained top and the manifests the removing snapshots wrote with
  deleted entries are opened (V4: the roots, and leaves only where a manifest DV changed), so
  the work follows what is removed, not the table's history. Like Java's incremental cleanup it
  trusts that a removed path is not added again later (``add_files`` of the very same path
  after it was deleted); the reachable strategy has no such assumption.
* **reachable** otherwise (branches, tags or staged snapshots off ``main``, rollbacks, a
  snapshot expired by id from the middle of history): the full reachability set of the expired
  snapshots less that of the retained ones.

A Puffin file of DVs is freed only when no retained snapshot has a live DV in it: the
incremental strategy checks the candidates against the oldest retained snapshot's delete
manifests and root (in linear history a DV live in a later snapshot is live in that one too).
Statistics and partition-statistics files of expired snapshots are freed unless a retained
snapshot's statistics entry names the same file.
"""

from __future__ import annotations

from dataclasses import dataclass

from firn.io.base import FileIO
from firn.maintenance.manifest_paths import ManifestPaths
from firn.maintenance.reachability import (
    MANIFEST_DV_FILES,
    MANIFEST_LISTS,
    PARTITION_STATISTICS_FILES,
    PUFFIN_FILES,
    ROOT_MANIFESTS,
    STATISTICS_FILES,
    FileSet,
    file_sizes,
    live_delete_paths,
    parallel_map,
    reachable,
    read_tree,
    read_trees,
    removed_by,
)
from firn.spec.snapshots import MAIN_BRANCH, Snapshot
from firn.spec.table_metadata import TableMetadata

INCREMENTAL = "incremental"
REACHABLE = "reachable"


@dataclass
class ExpiredFiles:
    """What expiring a set of snapshots frees, and how it was worked out."""

    strategy: str
    files: FileSet


def linear_history(md: TableMetadata, expired: frozenset[int]) -> list[Snapshot] | None:
    """``main``'s ancestors, newest first, when the incremental strategy is valid for expiring
    ``expired`` (see the module docstring); otherwise None."""
    head = md.snapshot_for_ref(MAIN_BRANCH)
    if head is None or not expired:
        return None
    chain = md.ancestors_of(head.snapshot_id)
    if len(chain) != len(md.snapshots):
        return None  # some snapshot is off main's history (a branch, a tag, a staged write)
    kept = len(chain) - len(expired)
    if kept < 1 or {s.snapshot_id for s in chain[kept:]} != expired:
        return None  # not the oldest part of history
    return chain


def _statistics(md: TableMetadata, expired: frozenset[int], out: FileSet) -> None:
    for kind, entries in (
        (STATISTICS_FILES, [(s.snapshot_id, s.statistics_path, s.file_size_in_bytes) for s in md.statistics]),
        (
            PARTITION_STATISTICS_FILES,
            [(s.snapshot_id, s.statistics_path, s.file_size_in_bytes) for s in md.partition_statistics],
        ),
    ):
        kept = {path for sid, path, _ in entries if sid not in expired}
        for sid, path, size in entries:
            if sid in expired and path not in kept:
                out.add(kind, path, size)


# Expired snapshots are read this many at a time, and each batch's trees (V4 roots are Arrow
# tables) are dropped before the next is read: memory stays bounded by the batch, not the
# history.
INCREMENTAL_BATCH = 16


def _incremental(io: FileIO, md: TableMetadata, chain: list[Snapshot], kept: int) -> FileSet:
    out = FileSet()
    oldest_kept = read_tree(io, md, chain[kept - 1])
    gone = chain[kept:]
    # The snapshots that removed what only expired snapshots had: each expired snapshot's
    # child (the newest expired one's child is the oldest retained one), so every expired
    # snapshot but the oldest, and the oldest retained one.
    removed = removed_by(io, md, oldest_kept)
    last = len(gone) - 1

    def one(i: int) -> tuple[FileSet, FileSet]:
        t = read_tree(io, md, gone[i])
        freed = FileSet()
        freed.add(t.top_kind, t.top, -1)
        for path, node in t.manifests.items():
            if path not in oldest_kept.manifests:
                freed.add(node.kind, path, node.size)
        for path, size in t.manifest_dv_files.items():
            if path not in oldest_kept.manifest_dv_files:
                freed.add(MANIFEST_DV_FILES, path, size)
        return freed, (removed_by(io, md, t) if i != last else FileSet())

    for start in range(0, len(gone), INCREMENTAL_BATCH):
        batch = range(start, min(start + INCREMENTAL_BATCH, len(gone)))
        for freed, part in parallel_map(one, list(batch), threads=4):
            out.update(freed)
            removed.update(part)
    puffins = removed.kind(PUFFIN_FILES)
    if puffins:
        for path in live_delete_paths(io, md, oldest_kept, set(puffins)):
            del puffins[path]
        if not puffins:
            del removed.files[PUFFIN_FILES]
    out.update(removed)
    return out


def _reachable(io: FileIO, md: TableMetadata, expired: frozenset[int]) -> FileSet:
    trees = read_trees(io, md, list(md.snapshots))
    gone = [t for t in trees if t.snapshot.snapshot_id in expired]
    kept = [t for t in trees if t.snapshot.snapshot_id not in expired]
    cache: dict[str, ManifestPaths] = {}  # manifests both sides list are read once
    return reachable(io, md, gone, cache).minus(reachable(io, md, kept, cache))


def expired_files(io: FileIO, md: TableMetadata, expired: frozenset[int]) -> ExpiredFiles:
    """The files that expiring the snapshots ``expired`` of ``md`` frees, by kind, with sizes
    (manifest lists and roots are sized with one metadata request each)."""
    out = FileSet()
    if not expired:
        return ExpiredFiles(INCREMENTAL, out)
    chain = linear_history(md, expired)
    if chain is not None:
        strategy = INCREMENTAL
        out.update(_incremental(io, md, chain, len(chain) - len(expired)))
    else:
        strategy = REACHABLE
        out.update(_reachable(io, md, expired))
    _statistics(md, expired, out)
    tops = [p for kind in (MANIFEST_LISTS, ROOT_MANIFESTS) for p, s in out.kind(kind).items() if s < 0]
    for path, size in file_sizes(io, tops).items():
        for kind in (MANIFEST_LISTS, ROOT_MANIFESTS):
            if path in out.kind(kind):
                out.files[kind][path] = size
    return ExpiredFiles(strategy, out)


__all__ = ["INCREMENTAL", "REACHABLE", "ExpiredFiles", "expired_files", "linear_history"]
