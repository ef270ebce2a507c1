"""Views through Firn's REST client and server (the view models of firn.views, a real SQLite
catalog behind the server): the same operations and rules as the SQL catalog's views."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from firn.catalog.rest import RestCatalog
from firn.errors import (
    AlreadyExists,
    NoSuchNamespace,
    NoSuchView,
    NotFound,
    Unsupported,
    ValidationConflict,
    ValidationError,
)
from firn.views import with_field_aliases
from tests.fixtures.rest import RestServer

SCHEMA = pa.schema([("region", pa.string()), ("n", pa.int64())])
SQL = "SELECT region, count(*) AS n FROM events GROUP BY region"


@pytest.fixture
def views(rest_catalog: RestCatalog) -> RestCatalog:
    rest_catalog.create_namespace("db")
    return rest_catalog


def test_create_load_list_and_exists(views: RestCatalog, rest_server: RestServer) -> None:
    v = views.create_view("db.by_region", SCHEMA, SQL, properties={"comment": "per region"})
    assert v.current_version.version_id == 1 and v.sql_for("spark") == SQL
    assert v.default_namespace == ("db",) and v.properties == {"comment": "per region"}
    loaded = views.load_view("db.by_region")
    assert loaded.uuid == v.uuid and loaded.metadata_location == v.metadata_location
    assert views.list_views("db") == [("db", "by_region")] and views.list_tables("db") == []
    assert views.view_exists("db.by_region") and not views.view_exists("db.nope")
    served = rest_server.catalog.load_view("db.by_region")  # type: ignore[attr-defined]
    assert served.uuid == v.uuid and served.sql_for("SPARK") == SQL
    with pytest.raises(NoSuchView, match="HTTP 404, NoSuchViewException"):
        views.load_view("db.nope")
    with pytest.raises(NoSuchNamespace):
        views.create_view("nope.v", SCHEMA, SQL)
    with pytest.raises(NoSuchNamespace):
        views.list_views("nope")


def test_views_and_tables_never_share_a_name(views: RestCatalog) -> None:
    views.create_table("db.t", pa.schema([("id", pa.int64())]), properties={"format-version": "2"})
    with pytest.raises(AlreadyExists, match="a table of that name exists"):
        views.create_view("db.t", SCHEMA, SQL)
    views.create_view("db.v", SCHEMA, SQL)
    with pytest.raises(AlreadyExists):
        views.create_table("db.v", pa.schema([("id", pa.int64())]))
    with pytest.raises(NoSuchView):
        views.load_view("db.t")


def test_replace_rollback_and_properties(views: RestCatalog, rest_server: RestServer) -> None:
    views.create_view("db.v", SCHEMA, SQL)
    aliased = with_field_aliases(views.load_view("db.v").schema(), ["area", "events"], ["Region", "Count"])
    v2 = views.replace_view("db.v", aliased, {"spark": SQL, "trino": SQL})
    assert v2.current_version.version_id == 2 and v2.dialects == ("spark", "trino")
    assert [f.name for f in v2.schema().fields] == ["area", "events"]
    assert [f.doc for f in v2.schema().fields] == ["Region", "Count"]
    with pytest.raises(ValidationError, match=r"drop SQL dialect\(s\) \['trino'\]"):
        v2.rollback(1)  # refused before sending (the server checks again: tests/firn/rest)
    views.update_view_properties("db.v", {"replace.drop-dialect.allowed": "true"})
    v1 = views.load_view("db.v").rollback(1)
    assert v1.current_version.version_id == 1 and [e.version_id for e in v1.history] == [1, 2, 1]
    v = views.update_view_properties("db.v", removals={"replace.drop-dialect.allowed"})
    assert "replace.drop-dialect.allowed" not in v.properties
    assert rest_server.catalog.load_view("db.v").metadata_location == v.metadata_location  # type: ignore[attr-defined]
    # A definition equal to the current one changes nothing and sends nothing.
    same = views.replace_view("db.v", views.load_view("db.v").schema(), SQL)
    assert same.metadata_location == v.metadata_location


def test_a_change_for_a_recreated_view_is_refused(views: RestCatalog) -> None:
    old = views.create_view("db.v", SCHEMA, SQL)
    views.drop_view("db.v")
    views.create_view("db.v", SCHEMA, "SELECT 1, 2")
    with pytest.raises(ValidationConflict, match="dropped and re-created"):
        old.rollback(1)


def test_concurrent_replaces_both_land(views: RestCatalog, rest_server: RestServer) -> None:
    views.create_view("db.v", SCHEMA, SQL)
    errors: list[BaseException] = []

    def replace(i: int) -> None:
        catalog = rest_server.client()
        try:
            for j in range(3):
                catalog.replace_view("db.v", SCHEMA, f"SELECT '{i}-{j}', 1", properties={f"w{i}": str(j)})
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            catalog.close()

    threads = [threading.Thread(target=replace, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    final = views.load_view("db.v")
    assert final.properties["w0"] == "2" and final.properties["w1"] == "2"
    assert len(final.history) == 7  # the first version plus six replaces, none lost


def test_rename_register_and_drop(views: RestCatalog) -> None:
    views.create_namespace("other")
    v = views.create_view("db.v", SCHEMA, SQL)
    moved = views.rename_view("db.v", "other.w")
    assert (
        moved.uuid == v.uuid
        and views.list_views("db") == []
        and views.list_views("other") == [("other", "w")]
    )
    with pytest.raises(NoSuchView):
        views.rename_view("db.v", "db.x")
    views.drop_view("other.w")
    assert not views.view_exists("other.w")
    back = views.register_view("db.back", moved.metadata_location)
    assert back.uuid == v.uuid and back.sql_for("spark") == SQL
    with pytest.raises(AlreadyExists):
        views.register_view("db.back", moved.metadata_location)
    with pytest.raises(NotFound):
        views.register_view("db.ghost", moved.metadata_location + ".missing")
    with pytest.raises(Unsupported, match="no purge option"):
        views.drop_view("db.back", purge=True)
    views.drop_view("db.back")
    with pytest.raises(NoSuchView):
        views.drop_view("db.back")
