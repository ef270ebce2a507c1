"""Firn's REST client against Firn's REST server (uvicorn on 127.0.0.1, a real SQLite catalog
behind it): configuration, namespaces, tables and their writes, commits and their failure
modes, vended configuration, and ``firn.load_catalog`` with REST URIs."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

import firn
from firn.catalog.base import PropertiesUpdateSummary
from firn.catalog.rest import RestCatalog
from firn.catalog.rest.base import best_storage_credential
from firn.catalog.sql import SqlCatalog
from firn.core.handle import CommittedMetadata, TableCommit
from firn.errors import (
    AlreadyExists,
    CommitStateUnknown,
    FirnError,
    LeaseHeld,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    Unsupported,
    ValidationConflict,
    ValidationError,
)
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import StringType
from tests.fixtures.rest import RestServer, running_server

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())])


def _rows(ids: range | list[int], region: str = "eu") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "region": [region] * len(ids)}, schema=SCHEMA)


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


# -- loading and configuration ---------------------------------------------------------------
def test_load_catalog_takes_rest_uris(rest_server: RestServer) -> None:
    by_scheme = firn.load_catalog(rest_server.rest_uri)
    by_type = firn.load_catalog(rest_server.url, type="rest", name="named")
    try:
        assert isinstance(by_scheme, RestCatalog) and isinstance(by_type, RestCatalog)
        assert by_scheme.uri == rest_server.url and by_type.name == "named"
        by_scheme.create_namespace("db")
        assert by_type.list_namespaces() == [("db",)]
    finally:
        by_scheme.close()
        by_type.close()
    with pytest.raises(FirnError, match=r"cannot reach the REST catalog at https://127\.0\.0\.1:9"):
        firn.load_catalog("rest+https://127.0.0.1:9", **{"rest.client.connection-timeout-ms": "2000"})
    with pytest.raises(Unsupported, match="unsupported catalog type 'glue'"):
        firn.load_catalog("http://x", type="glue")
    with pytest.raises(ValidationError, match="must start with http"):
        RestCatalog("c", "ftp://host")


def test_a_uri_with_a_base_path(served_sqlite_catalog: SqlCatalog) -> None:
    """``rest+http://host:port/<base>``: the server behind a path (as Polaris serves
    ``/api/catalog``, or a reverse proxy does); every route, the OAuth2 token route included, is
    under ``<base>/v1/``, and the server's ``prefix`` follows the base."""
    with running_server(
        served_sqlite_catalog, base_path="/api/catalog", prefix="wh", oauth_clients={"etl": "s3cret"}
    ) as server:
        assert server.url.endswith("/api/catalog")
        catalog = firn.load_catalog(server.rest_uri, credential="etl:s3cret")
        try:
            assert isinstance(catalog, RestCatalog) and catalog.uri == server.url
            assert catalog.properties["prefix"] == "wh"
            catalog.create_namespace("db")
            t = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
            t.append(_rows([1, 2]))
            assert _ids(catalog.load_table("db.t")) == [1, 2]
            assert server.state.auth.issued_count == 1  # the token came from <base>/v1/oauth/tokens
        finally:
            catalog.close()
        root = server.url.removesuffix("/api/catalog")
        token = server.state.auth.issue()
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{server.url}/v1/wh/namespaces", headers=headers).json() == {"namespaces": [["db"]]}
        assert httpx.get(f"{root}/v1/wh/namespaces", headers=headers).status_code == 404
    assert _ids(served_sqlite_catalog.load_table("db.t")) == [1, 2]


def test_config_defaults_and_overrides_merge_with_client_properties(
    served_sqlite_catalog: SqlCatalog,
) -> None:
    with running_server(
        served_sqlite_catalog,
        prefix="wh1",
        defaults={"rest-page-size": "2", "owner": "server-default", "kept": "default"},
        overrides={"owner": "server-override"},
    ) as server:
        catalog = server.client(owner="client", kept="client")
        try:
            props = catalog.properties
            # defaults < client < overrides (spec getConfig); the prefix comes from the server.
            assert props["owner"] == "server-override" and props["kept"] == "client"
            assert props["rest-page-size"] == "2" and props["prefix"] == "wh1"
            for name in ("a", "b", "c", "d", "e"):
                catalog.create_namespace(name)
            assert catalog.list_namespaces() == [(n,) for n in "abcde"]  # paged by 2 under /v1/wh1/
        finally:
            catalog.close()
        # The routes live under the prefix only.
        assert httpx.get(f"{server.url}/v1/wh1/namespaces").status_code == 200
        assert httpx.get(f"{server.url}/v1/namespaces").status_code == 404


