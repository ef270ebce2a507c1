"""Snapshots, refs and logs (spec: "Snapshots", "Snapshot References", Appendix C)."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from firn.errors import InvalidMetadata
from firn.spec.summary import OPERATION

MAIN_BRANCH = "main"


class Operation(enum.Enum):
    """Snapshot summary ``operation`` (spec "Snapshots")."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Summary:
    """The snapshot summary: an operation plus string properties (spec Appendix F metrics)."""

    operation: Operation
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    def to_dict(self) -> dict[str, str]:
        return {OPERATION: self.operation.value, **self.properties}


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A table snapshot. Exactly one of ``manifest_list`` (v1-v3), ``root_manifest`` (v4) or
    ``manifests`` (legacy v1 inline list) is set."""

    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    summary: Summary
    manifest_list: str | None = None
    schema_id: int | None = None
    # v3 row lineage.
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None
    # V4 (seed 004): the snapshot's root manifest.
    root_manifest: str | None = None
    # v1 only: manifests listed inline instead of a manifest list.
    manifests: tuple[str, ...] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return (
            self.snapshot_id,
            self.parent_snapshot_id,
            self.sequence_number,
            self.timestamp_ms,
            self.summary,
            self.manifest_list,
            self.schema_id,
            self.first_row_id,
            self.added_rows,
            self.key_id,
            self.root_manifest,
            self.manifests,
        ) == (
            other.snapshot_id,
            other.parent_snapshot_id,
            other.sequence_number,
            other.timestamp_ms,
            other.summary,
            other.manifest_list,
            other.schema_id,
            other.first_row_id,
            other.added_rows,
            other.key_id,
            other.root_manifest,
            other.manifests,
        )

    def __hash__(self) -> int:
        return hash(self.snapshot_id)

    @property
    def operation(self) -> Operation:
        return self.summary.operation


class RefType(enum.Enum):
    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A named branch or tag with its retention settings (spec "Snapshot References")."""

    snapshot_id: int
    ref_type: RefType = RefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    @property
    def is_branch(self) -> bool:
        return self.ref_type is RefType.BRANCH


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    snapshot_id: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    metadata_file: str
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class StatisticsFile:
    """Table statistics entry (spec "Table Statistics")."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionStatisticsFile:
    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int


@dataclass(frozen=True, slots=True)
class EncryptionKey:
    key_id: str
    encrypted_key_metadata: str
    encrypted_by_id: str | None = None
    properties: Mapping[str, str] | None = None


def new_snapshot_id() -> int:
    """A positive random snapshot id, as Java derives it from a type-4 UUID (spec Appendix F)."""
    u = uuid.uuid4().int
    return ((u >> 64) ^ (u & 0xFFFFFFFFFFFFFFFF)) & 0x7FFFFFFFFFFFFFFF


def summary_from_dict(data: Mapping[str, Any], *, snapshot_id: int | None = None) -> Summary:
    """The summary from its JSON object; every value must be a JSON string (as Java's
    SnapshotParser requires: a number would read back as different text). Errors name the
    snapshot when ``snapshot_id`` is given."""
    props = dict(data)
    op = props.pop(OPERATION, Operation.OVERWRITE.value)
    # One C-level pass over the values (this runs for every snapshot of a metadata file).
    if not _STR_ONLY.issuperset(map(type, props.values())):
        key = next(k for k, v in props.items() if type(v) is not str)
        raise InvalidMetadata(f"{_summary_of(snapshot_id)}: {key!r} must be a string, got {props[key]!r}")
    try:
        operation = Operation(op)
    except (ValueError, TypeError):
        allowed = ", ".join(repr(o.value) for o in Operation)
        raise InvalidMetadata(
            f"{_summary_of(snapshot_id)}: 'operation' must be one of {allowed}, got {op!r}"
        ) from None
    return Summary(operation, MappingProxyType(props))


_STR_ONLY = frozenset((str,))


def _summary_of(snapshot_id: int | None) -> str:
    return f"snapshot {snapshot_id} summary" if snapshot_id is not None else "snapshot summary"


__all__ = [
    "MAIN_BRANCH",
    "BlobMetadata",
    "EncryptionKey",
    "MetadataLogEntry",
    "Operation",
    "PartitionStatisticsFile",
    "RefType",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "StatisticsFile",
    "Summary",
    "new_snapshot_id",
    "summary_from_dict",
]
