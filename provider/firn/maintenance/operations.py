"""The names of the maintenance operations, and the order a nightly run takes them in.

Everything else about an operation (its short name, classes, fallback on older format
versions, lineage figures) is declared once in :mod:`firn.maintenance.registry`.
"""

from __future__ import annotations

REWRITE_DELETION_VECTORS = "rewrite_deletion_vectors"
REWRITE_POSITION_DELETE_FILES = "rewrite_position_delete_files"
REWRITE_DATA_FILES = "rewrite_data_files"
FLUSH_ROOT = "flush_root"
REWRITE_MANIFESTS = "rewrite_manifests"
EXPIRE_SNAPSHOTS = "expire_snapshots"
REMOVE_ORPHAN_FILES = "remove_orphan_files"

# The order a nightly run takes (and ``recommend()`` lists): deletes are merged before
# compaction so it reads fewer delete files; compaction before the flush and the manifest
# rewrite, which then see its output; expiry after them, so the files they replaced are freed
# the same night; orphans last (Iceberg's maintenance guide: expire, then orphans, with
# compaction first freeing more files).
NIGHTLY_ORDER = (
    REWRITE_DELETION_VECTORS,
    REWRITE_DATA_FILES,
    FLUSH_ROOT,
    REWRITE_MANIFESTS,
    EXPIRE_SNAPSHOTS,
    REMOVE_ORPHAN_FILES,
)

__all__ = [
    "EXPIRE_SNAPSHOTS",
    "FLUSH_ROOT",
    "NIGHTLY_ORDER",
    "REMOVE_ORPHAN_FILES",
    "REWRITE_DATA_FILES",
    "REWRITE_DELETION_VECTORS",
    "REWRITE_MANIFESTS",
    "REWRITE_POSITION_DELETE_FILES",
]
