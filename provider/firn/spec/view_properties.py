"""View property keys, their defaults, and a typed view parsed once per view metadata object.

Keys and defaults follow Iceberg Java's ``ViewProperties`` (view spec note 1 names
``version.history.num-entries``; the others are Java's): a view keeps its 10 newest versions,
writes gzip-compressed metadata files, and refuses a replace that loses a SQL dialect unless
``replace.drop-dialect.allowed`` is true. ``commit.retry.*`` is Firn's own: how often a catalog
re-applies a view change after losing the metadata-pointer swap to another writer (the same
keys as the table properties of that name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from firn.errors import ValidationError

# View spec "View Metadata" note 1: how many versions a metadata file keeps.
VERSION_HISTORY_SIZE = "version.history.num-entries"
DEFAULT_VERSION_HISTORY_SIZE = 10
# Java ViewProperties: a replace may not drop a dialect that the current version has.
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
DEFAULT_REPLACE_DROP_DIALECT_ALLOWED = False
# Java ViewProperties: view metadata files are gzip-compressed unless set to "none".
METADATA_COMPRESSION = "write.metadata.compression-codec"
DEFAULT_METADATA_COMPRESSION = "gzip"
METADATA_COMPRESSION_CODECS = ("none", "gzip")
# Java ViewProperties: metadata files go here instead of <location>/metadata.
WRITE_METADATA_PATH = "write.metadata.path"
# View spec "View Metadata" note 2: the usual key for a view's comment.
COMMENT = "comment"
# Firn: retries of a view commit that lost the pointer swap.
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
DEFAULT_COMMIT_NUM_RETRIES = 4
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
DEFAULT_COMMIT_MIN_RETRY_WAIT_MS = 20
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
DEFAULT_COMMIT_MAX_RETRY_WAIT_MS = 2_000


def _int(props: Mapping[str, str], key: str, default: int, *, minimum: int) -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"view property {key!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValidationError(f"view property {key!r} must be >= {minimum}, got {value}")
    return value


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    # Java's PropertyUtil.propertyAsBoolean is Boolean.parseBoolean: only "true" is true.
    # Anything but true/false is refused here rather than silently read as false.
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValidationError(f"view property {key!r} must be true or false, got {raw!r}")


@dataclass(frozen=True, slots=True)
class ViewProperties:
    """Typed view properties. Build with :meth:`parse`; every key is kept in ``raw``."""

    raw: Mapping[str, str]
    version_history_size: int = DEFAULT_VERSION_HISTORY_SIZE
    replace_drop_dialect_allowed: bool = DEFAULT_REPLACE_DROP_DIALECT_ALLOWED
    metadata_compression: str = DEFAULT_METADATA_COMPRESSION
    write_metadata_path: str | None = None
    comment: str | None = None
    commit_num_retries: int = DEFAULT_COMMIT_NUM_RETRIES
    commit_min_retry_wait_ms: int = DEFAULT_COMMIT_MIN_RETRY_WAIT_MS
    commit_max_retry_wait_ms: int = DEFAULT_COMMIT_MAX_RETRY_WAIT_MS

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> ViewProperties:
        """Parse and validate; a bad value raises ``ValidationError`` naming the key."""
        codec = str(props.get(METADATA_COMPRESSION, DEFAULT_METADATA_COMPRESSION)).strip().lower()
        if codec not in METADATA_COMPRESSION_CODECS:
            raise ValidationError(
                f"view property {METADATA_COMPRESSION!r} must be none or gzip, got {codec!r}"
            )
        path = props.get(WRITE_METADATA_PATH)
        return cls(
            raw=dict(props),
            # Java refuses a non-positive history size when building metadata; so does Firn.
            version_history_size=_int(props, VERSION_HISTORY_SIZE, DEFAULT_VERSION_HISTORY_SIZE, minimum=1),
            replace_drop_dialect_allowed=_bool(
                props, REPLACE_DROP_DIALECT_ALLOWED, DEFAULT_REPLACE_DROP_DIALECT_ALLOWED
            ),
            metadata_compression=codec,
            write_metadata_path=str(path).rstrip("/") if path else None,
            comment=props.get(COMMENT),
            commit_num_retries=_int(props, COMMIT_NUM_RETRIES, DEFAULT_COMMIT_NUM_RETRIES, minimum=0),
            commit_min_retry_wait_ms=_int(
                props, COMMIT_MIN_RETRY_WAIT_MS, DEFAULT_COMMIT_MIN_RETRY_WAIT_MS, minimum=0
            ),
            commit_max_retry_wait_ms=_int(
                props, COMMIT_MAX_RETRY_WAIT_MS, DEFAULT_COMMIT_MAX_RETRY_WAIT_MS, minimum=0
            ),
        )


__all__ = [name for name in dir() if name.isupper()] + ["ViewProperties"]
