"""One SQLite catalog file shared by Firn and PyIceberg's SqlCatalog, in both directions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.metadata_io import new_metadata_location, write_metadata
from tests.fixtures.catalogs import make_sqlite_catalog, simple_schema

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

_ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("url", pa.string())])


@pytest.fixture
def firn(tmp_path: Path) -> Iterator[SqlCatalog]:
    catalog = make_sqlite_catalog(tmp_path, name="shared")
    yield catalog
    catalog.close()


def _pyiceberg(tmp_path: Path) -> Any:
    return pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )


def test_pyiceberg_reads_what_firn_wrote(firn: SqlCatalog, tmp_path: Path) -> None:
    firn.create_namespace("db")
    firn.create_namespace("team.sales", {"owner": "ana"})
    table = firn.create_table("db.events", simple_schema(), format_version=2, properties={"k": "v"})
    firn.create_table("team.sales.orders", simple_schema(), format_version=1)

    py = _pyiceberg(tmp_path)
    assert sorted(py.list_namespaces()) == [("db",), ("team",)]
    assert py.list_namespaces("team") == [("team", "sales")]
    assert py.load_namespace_properties("team.sales")["owner"] == "ana"
    assert py.list_tables("db") == [("db", "events")]
    loaded = py.load_table("db.events")
    assert loaded.metadata_location == table.metadata_location
    assert loaded.format_version == 2
    assert str(loaded.metadata.table_uuid) == str(table.metadata.table_uuid)
    assert [f.name for f in loaded.schema().fields] == ["id", "name", "ts"]
    assert loaded.properties["k"] == "v"
    assert py.load_table("team.sales.orders").format_version == 1

    # A Firn commit is what PyIceberg sees next.
    new = new_metadata_location(table.metadata, table.metadata_location)
    write_metadata(firn.io, table.metadata, new)
    firn.swap_metadata_location("db.events", table.metadata_location, new, table.metadata)
    assert py.load_table("db.events").metadata_location == new

    # And PyIceberg can change Firn's rows: rename, then drop.
    py.rename_table("db.events", "team.sales.events")
    assert firn.list_tables("team.sales") == [("team", "sales", "events"), ("team", "sales", "orders")]
    py.drop_table("team.sales.events")
    assert not firn.table_exists("team.sales.events")


def test_firn_reads_what_pyiceberg_wrote(firn: SqlCatalog, tmp_path: Path) -> None:
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.types import LongType, NestedField, StringType

    py = _pyiceberg(tmp_path)
    py.create_namespace("raw")
    py.create_namespace("props", {"owner": "bo"})
    py_table = py.create_table(
        "raw.clicks",
        PySchema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "url", StringType(), required=False),
        ),
    )
    py_table.append(pa.Table.from_pydict({"id": [1, 2], "url": ["a", "b"]}, schema=_ARROW))
    py_table = py.load_table("raw.clicks")

    assert firn.list_namespaces() == [("props",), ("raw",)]
    assert firn.load_namespace_properties("props") == {"owner": "bo"}
    assert firn.list_tables("raw") == [("raw", "clicks")]
    table = firn.load_table("raw.clicks")
    assert table.metadata_location == py_table.metadata_location
    md = table.metadata
    assert md.format_version == 2
    assert str(md.table_uuid) == str(py_table.metadata.table_uuid)
    assert md.current_snapshot_id == py_table.metadata.current_snapshot_id
    assert [(f.field_id, f.name, f.required) for f in md.schema().fields] == [
        (1, "id", True),
        (2, "url", False),
    ]
    assert len(md.snapshots) == 1 and md.last_sequence_number == 1

    # Firn's compare-and-swap on PyIceberg's table, then PyIceberg keeps committing on top.
    new = new_metadata_location(md, table.metadata_location)
    write_metadata(firn.io, md, new)
    firn.swap_metadata_location("raw.clicks", table.metadata_location, new, md)
    reloaded = py.load_table("raw.clicks")
    assert reloaded.metadata_location == new
    reloaded.append(pa.Table.from_pydict({"id": [3], "url": ["c"]}, schema=_ARROW))
    assert firn.load_table("raw.clicks").metadata.last_sequence_number == 2

    # Firn refuses to drop PyIceberg's namespace while it holds a table, like PyIceberg does.
    firn.drop_table("raw.clicks")
    firn.drop_namespace("raw")
    assert py.list_namespaces() == [("props",)]


def test_pyiceberg_created_database_works_for_firn(tmp_path: Path) -> None:
    py = _pyiceberg(tmp_path)  # PyIceberg creates the tables this time
    py.create_namespace("db")
    firn = make_sqlite_catalog(tmp_path, name="shared")
    try:
        firn.create_table("db.t", simple_schema(), format_version=2)
        assert py.list_tables("db") == [("db", "t")]
        assert py.load_table("db.t").schema().find_field("id").required
    finally:
        firn.close()