def test_pagination_follows_next_page_tokens(rest_server: RestServer) -> None:
    rest_server.catalog.create_namespace("db")
    for i in range(5):
        rest_server.catalog.create_table(f"db.t{i}", SCHEMA, properties={"format-version": "2"})
    first = httpx.get(
        f"{rest_server.url}/v1/namespaces/db/tables", params={"pageToken": "", "pageSize": 2}
    ).json()
    assert [i["name"] for i in first["identifiers"]] == ["t0", "t1"] and first["next-page-token"]
    unpaged = httpx.get(f"{rest_server.url}/v1/namespaces/db/tables", params={"pageSize": 2}).json()
    assert len(unpaged["identifiers"]) == 5 and "next-page-token" not in unpaged  # spec: no token, no paging
    paged = rest_server.client(**{"rest-page-size": "2"})
    try:
        assert paged.list_tables("db") == [("db", f"t{i}") for i in range(5)]
    finally:
        paged.close()


# -- namespaces --------------------------------------------------------------------------------
def test_namespaces(rest_catalog: RestCatalog) -> None:
    c = rest_catalog
    c.create_namespace("db", {"owner": "alice", "comment": "x"})
    c.create_namespace(("a", "b c%"))
    assert c.list_namespaces() == [("a",), ("db",)]
    assert c.list_namespaces("a") == [("a", "b c%")]
    assert c.namespace_exists(("a", "b c%")) and c.namespace_exists("a") and not c.namespace_exists("nope")
    assert c.load_namespace_properties("db") == {"owner": "alice", "comment": "x"}
    summary = c.update_namespace_properties("db", removals={"comment", "ghost"}, updates={"owner": "bob"})
    assert summary == PropertiesUpdateSummary(removed=("comment",), updated=("owner",), missing=("ghost",))
    assert c.load_namespace_properties("db") == {"owner": "bob"}
    with pytest.raises(ValidationError, match=r"both removed and updated.*HTTP 422"):
        c.update_namespace_properties("db", removals={"k"}, updates={"k": "v"})
    with pytest.raises(AlreadyExists, match=r"already exists.*HTTP 409"):
        c.create_namespace("db")
    with pytest.raises(NoSuchNamespace, match="HTTP 404, NoSuchNamespaceException"):
        c.load_namespace_properties("nope")
    with pytest.raises(NoSuchNamespace):
        c.list_namespaces("nope")
    with pytest.raises(ValidationError, match=r"may not contain '\.'"):
        c.create_namespace(("x.y",))  # the served SQL catalog refuses it: a 400
    c.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    with pytest.raises(NamespaceNotEmpty, match="not empty"):
        c.drop_namespace("db")
    c.drop_table("db.t")
    c.drop_namespace("db")
    assert not c.namespace_exists("db")
    with pytest.raises(NoSuchNamespace):
        c.drop_namespace("db")


