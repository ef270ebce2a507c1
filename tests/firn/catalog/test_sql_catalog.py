"""SqlCatalog specifics: schema, SQLite settings, views and V0 rows, failure classification."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from firn.catalog import InMemoryCatalog, SqlCatalog, load_catalog
from firn.catalog.sql import iceberg_tables, normalize_sql_uri
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    NamespaceNotEmpty,
    NoSuchTable,
    Unsupported,
    ValidationError,
)
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO
from tests.fixtures.catalogs import POSTGRES_URL, make_sqlite_catalog, simple_schema


def _columns(db: Path, table: str) -> list[tuple[str, str, int, int]]:
    with sqlite3.connect(db) as conn:
        return [(r[1], r[2], r[3], r[5]) for r in conn.execute(f"PRAGMA table_info({table})")]


def test_schema_matches_the_jdbc_catalog(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    # (name, type, not null, primary-key position) — Iceberg Java JdbcCatalog V1 / PyIceberg.
    assert _columns(db, "iceberg_tables") == [
        ("catalog_name", "VARCHAR(255)", 1, 1),
        ("table_namespace", "VARCHAR(255)", 1, 2),
        ("table_name", "VARCHAR(255)", 1, 3),
        ("metadata_location", "VARCHAR(1000)", 0, 0),
        ("previous_metadata_location", "VARCHAR(1000)", 0, 0),
        ("iceberg_type", "VARCHAR(5)", 0, 0),
    ]
    assert _columns(db, "iceberg_namespace_properties") == [
        ("catalog_name", "VARCHAR(255)", 1, 1),
        ("namespace", "VARCHAR(255)", 1, 2),
        ("property_key", "VARCHAR(255)", 1, 3),
        ("property_value", "VARCHAR(1000)", 1, 0),
    ]


def test_rows_written(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    c = sqlite_catalog
    c.create_namespace("a.b")
    c.create_namespace("db", {"owner": "me"})
    table = c.create_table("a.b.t", simple_schema())
    new = table.metadata_location.replace("/00000-", "/00001-")
    c.swap_metadata_location("a.b.t", table.metadata_location, new, table.metadata)
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        assert conn.execute("SELECT * FROM iceberg_tables").fetchall() == [
            ("test", "a.b", "t", new, table.metadata_location, "TABLE")
        ]
        assert sorted(conn.execute("SELECT * FROM iceberg_namespace_properties").fetchall()) == [
            ("test", "a.b", "exists", "true"),
            ("test", "db", "exists", "true"),
            ("test", "db", "owner", "me"),
        ]


def test_sqlite_settings(tmp_path: Path) -> None:
    wal = make_sqlite_catalog(tmp_path / "wal")
    with wal.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    wal.close()
    other = make_sqlite_catalog(
        tmp_path / "del", **{"sqlite.journal-mode": "DELETE", "sqlite.busy-timeout-ms": "250"}
    )
    with other.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "delete"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 250
    other.close()
    with pytest.raises(ValidationError, match="journal"):
        make_sqlite_catalog(tmp_path / "bad", **{"sqlite.journal-mode": "wal; DROP TABLE x"})


def test_catalog_names_are_isolated(tmp_path: Path) -> None:
    one = make_sqlite_catalog(tmp_path, name="one")
    two = make_sqlite_catalog(tmp_path, name="two")
    one.create_namespace("db")
    one.create_table("db.t", simple_schema())
    assert two.list_namespaces() == [] and not two.table_exists("db.t")
    two.create_namespace("db")
    assert two.list_tables("db") == []
    # A second handle on the same file and name sees everything.
    again = make_sqlite_catalog(tmp_path, name="one")
    assert again.list_tables("db") == [("db", "t")]
    for c in (one, two, again):
        c.close()


def test_view_rows_are_not_tables(sqlite_catalog: SqlCatalog) -> None:
    c = sqlite_catalog
    c.create_namespace("db")
    with c.engine.begin() as conn:  # a view as Iceberg Java's JDBC catalog stores it
        conn.execute(
            sa.insert(iceberg_tables).values(
                catalog_name="test",
                table_namespace="db",
                table_name="v",
                metadata_location="/x/v.json",
                iceberg_type="VIEW",
            )
        )
    assert c.list_tables("db") == [] and not c.table_exists("db.v")
    with pytest.raises(NoSuchTable):
        c.load_table("db.v")
    with pytest.raises(NoSuchTable):
        c.drop_table("db.v")
    with pytest.raises(AlreadyExists, match="view"):
        c.create_table("db.v", simple_schema())
    with pytest.raises(NamespaceNotEmpty):
        c.drop_namespace("db")


def test_v0_schema_without_iceberg_type(tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    with sqlite3.connect(db) as conn:  # what Iceberg Java created before views existed
        conn.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL,"
            " table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000),"
            " previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
        conn.execute(
            "CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,"
            " namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,"
            " property_value VARCHAR(1000) NOT NULL, PRIMARY KEY (catalog_name, namespace, property_key))"
        )
    v0 = make_sqlite_catalog(tmp_path)
    v0.create_namespace("db")
    table = v0.create_table("db.t", simple_schema())
    v0.swap_metadata_location("db.t", table.metadata_location, table.metadata_location + ".2", table.metadata)
    assert v0.list_tables("db") == [("db", "t")]
    assert "iceberg_type" not in {c[0] for c in _columns(db, "iceberg_tables")}
    v0.close()
    upgraded = make_sqlite_catalog(tmp_path, **{"sql.schema-version": "v1"})
    assert "iceberg_type" in {c[0] for c in _columns(db, "iceberg_tables")}
    assert upgraded.load_metadata_location("db.t") == table.metadata_location + ".2"  # NULL type = table
    upgraded.close()


def test_missing_tables_without_init_fail(tmp_path: Path) -> None:
    with pytest.raises(FirnError, match="init-catalog-tables"):
        make_sqlite_catalog(tmp_path, **{"sql.init-catalog-tables": "false"})


def test_busy_database_is_a_commit_conflict(tmp_path: Path) -> None:
    c = make_sqlite_catalog(tmp_path, **{"sqlite.busy-timeout-ms": "100"})
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    blocker = sqlite3.connect(tmp_path / "catalog.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(CommitConflict, match="nothing changed"):
            c.swap_metadata_location(
                "db.t", table.metadata_location, table.metadata_location + ".new", table.metadata
            )
        assert c.load_metadata_location("db.t") == table.metadata_location  # WAL: reads still work
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    c.swap_metadata_location(
        "db.t", table.metadata_location, table.metadata_location + ".new", table.metadata
    )
    c.close()


def _fail_commit(monkeypatch: pytest.MonkeyPatch, catalog: SqlCatalog, *, after_commit: bool) -> None:
    """Make the next COMMIT raise as if the connection dropped, before or after it took effect."""
    dialect = catalog.engine.dialect
    real = dialect.do_commit

    def do_commit(dbapi_connection: Any) -> None:
        monkeypatch.setattr(dialect, "do_commit", real)
        if after_commit:
            real(dbapi_connection)
        raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(dialect, "do_commit", do_commit)


def test_lost_commit_acknowledgement_is_resolved(
    sqlite_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = sqlite_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    new = table.metadata_location + ".new"
    _fail_commit(monkeypatch, c, after_commit=True)
    c.swap_metadata_location("db.t", table.metadata_location, new, table.metadata)  # re-read shows it applied
    assert c.load_metadata_location("db.t") == new


def test_failed_commit_is_state_unknown(sqlite_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    c = sqlite_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    _fail_commit(monkeypatch, c, after_commit=False)
    with pytest.raises(CommitStateUnknown, match="may or may not"):
        c.swap_metadata_location(
            "db.t", table.metadata_location, table.metadata_location + ".new", table.metadata
        )


def test_errors_before_commit_are_not_applied(sqlite_catalog: SqlCatalog) -> None:
    c = sqlite_catalog
    lost = OperationalError("UPDATE", {}, Exception("connection reset"), connection_invalidated=True)
    locked = OperationalError("UPDATE", {}, sqlite3.OperationalError("database is locked"))
    broken = OperationalError("UPDATE", {}, sqlite3.OperationalError("disk I/O error"))
    assert isinstance(c._not_applied("db.t", "update", locked), CommitConflict)
    assert type(c._not_applied("db.t", "update", broken)) is FirnError
    assert type(c._not_applied("db.t", "update", lost)) is FirnError  # SQLite has no network
    c._is_sqlite = False  # the same errors from a server database
    assert isinstance(c._not_applied("db.t", "update", lost), CommitConflict)


def test_length_limits(sqlite_catalog: SqlCatalog) -> None:
    with pytest.raises(ValidationError, match="255"):
        sqlite_catalog.create_namespace("n" * 256)
    with pytest.raises(ValidationError, match="1000"):
        sqlite_catalog.create_namespace("db", {"k": "v" * 1001})


# -- load_catalog ----------------------------------------------------------------------------
def test_load_catalog_sqlite_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog("sqlite:///cat.db", warehouse="wh", name="main")
    assert isinstance(catalog, SqlCatalog)
    assert catalog.name == "main" and catalog.warehouse == str(tmp_path / "wh")
    assert isinstance(catalog.io, PyArrowFileIO)
    catalog.create_namespace("db")
    assert catalog.create_table("db.t", simple_schema()).metadata.location == f"{tmp_path}/wh/db/t"
    assert (tmp_path / "cat.db").exists()
    catalog.close()


def test_load_catalog_memory() -> None:
    catalog = load_catalog("memory://")
    assert isinstance(catalog, InMemoryCatalog) and isinstance(catalog.io, InMemoryFileIO)
    local = load_catalog("memory://", warehouse="/tmp/firn-wh")
    assert isinstance(local.io, PyArrowFileIO)


def test_load_catalog_rejects_unknown_uris() -> None:
    with pytest.raises(Unsupported, match="sqlite"):
        load_catalog("thrift://metastore:9083")
    with pytest.raises(ValidationError):
        load_catalog("")


def test_a_malformed_sqlite_uri_is_a_validation_error() -> None:
    # sqlite://x.db names a host, not a file: SQLAlchemy's own ArgumentError must not escape.
    with pytest.raises(ValidationError, match=r"'sqlite://x\.db' is not a SQLite catalog URI"):
        load_catalog("sqlite://x.db")


def test_postgres_uris_use_psycopg3() -> None:
    assert normalize_sql_uri("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_sql_uri("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_sql_uri("postgresql+psycopg://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_sql_uri("sqlite:///x.db").drivername == "sqlite"


def test_in_memory_sqlite_is_shared_across_threads() -> None:
    import threading

    catalog = SqlCatalog("m", "sqlite://", io=InMemoryFileIO(), warehouse="memory://wh")
    catalog.create_namespace("db")
    seen: list[list[tuple[str, ...]]] = []
    thread = threading.Thread(target=lambda: seen.append(catalog.list_namespaces()))
    thread.start()
    thread.join()
    assert seen == [[("db",)]]
    catalog.close()


@pytest.mark.postgres
def test_postgres_previous_location_and_url(postgres_catalog: SqlCatalog) -> None:
    c = postgres_catalog
    assert c.url.startswith("postgresql+psycopg://postgres@127.0.0.1")
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    c.swap_metadata_location("db.t", table.metadata_location, table.metadata_location + ".2", table.metadata)
    t = iceberg_tables.c
    with c.engine.connect() as conn:
        row = conn.execute(
            sa.select(t.metadata_location, t.previous_metadata_location, t.iceberg_type).where(
                t.catalog_name == c.name
            )
        ).one()
    assert tuple(row) == (table.metadata_location + ".2", table.metadata_location, "TABLE")


def _terminate_backend(dbapi_connection: Any) -> None:
    """Kill the server process behind a psycopg connection, as a network failure would."""
    cur = dbapi_connection.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    killer = sa.create_engine(POSTGRES_URL)
    with killer.connect() as conn:  # wait up to 5 s for it to be gone (PostgreSQL 14+)
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid}).scalar()
    killer.dispose()


@pytest.mark.postgres
def test_postgres_connection_lost_before_commit_is_retryable(
    postgres_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = postgres_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())

    killed: list[bool] = []

    def before_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("UPDATE iceberg_tables") and not killed:
            killed.append(True)
            _terminate_backend(cursor.connection)

    sa.event.listen(c.engine, "before_cursor_execute", before_execute)
    with pytest.raises(CommitConflict, match="retrying is safe"):
        c.swap_metadata_location(
            "db.t", table.metadata_location, table.metadata_location + ".2", table.metadata
        )
    assert c.load_metadata_location("db.t") == table.metadata_location
    c.swap_metadata_location("db.t", table.metadata_location, table.metadata_location + ".2", table.metadata)


@pytest.mark.postgres
def test_postgres_connection_lost_during_commit_is_state_unknown(
    postgres_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = postgres_catalog
    c.create_namespace("db")
    table = c.create_table("db.t", simple_schema())
    dialect = c.engine.dialect
    real = dialect.do_commit

    def do_commit(dbapi_connection: Any) -> None:
        monkeypatch.setattr(dialect, "do_commit", real)
        _terminate_backend(dbapi_connection)
        real(dbapi_connection)

    monkeypatch.setattr(dialect, "do_commit", do_commit)
    with pytest.raises(CommitStateUnknown):
        c.swap_metadata_location(
            "db.t", table.metadata_location, table.metadata_location + ".2", table.metadata
        )
    # The server rolled the transaction back; the caller could not have known that.
    assert c.load_metadata_location("db.t") == table.metadata_location
