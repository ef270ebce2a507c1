"""Server-side commits without HTTP: requirements checked on the current metadata, a swap lost
to a concurrent commit re-checked and retried, and create transactions built from updates."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertTableUUID,
    AssignUUID,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
)
from firn.errors import CommitConflict, NoSuchTable, ValidationError
from firn.rest import commits
from firn.spec.partitioning import UNPARTITIONED, build_partition_spec
from firn.spec.schema import Schema
from firn.spec.sorting import UNSORTED
from firn.spec.types import LongType, NestedField, StringType
from tests.fixtures.catalogs import make_memory_catalog

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))


def _catalog() -> InMemoryCatalog:
    catalog = make_memory_catalog()
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    return catalog


def test_requirements_are_checked_on_the_current_metadata() -> None:
    catalog = _catalog()
    current = catalog.load_table("db.t").metadata
    committed = commits.commit_table(
        catalog,
        ("db", "t"),
        [AssertTableUUID(current.table_uuid), AssertCurrentSchemaId(0)],
        [SetProperties({"k": "v"})],
    )
    assert committed.metadata.properties["k"] == "v"
    assert catalog.load_table("db.t").metadata_location == committed.metadata_location
    with pytest.raises(CommitConflict, match="table UUID changed"):
        commits.commit_table(
            catalog, ("db", "t"), [AssertTableUUID(uuid.uuid4())], [SetProperties({"k": "w"})]
        )
    with pytest.raises(NoSuchTable):
        commits.commit_table(catalog, ("db", "nope"), [], [SetProperties({"k": "w"})])
    # No updates: the current metadata, no new file.
    same = commits.commit_table(catalog, ("db", "t"), [AssertCurrentSchemaId(0)], [])
    assert same.metadata_location == committed.metadata_location


class _Racing(InMemoryCatalog):
    """Lets another writer's commit land just before each of the next ``races`` swaps."""

    races = 0
    other_change: dict[str, str] = {}

    def commit_table(self, identifier: Any, commit: TableCommit) -> CommittedMetadata:
        if self.races:
            self.races -= 1
            table = self.load_table(identifier)
            table.set_properties(self.other_change)
        return super().commit_table(identifier, commit)


def test_a_lost_swap_is_rechecked_and_retried() -> None:
    catalog = _Racing("racing")
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    catalog.races, catalog.other_change = 2, {"other": "1"}
    committed = commits.commit_table(
        catalog, ("db", "t"), [AssertCurrentSchemaId(0)], [SetProperties({"mine": "1"})]
    )
    assert catalog.races == 0
    assert {"mine", "other"} <= set(committed.metadata.properties)  # both changes kept

    # When the concurrent change breaks a requirement, the retry reports the conflict.
    table = catalog.load_table("db.t")
    catalog.races = 1
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    with pytest.raises(CommitConflict, match="current schema changed"):
        commits.commit_table(catalog, ("db", "t"), [AssertCurrentSchemaId(0)], [SetProperties({"x": "1"})])


def _create_updates(location: str | None = "memory://warehouse/db/new") -> list[Any]:
    spec = build_partition_spec(SCHEMA, [("name", "identity")], spec_id=0)
    updates: list[Any] = [
        AssignUUID(uuid.UUID("00000000-0000-4000-8000-000000000001")),
        UpgradeFormatVersion(2),
        AddSchema(SCHEMA, 2),
        SetCurrentSchema(LAST_ADDED),
        AddPartitionSpec(spec),
        SetDefaultSpec(LAST_ADDED),
        AddSortOrder(UNSORTED),
        SetDefaultSortOrder(LAST_ADDED),
        SetProperties({"owner": "me"}),
    ]
    if location:
        updates.append(SetLocation(location))
    return updates


def test_a_create_transaction_builds_the_table_from_its_updates() -> None:
    catalog = _catalog()
    committed = commits.create_from_updates(catalog, ("db", "new"), [AssertCreate()], _create_updates())
    md = catalog.load_table("db.new").metadata
    assert committed.metadata_location == catalog.load_table("db.new").metadata_location
    assert md.table_uuid == uuid.UUID("00000000-0000-4000-8000-000000000001") and md.format_version == 2
    assert md.location == "memory://warehouse/db/new" and md.properties == {"owner": "me"}
    assert md.spec().fields[0].name == "name" and md.default_spec_id == 0
    assert md.sort_orders == (UNSORTED,) and md.default_sort_order_id == 0  # unsorted keeps id 0
    with pytest.raises(CommitConflict, match="already exists"):
        commits.create_from_updates(catalog, ("db", "new"), [AssertCreate()], _create_updates())


def test_a_create_transaction_needs_a_schema_and_a_location() -> None:
    catalog = _catalog()
    with pytest.raises(ValidationError, match="must add a schema"):
        commits.create_from_updates(catalog, ("db", "x"), [AssertCreate()], [UpgradeFormatVersion(2)])
    with pytest.raises(ValidationError, match="must set the table location"):
        commits.create_from_updates(catalog, ("db", "x"), [AssertCreate()], _create_updates(location=None))
    # Without a spec the table is unpartitioned; the catalog's default location is used.
    updates = [
        u for u in _create_updates(location=None) if not isinstance(u, AddPartitionSpec | SetDefaultSpec)
    ]
    commits.create_from_updates(
        catalog, ("db", "x"), [AssertCreate()], updates, default_location="memory://warehouse/x"
    )
    md = catalog.load_table("db.x").metadata
    assert md.partition_specs == (UNPARTITIONED,) and md.location == "memory://warehouse/x"
    # Other requirements cannot hold for a table that does not exist yet.
    with pytest.raises(CommitConflict, match="does not exist"):
        commits.create_from_updates(
            catalog, ("db", "y"), [AssertCreate(), AssertCurrentSchemaId(0)], _create_updates()
        )


def test_pyarrow_schema_tables_commit_too() -> None:
    catalog = make_memory_catalog()
    catalog.create_namespace("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]), properties={"format-version": "1"})
    committed = commits.commit_table(catalog, ("db", "t"), [], [UpgradeFormatVersion(2)])
    assert committed.metadata.format_version == 2
