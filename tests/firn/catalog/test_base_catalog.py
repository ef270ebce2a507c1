"""BaseCatalog.create_table leaves no metadata file behind when the catalog refuses the table:
a name too long for the identifier rule or a location too long for the SQL catalog's columns
is refused before anything is written, and a failed insert deletes the file it wrote — unless
the row points at it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from firn.catalog.sql import SqlCatalog
from firn.errors import AlreadyExists, FirnError, ValidationError
from tests.fixtures.catalogs import POSTGRES_URL, make_sqlite_catalog, simple_schema


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    c = make_sqlite_catalog(tmp_path)
    c.create_namespace("db")
    yield c
    c.close()


def test_a_name_longer_than_the_column_is_refused_before_anything_is_written(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    name = "t" * 256
    # The identifier rule (firn.catalog.identifiers) refuses it before the column limit would.
    with pytest.raises(ValidationError, match="is 256 bytes long in UTF-8; the limit is 255"):
        catalog.create_table(f"db.{name}", simple_schema())
    assert _files(tmp_path / "warehouse") == []
    assert catalog.list_tables("db") == []
    # 255 characters fit: created, one metadata file.
    ok = catalog.create_table(f"db.{'t' * 255}", simple_schema())
    assert _files(tmp_path / "warehouse") == [Path(ok.metadata_location)]


def test_a_metadata_location_longer_than_the_column_is_refused_before_anything_is_written(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    # Inside the warehouse (confinement allows it), too long for the column once the metadata
    # file name is added.
    location = tmp_path / "warehouse" / ("d" * 200) / ("e" * 200) / ("f" * 200) / ("g" * 200) / ("h" * 200)
    with pytest.raises(
        ValidationError, match="metadata location is longer than the catalog's 1000-character"
    ):
        catalog.create_table("db.t", simple_schema(), location=str(location))
    assert _files(tmp_path / "warehouse") == []


def test_a_location_that_cannot_be_written_is_a_write_failure(catalog: SqlCatalog, tmp_path: Path) -> None:
    """The metadata write fails (its directory would run through a regular file): the error
    says so — it is not "not found" or "already exists" — and no table is created."""
    plain = tmp_path / "warehouse" / "plain"
    plain.parent.mkdir()
    plain.write_bytes(b"x")
    with pytest.raises(
        FirnError, match=r": write failed: cannot create directory .*/plain/metadata: .*Not a directory"
    ) as info:
        catalog.create_table("db.t", simple_schema(), location=str(plain))
    assert type(info.value) is FirnError
    assert not catalog.table_exists("db.t") and _files(tmp_path / "warehouse") == [plain]


def test_losing_the_race_deletes_the_file(catalog: SqlCatalog, tmp_path: Path) -> None:
    """Another creator inserts the row between the existence check and the insert."""
    other = make_sqlite_catalog(tmp_path)
    created: list[str] = []

    def create_after_the_check(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("SELECT iceberg_tables.metadata_location") and not created:
            created.append(other.create_table("db.t", simple_schema()).metadata_location)

    sa.event.listen(catalog.engine, "after_cursor_execute", create_after_the_check)
    with pytest.raises(AlreadyExists):
        catalog.create_table("db.t", simple_schema())
    assert _files(tmp_path / "warehouse") == [Path(created[0])]
    assert catalog.load_table("db.t").metadata_location == created[0]
    other.close()


def test_a_database_failure_on_insert_deletes_the_file(tmp_path: Path) -> None:
    """The write lock is held by another process past the busy timeout: the insert fails, the
    row is not there (WAL: it can still be read), so the file is deleted."""
    c = make_sqlite_catalog(tmp_path, **{"sqlite.busy-timeout-ms": "100"})
    c.create_namespace("db")
    blocker = sqlite3.connect(tmp_path / "catalog.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(FirnError, match=r"create table 'db\.t' failed: database is locked"):
            c.create_table("db.t", simple_schema())
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert _files(tmp_path / "warehouse") == []
    assert not c.table_exists("db.t")
    c.create_table("db.t", simple_schema())  # the name is free
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


def test_an_insert_that_did_not_land_deletes_the_file(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_commit(monkeypatch, catalog, after_commit=False)
    with pytest.raises(FirnError, match="server closed the connection"):
        catalog.create_table("db.t", simple_schema())
    assert _files(tmp_path / "warehouse") == []
    assert not catalog.table_exists("db.t")


def test_an_insert_that_landed_without_a_reply_keeps_the_file_and_the_table(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_commit(monkeypatch, catalog, after_commit=True)
    table = catalog.create_table("db.t", simple_schema())
    assert _files(tmp_path / "warehouse") == [Path(table.metadata_location)]
    assert catalog.load_table("db.t").metadata_location == table.metadata_location


def test_the_file_is_kept_when_the_row_cannot_be_read(
    catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Insert and the read-back both fail: the insert may have landed, so the file stays."""
    _fail_commit(monkeypatch, catalog, after_commit=False)
    statements: list[str] = []

    def fail_reads_after_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)
        if statement.startswith("SELECT") and any(s.startswith("INSERT") for s in statements):
            raise sqlite3.OperationalError("disk I/O error")

    sa.event.listen(catalog.engine, "before_cursor_execute", fail_reads_after_insert)
    with pytest.raises(FirnError, match="server closed the connection"):
        catalog.create_table("db.t", simple_schema())
    sa.event.remove(catalog.engine, "before_cursor_execute", fail_reads_after_insert)
    assert len(_files(tmp_path / "warehouse")) == 1


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
def test_postgres_refused_creates_leave_no_file(postgres_catalog: SqlCatalog, tmp_path: Path) -> None:
    c = postgres_catalog
    c.create_namespace("db")
    with pytest.raises(ValidationError, match="the limit is 255"):
        c.create_table("db." + "p" * 300, simple_schema())
    assert _files(tmp_path / "warehouse") == []

    killed: list[bool] = []

    def before_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO iceberg_tables") and not killed:
            killed.append(True)
            _terminate_backend(cursor.connection)

    sa.event.listen(c.engine, "before_cursor_execute", before_execute)
    with pytest.raises(FirnError, match=r"create table 'db\.t' failed"):
        c.create_table("db.t", simple_schema())
    assert killed and _files(tmp_path / "warehouse") == []
    assert not c.table_exists("db.t")