# -- tables --------------------------------------------------------------------------------
def test_table_writes_and_reads_go_through_the_server(
    rest_server: RestServer, rest_catalog: RestCatalog
) -> None:
    rest_catalog.create_namespace("db")
    t = rest_catalog.create_table(
        "db.events", SCHEMA, partition_spec=[("region", "identity")], properties={"format-version": "2"}
    )
    assert t.format_version == 2 and t.spec().fields[0].name == "region"
    assert t.location == str(Path(rest_server.catalog.warehouse or "") / "db" / "events")  # type: ignore[attr-defined]
    first = t.append(_rows(range(10)))
    t.append(_rows(range(10, 15), "us"))
    t.delete("id < 3")
    t.overwrite(_rows([100]), filter=firn.col("id") == 14)
    expected = [*range(3, 14), 100]
    assert _ids(t) == expected
    assert t.scan(filter="region = 'us'").count() == 4  # 10..13; 14 was overwritten by 100 (eu)
    assert first is not None and _ids_at(t, first.snapshot_id) == list(range(10))

    # The served catalog holds exactly what the client committed.
    served = rest_server.catalog.load_table("db.events")
    assert served.metadata_location == t.metadata_location and _ids(served) == expected
    assert [s.snapshot_id for s in served.snapshots()] == [s.snapshot_id for s in t.snapshots()]

    # Schema evolution, properties, branches and tags, an upgrade: all plain commits.
    with t.update_schema() as update:
        update.add_column("note", StringType())
    t.set_properties({"owner": "me"})
    t.remove_properties("owner")
    with t.manage_snapshots() as refs:
        refs.create_tag("v1", first.snapshot_id)
        refs.create_branch("audit", first.snapshot_id)
    t.upgrade(format_version=3)
    fresh = rest_catalog.load_table("db.events")
    assert fresh.format_version == 3 and "note" in [f.name for f in fresh.schema().fields]
    assert set(fresh.refs()) == {"main", "v1", "audit"} and "owner" not in fresh.properties
    assert rest_server.catalog.load_table("db.events").metadata_location == fresh.metadata_location


def _ids_at(table: Any, snapshot_id: int) -> list[int]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_arrow().column("id").to_pylist())


def test_v4_tables_and_maintenance_over_rest(
    rest_server: RestServer, rest_catalog: RestCatalog, tmp_path: Path
) -> None:
    rest_catalog.create_namespace("db")
    # Over REST, V4 only when asked for: the server's default is V2 (other engines read it).
    assert rest_catalog.create_table("db.v2", SCHEMA).format_version == 2
    t = rest_catalog.create_table("db.v4", SCHEMA, format_version=4)
    assert t.format_version == 4
    t.append(_rows(range(5)))
    t.append(_rows(range(5, 8)))
    with pytest.raises(Unsupported, match=r"set the catalog property maintenance\.lease\.uri"):
        t.maintenance.flush_root(force=True).run()  # no lease store: refused, not unguarded
    leased = rest_server.client(**{"maintenance.lease.uri": f"sqlite:///{tmp_path / 'leases.db'}"})
    t = leased.load_table("db.v4")
    held, release = threading.Event(), threading.Event()

    def other_run() -> None:
        with leased.maintenance_lease("db.v4", "other-run"):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=other_run)
    holder.start()
    assert held.wait(30)
    with pytest.raises(LeaseHeld, match="other-run"):
        t.maintenance.flush_root(force=True).run()
    release.set()
    holder.join()
    result = t.maintenance.flush_root(force=True).run()
    assert result.snapshot_id is not None and result.snapshot_id == t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    leased.close()
    assert _ids(rest_catalog.load_table("db.v4")) == list(range(8))
    assert _ids(rest_server.catalog.load_table("db.v4")) == list(range(8))


def test_rename_register_and_drop(rest_server: RestServer, rest_catalog: RestCatalog) -> None:
    c = rest_catalog
    c.create_namespace("db")
    c.create_namespace("other")
    t = c.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    t.append(_rows(range(3)))
    moved = c.rename_table("db.t", "other.t2")
    assert moved.identifier == ("other", "t2") and _ids(moved) == [0, 1, 2]
    assert c.list_tables("db") == [] and c.table_exists("other.t2") and not c.table_exists("db.t")
    with pytest.raises(NoSuchTable):
        c.rename_table("db.t", "db.x")
    with pytest.raises(NoSuchNamespace):
        c.rename_table("other.t2", "missing.x")
    c.create_table("db.taken", SCHEMA, properties={"format-version": "2"})
    with pytest.raises(AlreadyExists):
        c.rename_table("other.t2", "db.taken")

    location = moved.metadata_location
    c.drop_table("other.t2")  # no purge: files stay, so the table can be registered again
    assert not c.table_exists("other.t2")
    registered = c.register_table("db.back", location)
    assert _ids(registered) == [0, 1, 2] and registered.metadata_location == location
    with pytest.raises(AlreadyExists):
        c.register_table("db.back", location)
    with pytest.raises(firn.errors.NotFound):
        c.register_table("db.ghost", location.replace(".metadata.json", "-missing.metadata.json"))

    data_files = [task.file.file_path for task in registered.scan().plan_files()]
    c.drop_table("db.back", purge=True)
    assert not any(Path(f).exists() for f in data_files) and not Path(location).exists()
    with pytest.raises(NoSuchTable, match="HTTP 404, NoSuchTableException"):
        c.drop_table("db.back")


