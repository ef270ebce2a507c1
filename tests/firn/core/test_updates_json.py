"""REST JSON of metadata updates and commit requirements: every class round-trips, the JSON
uses the OpenAPI spec's names, reading is strict, and requirements check what they claim."""

from __future__ import annotations

import json
import uuid
from types import MappingProxyType

import pytest

from firn.core.create import new_table_metadata
from firn.core.metadata_builder import apply_updates
from firn.core.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertFormatVersion,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
    RemovePartitionSpecs,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    requirement_from_json,
    update_from_json,
)
from firn.errors import CommitConflict, ValidationError
from firn.spec.partitioning import build_partition_spec
from firn.spec.schema import Schema
from firn.spec.snapshots import BlobMetadata, Operation, RefType, Snapshot, StatisticsFile, Summary
from firn.spec.sorting import build_sort_order
from firn.spec.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))
TABLE_UUID = uuid.UUID("9c12d441-03fe-4693-9a96-a0705ddf69c1")
SNAPSHOT = Snapshot(
    snapshot_id=3051729675574597004,
    parent_snapshot_id=None,
    sequence_number=1,
    timestamp_ms=1_700_000_000_000,
    summary=Summary(Operation.APPEND, MappingProxyType({"added-records": "3"})),
    manifest_list="/wh/db/t/metadata/snap-1.avro",
    schema_id=0,
    first_row_id=0,
    added_rows=3,
)
STATS = StatisticsFile(
    snapshot_id=SNAPSHOT.snapshot_id,
    statistics_path="/wh/db/t/metadata/stats.puffin",
    file_size_in_bytes=413,
    file_footer_size_in_bytes=42,
    blob_metadata=(
        BlobMetadata("apache-datasketches-theta-v1", SNAPSHOT.snapshot_id, 1, (1,), {"ndv": "3"}),
    ),
)
EVOLVED = Schema(*SCHEMA.fields, NestedField(3, "extra", StringType()), schema_id=1)

UPDATES: list[tuple[TableUpdate, str]] = [
    (AssignUUID(TABLE_UUID), "assign-uuid"),
    (UpgradeFormatVersion(3), "upgrade-format-version"),
    (AddSchema(EVOLVED, 3), "add-schema"),
    (SetCurrentSchema(LAST_ADDED), "set-current-schema"),
    (AddPartitionSpec(build_partition_spec(SCHEMA, [("name", "identity"), ("id", "bucket[4]")])), "add-spec"),
    (SetDefaultSpec(1), "set-default-spec"),
    (AddSortOrder(build_sort_order(SCHEMA, [("id", "desc")])), "add-sort-order"),
    (SetDefaultSortOrder(1), "set-default-sort-order"),
    (AddSnapshot(SNAPSHOT), "add-snapshot"),
    (
        SetSnapshotRef("audit", SNAPSHOT.snapshot_id, RefType.TAG, max_ref_age_ms=86_400_000),
        "set-snapshot-ref",
    ),
    (RemoveSnapshots((1, 2)), "remove-snapshots"),
    (RemoveSnapshotRef("audit"), "remove-snapshot-ref"),
    (SetLocation("s3://bucket/wh/db/t"), "set-location"),
    (SetProperties(MappingProxyType({"owner": "me"})), "set-properties"),
    (RemoveProperties(("a", "b")), "remove-properties"),
    (SetStatistics(STATS), "set-statistics"),
    (RemoveStatistics(SNAPSHOT.snapshot_id), "remove-statistics"),
    (RemovePartitionSpecs((2,)), "remove-partition-specs"),
    (RemoveSchemas((0,)), "remove-schemas"),
]

REQUIREMENTS: list[tuple[TableRequirement, str]] = [
    (AssertCreate(), "assert-create"),
    (AssertTableUUID(TABLE_UUID), "assert-table-uuid"),
    (AssertRefSnapshotId("main", None), "assert-ref-snapshot-id"),
    (AssertRefSnapshotId("main", 7), "assert-ref-snapshot-id"),
    (AssertLastAssignedFieldId(2), "assert-last-assigned-field-id"),
    (AssertCurrentSchemaId(0), "assert-current-schema-id"),
    (AssertLastAssignedPartitionId(1000), "assert-last-assigned-partition-id"),
    (AssertDefaultSpecId(0), "assert-default-spec-id"),
    (AssertDefaultSortOrderId(0), "assert-default-sort-order-id"),
]


@pytest.mark.parametrize(("update", "action"), UPDATES, ids=[a for _, a in UPDATES])
def test_every_update_round_trips_through_its_rest_json(update: TableUpdate, action: str) -> None:
    data = json.loads(json.dumps(update.to_json()))  # what goes over the wire
    assert data["action"] == action
    assert update_from_json(data) == update


@pytest.mark.parametrize(
    ("requirement", "kind"), REQUIREMENTS, ids=[f"{k}-{i}" for i, (_, k) in enumerate(REQUIREMENTS)]
)
def test_every_requirement_round_trips_through_its_rest_json(
    requirement: TableRequirement, kind: str
) -> None:
    data = json.loads(json.dumps(requirement.to_json()))
    assert data["type"] == kind
    assert requirement_from_json(data) == requirement


