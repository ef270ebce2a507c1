"""Catalog view operations on every backend (SQLite, in-memory, PostgreSQL)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.views import ViewCatalogMixin
from firn.errors import (
    AlreadyExists,
    InvalidMetadata,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotFound,
    Unsupported,
    ValidationConflict,
    ValidationError,
)
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField, StringType
from firn.spec.view_properties import REPLACE_DROP_DIALECT_ALLOWED, VERSION_HISTORY_SIZE
from firn.views import View, read_view_metadata, with_field_aliases
from tests.fixtures.catalogs import simple_schema

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))


def _views(catalog: BaseCatalog) -> ViewCatalogMixin:
    assert isinstance(catalog, ViewCatalogMixin)
    return catalog


@pytest.fixture
def cat(any_catalog: BaseCatalog) -> ViewCatalogMixin:
    catalog = _views(any_catalog)
    catalog.create_namespace("db")
    return catalog


def test_create_and_load(cat: ViewCatalogMixin) -> None:
    view = cat.create_view(
        "db.v",
        SCHEMA,
        "SELECT id, name FROM events",
        default_catalog="prod",
        properties={"comment": "daily"},
    )
    assert isinstance(view, View)
    assert view.identifier == ("db", "v") and view.name == "db.v"
    assert view.location == f"{cat.warehouse}/db/v"
    assert view.metadata_location.startswith(f"{cat.warehouse}/db/v/metadata/00000-")
    assert view.default_namespace == ("db",) and view.default_catalog == "prod"
    loaded = cat.load_view("db.v")
    assert loaded.metadata == view.metadata
    assert loaded.metadata_location == view.metadata_location
    assert loaded.sql_for("spark") == "SELECT id, name FROM events"
    assert loaded.schema() == SCHEMA
    assert loaded.properties["comment"] == "daily"
    assert cat.view_exists("db.v") and cat.view_exists(("db", "v"))
    assert not cat.view_exists("db.nope")
    assert cat.load_view_metadata_location("db.v") == view.metadata_location
    # The file in the catalog is the file Firn wrote.
    assert read_view_metadata(cat.io, view.metadata_location) == view.metadata


def test_arrow_schema_aliases_and_multiple_dialects(cat: ViewCatalogMixin) -> None:
    query_schema = cat.create_view(
        "db.q", pa.schema([("a", pa.int64()), ("b", pa.string())]), "SELECT 1 AS a, 'x' AS b"
    ).schema()
    aliased = with_field_aliases(query_schema, ["event_count", "event_day"], ["Count of events", None])
    view = cat.create_view(
        "db.agg",
        aliased,
        {
            "spark": "SELECT count(1), day FROM events GROUP BY 2",
            "trino": "SELECT count(1), day FROM events GROUP BY 2",
        },
        default_namespace="other.ns",
    )
    loaded = cat.load_view("db.agg")
    assert [(f.name, f.doc) for f in loaded.schema().fields] == [
        ("event_count", "Count of events"),
        ("event_day", None),
    ]
    assert loaded.dialects == ("spark", "trino") == view.dialects
    assert loaded.default_namespace == ("other", "ns")


def test_list_views_and_tables_apart(cat: ViewCatalogMixin) -> None:
    cat.create_namespace("db.sub")
    cat.create_table("db.t", simple_schema())
    for name in ("db.b", "db.a", "db.sub.c"):
        cat.create_view(name, SCHEMA, "SELECT 1")
    assert cat.list_views("db") == [("db", "a"), ("db", "b")]
    assert cat.list_views("db.sub") == [("db", "sub", "c")]
    assert cat.list_tables("db") == [("db", "t")]
    with pytest.raises(NoSuchNamespace):
        cat.list_views("nope")
    # A namespace that holds only a view exists, and cannot be dropped while it does.
    with pytest.raises(NamespaceNotEmpty, match=r"db\.sub\.c"):
        cat.drop_namespace("db.sub")


def test_create_errors(cat: ViewCatalogMixin) -> None:
    with pytest.raises(NoSuchNamespace, match="namespace 'nope' does not exist"):
        cat.create_view("nope.v", SCHEMA, "SELECT 1")
    with pytest.raises(ValidationError, match="needs a namespace"):
        cat.create_view("v", SCHEMA, "SELECT 1")
    cat.create_view("db.v", SCHEMA, "SELECT 1")
    with pytest.raises(AlreadyExists, match="a view of that name exists"):
        cat.create_view("db.v", SCHEMA, "SELECT 2")
    with pytest.raises(ValidationError, match="non-empty string"):
        cat.create_view("db.w", SCHEMA, "")
    assert not cat.view_exists("db.w")


def test_a_view_and_a_table_never_share_a_name(cat: ViewCatalogMixin) -> None:
    cat.create_table("db.t", simple_schema())
    cat.create_view("db.v", SCHEMA, "SELECT 1")
    with pytest.raises(AlreadyExists, match="a table of that name exists"):
        cat.create_view("db.t", SCHEMA, "SELECT 1")
    with pytest.raises(AlreadyExists, match=r"'db\.v' already exists"):
        cat.create_table("db.v", simple_schema())
    cat.create_table("db.t2", simple_schema())
    with pytest.raises(AlreadyExists, match=r"'db\.v' already exists"):
        cat.rename_table("db.t2", "db.v")
    with pytest.raises(AlreadyExists, match="a table of that name exists"):
        cat.rename_view("db.v", "db.t")
    # A table of its own (dropped, its files kept) registered under the view's name.
    cat.create_table("db.gone", simple_schema())
    gone_location = cat.load_metadata_location("db.gone")
    cat.drop_table("db.gone")
    with pytest.raises(AlreadyExists, match=r"'db\.v' already exists"):
        cat.register_table("db.v", gone_location)
    with pytest.raises(AlreadyExists, match="a table of that name exists"):
        cat.register_view("db.t", cat.load_view_metadata_location("db.v"))
    # Each kind is invisible to the other's lookups.
    with pytest.raises(NoSuchTable):
        cat.load_table("db.v")
    with pytest.raises(NoSuchView, match=r"view 'db.t' does not exist .*\(it is a table\)"):
        cat.load_view("db.t")
    assert not cat.table_exists("db.v") and not cat.view_exists("db.t")
    with pytest.raises(NoSuchTable):
        cat.drop_table("db.v")
    with pytest.raises(NoSuchView):
        cat.drop_view("db.t")
    assert cat.view_exists("db.v") and cat.table_exists("db.t")


def test_replace_and_rollback(cat: ViewCatalogMixin) -> None:
    v1 = cat.create_view("db.v", SCHEMA, "SELECT id, name FROM t")
    v2 = cat.replace_view(
        "db.v", SCHEMA, {"spark": "SELECT id, name FROM db.t", "trino": "SELECT id, name FROM db.t"}
    )
    assert v2.current_version.version_id == 2
    assert v2.metadata_location.split("/")[-1].startswith("00001-")
    assert v2.uuid == v1.uuid
    other = Schema(NestedField(1, "n", LongType()))
    v3 = cat.replace_view(
        "db.v", other, {"spark": "SELECT count(*) AS n FROM db.t", "trino": "SELECT count(*) n FROM db.t"}
    )
    assert [v.version_id for v in v3.versions] == [1, 2, 3]
    assert v3.schema() == other and v3.version(2).schema_id == 0
    assert [e.version_id for e in v3.history] == [1, 2, 3]
    # A replace that drops a dialect is refused, and nothing is committed.
    with pytest.raises(ValidationError, match=r"drop SQL dialect\(s\) \['trino'\]"):
        cat.replace_view("db.v", other, "SELECT count(*) AS n FROM db.t")
    assert cat.load_view("db.v").metadata_location == v3.metadata_location
    # Rollback: set current to an earlier version; the log records it.
    back = cat.rollback_view("db.v", 2)
    assert back.current_version.version_id == 2
    assert back.schema() == SCHEMA
    assert [e.version_id for e in back.history] == [1, 2, 3, 2]
    assert cat.load_view("db.v").sql_for("trino") == "SELECT id, name FROM db.t"
    # View.rollback does the same; rolling back to the current version writes nothing.
    again = back.rollback(3)
    assert again.current_version.version_id == 3
    assert again.rollback(3).metadata_location == again.metadata_location
    with pytest.raises(ValidationError, match="view version 9 does not exist"):
        again.rollback(9)
    # Rolling back to version 1 drops trino: refused until allowed.
    with pytest.raises(ValidationError, match="drop SQL dialect"):
        again.rollback(1)
    allowed = cat.update_view_properties("db.v", {REPLACE_DROP_DIALECT_ALLOWED: "true"})
    assert allowed.current_version.version_id == 3
    assert allowed.rollback(1).sql_for("spark") == "SELECT id, name FROM t"


def test_replace_reuses_identical_versions_and_skips_no_ops(cat: ViewCatalogMixin) -> None:
    summary = {"engine-name": "test"}
    v1 = cat.create_view("db.v", SCHEMA, "SELECT 1 AS id, 'a' AS name", summary=summary)
    same = cat.replace_view("db.v", SCHEMA, "SELECT 1 AS id, 'a' AS name", summary=summary)
    assert same.metadata_location == v1.metadata_location  # nothing to commit
    cat.replace_view("db.v", SCHEMA, "SELECT 2 AS id, 'b' AS name", summary=summary)
    back = cat.replace_view("db.v", SCHEMA, "SELECT 1 AS id, 'a' AS name", summary=summary)
    assert [v.version_id for v in back.versions] == [1, 2]
    assert back.current_version.version_id == 1


def test_retention_through_the_catalog(cat: ViewCatalogMixin) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 0", properties={VERSION_HISTORY_SIZE: "3"})
    for i in range(1, 6):
        view = cat.replace_view("db.v", SCHEMA, f"SELECT {i}")
    assert [v.version_id for v in view.versions] == [4, 5, 6]
    assert [e.version_id for e in view.history] == [4, 5, 6]
    with pytest.raises(ValidationError, match="view version 1 does not exist"):
        view.rollback(1)


def test_properties(cat: ViewCatalogMixin) -> None:
    view = cat.create_view("db.v", SCHEMA, "SELECT 1", properties={"a": "1", "b": "2"})
    updated = cat.update_view_properties("db.v", {"a": "10", "c": "3"}, {"b"})
    assert dict(updated.properties) == {"a": "10", "c": "3"}
    assert updated.versions == view.versions
    replaced = cat.replace_view("db.v", SCHEMA, "SELECT 2", properties={"d": "4"})
    assert dict(replaced.properties) == {"a": "10", "c": "3", "d": "4"}  # merged, as Java does


def test_drop(cat: ViewCatalogMixin) -> None:
    kept = cat.create_view("db.kept", SCHEMA, "SELECT 1")
    cat.drop_view("db.kept")
    assert not cat.view_exists("db.kept")
    assert cat.io.new_input(kept.metadata_location).exists()  # files stay without purge
    with pytest.raises(NoSuchView):
        cat.drop_view("db.kept")
    with pytest.raises(NoSuchView):
        cat.load_view("db.kept")

    first = cat.create_view("db.v", SCHEMA, "SELECT 1")
    second = cat.replace_view("db.v", SCHEMA, "SELECT 2")
    # Another view's metadata in the same directory must survive the purge. The catalog
    # never places two views there (firn.catalog.confinement), so the stray copy stands for
    # what another catalog sharing the storage could leave.
    neighbour = cat.create_view("db.n", SCHEMA, "SELECT 3")
    stray = f"{first.location}/metadata/00000-{neighbour.metadata.view_uuid}.metadata.json"
    cat.io.new_output(stray).write(cat.io.new_input(neighbour.metadata_location).read())
    cat.drop_view("db.v", purge=True)
    assert not cat.io.new_input(first.metadata_location).exists()
    assert not cat.io.new_input(second.metadata_location).exists()
    assert cat.io.new_input(stray).exists()
    assert cat.load_view("db.n").sql_for("spark") == "SELECT 3"
    # The name is free again, for a view or a table.
    cat.create_table("db.v", simple_schema())

    # Another view at the same location: a purge deletes nothing inside another entry's
    # location (issue 18, STYLE 21). The catalog refuses to place one there now, so the
    # second row is written as a legacy catalog (or another engine) would have left it.
    own = cat.create_view("db.w", SCHEMA, "SELECT 1")
    cat._view_insert("db", "legacy", own.metadata_location)
    cat.drop_view("db.w", purge=True)
    assert not cat.view_exists("db.w")
    assert cat.io.new_input(own.metadata_location).exists()
    assert cat.load_view("db.legacy").sql_for("spark") == "SELECT 1"


def test_rename(cat: ViewCatalogMixin) -> None:
    cat.create_namespace("other")
    view = cat.create_view("db.v", SCHEMA, "SELECT 1")
    moved = cat.rename_view("db.v", "other.w")
    assert moved.identifier == ("other", "w")
    assert moved.metadata_location == view.metadata_location  # files stay
    assert not cat.view_exists("db.v") and cat.list_views("other") == [("other", "w")]
    with pytest.raises(NoSuchView):
        cat.rename_view("db.v", "db.x")
    with pytest.raises(NoSuchNamespace):
        cat.rename_view("other.w", "nope.w")
    cat.create_view("db.taken", SCHEMA, "SELECT 1")
    with pytest.raises(AlreadyExists, match="a view of that name exists"):
        cat.rename_view("other.w", "db.taken")
    assert cat.rename_view("other.w", "other.w").identifier == ("other", "w")
    # A renamed view keeps working.
    assert cat.replace_view("other.w", SCHEMA, "SELECT 2").current_version.version_id == 2


def test_register(cat: ViewCatalogMixin) -> None:
    view = cat.create_view("db.v", SCHEMA, "SELECT 1")
    # A second entry for the same view would share its location (firn.catalog.confinement).
    with pytest.raises(ValidationError, match=r"of view 'db\.twin' is the location .* of view 'db\.v'"):
        cat.register_view("db.twin", view.metadata_location)
    with pytest.raises(AlreadyExists):
        cat.register_view("db.v", view.metadata_location)
    cat.drop_view("db.v")  # its files stay: it can be registered again, under another name
    back = cat.register_view("db.back", view.metadata_location)
    assert back.metadata == view.metadata
    with pytest.raises(NotFound):
        cat.register_view("db.ghost", f"{cat.warehouse}/nowhere/00000-x.metadata.json")
    assert not cat.view_exists("db.ghost")


def test_refresh_checks_the_uuid(cat: ViewCatalogMixin) -> None:
    view = cat.create_view("db.v", SCHEMA, "SELECT 1")
    cat.replace_view("db.v", SCHEMA, "SELECT 2")
    assert view.refresh().sql_for("spark") == "SELECT 2"
    cat.drop_view("db.v")
    cat.create_view("db.v", SCHEMA, "SELECT 3")
    with pytest.raises(ValidationConflict, match="changed identity"):
        view.refresh()
    with pytest.raises(ValidationConflict, match="dropped and re-created"):
        view.rollback(1)


def test_missing_view_operations(cat: ViewCatalogMixin) -> None:
    for op in (
        lambda: cat.replace_view("db.nope", SCHEMA, "SELECT 1"),
        lambda: cat.rollback_view("db.nope", 1),
        lambda: cat.update_view_properties("db.nope", {"a": "b"}),
        lambda: cat.load_view_metadata_location("db.nope"),
    ):
        with pytest.raises(NoSuchView, match=r"view 'db\.nope' does not exist"):
            op()


def test_damaged_metadata_names_the_file(cat: ViewCatalogMixin) -> None:
    view = cat.create_view(
        "db.v", SCHEMA, "SELECT 1", properties={"write.metadata.compression-codec": "none"}
    )
    bad = f"{view.location}/metadata/00001-bad.metadata.json"
    cat.io.new_output(bad).write(b'{"view-uuid": "x", "format-version": 2}')
    cat.commit_view("db.v", view.metadata_location, bad)
    with pytest.raises(Unsupported, match=f"^{bad}: unsupported view format version 2"):
        cat.load_view("db.v")
    broken = f"{view.location}/metadata/00002-broken.metadata.json"
    cat.io.new_output(broken).write(b"{not json")
    cat.commit_view("db.v", bad, broken)
    with pytest.raises(InvalidMetadata, match=f"^{broken}: view metadata is not valid JSON"):
        cat.load_view("db.v")
    with pytest.raises(InvalidMetadata, match=broken):
        cat.replace_view("db.v", SCHEMA, "SELECT 2")
    # A view's damaged or unsupported metadata does not block dropping it.
    cat.drop_view("db.v", purge=True)
    assert not cat.view_exists("db.v")
    future = cat.create_view("db.f", SCHEMA, "SELECT 1")
    newer = f"{future.location}/metadata/00001-v2.metadata.json"
    cat.io.new_output(newer).write(b'{"view-uuid": "x", "format-version": 2}')
    cat.commit_view("db.f", future.metadata_location, newer)
    cat.drop_view("db.f", purge=True)
    assert not cat.view_exists("db.f") and not cat.io.new_input(newer).exists()
