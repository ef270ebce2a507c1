"""apply_updates / with_metadata_log / evolve: each update's effect, its validation, no-ops
recording nothing, and structural sharing with the base (DESIGN: O(change), not O(history))."""

from __future__ import annotations

import uuid

import pytest

from firn.core.create import new_table_metadata
from firn.core.metadata_builder import apply_updates, evolve, with_metadata_log
from firn.core.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AssignUUID,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    UpgradeFormatVersion,
)
from firn.errors import NotFound, Unsupported, ValidationError
from firn.spec.schema import Schema
from firn.spec.snapshots import MetadataLogEntry, Operation, RefType, Snapshot, Summary
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))


def _base(version: int = 2, **props: str) -> TableMetadata:
    return new_table_metadata(
        SCHEMA, location="memory://wh/db/t", format_version=version, properties=props or None
    )


def _snapshot(
    sid: int, parent: int | None, seq: int, *, first_row_id: int | None = None, added_rows: int | None = None
) -> Snapshot:
    return Snapshot(
        snapshot_id=sid,
        parent_snapshot_id=parent,
        sequence_number=seq,
        timestamp_ms=1_700_000_000_000 + sid,
        summary=Summary(Operation.APPEND),
        manifest_list=f"memory://wh/db/t/metadata/snap-{sid}.avro",
        schema_id=0,
        first_row_id=first_row_id,
        added_rows=added_rows,
    )


def _commit(md: TableMetadata, snap: Snapshot) -> TableMetadata:
    return apply_updates(md, [AddSnapshot(snap), SetSnapshotRef("main", snap.snapshot_id, RefType.BRANCH)])


def test_no_updates_return_the_base_itself() -> None:
    base = _base()
    assert apply_updates(base, []) is base
    # A schema identical to an existing one is reused, not added.
    same = apply_updates(base, [AddSchema(base.schema(), base.last_column_id), SetCurrentSchema(LAST_ADDED)])
    assert len(same.schemas) == 1 and same.current_schema_id == 0


def test_add_snapshot_and_main_ref_share_structure_with_the_base() -> None:
    md = _base()
    for i in range(1, 4):
        md = _commit(md, _snapshot(i, i - 1 or None, i))
    nxt = _commit(md, _snapshot(4, 3, 4))
    assert nxt.snapshots[:-1] == md.snapshots and all(a is b for a, b in zip(nxt.snapshots, md.snapshots))
    assert nxt.schemas is md.schemas and nxt.partition_specs is md.partition_specs
    assert nxt.properties is md.properties
    assert nxt.current_snapshot_id == 4 and nxt.refs["main"].snapshot_id == 4
    assert nxt.last_sequence_number == 4
    assert [e.snapshot_id for e in nxt.snapshot_log] == [1, 2, 3, 4]
    assert nxt.snapshot_log[-1].timestamp_ms == nxt.snapshot_by_id(4).timestamp_ms  # type: ignore[union-attr]
    assert nxt.last_updated_ms >= md.last_updated_ms


def test_evolve_carries_lookups_and_extends_the_snapshot_index() -> None:
    md = _commit(_base(), _snapshot(1, None, 1))
    assert md.snapshot_by_id(1) is not None  # builds the index
    grown = evolve(md, snapshots=(*md.snapshots, _snapshot(2, 1, 2)))
    assert grown.snapshot_by_id(2) is grown.snapshots[-1] and grown.snapshot_by_id(1) is md.snapshots[0]
    assert md.snapshot_by_id(2) is None  # the base's index is untouched
    renamed = evolve(md, location="memory://elsewhere")
    assert renamed.snapshot_by_id(1) is md.snapshots[0] and renamed.schema() is md.schema()
    replaced = evolve(md, snapshots=())
    assert replaced.snapshot_by_id(1) is None
    reprops = evolve(md, properties={"commit.retry.num-retries": "9"})
    assert reprops.table_properties.commit_num_retries == 9 and md.table_properties.commit_num_retries == 4


def test_add_snapshot_validation() -> None:
    md = _commit(_base(), _snapshot(1, None, 1))
    with pytest.raises(ValidationError, match="already exists"):
        apply_updates(md, [AddSnapshot(_snapshot(1, None, 2))])
    with pytest.raises(ValidationError, match="sequence number 1 is not newer"):
        apply_updates(md, [AddSnapshot(_snapshot(2, 1, 1))])
    v3 = _base(3)
    with pytest.raises(ValidationError, match="first-row-id and added-rows"):
        apply_updates(v3, [AddSnapshot(_snapshot(1, None, 1))])
    v3 = _commit(v3, _snapshot(1, None, 1, first_row_id=0, added_rows=10))
    assert v3.next_row_id == 10
    with pytest.raises(ValidationError, match="behind the table's next-row-id"):
        apply_updates(v3, [AddSnapshot(_snapshot(2, 1, 2, first_row_id=5, added_rows=1))])