def test_the_json_uses_the_spec_field_names() -> None:
    assert SetSnapshotRef("main", 5, RefType.BRANCH).to_json() == {
        "action": "set-snapshot-ref",
        "ref-name": "main",
        "snapshot-id": 5,
        "type": "branch",
    }
    # snapshot-id is required and nullable: null means "the ref must not exist".
    assert AssertRefSnapshotId("main", None).to_json() == {
        "type": "assert-ref-snapshot-id",
        "ref": "main",
        "snapshot-id": None,
    }
    snapshot = AddSnapshot(SNAPSHOT).to_json()["snapshot"]
    assert snapshot["sequence-number"] == 1 and snapshot["manifest-list"].endswith("snap-1.avro")
    assert snapshot["first-row-id"] == 0 and snapshot["added-rows"] == 3
    assert AddSchema(EVOLVED, 3).to_json()["schema"]["fields"][2] == {
        "id": 3,
        "name": "extra",
        "required": False,
        "type": "string",
    }


def test_parsed_updates_apply_like_the_originals() -> None:
    base = new_table_metadata(SCHEMA, location="/wh/db/t", format_version=2)
    updates = [
        AddSchema(EVOLVED, 3),
        SetCurrentSchema(LAST_ADDED),
        AddSnapshot(SNAPSHOT),
        SetSnapshotRef("main", SNAPSHOT.snapshot_id, RefType.BRANCH),
        SetProperties({"k": "v"}),
    ]
    parsed = [update_from_json(json.loads(json.dumps(u.to_json()))) for u in updates]
    a = apply_updates(base, updates, timestamp_ms=1)
    b = apply_updates(base, parsed, timestamp_ms=1)
    assert (a.current_schema_id, a.last_column_id, a.current_snapshot_id, dict(a.properties)) == (
        b.current_schema_id,
        b.last_column_id,
        b.current_snapshot_id,
        dict(b.properties),
    )
    assert b.current_snapshot_id == SNAPSHOT.snapshot_id and b.last_column_id == 3


def test_add_schema_without_the_deprecated_last_column_id() -> None:
    update = update_from_json({"action": "add-schema", "schema": AddSchema(EVOLVED, 3).to_json()["schema"]})
    assert update == AddSchema(EVOLVED, 3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"location": "x"}, "missing required field 'action'"),
        ({"action": "add-encryption-key", "encryption-key": {}}, "unsupported table update action"),
        ({"action": "nope"}, "unsupported table update action 'nope'"),
        ({"action": "set-location", "location": "x", "extra": 1}, r"unknown field\(s\) \['extra'\]"),
        ({"action": "set-location", "location": 5}, "'location' must be a string"),
        ({"action": "set-current-schema", "schema-id": "1"}, "'schema-id' must be an integer"),
        ({"action": "set-current-schema", "schema-id": True}, "'schema-id' must be an integer"),
        ({"action": "set-properties", "updates": {"a": 1}}, "must map strings to strings"),
        ({"action": "remove-snapshots", "snapshot-ids": ["1"]}, "must be a list of int"),
        (
            {"action": "set-snapshot-ref", "ref-name": "b", "snapshot-id": 1, "type": "leaf"},
            "'branch' or 'tag'",
        ),
        ({"action": "add-snapshot", "snapshot": {"snapshot-id": 1}}, "'snapshot' is invalid"),
        (
            {"action": "add-schema", "schema": {"type": "struct", "fields": [{"id": 1}]}},
            "'schema' is invalid",
        ),
        ({"action": "assign-uuid", "uuid": "not-a-uuid"}, "not a UUID"),
    ],
)
def test_update_reading_is_strict(data: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        update_from_json(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "assert-something"}, "unknown table requirement type"),
        ({"type": "assert-current-schema-id"}, "missing required field 'current-schema-id'"),
        ({"type": "assert-create", "x": 1}, "unknown field"),
        ({"type": "assert-table-uuid", "uuid": 1}, "must be a string"),
    ],
)
def test_requirement_reading_is_strict(data: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        requirement_from_json(data)


def test_requirements_check_the_metadata() -> None:
    md = new_table_metadata(SCHEMA, location="/wh/db/t", format_version=2, table_uuid=TABLE_UUID)
    AssertCreate().validate(None)
    with pytest.raises(CommitConflict, match="already exists"):
        AssertCreate().validate(md)
    AssertTableUUID(TABLE_UUID).validate(md)
    with pytest.raises(CommitConflict, match="table UUID changed"):
        AssertTableUUID(TABLE_UUID).validate(None)
    for requirement in (
        AssertRefSnapshotId("main", None),
        AssertLastAssignedFieldId(2),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(999),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
    ):
        requirement.validate(md)
        with pytest.raises(CommitConflict, match="the table does not exist"):
            requirement.validate(None)
    for failing in (
        AssertTableUUID(uuid.uuid4()),
        AssertRefSnapshotId("main", 5),
        AssertLastAssignedFieldId(9),
        AssertCurrentSchemaId(4),
        AssertLastAssignedPartitionId(1005),
        AssertDefaultSpecId(3),
        AssertDefaultSortOrderId(2),
    ):
        with pytest.raises(CommitConflict, match="commit requirement failed"):
            failing.validate(md)


def test_a_firn_only_requirement_has_no_rest_form() -> None:
    assert AssertFormatVersion.TYPE is None
    with pytest.raises(ValidationError, match="no REST form"):
        AssertFormatVersion(2).to_json()