def test_table_errors(rest_catalog: RestCatalog) -> None:
    c = rest_catalog
    with pytest.raises(NoSuchNamespace):
        c.create_table("missing.t", SCHEMA)
    with pytest.raises(NoSuchNamespace):
        c.list_tables("missing")
    c.create_namespace("db")
    c.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    with pytest.raises(AlreadyExists, match="HTTP 409"):
        c.create_table("db.t", SCHEMA)
    with pytest.raises(NoSuchTable, match=r"'db\.nope'"):
        c.load_table("db.nope")
    with pytest.raises(ValidationError, match="needs a namespace"):
        c.load_table("t")
    with pytest.raises(ValidationError, match="bucket"):  # validated before anything is sent
        c.create_table("db.bad", SCHEMA, partition_spec=[("region", "bucket[x]")])
    assert c.list_tables("db") == [("db", "t")]


# -- commits -------------------------------------------------------------------------------
def test_a_stale_table_object_retries_its_commit(rest_catalog: RestCatalog, rest_server: RestServer) -> None:
    rest_catalog.create_namespace("db")
    t = rest_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    stale = rest_catalog.load_table("db.t")
    other = rest_server.client()
    try:
        other.load_table("db.t").append(_rows([1]))  # moves main past the stale object's base
    finally:
        other.close()
    with stale.transaction() as tx:
        tx.append(_rows([2]))
        result = tx.commit()
    assert result.attempts == 2  # a 409 (assert-ref-snapshot-id), then a refresh and a retry
    assert _ids(t.refresh()) == [1, 2]


