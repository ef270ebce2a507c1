"""Metadata updates and commit requirements (the vocabulary of Iceberg's REST commit API).

Actions return ``(updates, requirements)``; the metadata builder applies updates to a base,
and the transaction checks requirements against the freshest metadata before swapping.
Every action that removes metadata sends requirements (STYLE 6).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firn.errors import CommitConflict

if TYPE_CHECKING:
    from firn.spec.partitioning import PartitionSpec
    from firn.spec.schema import Schema
    from firn.spec.snapshots import RefType, Snapshot, StatisticsFile
    from firn.spec.sorting import SortOrder
    from firn.spec.table_metadata import TableMetadata

# "-1" in SetCurrentSchema / SetDefaultSpec / SetDefaultSortOrder means "the one added last".
LAST_ADDED = -1


class TableUpdate:
    """Base of metadata updates."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class AssignUUID(TableUpdate):
    uuid: uuid.UUID


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion(TableUpdate):
    format_version: int


@dataclass(frozen=True, slots=True)
class AddSchema(TableUpdate):
    schema: Schema
    last_column_id: int


@dataclass(frozen=True, slots=True)
class SetCurrentSchema(TableUpdate):
    schema_id: int


@dataclass(frozen=True, slots=True)
class AddPartitionSpec(TableUpdate):
    spec: PartitionSpec


@dataclass(frozen=True, slots=True)
class SetDefaultSpec(TableUpdate):
    spec_id: int


@dataclass(frozen=True, slots=True)
class AddSortOrder(TableUpdate):
    sort_order: SortOrder


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder(TableUpdate):
    sort_order_id: int


@dataclass(frozen=True, slots=True)
class AddSnapshot(TableUpdate):
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class SetSnapshotRef(TableUpdate):
    ref_name: str
    snapshot_id: int
    ref_type: RefType
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RemoveSnapshots(TableUpdate):
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef(TableUpdate):
    ref_name: str


@dataclass(frozen=True, slots=True)
class SetLocation(TableUpdate):
    location: str


@dataclass(frozen=True, slots=True)
class SetProperties(TableUpdate):
    updates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RemoveProperties(TableUpdate):
    removals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SetStatistics(TableUpdate):
    statistics: StatisticsFile


@dataclass(frozen=True, slots=True)
class RemoveStatistics(TableUpdate):
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class RemovePartitionSpecs(TableUpdate):
    spec_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSchemas(TableUpdate):
    schema_ids: tuple[int, ...]


# -- requirements ---------------------------------------------------------------------------
class TableRequirement:
    """A condition on the current metadata that must hold for a commit to apply."""

    __slots__ = ()

    def validate(self, current: TableMetadata | None) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


def _conflict(message: str) -> CommitConflict:
    return CommitConflict(f"commit requirement failed: {message}")


@dataclass(frozen=True, slots=True)
class AssertCreate(TableRequirement):
    def validate(self, current: TableMetadata | None) -> None:
        if current is not None:
            raise _conflict("table already exists")


@dataclass(frozen=True, slots=True)
class AssertTableUUID(TableRequirement):
    uuid: uuid.UUID

    def validate(self, current: TableMetadata | None) -> None:
        if current is None or current.table_uuid != self.uuid:
            raise _conflict(f"table UUID changed (expected {self.uuid}); the table was replaced")


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId(TableRequirement):
    """The ref points at ``snapshot_id`` (None: the ref must not exist)."""

    ref: str
    snapshot_id: int | None

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        r = current.ref(self.ref)
        actual = r.snapshot_id if r is not None else None
        if actual != self.snapshot_id:
            raise _conflict(f"branch {self.ref!r} moved from {self.snapshot_id} to {actual}")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId(TableRequirement):
    last_assigned_field_id: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.last_column_id != self.last_assigned_field_id:
            raise _conflict("the schema was changed concurrently (last column id moved)")


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId(TableRequirement):
    schema_id: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.current_schema_id != self.schema_id:
            raise _conflict(f"current schema changed from {self.schema_id} to {current.current_schema_id}")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId(TableRequirement):
    last_assigned_partition_id: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.last_partition_id != self.last_assigned_partition_id:
            raise _conflict("the partition spec was changed concurrently")


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId(TableRequirement):
    spec_id: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.default_spec_id != self.spec_id:
            raise _conflict(f"default spec changed from {self.spec_id} to {current.default_spec_id}")


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId(TableRequirement):
    sort_order_id: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.default_sort_order_id != self.sort_order_id:
            raise _conflict("default sort order changed concurrently")


@dataclass(frozen=True, slots=True)
class AssertFormatVersion(TableRequirement):
    format_version: int

    def validate(self, current: TableMetadata | None) -> None:
        assert current is not None
        if current.format_version != self.format_version:
            raise _conflict(f"format version changed from {self.format_version} to {current.format_version}")


__all__ = [name for name in dir() if name[0].isupper()]
