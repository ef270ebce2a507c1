"""Snapshot summary keys, named once (STYLE 2).

The spec's optional summary fields are listed in Appendix F, "Optional Snapshot Summary
Fields": the metrics under "Metrics" and the operational details under "Other Fields". Values
are strings (``"120"``). The keys at the end are Firn's own, written by V4 commits and root
flushes (seed 004 defines no summary fields for root manifests).
"""

from __future__ import annotations

# The required ``operation`` field (spec "Snapshots").
OPERATION = "operation"

# -- Appendix F "Metrics" ------------------------------------------------------------------------
ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
TOTAL_DATA_FILES = "total-data-files"
ADDED_DELETE_FILES = "added-delete-files"
ADDED_EQUALITY_DELETE_FILES = "added-equality-delete-files"
REMOVED_EQUALITY_DELETE_FILES = "removed-equality-delete-files"
ADDED_POSITION_DELETE_FILES = "added-position-delete-files"
REMOVED_POSITION_DELETE_FILES = "removed-position-delete-files"
ADDED_DVS = "added-dvs"
REMOVED_DVS = "removed-dvs"
REMOVED_DELETE_FILES = "removed-delete-files"
TOTAL_DELETE_FILES = "total-delete-files"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
TOTAL_RECORDS = "total-records"
ADDED_FILES_SIZE = "added-files-size"
REMOVED_FILES_SIZE = "removed-files-size"
TOTAL_FILES_SIZE = "total-files-size"
ADDED_POSITION_DELETES = "added-position-deletes"
REMOVED_POSITION_DELETES = "removed-position-deletes"
TOTAL_POSITION_DELETES = "total-position-deletes"
ADDED_EQUALITY_DELETES = "added-equality-deletes"
REMOVED_EQUALITY_DELETES = "removed-equality-deletes"
TOTAL_EQUALITY_DELETES = "total-equality-deletes"
DELETED_DUPLICATE_FILES = "deleted-duplicate-files"
CHANGED_PARTITION_COUNT = "changed-partition-count"
MANIFESTS_CREATED = "manifests-created"
MANIFESTS_KEPT = "manifests-kept"
MANIFESTS_REPLACED = "manifests-replaced"
ENTRIES_PROCESSED = "entries-processed"

# -- Appendix F "Other Fields" -------------------------------------------------------------------
# Iceberg Java's SnapshotSummary.STAGED_WAP_ID_PROP, PUBLISHED_WAP_ID_PROP, SOURCE_SNAPSHOT_ID_PROP.
WAP_ID = "wap.id"
PUBLISHED_WAP_ID = "published-wap-id"
SOURCE_SNAPSHOT_ID = "source-snapshot-id"
ENGINE_NAME = "engine-name"
ENGINE_VERSION = "engine-version"

# -- Firn's V4 keys (seed 004 root manifests) ---------------------------------------------------
# Entries and bytes of the snapshot's root manifest.
ROOT_ENTRIES = "root-entries"
ROOT_MANIFEST_SIZE = "root-manifest-size"
# Root entries a writer moved into leaves because the root passed its hard cap.
ROOT_FLUSHED_ENTRIES = "root-flushed-entries"
# Entries rewritten by manifest compaction during a commit.
MANIFESTS_COMPACTED_ENTRIES = "manifests-compacted-entries"
# What a maintenance root flush moved or folded.
FLUSHED_DATA_FILES = "flushed-data-files"
FLUSHED_DELETE_FILES = "flushed-delete-files"
FOLDED_MANIFEST_DVS = "folded-manifest-dvs"
# The maintenance operation that committed the snapshot (rewrites, compaction).
MAINTENANCE_OPERATION = "firn.maintenance"
# The run (a digest of its plan) and the file groups one of its commits landed, so a re-run of
# the same plan after a crash or a task retry skips them.
MAINTENANCE_RUN_ID = "firn.maintenance.run-id"
MAINTENANCE_RUN_GROUPS = "firn.maintenance.run-groups"

# (total, added, removed) triples: a snapshot's total is its parent's plus added minus removed.
TOTALS = (
    (TOTAL_RECORDS, ADDED_RECORDS, DELETED_RECORDS),
    (TOTAL_FILES_SIZE, ADDED_FILES_SIZE, REMOVED_FILES_SIZE),
    (TOTAL_DATA_FILES, ADDED_DATA_FILES, DELETED_DATA_FILES),
    (TOTAL_DELETE_FILES, ADDED_DELETE_FILES, REMOVED_DELETE_FILES),
    (TOTAL_POSITION_DELETES, ADDED_POSITION_DELETES, REMOVED_POSITION_DELETES),
    (TOTAL_EQUALITY_DELETES, ADDED_EQUALITY_DELETES, REMOVED_EQUALITY_DELETES),
)

__all__ = [name for name in dir() if name.isupper()]
