"""Views in Iceberg Java's JdbcCatalog layout: its DDL, its rows, its metadata files.

No JVM runs here (the Iceberg jars are not installable on this machine), so the catalog is
built with the statements ``JdbcCatalog`` / ``JdbcUtil`` execute, verbatim: the V0
``CREATE TABLE``, the ``ALTER TABLE`` that ``jdbc.schema-version=V1`` adds, the namespace
rows, and the view ``INSERT``; the view's metadata file is gzip-compressed JSON in Java's key
order, named as ``BaseViewOperations`` names it.
"""

from __future__ import annotations

import gzip
import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from firn.catalog.sql import SqlCatalog, iceberg_tables
from firn.errors import Unsupported
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField
from tests.fixtures.catalogs import simple_schema
from tests.fixtures.view_examples import java_layout_metadata

# JdbcUtil.V0_CREATE_CATALOG_SQL, CREATE_NAMESPACE_PROPERTIES_TABLE_SQL, V1_UPDATE_CATALOG_SQL
JAVA_V0_CREATE = (
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,table_namespace VARCHAR(255) NOT NULL,"
    "table_name VARCHAR(255) NOT NULL,metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, table_namespace, table_name))"
)
JAVA_NAMESPACE_CREATE = (
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,namespace VARCHAR(255) NOT NULL,"
    "property_key VARCHAR(255),property_value VARCHAR(1000),PRIMARY KEY (catalog_name, namespace, property_key))"
)
JAVA_V1_UPDATE = "ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)"
# JdbcUtil.V1_DO_COMMIT_CREATE_SQL, with iceberg_type 'VIEW' (JdbcUtil.doCommitCreateView)
JAVA_CREATE_VIEW = (
    "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
    "previous_metadata_location, iceberg_type)  VALUES (?,?,?,?,null,?)"
)
# JdbcUtil.V0_DO_COMMIT_CREATE_SQL: tables created before the column existed have iceberg_type NULL.
JAVA_V0_CREATE_TABLE = (
    "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
    "previous_metadata_location)  VALUES (?,?,?,?,null)"
)
JAVA_CREATE_NAMESPACE = "INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES (?,?,?,?)"
SCHEMA = Schema(NestedField(1, "id", LongType()))


def _java_catalog_db(path: Path, *, v1: bool) -> str:
    """A catalog database created as Iceberg Java creates it; returns its URI."""
    uri = f"sqlite:///{path}"
    engine = sa.create_engine(uri)
    with engine.begin() as conn:
        conn.exec_driver_sql(JAVA_V0_CREATE)
        conn.exec_driver_sql(JAVA_NAMESPACE_CREATE)
        if v1:
            conn.exec_driver_sql(JAVA_V1_UPDATE)
        conn.exec_driver_sql(JAVA_CREATE_NAMESPACE, ("java", "db", "exists", "true"))
    engine.dispose()
    return uri


def _write_java_view(warehouse: Path, name: str) -> str:
    """A view metadata file as Java's BaseViewOperations writes the first one."""
    location = f"{warehouse}/db/{name}"
    metadata = f"{location}/metadata/00000-{uuid.uuid4()}.gz.metadata.json"
    os.makedirs(os.path.dirname(metadata))
    with open(metadata, "wb") as f:
        f.write(gzip.compress(java_layout_metadata(location).encode()))
    return metadata


def _rows(catalog: SqlCatalog, name: str) -> list[tuple[object, ...]]:
    t = iceberg_tables.c
    q = sa.select(iceberg_tables).where(t.catalog_name == catalog.name, t.table_name == name)
    with catalog.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(q)]


