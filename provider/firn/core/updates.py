"""Metadata updates and commit requirements (the vocabulary of Iceberg's REST commit API).

Actions return ``(updates, requirements)``; the metadata builder applies updates to a base,
and the transaction checks requirements against the freshest metadata before swapping.
Every action that removes metadata sends requirements (STYLE 6).

Each class carries its REST JSON form (OpenAPI ``TableUpdate`` / ``TableRequirement``: the
``action`` or ``type`` discriminator and the spec's field names): ``to_json()`` writes it and
:func:`update_from_json` / :func:`requirement_from_json` read it, strictly: an unknown action,
a missing or mistyped field, or a field the spec does not define is a ``ValidationError``
(REST spec "updateTable": servers fail unknown updates or requirements with a 400).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from firn.errors import CommitConflict, ValidationError
from firn.spec.metadata_json import (
    ref_from_dict,
    snapshot_from_dict,
    snapshot_to_dict,
    statistics_from_dict,
    statistics_to_dict,
)
from firn.spec.metadata_updates import (
    LAST_ADDED,
    SHARED_UPDATE_READERS,
    JsonFields,
    RemoveProperties,
    SetLocation,
    SetProperties,
    TableUpdate,
    UpgradeFormatVersion,
    parse_uuid,
    read_tagged,
)
from firn.spec.schema_json import (
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from firn.spec.snapshots import RefType
from firn.spec.versions import MAX_SUPPORTED_FORMAT_VERSION
from firn.util.json_reader import JsonObjectReader

if TYPE_CHECKING:
    from firn.spec.partitioning import PartitionSpec
    from firn.spec.schema import Schema
    from firn.spec.snapshots import Snapshot, StatisticsFile
    from firn.spec.sorting import SortOrder
    from firn.spec.table_metadata import TableMetadata


# -- updates (shared with views: firn.spec.metadata_updates) ------------------------------------
@dataclass(frozen=True, slots=True)
class AssignUUID(TableUpdate):
    ACTION: ClassVar[str] = "assign-uuid"
    uuid: uuid.UUID


@dataclass(frozen=True, slots=True)
class AddSchema(TableUpdate):
    ACTION: ClassVar[str] = "add-schema"
    schema: Schema
    last_column_id: int

    def _fields(self) -> dict[str, Any]:
        # last-column-id is deprecated in the REST spec (servers compute it) but still read by
        # older servers, so it is sent.
        return {"schema": schema_to_json(self.schema), "last-column-id": self.last_column_id}


@dataclass(frozen=True, slots=True)
class SetCurrentSchema(TableUpdate):
    ACTION: ClassVar[str] = "set-current-schema"
    schema_id: int


@dataclass(frozen=True, slots=True)
class AddPartitionSpec(TableUpdate):
    ACTION: ClassVar[str] = "add-spec"
    spec: PartitionSpec

    def _fields(self) -> dict[str, Any]:
        return {"spec": partition_spec_to_json(self.spec)}


@dataclass(frozen=True, slots=True)
class SetDefaultSpec(TableUpdate):
    ACTION: ClassVar[str] = "set-default-spec"
    spec_id: int


@dataclass(frozen=True, slots=True)
class AddSortOrder(TableUpdate):
    ACTION: ClassVar[str] = "add-sort-order"
    sort_order: SortOrder

    def _fields(self) -> dict[str, Any]:
        return {"sort-order": sort_order_to_json(self.sort_order)}


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder(TableUpdate):
    ACTION: ClassVar[str] = "set-default-sort-order"
    sort_order_id: int


@dataclass(frozen=True, slots=True)
class AddSnapshot(TableUpdate):
    ACTION: ClassVar[str] = "add-snapshot"
    snapshot: Snapshot

    def _fields(self) -> dict[str, Any]:
        # Every field the snapshot has (sequence number, row lineage): the receiver applies
        # the ones its table's format version defines.
        return {"snapshot": snapshot_to_dict(self.snapshot, MAX_SUPPORTED_FORMAT_VERSION)}


@dataclass(frozen=True, slots=True)
class SetSnapshotRef(TableUpdate):
    ACTION: ClassVar[str] = "set-snapshot-ref"
    ref_name: str
    snapshot_id: int
    ref_type: RefType
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def _fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref-name": self.ref_name,
            "snapshot-id": self.snapshot_id,
            "type": self.ref_type.value,
        }
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out


@dataclass(frozen=True, slots=True)
class RemoveSnapshots(TableUpdate):
    ACTION: ClassVar[str] = "remove-snapshots"
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef(TableUpdate):
    ACTION: ClassVar[str] = "remove-snapshot-ref"
    ref_name: str


@dataclass(frozen=True, slots=True)
class SetStatistics(TableUpdate):
    ACTION: ClassVar[str] = "set-statistics"
    statistics: StatisticsFile

    def _fields(self) -> dict[str, Any]:
        # The top-level snapshot-id is deprecated (it repeats statistics.snapshot-id) but
        # older servers require it.
        return {"snapshot-id": self.statistics.snapshot_id, "statistics": statistics_to_dict(self.statistics)}


@dataclass(frozen=True, slots=True)
class RemoveStatistics(TableUpdate):
    ACTION: ClassVar[str] = "remove-statistics"
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class RemovePartitionSpecs(TableUpdate):
    ACTION: ClassVar[str] = "remove-partition-specs"
    spec_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSchemas(TableUpdate):
    ACTION: ClassVar[str] = "remove-schemas"
    schema_ids: tuple[int, ...]


def _add_schema(r: JsonObjectReader) -> AddSchema:
    schema: Schema = r.nested("schema", schema_from_json)
    last = r.opt_int("last-column-id")
    # Optional since the spec deprecated it: the receiver derives it from the schema.
    return AddSchema(schema, last if last is not None else schema.highest_field_id)


def _set_snapshot_ref(r: JsonObjectReader) -> SetSnapshotRef:
    name = r.get_str("ref-name")
    kind = r.get_str("type").lower()
    if kind not in {t.value for t in RefType}:
        raise ValidationError(f"{r.what} field 'type' must be 'branch' or 'tag', got {kind!r}")
    parsed = ref_from_dict(
        {
            "snapshot-id": r.get_int("snapshot-id"),
            "type": kind,
            "min-snapshots-to-keep": r.opt_int("min-snapshots-to-keep"),
            "max-snapshot-age-ms": r.opt_int("max-snapshot-age-ms"),
            "max-ref-age-ms": r.opt_int("max-ref-age-ms"),
        }
    )
    return SetSnapshotRef(
        name,
        parsed.snapshot_id,
        parsed.ref_type,
        parsed.min_snapshots_to_keep,
        parsed.max_snapshot_age_ms,
        parsed.max_ref_age_ms,
    )


def _set_statistics(r: JsonObjectReader) -> SetStatistics:
    stats: StatisticsFile = r.nested("statistics", statistics_from_dict)
    legacy = r.opt_int("snapshot-id")
    if legacy is not None and legacy != stats.snapshot_id:
        raise ValidationError(
            f"{r.what}: snapshot-id {legacy} differs from statistics.snapshot-id {stats.snapshot_id}"
        )
    return SetStatistics(stats)


_UPDATE_READERS: dict[str, Callable[[JsonObjectReader], TableUpdate]] = {
    **SHARED_UPDATE_READERS,  # type: ignore[dict-item]
    AssignUUID.ACTION: lambda r: AssignUUID(parse_uuid(r.get_str("uuid"), r.what)),
    AddSchema.ACTION: _add_schema,
    SetCurrentSchema.ACTION: lambda r: SetCurrentSchema(r.get_int("schema-id")),
    AddPartitionSpec.ACTION: lambda r: AddPartitionSpec(r.nested("spec", partition_spec_from_json)),
    SetDefaultSpec.ACTION: lambda r: SetDefaultSpec(r.get_int("spec-id")),
    AddSortOrder.ACTION: lambda r: AddSortOrder(r.nested("sort-order", sort_order_from_json)),
    SetDefaultSortOrder.ACTION: lambda r: SetDefaultSortOrder(r.get_int("sort-order-id")),
    AddSnapshot.ACTION: lambda r: AddSnapshot(
        r.nested("snapshot", lambda d: snapshot_from_dict(d, MAX_SUPPORTED_FORMAT_VERSION))
    ),
    SetSnapshotRef.ACTION: _set_snapshot_ref,
    RemoveSnapshots.ACTION: lambda r: RemoveSnapshots(r.get_list("snapshot-ids", int)),
    RemoveSnapshotRef.ACTION: lambda r: RemoveSnapshotRef(r.get_str("ref-name")),
    SetStatistics.ACTION: _set_statistics,
    RemoveStatistics.ACTION: lambda r: RemoveStatistics(r.get_int("snapshot-id")),
    RemovePartitionSpecs.ACTION: lambda r: RemovePartitionSpecs(r.get_list("spec-ids", int)),
    RemoveSchemas.ACTION: lambda r: RemoveSchemas(r.get_list("schema-ids", int)),
}


def update_from_json(data: Any) -> TableUpdate:
    """A REST ``TableUpdate`` object; ``ValidationError`` names what is wrong with it.

    Updates of the spec that Firn does not apply (partition statistics, encryption keys) are
    refused by name rather than ignored.
    """
    return read_tagged(data, "table update", "action", _UPDATE_READERS, "unsupported")


# -- requirements ---------------------------------------------------------------------------
class TableRequirement(JsonFields):
    """A condition on the current metadata that must hold for a commit to apply.

    ``TYPE`` is the REST ``type`` discriminator; None for Firn-only requirements that the REST
    protocol cannot carry (a REST client leaves those to the server's own checks).
    """

    __slots__ = ()
    TYPE: ClassVar[str | None] = None

    def validate(self, current: TableMetadata | None) -> None:
        raise NotImplementedError  # pragma: no cover - abstract

    def to_json(self) -> dict[str, Any]:
        """The REST ``TableRequirement`` JSON object."""
        if self.TYPE is None:
            raise ValidationError(f"{type(self).__name__} has no REST form")
        return {"type": self.TYPE, **self._fields()}


def _conflict(message: str) -> CommitConflict:
    return CommitConflict(f"commit requirement failed: {message}")


def _require_table(current: TableMetadata | None, what: str) -> TableMetadata:
    if current is None:
        raise _conflict(f"the table does not exist (checking {what})")
    return current


@dataclass(frozen=True, slots=True)
class AssertCreate(TableRequirement):
    """The table must not exist yet (a create transaction, REST ``stage-create``)."""

    TYPE: ClassVar[str | None] = "assert-create"

    def validate(self, current: TableMetadata | None) -> None:
        if current is not None:
            raise _conflict("table already exists")


@dataclass(frozen=True, slots=True)
class AssertTableUUID(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-table-uuid"
    uuid: uuid.UUID

    def validate(self, current: TableMetadata | None) -> None:
        if current is None or current.table_uuid != self.uuid:
            raise _conflict(f"table UUID changed (expected {self.uuid}); the table was replaced")


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId(TableRequirement):
    """The ref points at ``snapshot_id`` (None: the ref must not exist)."""

    TYPE: ClassVar[str | None] = "assert-ref-snapshot-id"
    ref: str
    snapshot_id: int | None

    def validate(self, current: TableMetadata | None) -> None:
        r = _require_table(current, f"branch {self.ref!r}").ref(self.ref)
        actual = r.snapshot_id if r is not None else None
        if actual != self.snapshot_id:
            raise _conflict(f"branch {self.ref!r} moved from {self.snapshot_id} to {actual}")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-last-assigned-field-id"
    last_assigned_field_id: int

    def validate(self, current: TableMetadata | None) -> None:
        if _require_table(current, "last column id").last_column_id != self.last_assigned_field_id:
            raise _conflict("the schema was changed concurrently (last column id moved)")


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-current-schema-id"
    JSON_NAMES: ClassVar[Mapping[str, str]] = {"schema_id": "current-schema-id"}
    schema_id: int

    def validate(self, current: TableMetadata | None) -> None:
        actual = _require_table(current, "current schema").current_schema_id
        if actual != self.schema_id:
            raise _conflict(f"current schema changed from {self.schema_id} to {actual}")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-last-assigned-partition-id"
    last_assigned_partition_id: int

    def validate(self, current: TableMetadata | None) -> None:
        actual = _require_table(current, "last partition id").last_partition_id
        if actual != self.last_assigned_partition_id:
            raise _conflict("the partition spec was changed concurrently")


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-default-spec-id"
    JSON_NAMES: ClassVar[Mapping[str, str]] = {"spec_id": "default-spec-id"}
    spec_id: int

    def validate(self, current: TableMetadata | None) -> None:
        actual = _require_table(current, "default spec").default_spec_id
        if actual != self.spec_id:
            raise _conflict(f"default spec changed from {self.spec_id} to {actual}")


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId(TableRequirement):
    TYPE: ClassVar[str | None] = "assert-default-sort-order-id"
    JSON_NAMES: ClassVar[Mapping[str, str]] = {"sort_order_id": "default-sort-order-id"}
    sort_order_id: int

    def validate(self, current: TableMetadata | None) -> None:
        if _require_table(current, "default sort order").default_sort_order_id != self.sort_order_id:
            raise _conflict("default sort order changed concurrently")


@dataclass(frozen=True, slots=True)
class AssertFormatVersion(TableRequirement):
    """Firn-only (no REST form): a REST server refuses a downgrading ``upgrade-format-version``
    on its own, which is what this guards against."""

    format_version: int

    def validate(self, current: TableMetadata | None) -> None:
        actual = _require_table(current, "format version").format_version
        if actual != self.format_version:
            raise _conflict(f"format version changed from {self.format_version} to {actual}")


def _assert_ref(r: JsonObjectReader) -> AssertRefSnapshotId:
    ref = r.get_str("ref")
    # Required but nullable in the spec; PyIceberg documents a missing value as null too.
    return AssertRefSnapshotId(ref, r.opt_int("snapshot-id"))


_REQUIREMENT_READERS: dict[str, Callable[[JsonObjectReader], TableRequirement]] = {
    "assert-create": lambda r: AssertCreate(),
    "assert-table-uuid": lambda r: AssertTableUUID(parse_uuid(r.get_str("uuid"), r.what)),
    "assert-ref-snapshot-id": _assert_ref,
    "assert-last-assigned-field-id": lambda r: AssertLastAssignedFieldId(r.get_int("last-assigned-field-id")),
    "assert-current-schema-id": lambda r: AssertCurrentSchemaId(r.get_int("current-schema-id")),
    "assert-last-assigned-partition-id": lambda r: AssertLastAssignedPartitionId(
        r.get_int("last-assigned-partition-id")
    ),
    "assert-default-spec-id": lambda r: AssertDefaultSpecId(r.get_int("default-spec-id")),
    "assert-default-sort-order-id": lambda r: AssertDefaultSortOrderId(r.get_int("default-sort-order-id")),
}


def requirement_from_json(data: Any) -> TableRequirement:
    """A REST ``TableRequirement`` object; ``ValidationError`` names what is wrong with it."""
    return read_tagged(data, "table requirement", "type", _REQUIREMENT_READERS, "unknown")


__all__ = [
    "LAST_ADDED",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertFormatVersion",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "AssignUUID",
    "RemovePartitionSpecs",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "RemoveStatistics",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "TableRequirement",
    "TableUpdate",
    "UpgradeFormatVersion",
    "requirement_from_json",
    "update_from_json",
]
