"""Table property keys, their defaults, and a typed view parsed once per metadata object.

Keys and defaults follow Iceberg Java's ``TableProperties`` where the two overlap (cited in
``reference/notes/iceberg-format-notes.md`` §11); V4 keys (``commit.root.*``) are Firn's own,
since no spec defines root-manifest flush thresholds.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

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
# Two-phase orphan removal (issue 18, in the manner of S3 Tables): a file found unreferenced is
# recorded first and deleted only by a later run, once it was recorded at least this long ago.
# A duration with a unit: ``1d`` (the default), ``36h``, ``90m``, ``600s``, ``500ms``, or ``0``.
ORPHANS_GRACE = "orphans.grace"

# V4 (seed 004 "root flush"): soft thresholds a maintenance flush watches, and the factor
# above which a writer flushes synchronously instead of growing the root further. Every
# commit rewrites the root, so its encoding cost grows with its entries; the defaults (200
# data files or DVs, writers flushing above twice that) keep a root to about one object-store
# round trip, and a writer flush to one leaf write per couple of hundred commits
# (bench/README.md, issue 4 item 9a, has the figures behind them).
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


_E = TypeVar("_E", bound=enum.Enum)


class RowLevelMode(enum.Enum):
    COPY_ON_WRITE = "copy-on-write"
    MERGE_ON_READ = "merge-on-read"


class IsolationLevel(enum.Enum):
    SERIALIZABLE = "serializable"
    SNAPSHOT = "snapshot"


# -- parsers: (key, raw value) -> typed value; errors name the property ------------------------
def _int(*, minimum: int | None = None) -> Callable[[str, str], int]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ValidationError(f"table property {key!r} must be an integer, got {raw!r}") from None
        if minimum is not None and value < minimum:
            raise ValidationError(f"table property {key!r} must be >= {minimum}, got {value}")
        return value

    return parse


def _bool(key: str, raw: str) -> bool:
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValidationError(f"table property {key!r} must be true or false, got {raw!r}")


_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)


def parse_duration_ms(key: str, raw: str) -> int:
    """A duration property in milliseconds: a whole number with a unit (``ms``, ``s``, ``m``,
    ``h``, ``d``), e.g. ``1d`` or ``36h``; a bare number is refused (which unit?) except ``0``."""
    m = _DURATION.match(str(raw))
    if m is None or (m.group(2) is None and int(m.group(1)) != 0):
        raise ValidationError(
            f"table property {key!r} must be a duration such as 1d, 36h, 90m, 600s or 0, got {raw!r}"
        )
    return int(m.group(1)) * _DURATION_UNITS_MS[(m.group(2) or "ms").lower()]


def _str(key: str, raw: str) -> str:
    return str(raw)


def _enum(cls: type[_E]) -> Callable[[str, str], _E]:
    def parse(key: str, raw: str) -> _E:
        try:
            return cls(str(raw).strip().lower())
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ValidationError(f"table property {key!r} must be one of {allowed}, got {raw!r}") from None

    return parse


def _parquet_codec(key: str, raw: str) -> str:
    codec = str(raw).strip().lower()
    if codec not in ("zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed"):
        raise ValidationError(f"table property {key!r}: unknown codec {codec!r}")
    return codec


def _metadata_codec(key: str, raw: str) -> str:
    codec = str(raw).strip().lower()
    if codec not in ("none", "gzip"):
        raise ValidationError(f"table property {key!r} must be none or gzip, got {codec!r}")
    return codec


def _declared(key: str, parser: Callable[[str, str], Any]) -> dict[str, Any]:
    """Field metadata of a :class:`TableProperties` attribute: its property key and parser."""
    return {_KEY: key, _PARSER: parser}


_KEY = "firn.property-key"
_PARSER = "firn.property-parser"
_MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TableProperties:
    """Typed table properties, parsed once per metadata object: build with :meth:`parse`.

    Each attribute is declared with its property key, default and parser (the default is
    written only here); unknown keys are kept in ``raw``.
    """

    raw: Mapping[str, str]
    commit_num_retries: int = field(default=4, metadata=_declared(COMMIT_NUM_RETRIES, _int(minimum=0)))
    commit_min_retry_wait_ms: int = field(
        default=100, metadata=_declared(COMMIT_MIN_RETRY_WAIT_MS, _int(minimum=0))
    )
    commit_max_retry_wait_ms: int = field(
        default=60_000, metadata=_declared(COMMIT_MAX_RETRY_WAIT_MS, _int(minimum=0))
    )
    commit_total_retry_time_ms: int = field(
        default=1_800_000, metadata=_declared(COMMIT_TOTAL_RETRY_TIME_MS, _int(minimum=0))
    )
    manifest_target_size_bytes: int = field(
        default=8 * _MiB, metadata=_declared(MANIFEST_TARGET_SIZE_BYTES, _int(minimum=1))
    )
    manifest_min_merge_count: int = field(
        default=100, metadata=_declared(MANIFEST_MIN_MERGE_COUNT, _int(minimum=1))
    )
    manifest_merge_enabled: bool = field(default=True, metadata=_declared(MANIFEST_MERGE_ENABLED, _bool))
    write_target_file_size_bytes: int = field(
        default=512 * _MiB, metadata=_declared(WRITE_TARGET_FILE_SIZE_BYTES, _int(minimum=1))
    )
    delete_target_file_size_bytes: int = field(
        default=64 * _MiB, metadata=_declared(DELETE_TARGET_FILE_SIZE_BYTES, _int(minimum=1))
    )
    parquet_compression: str = field(default="zstd", metadata=_declared(PARQUET_COMPRESSION, _parquet_codec))
    parquet_compression_level: int | None = field(
        default=None, metadata=_declared(PARQUET_COMPRESSION_LEVEL, _int())
    )
    parquet_row_group_size_bytes: int = field(
        default=128 * _MiB, metadata=_declared(PARQUET_ROW_GROUP_SIZE_BYTES, _int(minimum=1))
    )
    parquet_page_size_bytes: int = field(
        default=_MiB, metadata=_declared(PARQUET_PAGE_SIZE_BYTES, _int(minimum=1))
    )
    metrics_mode_default: str = field(default="truncate(16)", metadata=_declared(METRICS_MODE_DEFAULT, _str))
    metrics_max_inferred_columns: int = field(
        default=100, metadata=_declared(METRICS_MAX_INFERRED_COLUMNS, _int(minimum=0))
    )
    metadata_previous_versions_max: int = field(
        default=100, metadata=_declared(METADATA_PREVIOUS_VERSIONS_MAX, _int(minimum=1))
    )
    metadata_delete_after_commit: bool = field(
        default=False, metadata=_declared(METADATA_DELETE_AFTER_COMMIT, _bool)
    )
    metadata_compression: str = field(
        default="none", metadata=_declared(METADATA_COMPRESSION, _metadata_codec)
    )
    delete_mode: RowLevelMode = field(
        default=RowLevelMode.COPY_ON_WRITE, metadata=_declared(DELETE_MODE, _enum(RowLevelMode))
    )
    update_mode: RowLevelMode = field(
        default=RowLevelMode.COPY_ON_WRITE, metadata=_declared(UPDATE_MODE, _enum(RowLevelMode))
    )
    merge_mode: RowLevelMode = field(
        default=RowLevelMode.COPY_ON_WRITE, metadata=_declared(MERGE_MODE, _enum(RowLevelMode))
    )
    delete_isolation_level: IsolationLevel = field(
        default=IsolationLevel.SERIALIZABLE, metadata=_declared(DELETE_ISOLATION_LEVEL, _enum(IsolationLevel))
    )
    update_isolation_level: IsolationLevel = field(
        default=IsolationLevel.SERIALIZABLE, metadata=_declared(UPDATE_ISOLATION_LEVEL, _enum(IsolationLevel))
    )
    merge_isolation_level: IsolationLevel = field(
        default=IsolationLevel.SERIALIZABLE, metadata=_declared(MERGE_ISOLATION_LEVEL, _enum(IsolationLevel))
    )
    max_snapshot_age_ms: int = field(
        default=5 * 24 * 3600 * 1000, metadata=_declared(MAX_SNAPSHOT_AGE_MS, _int(minimum=0))
    )
    min_snapshots_to_keep: int = field(default=1, metadata=_declared(MIN_SNAPSHOTS_TO_KEEP, _int(minimum=1)))
    max_ref_age_ms: int | None = field(default=None, metadata=_declared(MAX_REF_AGE_MS, _int(minimum=0)))
    gc_enabled: bool = field(default=True, metadata=_declared(GC_ENABLED, _bool))
    orphans_grace_ms: int = field(default=86_400_000, metadata=_declared(ORPHANS_GRACE, parse_duration_ms))
    root_max_data_files: int = field(default=200, metadata=_declared(ROOT_MAX_DATA_FILES, _int(minimum=1)))
    root_max_delete_vectors: int = field(
        default=200, metadata=_declared(ROOT_MAX_DELETE_VECTORS, _int(minimum=1))
    )
    root_max_manifest_dvs: int = field(
        default=100, metadata=_declared(ROOT_MAX_MANIFEST_DVS, _int(minimum=1))
    )
    root_max_bytes: int = field(default=8 * _MiB, metadata=_declared(ROOT_MAX_BYTES, _int(minimum=1024)))
    root_writer_flush_factor: int = field(
        default=2, metadata=_declared(ROOT_WRITER_FLUSH_FACTOR, _int(minimum=1))
    )
    root_max_added_files: int = field(default=100, metadata=_declared(ROOT_MAX_ADDED_FILES, _int(minimum=0)))
    manifest_dv_inline_max_bytes: int = field(
        default=16 * 1024, metadata=_declared(MANIFEST_DV_INLINE_MAX_BYTES, _int(minimum=0))
    )
    leaf_target_entries: int = field(default=50_000, metadata=_declared(LEAF_TARGET_ENTRIES, _int(minimum=1)))

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> TableProperties:
        """Parse ``props`` once; a bad value raises :class:`ValidationError` naming its key."""
        return cls(raw=dict(props), **_parsed(_FIELDS, props))

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
# ... making up at least this fraction of the data files.
MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO = "maintenance.compact.min-small-file-ratio"
# Delete rewrite: deleted rows / rows at or above this ...
MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO = "maintenance.rewrite-dvs.min-delete-ratio"
# ... or at least this many position delete files (v2; on v3/V4 any position delete file).
MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES = "maintenance.rewrite-dvs.min-delete-files"
# Manifest rewrite: at least this many manifests (V4: leaves) below 0.75x their target.
MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS = "maintenance.manifests.min-small-manifests"
# Expiry: more snapshots than this are trimmed even inside the age window (0 turns it off).
MAINTENANCE_EXPIRE_MAX_SNAPSHOTS = "maintenance.expire.max-snapshots"


def _ratio(key: str, raw: str) -> float:
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValidationError(f"table property {key!r} must be a number, got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"table property {key!r} must be between 0 and 1, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class MaintenanceThresholds:
    """The ``maintenance.*`` table properties, typed (parse with :meth:`parse`); each declared
    with its key, default and parser like :class:`TableProperties`."""

    compact_min_small_files: int = field(
        default=100, metadata=_declared(MAINTENANCE_COMPACT_MIN_SMALL_FILES, _int(minimum=1))
    )
    compact_min_small_file_ratio: float = field(
        default=0.1, metadata=_declared(MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO, _ratio)
    )
    rewrite_dvs_min_delete_ratio: float = field(
        default=0.1, metadata=_declared(MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO, _ratio)
    )
    rewrite_dvs_min_delete_files: int = field(
        default=10, metadata=_declared(MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES, _int(minimum=1))
    )
    manifests_min_small_manifests: int = field(
        default=100, metadata=_declared(MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS, _int(minimum=1))
    )
    expire_max_snapshots: int = field(
        default=1000, metadata=_declared(MAINTENANCE_EXPIRE_MAX_SNAPSHOTS, _int(minimum=0))
    )

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> MaintenanceThresholds:
        """Thresholds from table properties; a malformed value is a ``ValidationError`` naming it."""
        return cls(**_parsed(_declared_fields(cls), props))


# -- end of the maintenance recommendation block --------------------------------------------------


def _declared_fields(cls: type) -> tuple[tuple[str, str, Callable[[str, str], Any]], ...]:
    """(attribute, property key, parser) of every declared attribute of ``cls``."""
    return tuple((f.name, f.metadata[_KEY], f.metadata[_PARSER]) for f in fields(cls) if _KEY in f.metadata)


def _parsed(
    declared: tuple[tuple[str, str, Callable[[str, str], Any]], ...], props: Mapping[str, str]
) -> dict[str, Any]:
    """The parsed values of the declared properties present in ``props`` (the rest keep their
    defaults)."""
    values: dict[str, Any] = {}
    for name, key, parser in declared:
        raw = props.get(key)
        if raw is not None:
            values[name] = parser(key, raw)
    return values


_FIELDS = _declared_fields(TableProperties)


def effective_property(props: Mapping[str, str], key: str) -> Any | None:
    """The typed value that property ``key`` has for a table with properties ``props``: its
    own value when set, else Firn's default; None when Firn declares no such property (then
    only the table's raw value, if any, says anything). A bad value is a ``ValidationError``
    naming the key."""
    for cls in (TableProperties, MaintenanceThresholds):
        for f in fields(cls):
            if f.metadata.get(_KEY) == key:
                raw = props.get(key)
                return f.metadata[_PARSER](key, raw) if raw is not None else f.default
    return None


__all__ = [name for name in dir() if name.isupper() and not name.startswith("_")] + [
    "IsolationLevel",
    "MaintenanceThresholds",
    "effective_property",
    "parse_duration_ms",
    "RowLevelMode",
    "TableProperties",
]