def test_firn_loads_and_changes_a_java_view(tmp_path: Path) -> None:
    uri = _java_catalog_db(tmp_path / "catalog.db", v1=True)
    java_file = _write_java_view(tmp_path / "warehouse", "java_view")
    engine = sa.create_engine(uri)
    with engine.begin() as conn:
        conn.exec_driver_sql(JAVA_CREATE_VIEW, ("java", "db", "java_view", java_file, "VIEW"))
        conn.exec_driver_sql(
            JAVA_V0_CREATE_TABLE, ("java", "db", "old_table", "s3://b/t/metadata/00000-x.metadata.json")
        )
    engine.dispose()

    catalog = SqlCatalog("java", uri, warehouse=str(tmp_path / "warehouse"))
    try:
        assert catalog.list_views("db") == [("db", "java_view")]
        # A row with NULL iceberg_type is a table (Java's rule), never a view.
        assert catalog.list_tables("db") == [("db", "old_table")]
        assert not catalog.view_exists("db.old_table")
        view = catalog.load_view("db.java_view")
        assert view.metadata_location == java_file
        assert view.uuid == "fa6506c3-7681-40c8-86dc-e36561f83385"
        assert view.current_version.version_id == 2
        assert view.sql_for("spark") == "select 1 x, 2 y, 3 z"
        assert view.default_catalog == "some-catalog" and view.default_namespace == ()
        assert [f.name for f in view.schema().fields] == ["x", "y", "z"]

        replaced = catalog.replace_view("db.java_view", view.schema(), "select 4 x, 5 y, 6 z")
        assert [v.version_id for v in replaced.versions] == [1, 2, 3]
        assert replaced.metadata_location.split("/")[-1].startswith("00001-")  # Java's counter continues
        # The row is updated the way Java's JdbcViewOperations updates it.
        assert _rows(catalog, "java_view") == [
            ("java", "db", "java_view", replaced.metadata_location, java_file, "VIEW")
        ]
        assert catalog.rollback_view("db.java_view", 1).sql_for("spark") == "select 'foo' foo"
    finally:
        catalog.close()


def test_firn_writes_java_rows(tmp_path: Path) -> None:
    uri = _java_catalog_db(tmp_path / "catalog.db", v1=True)
    catalog = SqlCatalog("java", uri, warehouse=str(tmp_path / "warehouse"))
    try:
        view = catalog.create_view("db.v", SCHEMA, "SELECT 1 AS id")
        # JdbcUtil.doCommitCreateView: (catalog, namespace, name, location, NULL, 'VIEW').
        assert _rows(catalog, "v") == [("java", "db", "v", view.metadata_location, None, "VIEW")]
        # The file is named and compressed as Java names and compresses it.
        name = view.metadata_location.rsplit("/", 1)[1]
        assert name.startswith("00000-") and name.endswith(".gz.metadata.json")
        assert (tmp_path / "warehouse/db/v/metadata" / name).read_bytes()[:2] == b"\x1f\x8b"
        catalog.rename_view("db.v", "db.w")
        assert _rows(catalog, "w") == [("java", "db", "w", view.metadata_location, None, "VIEW")]
        catalog.drop_view("db.w")
        assert _rows(catalog, "w") == []
    finally:
        catalog.close()


def test_v0_catalog_holds_no_views_until_upgraded(tmp_path: Path) -> None:
    uri = _java_catalog_db(tmp_path / "catalog.db", v1=False)
    catalog = SqlCatalog("java", uri, warehouse=str(tmp_path / "warehouse"))
    try:
        catalog.create_table("db.t", simple_schema())
        assert catalog.list_views("db") == [] and not catalog.view_exists("db.t")
        with pytest.raises(Unsupported, match=r"V0 JDBC schema.*sql\.schema-version=v1"):
            catalog.create_view("db.v", SCHEMA, "SELECT 1")
        assert catalog.list_tables("db") == [("db", "t")]
    finally:
        catalog.close()
    upgraded = SqlCatalog(
        "java", uri, warehouse=str(tmp_path / "warehouse"), properties={"sql.schema-version": "v1"}
    )
    try:
        upgraded.create_view("db.v", SCHEMA, "SELECT 1")
        assert upgraded.list_views("db") == [("db", "v")]
        assert upgraded.list_tables("db") == [("db", "t")]  # its iceberg_type is NULL: still a table
    finally:
        upgraded.close()


@pytest.mark.postgres
def test_java_view_row_in_postgres(postgres_catalog: SqlCatalog, tmp_path: Path) -> None:
    postgres_catalog.create_namespace("db")
    java_file = _write_java_view(tmp_path / "warehouse", "java_view")
    with postgres_catalog.engine.begin() as conn:
        conn.exec_driver_sql(
            JAVA_CREATE_VIEW.replace("?", "%s"), (postgres_catalog.name, "db", "java_view", java_file, "VIEW")
        )
    view = postgres_catalog.load_view("db.java_view")
    assert view.sql_for("SPARK") == "select 1 x, 2 y, 3 z"
    replaced = postgres_catalog.replace_view("db.java_view", view.schema(), "select 7 x, 8 y, 9 z")
    assert _rows(postgres_catalog, "java_view") == [
        (postgres_catalog.name, "db", "java_view", replaced.metadata_location, java_file, "VIEW")
    ]