def test_two_writers_racing_both_land(rest_server: RestServer) -> None:
    setup = rest_server.client()
    setup.create_namespace("db")
    setup.create_table("db.t", SCHEMA, properties={"format-version": "2", "commit.retry.num-retries": "20"})
    setup.close()
    errors: list[BaseException] = []
    attempts: list[int] = []

    def writer(offset: int) -> None:
        catalog = rest_server.client()
        try:
            table = catalog.load_table("db.t")
            for i in range(6):
                with table.transaction() as tx:
                    tx.append(_rows([offset + i]))
                    attempts.append(tx.commit().attempts)
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            catalog.close()

    threads = [threading.Thread(target=writer, args=(base,)) for base in (0, 100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    final = rest_server.catalog.load_table("db.t")
    assert _ids(final) == [*range(6), *range(100, 106)]
    assert len(final.snapshots()) == 12 and len(attempts) == 12


def test_a_table_replaced_under_a_writer_is_a_validation_conflict(rest_catalog: RestCatalog) -> None:
    rest_catalog.create_namespace("db")
    t = rest_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    rest_catalog.drop_table("db.t")
    rest_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    # assert-table-uuid fails on the server (409); after the refresh the commit loop sees a
    # different table and gives up instead of writing into it.
    with pytest.raises(ValidationConflict, match="replaced concurrently"):
        t.append(_rows([1]))
    assert _ids(rest_catalog.load_table("db.t")) == []


class _FailingCommits(SqlCatalog):
    """A served catalog whose commits fail with an unexpected error, or hang until released."""

    fail = False
    hold: threading.Event | None = None  # when given, commits wait for it (the test releases them)
    landed: threading.Event | None = None  # when given, set once a commit has gone through

    def commit_table(self, identifier: Any, commit: TableCommit) -> CommittedMetadata:
        if self.hold is not None:
            assert self.hold.wait(120), "the test never released the held commit"
        if self.fail:
            raise RuntimeError("the metastore went away")
        committed = super().commit_table(identifier, commit)
        if self.landed is not None:
            self.landed.set()
        return committed


# The client's socket timeout: generous, as it bounds every request of the test on a loaded
# machine. The commit that must time out does not depend on it: the server holds it until the
# client has given up, however long that takes.
SOCKET_TIMEOUT_MS = 3000


def test_server_failures_on_commit_are_commit_state_unknown(tmp_path: Path) -> None:
    served = _FailingCommits("served", f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    served.create_namespace("db")
    served.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    with running_server(served) as server:
        catalog = server.client(**{"rest.client.socket-timeout-ms": str(SOCKET_TIMEOUT_MS)})
        try:
            table = catalog.load_table("db.t")
            served.fail = True
            with pytest.raises(
                CommitStateUnknown, match=r"HTTP 500, CommitStateUnknownException.*may or may not"
            ):
                table.append(_rows([1]))
            # The data file written for the attempt is kept: it may be referenced now.
            assert list((tmp_path / "wh" / "db" / "t" / "data").rglob("*.parquet"))
            served.fail, served.hold, served.landed = False, threading.Event(), threading.Event()
            table.refresh()
            started = time.monotonic()
            with pytest.raises(CommitStateUnknown, match="no answer came"):
                table.append(_rows([2]))
            assert time.monotonic() - started >= SOCKET_TIMEOUT_MS / 1000 * 0.9  # it waited, then gave up
            assert not served.landed.is_set()  # the client gave up before the commit went through
            served.hold.set()
            assert served.landed.wait(60)
        finally:
            catalog.close()
    # The held commit did land after the client stopped waiting: that is why it is "unknown".
    assert _ids(served.load_table("db.t")) == [2]
    served.close()


def test_vended_config_builds_the_table_fileio(served_sqlite_catalog: SqlCatalog) -> None:
    seen: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def vend(
        ident: tuple[str, ...], metadata: TableMetadata, mechanisms: tuple[str, ...]
    ) -> Mapping[str, str]:
        seen.append((ident, mechanisms))
        return {"s3.access-key-id": f"key-for-{ident[-1]}", "s3.secret-access-key": "secret"}

    served_sqlite_catalog.create_namespace("db")
    served_sqlite_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    with running_server(served_sqlite_catalog, table_config=vend) as server:
        default = server.client()
        custom = server.client(**{"header.X-Iceberg-Access-Delegation": "remote-signing"})
        none = server.client(**{"header.x-iceberg-access-delegation": ""})
        try:
            table = default.load_table("db.t")
            assert table.io.properties["s3.access-key-id"] == "key-for-t"  # type: ignore[attr-defined]
            assert "s3.access-key-id" not in default.io.properties  # type: ignore[attr-defined]
            table.append(_rows([1]))  # the vended FileIO writes (local files ignore S3 keys)
            custom.load_table("db.t")
            none.load_table("db.t")
        finally:
            for c in (default, custom, none):
                c.close()
    assert seen == [
        (("db", "t"), ("vended-credentials",)),
        (("db", "t"), ("remote-signing",)),
        (("db", "t"), ()),
    ]


def test_the_longest_storage_credential_prefix_wins() -> None:
    credentials = [
        {"prefix": "s3://bucket/", "config": {"s3.access-key-id": "bucket"}},
        {"prefix": "s3://bucket/wh/db/", "config": {"s3.access-key-id": "db"}},
        {"prefix": "s3://other/", "config": {"s3.access-key-id": "other"}},
    ]
    assert best_storage_credential(credentials, "s3://bucket/wh/db/t") == {"s3.access-key-id": "db"}
    assert best_storage_credential(credentials, "s3://bucket/x") == {"s3.access-key-id": "bucket"}
    assert best_storage_credential(credentials, "gs://x") == {}
    with pytest.raises(FirnError, match="needs a 'prefix'"):
        best_storage_credential([{"config": {}}], "s3://x")


def test_a_server_can_serve_a_rest_catalog(rest_server: RestServer) -> None:
    """Any Firn catalog can be served, a REST client included: two hops, one commit path."""
    upstream = rest_server.client()
    try:
        with running_server(upstream) as proxy:
            assert not proxy.state.serves_views  # a REST client has no pointer swap for views
            downstream = proxy.client()
            try:
                downstream.create_namespace("db")
                t = downstream.create_table("db.t", SCHEMA, properties={"format-version": "2"})
                t.append(_rows([1, 2]))
                with pytest.raises(Unsupported, match="does not offer GET /v1/\\{prefix\\}/namespaces"):
                    downstream.list_views("db")
            finally:
                downstream.close()
    finally:
        upstream.close()
    assert _ids(rest_server.catalog.load_table("db.t")) == [1, 2]
