"""Firn views in a SQLite catalog shared with PyIceberg 0.12's SqlCatalog.

What PyIceberg 0.12 supports, exactly (each point is asserted below):

* Its ``SqlCatalog`` implements no view operation: ``create_view``, ``load_view``,
  ``list_views``, ``view_exists``, ``drop_view`` and ``register_view`` all raise
  ``NotImplementedError``. So PyIceberg cannot load a Firn view through the catalog.
* Its view metadata model (``pyiceberg.view.metadata.ViewMetadata``, what its REST catalog
  parses) reads Firn's metadata files: UUID, versions, SQL per dialect, default namespace
  and catalog, the schema with the column aliases and comments, the version log.
* Its table operations skip view rows (``iceberg_type = 'VIEW'``): ``list_tables`` does not
  list them, ``load_table`` / ``table_exists`` / ``drop_table`` do not see them, and
  ``create_table`` / ``rename_table`` onto a view's name fail with ``TableAlreadyExistsError``
  (the shared primary key) — but ``create_table`` leaves the metadata file it wrote first.
* Its ``drop_namespace`` counts only tables: on a namespace that holds only views it deletes
  the namespace's property rows and returns, while the view rows keep the namespace existing
  (Firn refuses with ``NamespaceNotEmpty``).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import NamespaceNotEmpty
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField, StringType
from firn.views import with_field_aliases
from tests.fixtures.catalogs import make_sqlite_catalog, simple_schema

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

QUERY = Schema(NestedField(1, "count", LongType(), required=True), NestedField(2, "day", StringType()))


@pytest.fixture
def firn(tmp_path: Path) -> Iterator[SqlCatalog]:
    catalog = make_sqlite_catalog(tmp_path, name="shared")
    catalog.create_namespace("db")
    yield catalog
    catalog.close()


def _pyiceberg(tmp_path: Path) -> Any:
    return pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )


def test_pyiceberg_parses_firn_view_metadata(firn: SqlCatalog) -> None:
    from pyiceberg.view.metadata import ViewMetadata as PyViewMetadata

    firn.create_view(
        "db.v",
        with_field_aliases(QUERY, ["event_count", "event_day"], ["Count of events", None]),
        {
            "spark": "SELECT count(1), day FROM events GROUP BY 2",
            "trino": "SELECT count(1), day FROM events GROUP BY 2",
        },
        default_catalog="prod",
        properties={"comment": "daily"},
    )
    view = firn.replace_view(
        "db.v",
        with_field_aliases(QUERY, ["event_count", "event_day"], ["Count of events", None]),
        {
            "spark": "SELECT count(1), day FROM db.events GROUP BY 2",
            "trino": "SELECT count(1), day FROM db.events GROUP BY 2",
        },
        default_catalog="prod",
    )
    raw = Path(view.metadata_location).read_bytes()
    py = PyViewMetadata.model_validate_json(gzip.decompress(raw))
    assert py.view_uuid == view.uuid
    assert py.format_version == 1
    assert py.location == view.location
    assert py.current_version_id == 2
    assert py.properties == {"comment": "daily"}
    current = next(v for v in py.versions if v.version_id == 2)
    assert {r.root.dialect: r.root.sql for r in current.representations} == {
        "spark": "SELECT count(1), day FROM db.events GROUP BY 2",
        "trino": "SELECT count(1), day FROM db.events GROUP BY 2",
    }
    assert current.default_catalog == "prod"
    assert tuple(current.default_namespace) == ("db",)
    assert current.summary["engine-name"] == "firn"
    schema = next(s for s in py.schemas if s.schema_id == current.schema_id)
    assert [(f.field_id, f.name, f.doc, f.required) for f in schema.fields] == [
        (1, "event_count", "Count of events", True),
        (2, "event_day", None, False),
    ]
    assert [(e.version_id, e.timestamp_ms) for e in py.version_log] == [
        (e.version_id, e.timestamp_ms) for e in view.history
    ]


def test_pyiceberg_sql_catalog_has_no_view_operations(firn: SqlCatalog, tmp_path: Path) -> None:
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewRepresentation, ViewVersion

    view = firn.create_view("db.v", QUERY, "SELECT 1")
    py = _pyiceberg(tmp_path)
    version = ViewVersion(
        schema_id=0,
        representations=[
            ViewRepresentation(SQLViewRepresentation(type="sql", sql="SELECT 1", dialect="spark"))
        ],
        default_namespace=("db",),
    )
    for call in (
        lambda: py.load_view("db.v"),
        lambda: py.list_views("db"),
        lambda: py.view_exists("db.v"),
        lambda: py.drop_view("db.v"),
        lambda: py.register_view("db.w", view.metadata_location),
        lambda: py.create_view("db.w", _py_schema(), version),
    ):
        with pytest.raises(NotImplementedError):
            call()
    assert firn.list_views("db") == [("db", "v")]


def _py_schema() -> Any:
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.types import LongType as PyLong
    from pyiceberg.types import NestedField as PyField

    return PySchema(PyField(1, "id", PyLong(), required=False))


def test_pyiceberg_table_operations_leave_views_alone(firn: SqlCatalog, tmp_path: Path) -> None:
    from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError

    firn.create_table("db.t", simple_schema(), format_version=2)
    view = firn.create_view("db.v", QUERY, "SELECT 1")
    py = _pyiceberg(tmp_path)
    assert py.list_tables("db") == [("db", "t")]
    assert not py.table_exists("db.v")
    with pytest.raises(NoSuchTableError):
        py.load_table("db.v")
    with pytest.raises(NoSuchTableError):
        py.drop_table("db.v")
    with pytest.raises(TableAlreadyExistsError):
        py.create_table("db.v", _py_schema())
    with pytest.raises(TableAlreadyExistsError):
        py.rename_table("db.t", "db.v")
    # The view is untouched, in the catalog and on storage...
    assert firn.load_view("db.v").metadata_location == view.metadata_location
    assert firn.load_view("db.v").sql_for("spark") == "SELECT 1"
    # ...but PyIceberg's failed create_table left its metadata file behind.
    files = sorted(p.name for p in (tmp_path / "warehouse/db/v/metadata").iterdir())
    assert len(files) == 2 and view.metadata_location.rsplit("/", 1)[1] in files
    # PyIceberg's commits to the table still work beside the view.
    py_table = py.load_table("db.t")
    with py_table.transaction() as tx:
        tx.set_properties(owner="py")
    assert firn.load_table("db.t").metadata.properties["owner"] == "py"


def test_pyiceberg_drop_namespace_ignores_views(firn: SqlCatalog, tmp_path: Path) -> None:
    firn.create_namespace("only_views", {"owner": "ana"})
    firn.create_view("only_views.v", QUERY, "SELECT 1")
    with pytest.raises(NamespaceNotEmpty, match=r"only_views\.v"):
        firn.drop_namespace("only_views")
    py = _pyiceberg(tmp_path)
    py.drop_namespace("only_views")  # PyIceberg counts tables only
    # Its property rows are gone, but the view row keeps the namespace, and the view, alive.
    assert firn.namespace_exists("only_views") and py.namespace_exists("only_views")
    assert firn.load_namespace_properties("only_views") == {}
    assert firn.list_views("only_views") == [("only_views", "v")]


def test_firn_views_in_a_catalog_pyiceberg_created(tmp_path: Path) -> None:
    py = _pyiceberg(tmp_path)  # a new PyIceberg catalog gets the V1 schema (iceberg_type)
    py.create_namespace("db")
    py.create_table("db.t", _py_schema())
    firn = make_sqlite_catalog(tmp_path, name="shared")
    try:
        firn.create_view("db.v", QUERY, "SELECT 1")
        assert firn.list_views("db") == [("db", "v")]
        assert firn.list_tables("db") == [("db", "t")]
        assert py.list_tables("db") == [("db", "t")]
    finally:
        firn.close()
