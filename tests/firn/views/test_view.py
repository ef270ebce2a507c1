"""The View front object (over the in-memory catalog)."""

from __future__ import annotations

import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.errors import NotFound
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField
from firn.views import View

SCHEMA = Schema(NestedField(1, "id", LongType()))


@pytest.fixture
def view(memory_catalog: InMemoryCatalog) -> View:
    memory_catalog.create_namespace("db")
    memory_catalog.create_view(
        "db.v", SCHEMA, {"spark": "SELECT 1 AS id", "trino": "SELECT 1 id"}, properties={"comment": "c"}
    )
    return memory_catalog.replace_view(
        "db.v", SCHEMA, {"Spark": "SELECT 2 AS id", "trino": "SELECT 2 id"}, default_catalog="prod"
    )


def test_accessors(view: View, memory_catalog: InMemoryCatalog) -> None:
    assert view.name == "db.v" and view.identifier == ("db", "v")
    assert view.catalog is memory_catalog and view.io is memory_catalog.io
    assert view.properties == {"comment": "c"}
    assert view.location == "memory://warehouse/db/v"
    assert view.current_version.version_id == 2
    assert [v.version_id for v in view.versions] == [1, 2]
    assert view.version(1).sql_for("spark").sql == "SELECT 1 AS id"  # type: ignore[union-attr]
    assert [e.version_id for e in view.history] == [1, 2]
    assert view.schema() == SCHEMA
    assert view.default_catalog == "prod" and view.default_namespace == ("db",)
    assert (
        repr(view)
        == "View('db.v', version=2, dialects=['spark', 'trino'], location='memory://warehouse/db/v')"
    )


def test_sql_for_dialects(view: View) -> None:
    assert view.dialects == ("spark", "trino")
    assert view.sql_for("spark") == view.sql_for("SPARK") == "SELECT 2 AS id"
    assert view.sql_for("Trino") == "SELECT 2 id"
    with pytest.raises(
        NotFound,
        match=r"view 'db\.v' has no SQL representation for dialect 'hive'; its dialects: spark, trino",
    ):
        view.sql_for("hive")
    with pytest.raises(NotFound, match=r"view version 7 does not exist \(versions kept: 1, 2\)"):
        view.version(7)


def test_objects_do_not_change(view: View) -> None:
    older = view.rollback(1)
    assert older.current_version.version_id == 1
    assert view.current_version.version_id == 2  # the object it came from is unchanged
    assert view.refresh().current_version.version_id == 1
