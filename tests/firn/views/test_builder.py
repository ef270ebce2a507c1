"""View metadata operations: ids, version reuse, rollback, retention, dialect rules, updates."""

from __future__ import annotations

import pytest

from firn.errors import ValidationError
from firn.spec.schema import Schema
from firn.spec.types import IntegerType, LongType, NestedField, StringType
from firn.spec.view_metadata import SQLViewRepresentation, ViewHistoryEntry, ViewMetadata, ViewVersion
from firn.spec.view_properties import REPLACE_DROP_DIALECT_ALLOWED, VERSION_HISTORY_SIZE
from firn.views import (
    ViewMetadataBuilder,
    apply_view_updates,
    new_view_metadata,
    replace_view_version,
    rollback_view_version,
    sql_representations,
    update_view_properties,
    with_field_aliases,
)
from firn.views.updates import (
    LAST_ADDED,
    AddViewSchema,
    AddViewVersion,
    AssignViewUUID,
    SetCurrentViewVersion,
    SetLocation,
    SetProperties,
)

T0 = 1_700_000_000_000
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()), schema_id=7)
OTHER = Schema(NestedField(1, "n", IntegerType()))
SUMMARY = {"engine-name": "test", "engine-version": "1"}


def _create(**props: str) -> ViewMetadata:
    return new_view_metadata(
        SCHEMA,
        sql_representations("SELECT id, name FROM t"),
        location="s3://b/db/v",
        default_namespace=("db",),
        properties=props,
        summary=SUMMARY,
        timestamp_ms=T0,
        view_uuid="0d3a48c1-7d4f-4a43-9b8e-4c3e6a0b3d11",
    )


def _replace(
    base: ViewMetadata, sql: str | dict[str, str], ts: int, schema: Schema = SCHEMA, **props: str
) -> ViewMetadata:
    md, updates = replace_view_version(
        base,
        schema,
        sql_representations(sql),
        default_namespace=("db",),
        properties=props,
        summary=SUMMARY,
        timestamp_ms=ts,
    )
    assert updates
    return md


def test_create_assigns_first_ids() -> None:
    md = _create()
    assert md.view_uuid == "0d3a48c1-7d4f-4a43-9b8e-4c3e6a0b3d11"
    assert md.format_version == 1
    assert md.current_version_id == 1
    assert [s.schema_id for s in md.schemas] == [0]  # ids from 0, as Java assigns them
    assert md.schema() == SCHEMA
    v = md.current_version
    assert (v.version_id, v.timestamp_ms, v.schema_id, v.default_namespace, v.default_catalog) == (
        1,
        T0,
        0,
        ("db",),
        None,
    )
    assert md.version_log == (ViewHistoryEntry(T0, 1),)


def test_default_summary_names_firn() -> None:
    from firn import __version__

    md = new_view_metadata(SCHEMA, sql_representations("SELECT 1"), location="x", default_namespace=())
    assert dict(md.current_version.summary) == {"engine-name": "firn", "engine-version": __version__}


def test_replace_adds_a_version_and_a_schema() -> None:
    md = _replace(_create(), "SELECT count(*) AS n FROM t", T0 + 5, schema=OTHER)
    assert [v.version_id for v in md.versions] == [1, 2]
    assert [s.schema_id for s in md.schemas] == [0, 1]
    assert md.current_version.schema_id == 1
    assert md.schema() == OTHER
    assert md.version(1).schema_id == 0  # versions are immutable
    assert md.version_log == (ViewHistoryEntry(T0, 1), ViewHistoryEntry(T0 + 5, 2))


def test_replace_with_the_same_schema_reuses_its_id() -> None:
    md = _replace(_create(), "SELECT id, name FROM db.t", T0 + 5)
    assert [s.schema_id for s in md.schemas] == [0]
    assert md.current_version.schema_id == 0


def test_replace_identical_to_current_changes_nothing() -> None:
    base = _create()
    md, updates = replace_view_version(
        base,
        SCHEMA,
        sql_representations("SELECT id, name FROM t"),
        default_namespace=("db",),
        summary=SUMMARY,
        timestamp_ms=T0 + 9,
    )
    assert md is base and updates == ()


def test_replace_identical_to_an_earlier_version_reuses_it() -> None:
    v2 = _replace(_create(), "SELECT 2 AS id, 'x' AS name", T0 + 5)
    md, updates = replace_view_version(
        v2,
        SCHEMA,
        sql_representations("SELECT id, name FROM t"),
        default_namespace=("db",),
        summary=SUMMARY,
        timestamp_ms=T0 + 9,
    )
    assert [v.version_id for v in md.versions] == [1, 2]  # no copy of version 1
    assert md.current_version_id == 1
    assert md.version(1).timestamp_ms == T0  # the version keeps its creation time
    # The log says when version 1 became current again.
    assert md.version_log[-1] == ViewHistoryEntry(T0 + 9, 1)
    assert updates == (SetCurrentViewVersion(1),)


