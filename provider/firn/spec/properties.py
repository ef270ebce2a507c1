"""Table property keys, their defaults, and a typed view parsed once per metadata object.

Keys and defaults follow Iceberg Java's ``TableProperties`` where the two overlap (cited in
``reference/notes/iceberg-format-notes.md`` §11); V4 keys (``commit.root.*``) are Firn's own,
since no spec defines root-manifest flush thresholds.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from firn.errors import ValidationError

FORMAT_VERSION = "format-version"

COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"

MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"

WRITE_TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_BYTES = "write.delete.target-file-size-bytes"
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
WRITE_DATA_PATH = "write.data.path"
WRITE_METADATA_PATH = "write.metadata.path"

METRICS_MODE_DEFAULT = "write.metadata.metrics.default"
METRICS_MODE_COLUMN_PREFIX = "write.metadata.metrics.column."
METRICS_MAX_INFERRED_COLUMNS = "write.metadata.metrics.max-inferred-column-defaults"

METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
METADATA_DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
METADATA_COMPRESSION = "write.metadata.compression-codec"

DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"

DEFAULT_NAME_MAPPING = "schema.name-mapping.default"

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
GC_ENABLED = "gc.enabled"

# V4 (seed 004 "root flush"): soft thresholds a maintenance flush watches, and the factor
# above which a writer flushes synchronously instead of growing the root further. Defaults:
# 200 data files or DVs (a root of that size is about 15 KB, one object-store round trip),
# writers flushing above 2x that. Every commit rewrites the root, and encoding it costs about
# 0.5 us per entry on top of a fixed ~1 ms (measured: a 1,000-entry root made each
# single-file append 15-25% slower than a 200-entry one); a writer flush costs one leaf write
# per ~200 commits.
ROOT_MAX_DATA_FILES = "commit.root.max-data-files"
ROOT_MAX_DELETE_VECTORS = "commit.root.max-delete-vectors"
ROOT_MAX_MANIFEST_DVS = "commit.root.max-manifest-dvs"
ROOT_MAX_BYTES = "commit.root.max-bytes"
ROOT_WRITER_FLUSH_FACTOR = "commit.root.writer-flush-factor"
# A commit adding more files than this writes them to a new leaf manifest instead of the root.
ROOT_MAX_ADDED_FILES = "commit.root.max-added-files"
# Manifest DVs up to this many serialized bytes are stored inline in the root entry.
MANIFEST_DV_INLINE_MAX_BYTES = "write.manifest-dv.inline-max-bytes"
# Target number of entries per leaf manifest written by a flush or compaction.
LEAF_TARGET_ENTRIES = "commit.leaf.target-entries"

# Properties that are table settings, never stored as table properties.
RESERVED_PROPERTIES = frozenset({FORMAT_VERSION})


class RowLevelMode(enum.Enum):
    COPY_ON_WRITE = "copy-on-write"
    MERGE_ON_READ = "merge-on-read"


class IsolationLevel(enum.Enum):
    SERIALIZABLE = "serializable"
    SNAPSHOT = "snapshot"


def _int(props: Mapping[str, str], key: str, default: int, *, minimum: int | None = None) -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"table property {key!r} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ValidationError(f"table property {key!r} must be >= {minimum}, got {value}")
    return value


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValidationError(f"table property {key!r} must be true or false, got {raw!r}")


def _enum(props: Mapping[str, str], key: str, cls: type[enum.Enum], default: enum.Enum) -> enum.Enum:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        return cls(str(raw).strip().lower())
    except ValueError:
        allowed = ", ".join(m.value for m in cls)
        raise ValidationError(f"table property {key!r} must be one of {allowed}, got {raw!r}") from None


@dataclass(frozen=True, slots=True)
class TableProperties:
    """Typed table properties. Build with :meth:`parse`; unknown keys are kept in ``raw``."""

    raw: Mapping[str, str]
    commit_num_retries: int = 4
    commit_min_retry_wait_ms: int = 100
    commit_max_retry_wait_ms: int = 60_000
    commit_total_retry_time_ms: int = 1_800_000
    manifest_target_size_bytes: int = 8 * 1024 * 1024
    manifest_min_merge_count: int = 100
    manifest_merge_enabled: bool = True
    write_target_file_size_bytes: int = 512 * 1024 * 1024
    delete_target_file_size_bytes: int = 64 * 1024 * 1024
    parquet_compression: str = "zstd"
    parquet_compression_level: int | None = None
    parquet_row_group_size_bytes: int = 128 * 1024 * 1024
    parquet_page_size_bytes: int = 1024 * 1024
    metrics_mode_default: str = "truncate(16)"
    metrics_max_inferred_columns: int = 100
    metadata_previous_versions_max: int = 100
    metadata_delete_after_commit: bool = False
    metadata_compression: str = "none"
    delete_mode: RowLevelMode = RowLevelMode.COPY_ON_WRITE
    update_mode: RowLevelMode = RowLevelMode.COPY_ON_WRITE
    merge_mode: RowLevelMode = RowLevelMode.COPY_ON_WRITE
    delete_isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE
    update_isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE
    merge_isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE
    max_snapshot_age_ms: int = 5 * 24 * 3600 * 1000
    min_snapshots_to_keep: int = 1
    max_ref_age_ms: int | None = None
    gc_enabled: bool = True
    root_max_data_files: int = 200
    root_max_delete_vectors: int = 200
    root_max_manifest_dvs: int = 100
    root_max_bytes: int = 8 * 1024 * 1024
    root_writer_flush_factor: int = 2
    root_max_added_files: int = 100
    manifest_dv_inline_max_bytes: int = 16 * 1024
    leaf_target_entries: int = 50_000

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> TableProperties:
        p = props
        level = p.get(PARQUET_COMPRESSION_LEVEL)
        codec = str(p.get(PARQUET_COMPRESSION, "zstd")).strip().lower()
        if codec not in ("zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed"):
            raise ValidationError(f"table property {PARQUET_COMPRESSION!r}: unknown codec {codec!r}")
        meta_codec = str(p.get(METADATA_COMPRESSION, "none")).strip().lower()
        if meta_codec not in ("none", "gzip"):
            raise ValidationError(
                f"table property {METADATA_COMPRESSION!r} must be none or gzip, got {meta_codec!r}"
            )
        max_ref = p.get(MAX_REF_AGE_MS)
        return cls(
            raw=dict(p),
            commit_num_retries=_int(p, COMMIT_NUM_RETRIES, 4, minimum=0),
            commit_min_retry_wait_ms=_int(p, COMMIT_MIN_RETRY_WAIT_MS, 100, minimum=0),
            commit_max_retry_wait_ms=_int(p, COMMIT_MAX_RETRY_WAIT_MS, 60_000, minimum=0),
            commit_total_retry_time_ms=_int(p, COMMIT_TOTAL_RETRY_TIME_MS, 1_800_000, minimum=0),
            manifest_target_size_bytes=_int(p, MANIFEST_TARGET_SIZE_BYTES, 8 * 1024 * 1024, minimum=1),
            manifest_min_merge_count=_int(p, MANIFEST_MIN_MERGE_COUNT, 100, minimum=1),
            manifest_merge_enabled=_bool(p, MANIFEST_MERGE_ENABLED, True),
            write_target_file_size_bytes=_int(p, WRITE_TARGET_FILE_SIZE_BYTES, 512 * 1024 * 1024, minimum=1),
            delete_target_file_size_bytes=_int(p, DELETE_TARGET_FILE_SIZE_BYTES, 64 * 1024 * 1024, minimum=1),
            parquet_compression=codec,
            parquet_compression_level=_int(p, PARQUET_COMPRESSION_LEVEL, 0) if level is not None else None,
            parquet_row_group_size_bytes=_int(p, PARQUET_ROW_GROUP_SIZE_BYTES, 128 * 1024 * 1024, minimum=1),
            parquet_page_size_bytes=_int(p, PARQUET_PAGE_SIZE_BYTES, 1024 * 1024, minimum=1),
            metrics_mode_default=str(p.get(METRICS_MODE_DEFAULT, "truncate(16)")),
            metrics_max_inferred_columns=_int(p, METRICS_MAX_INFERRED_COLUMNS, 100, minimum=0),
            metadata_previous_versions_max=_int(p, METADATA_PREVIOUS_VERSIONS_MAX, 100, minimum=1),
            metadata_delete_after_commit=_bool(p, METADATA_DELETE_AFTER_COMMIT, False),
            metadata_compression=meta_codec,
            delete_mode=_enum(p, DELETE_MODE, RowLevelMode, RowLevelMode.COPY_ON_WRITE),  # type: ignore[arg-type]
            update_mode=_enum(p, UPDATE_MODE, RowLevelMode, RowLevelMode.COPY_ON_WRITE),  # type: ignore[arg-type]
            merge_mode=_enum(p, MERGE_MODE, RowLevelMode, RowLevelMode.COPY_ON_WRITE),  # type: ignore[arg-type]
            delete_isolation_level=_enum(
                p, DELETE_ISOLATION_LEVEL, IsolationLevel, IsolationLevel.SERIALIZABLE
            ),  # type: ignore[arg-type]
            update_isolation_level=_enum(
                p, UPDATE_ISOLATION_LEVEL, IsolationLevel, IsolationLevel.SERIALIZABLE
            ),  # type: ignore[arg-type]
            merge_isolation_level=_enum(
                p, MERGE_ISOLATION_LEVEL, IsolationLevel, IsolationLevel.SERIALIZABLE
            ),  # type: ignore[arg-type]
            max_snapshot_age_ms=_int(p, MAX_SNAPSHOT_AGE_MS, 5 * 24 * 3600 * 1000, minimum=0),
            min_snapshots_to_keep=_int(p, MIN_SNAPSHOTS_TO_KEEP, 1, minimum=1),
            max_ref_age_ms=_int(p, MAX_REF_AGE_MS, 0, minimum=0) if max_ref is not None else None,
            gc_enabled=_bool(p, GC_ENABLED, True),
            root_max_data_files=_int(p, ROOT_MAX_DATA_FILES, 200, minimum=1),
            root_max_delete_vectors=_int(p, ROOT_MAX_DELETE_VECTORS, 200, minimum=1),
            root_max_manifest_dvs=_int(p, ROOT_MAX_MANIFEST_DVS, 100, minimum=1),
            root_max_bytes=_int(p, ROOT_MAX_BYTES, 8 * 1024 * 1024, minimum=1024),
            root_writer_flush_factor=_int(p, ROOT_WRITER_FLUSH_FACTOR, 2, minimum=1),
            root_max_added_files=_int(p, ROOT_MAX_ADDED_FILES, 100, minimum=0),
            manifest_dv_inline_max_bytes=_int(p, MANIFEST_DV_INLINE_MAX_BYTES, 16 * 1024, minimum=0),
            leaf_target_entries=_int(p, LEAF_TARGET_ENTRIES, 50_000, minimum=1),
        )

    def metrics_mode_for(self, column_name: str) -> str:
        """``write.metadata.metrics.column.<name>`` or the default mode."""
        return str(self.raw.get(METRICS_MODE_COLUMN_PREFIX + column_name, self.metrics_mode_default))

    @property
    def name_mapping_json(self) -> str | None:
        value = self.raw.get(DEFAULT_NAME_MAPPING)
        return str(value) if value is not None else None


# -- Maintenance recommendations (issue 11 item 7: ``table.maintenance.recommend()``) ------------
# Thresholds ``recommend()`` compares ``table.health()`` with. The defaults follow the survey in
# reference/notes/airflow-provider-notes.md §4.1; the docstring of
# ``firn.maintenance.recommend`` explains each choice. The root flush uses ``commit.root.*``.
# Compaction: at least this many data files below 0.75x ``write.target-file-size-bytes``
# (Iceberg's ``min-file-size-bytes`` default) ...
MAINTENANCE_COMPACT_MIN_SMALL_FILES = "maintenance.compact.min-small-files"
DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILES = 100
# ... making up at least this fraction of the data files.
MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO = "maintenance.compact.min-small-file-ratio"
DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO = 0.1
# Delete rewrite: deleted rows / rows at or above this ...
MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO = "maintenance.rewrite-dvs.min-delete-ratio"
DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO = 0.1
# ... or at least this many position delete files (v2; on v3/V4 any position delete file).
MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES = "maintenance.rewrite-dvs.min-delete-files"
DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES = 10
# Manifest rewrite: at least this many manifests (V4: leaves) below 0.75x their target.
MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS = "maintenance.manifests.min-small-manifests"
DEFAULT_MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS = 100
# Expiry: more snapshots than this are trimmed even inside the age window (0 turns it off).
MAINTENANCE_EXPIRE_MAX_SNAPSHOTS = "maintenance.expire.max-snapshots"
DEFAULT_MAINTENANCE_EXPIRE_MAX_SNAPSHOTS = 1000


def _ratio(props: Mapping[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValidationError(f"table property {key!r} must be a number, got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"table property {key!r} must be between 0 and 1, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class MaintenanceThresholds:
    """The ``maintenance.*`` table properties, typed (parse with :meth:`parse`)."""

    compact_min_small_files: int = DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILES
    compact_min_small_file_ratio: float = DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO
    rewrite_dvs_min_delete_ratio: float = DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO
    rewrite_dvs_min_delete_files: int = DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES
    manifests_min_small_manifests: int = DEFAULT_MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS
    expire_max_snapshots: int = DEFAULT_MAINTENANCE_EXPIRE_MAX_SNAPSHOTS

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> MaintenanceThresholds:
        """Thresholds from table properties; a malformed value is a ``ValidationError`` naming it."""
        p = props
        return cls(
            compact_min_small_files=_int(
                p, MAINTENANCE_COMPACT_MIN_SMALL_FILES, DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILES, minimum=1
            ),
            compact_min_small_file_ratio=_ratio(
                p, MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO, DEFAULT_MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO
            ),
            rewrite_dvs_min_delete_ratio=_ratio(
                p, MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO, DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO
            ),
            rewrite_dvs_min_delete_files=_int(
                p,
                MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES,
                DEFAULT_MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES,
                minimum=1,
            ),
            manifests_min_small_manifests=_int(
                p,
                MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS,
                DEFAULT_MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS,
                minimum=1,
            ),
            expire_max_snapshots=_int(
                p, MAINTENANCE_EXPIRE_MAX_SNAPSHOTS, DEFAULT_MAINTENANCE_EXPIRE_MAX_SNAPSHOTS, minimum=0
            ),
        )


# -- end of the maintenance recommendation block --------------------------------------------------


__all__ = [name for name in dir() if name.isupper()] + ["IsolationLevel", "RowLevelMode", "TableProperties"]
