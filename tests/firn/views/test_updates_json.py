"""REST JSON of view updates and the assert-view-uuid requirement: round trips of what the
builder records, replay on the base, and strict reading."""

from __future__ import annotations

import json

import pytest

from firn.errors import CommitConflict, ValidationError
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField, StringType
from firn.views.builder import (
    apply_view_updates,
    new_view_metadata,
    replace_view_version,
    rollback_view_version,
    sql_representations,
    update_view_properties,
)
from firn.views.updates import (
    AssertViewUUID,
    AssignViewUUID,
    RemoveProperties,
    SetLocation,
    UpgradeFormatVersion,
    ViewUpdate,
    view_update_from_json,
)

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))
BASE = new_view_metadata(
    SCHEMA,
    sql_representations("SELECT id, name FROM t"),
    location="/wh/db/v",
    default_namespace=("db",),
    timestamp_ms=1_700_000_000_000,
)


def _wire(updates: tuple[ViewUpdate, ...]) -> list[ViewUpdate]:
    return [view_update_from_json(json.loads(json.dumps(u.to_json()))) for u in updates]


def test_a_replace_round_trips_and_replays_to_the_same_metadata() -> None:
    other = Schema(NestedField(1, "id", LongType()), schema_id=7)
    expected, updates = replace_view_version(
        BASE,
        other,
        sql_representations({"spark": "SELECT id FROM t", "trino": "SELECT id FROM t"}),
        default_namespace=("db",),
        properties={"comment": "ids"},
        timestamp_ms=1_700_000_001_000,
    )
    assert [u.to_json()["action"] for u in updates] == [
        "set-properties",
        "add-schema",
        "add-view-version",
        "set-current-view-version",
    ]
    parsed = _wire(updates)
    assert parsed == list(updates)
    replayed, _ = apply_view_updates(BASE, parsed, timestamp_ms=1_700_000_001_000)
    assert replayed.current_version_id == expected.current_version_id == 2
    assert replayed.current_version.dialects == ("spark", "trino")
    assert dict(replayed.properties) == {"comment": "ids"}
    # -1 (last added) goes over the wire as the spec defines it.
    assert updates[2].to_json()["view-version"]["schema-id"] == -1
    assert updates[3].to_json() == {"action": "set-current-view-version", "view-version-id": -1}


def test_rollback_and_property_removal_round_trip() -> None:
    v2, _ = replace_view_version(BASE, SCHEMA, sql_representations("SELECT 2"), default_namespace=("db",))
    _, rollback = rollback_view_version(v2, 1)
    assert _wire(rollback) == list(rollback)
    with_props, _ = update_view_properties(BASE, {"a": "1", "b": "2"})
    _, removal = update_view_properties(with_props, removals={"a"})
    assert _wire(removal) == list(removal) == [RemoveProperties(("a",))]


@pytest.mark.parametrize(
    "update",
    [
        AssignViewUUID("c4a7a4fe-0000-4000-8000-000000000001"),
        UpgradeFormatVersion(1),
        SetLocation("s3://b/v"),
    ],
)
def test_simple_updates_round_trip(update: ViewUpdate) -> None:
    assert _wire((update,)) == [update]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "add-view-version"}, "missing required field 'view-version'"),
        ({"action": "set-current-view-version", "view-version-id": "1"}, "must be an integer"),
        ({"action": "set-location", "location": "x", "other": 1}, "unknown field"),
        ({"action": "add-snapshot", "snapshot": {}}, "unknown view update action"),
        ({"action": "add-view-version", "view-version": {"version-id": 1}}, "'view-version' is invalid"),
    ],
)
def test_view_update_reading_is_strict(data: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        view_update_from_json(data)


def test_assert_view_uuid() -> None:
    requirement = AssertViewUUID(BASE.view_uuid)
    assert AssertViewUUID.from_json(requirement.to_json()) == requirement
    requirement.validate(BASE)
    with pytest.raises(CommitConflict, match="dropped and re-created"):
        AssertViewUUID("another").validate(BASE)
    with pytest.raises(ValidationError, match="unknown view requirement type"):
        AssertViewUUID.from_json({"type": "assert-table-uuid", "uuid": "x"})
    with pytest.raises(ValidationError, match="unknown field"):
        AssertViewUUID.from_json({"type": "assert-view-uuid", "uuid": "x", "y": 1})