def test_a_different_default_namespace_or_summary_is_a_new_version() -> None:
    base = _create()
    md, _ = replace_view_version(
        base,
        SCHEMA,
        sql_representations("SELECT id, name FROM t"),
        default_namespace=("other",),
        summary=SUMMARY,
        timestamp_ms=T0 + 1,
    )
    assert md.current_version_id == 2
    md2, _ = replace_view_version(
        base,
        SCHEMA,
        sql_representations("SELECT id, name FROM t"),
        default_namespace=("db",),
        summary={"engine-name": "trino"},
        timestamp_ms=T0 + 1,
    )
    assert md2.current_version_id == 2


def test_rollback_logs_the_change() -> None:
    v2 = _replace(_create(), "SELECT 2 AS id, 'x' AS name", T0 + 5)
    md, updates = rollback_view_version(v2, 1, timestamp_ms=T0 + 100)
    assert md.current_version_id == 1
    assert [v.version_id for v in md.versions] == [1, 2]
    assert md.version_log == (
        ViewHistoryEntry(T0, 1),
        ViewHistoryEntry(T0 + 5, 2),
        ViewHistoryEntry(T0 + 100, 1),
    )
    assert updates == (SetCurrentViewVersion(1),)
    same, none = rollback_view_version(md, 1)
    assert same is md and none == ()
    with pytest.raises(ValidationError, match=r"view version 9 does not exist \(versions kept: 1, 2\)"):
        rollback_view_version(v2, 9)


def test_retention_keeps_the_newest_versions_and_a_contiguous_log() -> None:
    md = _create(**{VERSION_HISTORY_SIZE: "2"})
    for i in range(2, 5):
        md = _replace(md, f"SELECT {i} AS id, 'x' AS name", T0 + i)
    assert [v.version_id for v in md.versions] == [3, 4]
    assert [e.version_id for e in md.version_log] == [3, 4]
    # Rolling back to 3, then replacing: the current version is always kept.
    md, _ = rollback_view_version(md, 3, timestamp_ms=T0 + 10)
    md = _replace(md, "SELECT 5 AS id, 'x' AS name", T0 + 11)
    assert [v.version_id for v in md.versions] == [4, 5]
    # The log is cut before the last entry of a version no longer kept (version 3).
    assert [(e.version_id, e.timestamp_ms) for e in md.version_log] == [(5, T0 + 11)]


def test_retention_always_keeps_the_current_old_version() -> None:
    md = _create(**{VERSION_HISTORY_SIZE: "3"})
    for i in range(2, 5):
        md = _replace(md, f"SELECT {i} AS id, 'x' AS name", T0 + i)
    md, _ = rollback_view_version(md, 2, timestamp_ms=T0 + 10)
    md, _ = update_view_properties(md, {VERSION_HISTORY_SIZE: "1"})
    assert [v.version_id for v in md.versions] == [2]
    assert md.current_version_id == 2
    assert [e.version_id for e in md.version_log] == [2]


def test_dropping_a_dialect_is_refused_unless_allowed() -> None:
    md = _replace(
        _create(), {"spark": "SELECT 1 AS id, 'a' AS name", "trino": "SELECT 1 AS id, 'a' AS name"}, T0 + 1
    )
    assert md.current_version.dialects == ("spark", "trino")
    with pytest.raises(
        ValidationError, match=r"would drop SQL dialect\(s\) \['trino'\].*replace.drop-dialect.allowed"
    ):
        _replace(md, "SELECT 2 AS id, 'b' AS name", T0 + 2)
    # A rollback to a version with fewer dialects is a drop too (Java checks every new current).
    with pytest.raises(ValidationError, match="would drop SQL dialect"):
        rollback_view_version(md, 1)
    # Allowed by the property, set in the same replace...
    dropped = _replace(md, "SELECT 2 AS id, 'b' AS name", T0 + 2, **{REPLACE_DROP_DIALECT_ALLOWED: "true"})
    assert dropped.current_version.dialects == ("spark",)
    assert dropped.properties[REPLACE_DROP_DIALECT_ALLOWED] == "true"
    # ...and dialects compare case-insensitively: SPARK replaces spark.
    upper = _replace(
        md, {"SPARK": "SELECT 3 AS id, 'c' AS name", "Trino": "SELECT 3 AS id, 'c' AS name"}, T0 + 3
    )
    assert upper.current_version.dialects == ("spark", "trino")
    # Adding a dialect is always fine.
    more = _replace(upper, {"spark": "S", "trino": "T", "presto": "P"}, T0 + 4)
    assert more.current_version.dialects == ("spark", "trino", "presto")


