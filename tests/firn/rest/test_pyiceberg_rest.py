"""PyIceberg 0.12's ``RestCatalog`` against Firn's REST server (a real SQLite catalog behind it):
tables created, written and read by either engine with identical results, commit conflicts
between writers, create transactions, views, and OAuth2.

PyIceberg 0.12 speaks these view routes: create, load, list, exists, drop and register. It
has no replace, rename or commit for views over REST, so those are exercised with Firn's
client (tests/firn/catalog/test_rest_views.py)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.types import StringType as PyStringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from tests.fixtures.rest import RestServer, running_server

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=True), pa.field("name", pa.string(), nullable=True)])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def _sorted(table: pa.Table) -> dict[str, list[object]]:
    return table.sort_by("id").select(["id", "name"]).to_pydict()


@pytest.fixture
def server(served_sqlite_catalog: SqlCatalog) -> Iterator[RestServer]:
    # The server as ``firn serve`` runs it, with no table defaults set: tables created over
    # REST without a format-version are V2, which PyIceberg reads (it does not read V4).
    with running_server(served_sqlite_catalog) as running:
        yield running


@pytest.fixture
def py(server: RestServer) -> Iterator[PyRestCatalog]:
    catalog = PyRestCatalog("py", uri=server.url)
    yield catalog
    catalog.close()


@pytest.fixture
def fc(server: RestServer) -> Iterator[RestCatalog]:
    catalog = server.client()
    yield catalog
    catalog.close()


def test_pyiceberg_creates_and_appends_and_both_read_the_same(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace("db", {"owner": "py"})
    assert fc.load_namespace_properties("db") == {"owner": "py"}
    table = py.create_table("db.t", SCHEMA)
    assert table.metadata.format_version == 2  # the server's table default
    table.append(_rows([1, 2, 3]))
    table.append(_rows([4]))
    firn_table = fc.load_table("db.t")
    assert firn_table.metadata_location == py.load_table("db.t").metadata_location
    assert _sorted(firn_table.scan().to_arrow()) == _sorted(py.load_table("db.t").scan().to_arrow())
    assert len(firn_table.snapshots()) == 2
    assert py.list_tables("db") == [("db", "t")] and py.table_exists("db.t") and not py.table_exists("db.x")
    with pytest.raises(TableAlreadyExistsError):
        py.create_table("db.t", SCHEMA)
    with pytest.raises(NoSuchTableError):
        py.load_table("db.nope")


def test_a_table_pyiceberg_creates_without_a_format_version_is_one_it_reads(
    py: PyRestCatalog, server: RestServer
) -> None:
    # Issue 18: the server made V4 tables and PyIceberg failed on its own create_table
    # ("Input tag '4' found using 'format_version' does not match any of the expected tags").
    py.create_namespace("db")
    table = py.create_table("db.t", schema=SCHEMA)
    assert table.metadata.format_version == 2
    table.append(_rows([3, 1, 2]))
    assert _sorted(py.load_table("db.t").scan().to_arrow()) == _sorted(_rows([1, 2, 3]))
    # The served catalog's own view of it: the same V2 table.
    assert server.catalog.load_table("db.t").format_version == 2


def test_firn_writes_and_pyiceberg_reads(py: PyRestCatalog, fc: RestCatalog) -> None:
    fc.create_namespace("db")
    t = fc.create_table("db.t", SCHEMA, properties={"write.delete.mode": "merge-on-read"})
    assert t.format_version == 2
    t.append(_rows(list(range(10))))
    t.delete("id >= 7")  # position delete files (v2 merge-on-read)
    t.overwrite(_rows([100]), filter="id = 0")
    expected = _sorted(t.scan().to_arrow())
    assert expected["id"] == [1, 2, 3, 4, 5, 6, 100]
    assert _sorted(py.load_table("db.t").scan().to_arrow()) == expected
    # And PyIceberg's own commits on top are read by Firn.
    py.load_table("db.t").append(_rows([200]))
    assert _sorted(t.refresh().scan().to_arrow())["id"] == [1, 2, 3, 4, 5, 6, 100, 200]


def test_two_pyiceberg_writers_race(py: PyRestCatalog, server: RestServer) -> None:
    py.create_namespace("db")
    py.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "10"})
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        catalog = PyRestCatalog(f"w{offset}", uri=server.url)
        try:
            table = catalog.load_table("db.t")
            for i in range(4):
                table.append(_rows([offset + i]))
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            catalog.close()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=writer, args=(base,)) for base in (0, 100)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    # PyIceberg 0.12 retries an append after a 409 (refresh, rebuild the snapshot): all land.
    assert not errors, errors
    assert _sorted(py.load_table("db.t").scan().to_arrow())["id"] == [0, 1, 2, 3, 100, 101, 102, 103]


def test_a_conflicting_pyiceberg_schema_change_fails_cleanly(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace("db")
    py.create_table("db.t", SCHEMA)
    first, second = py.load_table("db.t"), py.load_table("db.t")
    with first.update_schema() as update:
        update.add_column("a", PyStringType())
    # PyIceberg retries only snapshot commits; the server's 409 (assert-current-schema-id)
    # surfaces as CommitFailedException and nothing of the loser is applied.
    with (
        pytest.raises(CommitFailedException, match="current schema changed"),
        second.update_schema() as update,
    ):
        update.add_column("b", PyStringType())
    assert [f.name for f in fc.load_table("db.t").schema().fields] == ["id", "name", "a"]


def test_firn_and_pyiceberg_writers_interleave(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace("db")
    py.create_table("db.t", SCHEMA)
    firn_table = fc.load_table("db.t")
    py.load_table("db.t").append(_rows([1]))
    with firn_table.transaction() as tx:  # stale: retried after the server's 409
        tx.append(_rows([2]))
        assert tx.commit().attempts == 2
    stale_py = py.load_table("db.t")
    firn_table.append(_rows([3]))
    stale_py.append(_rows([4]))  # PyIceberg's own retry
    assert _sorted(py.load_table("db.t").scan().to_arrow())["id"] == [1, 2, 3, 4]


def test_pyiceberg_create_transaction(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace("db")
    tx = py.create_table_transaction("db.staged", SCHEMA, properties={"owner": "py"})
    assert not fc.table_exists("db.staged")  # stage-create creates nothing yet
    tx.append(_rows([5, 6]))
    tx.commit_transaction()
    staged = fc.load_table("db.staged")
    assert staged.properties["owner"] == "py" and staged.format_version == 2
    assert _sorted(staged.scan().to_arrow())["id"] == [5, 6]
    assert _sorted(py.load_table("db.staged").scan().to_arrow())["id"] == [5, 6]
    again = py.create_table_transaction("db.staged2", SCHEMA)
    fc.create_table("db.staged2", SCHEMA)  # created meanwhile: assert-create fails
    with pytest.raises(CommitFailedException, match="already exists"):
        again.commit_transaction()


def test_pyiceberg_namespaces_rename_and_drop(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace(("a", "b"))
    py.create_namespace("db")
    assert py.list_namespaces() == [("a",), ("db",)] and py.list_namespaces("a") == [("a", "b")]
    py.update_namespace_properties("db", updates={"k": "v"})
    assert fc.load_namespace_properties("db") == {"k": "v"}
    table = py.create_table("db.t", SCHEMA)
    table.append(_rows([1]))
    py.rename_table("db.t", "db.u")
    assert fc.list_tables("db") == [("db", "u")]
    py.purge_table("db.u")
    assert not fc.table_exists("db.u")
    py.drop_namespace(("a", "b"))
    assert not fc.namespace_exists(("a", "b"))


def test_views_between_pyiceberg_and_firn(py: PyRestCatalog, fc: RestCatalog) -> None:
    py.create_namespace("db")
    version = ViewVersion(
        version_id=1,
        schema_id=0,
        timestamp_ms=1_700_000_000_000,
        summary={"engine-name": "pyiceberg"},
        representations=[SQLViewRepresentation(type="sql", sql="SELECT id FROM t", dialect="spark")],
        default_namespace=["db"],
    )
    py.create_view("db.pv", SCHEMA, version, properties={"comment": "from pyiceberg"})
    pv = fc.load_view("db.pv")
    assert pv.sql_for("spark") == "SELECT id FROM t" and pv.properties == {"comment": "from pyiceberg"}
    assert pv.current_version.summary["engine-name"] == "pyiceberg"
    assert [f.name for f in pv.schema().fields] == ["id", "name"]

    fv = fc.create_view("db.fv", SCHEMA, {"spark": "SELECT * FROM t", "trino": "SELECT * FROM t"})
    loaded = py.load_view("db.fv")
    assert str(loaded.metadata.view_uuid) == fv.uuid
    assert [r.root.dialect for r in loaded.metadata.versions[0].representations] == ["spark", "trino"]
    assert py.list_views("db") == [("db", "fv"), ("db", "pv")]
    assert py.view_exists("db.fv") and not py.view_exists("db.nope")

    location = fv.metadata_location
    py.drop_view("db.fv")
    assert not fc.view_exists("db.fv")
    py.register_view("db.fv2", location)
    assert fc.load_view("db.fv2").uuid == fv.uuid
    with pytest.raises(NoSuchViewError):
        py.load_view("db.fv")


def test_pyiceberg_with_oauth2_client_credentials(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(served_sqlite_catalog, oauth_clients={"py": "secret"}) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyIceberg warns that /v1/oauth/tokens is deprecated
            catalog = PyRestCatalog("py", uri=server.url, credential="py:secret")
            catalog.create_namespace("db")
            catalog.close()
        # (PyIceberg fetches one token for its configuration session and one for its catalog session.)
        assert server.state.auth.issued_count >= 1 and served_sqlite_catalog.namespace_exists("db")
        token_catalog = PyRestCatalog("py", uri=server.url, token=_issued(server))
        assert token_catalog.list_namespaces() == [("db",)]
        token_catalog.close()


def _issued(server: RestServer) -> str:
    return server.state.auth.issue()