def test_refs_validation_and_removal() -> None:
    md = _commit(_base(), _snapshot(1, None, 1))
    with pytest.raises(ValidationError, match="unknown snapshot 99"):
        apply_updates(md, [SetSnapshotRef("dev", 99, RefType.BRANCH)])
    with pytest.raises(ValidationError, match="main must be a branch"):
        apply_updates(md, [SetSnapshotRef("main", 1, RefType.TAG)])
    tagged = apply_updates(md, [SetSnapshotRef("v1", 1, RefType.TAG)])
    assert tagged.refs["v1"].ref_type is RefType.TAG
    assert apply_updates(tagged, [SetSnapshotRef("v1", 1, RefType.TAG)]) is tagged  # unchanged: no-op
    untagged = apply_updates(tagged, [RemoveSnapshotRef("v1")])
    assert "v1" not in untagged.refs
    no_main = apply_updates(md, [RemoveSnapshotRef("main")])
    assert no_main.current_snapshot_id is None


def test_remove_snapshots_trims_the_log_and_protects_refs() -> None:
    md = _base()
    for i in range(1, 5):
        md = _commit(md, _snapshot(i, i - 1 or None, i))
    with pytest.raises(ValidationError, match="ref 'main' points at it"):
        apply_updates(md, [RemoveSnapshots((4,))])
    pruned = apply_updates(md, [RemoveSnapshots((1, 2))])
    assert [s.snapshot_id for s in pruned.snapshots] == [3, 4]
    assert [e.snapshot_id for e in pruned.snapshot_log] == [3, 4]
    assert pruned.snapshot_by_id(1) is None and pruned.snapshot_by_id(3) is not None


def test_schema_and_spec_updates() -> None:
    md = _base()
    wider = Schema(*SCHEMA.fields, NestedField(3, "extra", StringType()))
    md2 = apply_updates(md, [AddSchema(wider, 3), SetCurrentSchema(LAST_ADDED)])
    assert md2.current_schema_id == 1 and md2.last_column_id == 3 and md2.schema().find_field("extra")
    with pytest.raises(ValidationError, match="no schema was added"):
        apply_updates(md, [SetCurrentSchema(LAST_ADDED)])
    with pytest.raises(NotFound, match="schema with id 7"):
        apply_updates(md, [SetCurrentSchema(7)])
    with pytest.raises(ValidationError, match="current schema"):
        apply_updates(md2, [RemoveSchemas((1,))])
    assert [s.schema_id for s in apply_updates(md2, [RemoveSchemas((0,))]).schemas] == [1]

    from firn.spec.partitioning import build_partition_spec

    spec = build_partition_spec(md.schema(), [("id", "bucket[4]")], spec_id=0)
    md3 = apply_updates(md, [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)])
    assert md3.default_spec_id == 1 and md3.last_partition_id == 1000
    # Re-adding a compatible spec reuses it.
    md4 = apply_updates(md3, [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)])
    assert len(md4.partition_specs) == 2 and md4.default_spec_id == 1
    with pytest.raises(ValidationError, match="no spec was added"):
        apply_updates(md, [SetDefaultSpec(LAST_ADDED)])


def test_properties_location_uuid_and_format_version() -> None:
    md = _base(1)
    md = apply_updates(md, [SetProperties({"a": "1", "b": "2"}), RemoveProperties(("a",))])
    assert dict(md.properties) == {"b": "2"}
    md = apply_updates(md, [SetLocation("memory://other/")])
    assert md.location == "memory://other"
    new_uuid = uuid.uuid4()
    assert apply_updates(md, [AssignUUID(new_uuid)]).table_uuid == new_uuid
    v3 = apply_updates(md, [UpgradeFormatVersion(3)])
    assert v3.format_version == 3 and v3.next_row_id == 0
    with pytest.raises(ValidationError, match="downgrade"):
        apply_updates(v3, [UpgradeFormatVersion(2)])
    with pytest.raises(Unsupported, match="5"):
        apply_updates(md, [UpgradeFormatVersion(5)])


def test_with_metadata_log_appends_and_trims() -> None:
    md = _base(2, **{"write.metadata.previous-versions-max": "2"})
    assert with_metadata_log(md, None, None) is md
    log = md
    for i in range(4):
        log = with_metadata_log(log, f"memory://wh/db/t/metadata/{i:05d}.metadata.json", md)
    assert log.metadata_log == (
        MetadataLogEntry("memory://wh/db/t/metadata/00002.metadata.json", md.last_updated_ms),
        MetadataLogEntry("memory://wh/db/t/metadata/00003.metadata.json", md.last_updated_ms),
    )