def test_one_sql_per_dialect() -> None:
    with pytest.raises(ValidationError, match="two SQL representations of dialect 'spark'"):
        sql_representations({"spark": "SELECT 1", "Spark": "SELECT 2"})
    builder = ViewMetadataBuilder(timestamp_ms=T0)
    builder.set_location("x")
    builder.add_schema(SCHEMA)
    bad = ViewVersion(
        1,
        T0,
        0,
        {},
        (SQLViewRepresentation("SELECT 1", "spark"), SQLViewRepresentation("SELECT 2", "SPARK")),
        (),
    )
    with pytest.raises(ValidationError, match="two SQL representations of dialect 'spark'"):
        builder.add_version(bad)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ({}, "at least one SQL representation"),
        ("  ", "non-empty string"),
        ({"": "SELECT 1"}, "non-empty string"),
    ],
)
def test_bad_sql_input(sql: str | dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        sql_representations(sql)


def test_builder_records_updates_and_they_replay() -> None:
    builder = ViewMetadataBuilder(timestamp_ms=T0)
    builder.assign_uuid("u-1")
    builder.set_location("s3://b/v")
    builder.set_properties({"comment": "c"})
    vid = builder.set_current_version(
        ViewVersion(1, T0, 99, SUMMARY, sql_representations("SELECT 1 AS id, 'a' AS name"), ("db",)), SCHEMA
    )
    assert vid == 1
    md = builder.build()
    updates = builder.updates
    assert [type(u) for u in updates] == [
        AssignViewUUID,
        SetLocation,
        SetProperties,
        AddViewSchema,
        AddViewVersion,
        SetCurrentViewVersion,
    ]
    add_version = updates[4]
    assert isinstance(add_version, AddViewVersion) and add_version.version.schema_id == LAST_ADDED
    assert updates[5] == SetCurrentViewVersion(LAST_ADDED)
    # What a REST server does with a create request: replay the updates.
    replayed, _ = apply_view_updates(None, updates, timestamp_ms=T0)
    assert replayed == md
    # And on a base, a replace's updates give the replace's metadata.
    replaced, replace_updates = replace_view_version(
        md,
        OTHER,
        sql_representations("SELECT 1 AS n"),
        default_namespace=("db",),
        summary=SUMMARY,
        timestamp_ms=T0 + 1,
    )
    again, _ = apply_view_updates(md, replace_updates, timestamp_ms=T0 + 1)
    assert again == replaced


def test_builder_refusals() -> None:
    builder = ViewMetadataBuilder(_create())
    with pytest.raises(ValidationError, match="cannot reassign the view UUID"):
        builder.assign_uuid("other")
    with pytest.raises(ValidationError, match="unknown schema 5"):
        builder.add_version(ViewVersion(2, T0, 5, {}, sql_representations("SELECT 1"), ()))
    with pytest.raises(ValidationError, match="no representations"):
        builder.add_version(ViewVersion(2, T0, 0, {}, (), ()))
    with pytest.raises(ValidationError, match="unsupported view format version 2"):
        builder.upgrade_format_version(2)
    with pytest.raises(ValidationError, match="needs a location"):
        ViewMetadataBuilder().build()
    with pytest.raises(ValidationError, match="must be >= 1"):
        update_view_properties(_create(), {VERSION_HISTORY_SIZE: "0"})
    with pytest.raises(ValidationError, match="both removed and set"):
        update_view_properties(_create(), {"a": "1"}, {"a"})


def test_property_updates_and_no_ops() -> None:
    md, _ = update_view_properties(_create(comment="a"), {"comment": "b", "k": "v"})
    assert dict(md.properties) == {"comment": "b", "k": "v"}
    same, none = update_view_properties(md, {"comment": "b"}, {"missing"})
    assert same is md and none == ()
    removed, _ = update_view_properties(md, removals={"k"})
    assert dict(removed.properties) == {"comment": "b"}
    assert removed.versions == md.versions and removed.version_log == md.version_log


def test_field_aliases_and_docs() -> None:
    aliased = with_field_aliases(SCHEMA, ["event_id", "who"], ["The id", None])
    assert [(f.field_id, f.name, f.doc) for f in aliased.fields] == [
        (1, "event_id", "The id"),
        (2, "who", None),
    ]
    assert aliased.schema_id == SCHEMA.schema_id
    kept_docs = with_field_aliases(aliased, ["a", "b"])
    assert [f.doc for f in kept_docs.fields] == ["The id", None]
    with pytest.raises(ValidationError, match="1 column aliases for a query with 2 columns"):
        with_field_aliases(SCHEMA, ["a"])
    with pytest.raises(ValidationError, match="must be unique"):
        with_field_aliases(SCHEMA, ["a", "A"])
