"""SQL-specific view commits: a locked database, a COMMIT lost in flight, column limits."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from firn.catalog.sql import SqlCatalog
from firn.errors import CommitConflict, CommitStateUnknown, FirnError, ValidationError
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField
from firn.spec.view_properties import COMMIT_MIN_RETRY_WAIT_MS, COMMIT_NUM_RETRIES
from tests.fixtures.catalogs import make_sqlite_catalog

SCHEMA = Schema(NestedField(1, "id", LongType()))


@pytest.fixture
def cat(tmp_path: Path) -> Any:
    catalog = make_sqlite_catalog(tmp_path, **{"sqlite.busy-timeout-ms": "100"})
    catalog.create_namespace("db")
    yield catalog
    catalog.close()


def _fail_next_commit(monkeypatch: pytest.MonkeyPatch, catalog: SqlCatalog, *, after_commit: bool) -> None:
    """The next COMMIT raises as if the connection dropped, before or after it took effect."""
    dialect = catalog.engine.dialect
    real = dialect.do_commit

    def do_commit(dbapi_connection: Any) -> None:
        monkeypatch.setattr(dialect, "do_commit", real)
        if after_commit:
            real(dbapi_connection)
        raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(dialect, "do_commit", do_commit)


def test_locked_database_is_a_retryable_conflict(cat: SqlCatalog, tmp_path: Path) -> None:
    view = cat.create_view("db.v", SCHEMA, "SELECT 1", properties={COMMIT_NUM_RETRIES: "0"})
    blocker = sqlite3.connect(tmp_path / "catalog.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(CommitConflict, match="nothing changed, retrying is safe"):
            cat.replace_view("db.v", SCHEMA, "SELECT 2")
        assert cat.load_view("db.v").metadata_location == view.metadata_location
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    # Only the file of the first version is left: the failed attempt's file was deleted.
    assert len(list(cat.io.list_prefix(f"{view.location}/metadata"))) == 1
    cat.update_view_properties("db.v", {COMMIT_NUM_RETRIES: "3", COMMIT_MIN_RETRY_WAIT_MS: "1"})
    assert cat.replace_view("db.v", SCHEMA, "SELECT 2").sql_for("spark") == "SELECT 2"


def test_lost_commit_acknowledgement_is_resolved(cat: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 1")
    _fail_next_commit(monkeypatch, cat, after_commit=True)
    view = cat.replace_view("db.v", SCHEMA, "SELECT 2")  # the re-read shows it applied
    assert cat.load_view("db.v").metadata_location == view.metadata_location


def test_failed_commit_is_state_unknown_and_keeps_the_file(
    cat: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = cat.create_view("db.v", SCHEMA, "SELECT 1")
    _fail_next_commit(monkeypatch, cat, after_commit=False)
    with pytest.raises(CommitStateUnknown, match="may or may not have been applied"):
        cat.replace_view("db.v", SCHEMA, "SELECT 2")
    assert cat.load_view("db.v").metadata_location == view.metadata_location
    # The new file may be referenced for all the writer knows, so it stays.
    assert len(list(cat.io.list_prefix(f"{view.location}/metadata"))) == 2


def test_errors_before_commit_are_not_applied(cat: SqlCatalog) -> None:
    locked = OperationalError("UPDATE", {}, sqlite3.OperationalError("database is locked"))
    broken = OperationalError("UPDATE", {}, sqlite3.OperationalError("disk I/O error"))
    assert isinstance(cat._view_not_applied("db.v", "update", locked), CommitConflict)
    assert type(cat._view_not_applied("db.v", "update", broken)) is FirnError


def test_length_limits(cat: SqlCatalog, tmp_path: Path) -> None:
    # The identifier rule (firn.catalog.identifiers) refuses it before the column limit would.
    with pytest.raises(ValidationError, match="is 256 bytes long in UTF-8; the limit is 255"):
        cat.create_view("db." + "v" * 256, SCHEMA, "SELECT 1")
    assert cat.list_views("db") == []
    assert not (tmp_path / "warehouse").exists()  # refused before any file was written
    cat.create_view("db.v", SCHEMA, "SELECT 1")
    with pytest.raises(ValidationError, match="the limit is 255"):
        cat.rename_view("db.v", "db." + "w" * 256)
    assert cat.list_views("db") == [("db", "v")]
