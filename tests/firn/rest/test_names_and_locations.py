"""Issue 18 over HTTP, against a real ``firn serve``-style server (uvicorn, SQLite catalog):
names that are paths (finding 1, 8), another table's metadata registered again (finding 4),
a commit naming a statistics file outside the table (finding 5), and table locations outside
the warehouse (finding 6) are all refused with a 4xx, and nothing is written where they point.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.rest import RestServer, running_server

SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
}
VIEW_VERSION_JSON = {
    "version-id": 1,
    "timestamp-ms": 1,
    "schema-id": 0,
    "summary": {"engine-name": "test"},
    "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
    "default-namespace": ["db"],
}
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})

# Finding 1 and 8: each once put a table somewhere else than <warehouse>/db/<name>, or crashed.
BAD_NAMES = [
    "..",
    ".",
    "../../../elsewhere/escape",
    "a/b",
    "a\\b",
    "%2e%2e",
    "",
    "t\x00",
    "\ud800",
    "x" * 256,
]


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path, name="served")
    c.create_namespace("db")
    c.create_table("db.t", ROWS.schema, properties={"format-version": "2"})
    c.create_view("db.v", ROWS.schema, "SELECT 1")  # type: ignore[attr-defined]
    yield c
    c.close()


@pytest.fixture
def server(catalog: SqlCatalog) -> Iterator[RestServer]:
    with running_server(catalog) as running:
        yield running


def _post(server: RestServer, path: str, body: Any) -> httpx.Response:
    # json.dumps escapes a lone surrogate as "\ud800": valid JSON, as a client would send it.
    content = json.dumps(body).encode()
    return httpx.post(f"{server.url}{path}", content=content, headers={"Content-Type": "application/json"})


def _error(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status
    return str(error["message"])


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def _requests_naming(name: str) -> list[tuple[str, Any]]:
    """Every route whose body names a table, view or namespace, with ``name`` in that place."""
    table_src = {"namespace": ["db"], "name": "t"}
    view_src = {"namespace": ["db"], "name": "v"}
    return [
        ("/v1/namespaces", {"namespace": [name], "properties": {}}),
        ("/v1/namespaces", {"namespace": ["db", name], "properties": {}}),
        ("/v1/namespaces/db/tables", {"name": name, "schema": SCHEMA_JSON}),
        ("/v1/namespaces/db/tables", {"name": name, "schema": SCHEMA_JSON, "stage-create": True}),
        ("/v1/namespaces/db/register", {"name": name, "metadata-location": "/nowhere/x.metadata.json"}),
        ("/v1/tables/rename", {"source": table_src, "destination": {"namespace": ["db"], "name": name}}),
        ("/v1/tables/rename", {"source": table_src, "destination": {"namespace": [name], "name": "t"}}),
        (
            "/v1/namespaces/db/views",
            {"name": name, "schema": SCHEMA_JSON, "view-version": VIEW_VERSION_JSON, "properties": {}},
        ),
        ("/v1/namespaces/db/register-view", {"name": name, "metadata-location": "/nowhere/x.metadata.json"}),
        ("/v1/views/rename", {"source": view_src, "destination": {"namespace": ["db"], "name": name}}),
    ]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_names_that_are_paths_are_400s_on_every_route(
    server: RestServer, catalog: SqlCatalog, tmp_path: Path, name: str
) -> None:
    before = _files(tmp_path)
    for path, body in _requests_naming(name):
        message = _error(_post(server, path, body))
        assert "invalid" in message, (path, message)
    # Nothing was created, renamed or written, inside the warehouse or out of it.
    assert _files(tmp_path) - before == set()
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_tables("db") == [("db", "t")]
    assert catalog.list_views("db") == [("db", "v")]  # type: ignore[attr-defined]
    assert not (tmp_path / "elsewhere").exists()


def test_names_in_the_path_are_4xx_and_never_500(server: RestServer) -> None:
    """Names arrive percent-encoded in the path too: a lone surrogate's UTF-8 form, '..', a
    separator. None reaches the catalog as a path; none is a 500."""
    for segment in ("%2E%2E", "%2E", "a%2Fb", "%ED%A0%80", "a%5Cb", "t%00"):
        for route in ("tables", "views"):
            for method in ("GET", "HEAD", "DELETE"):
                response = httpx.request(method, f"{server.url}/v1/namespaces/db/{route}/{segment}")
                assert 400 <= response.status_code < 500, (method, route, segment, response.text)
        response = httpx.get(f"{server.url}/v1/namespaces/{segment}")
        assert 400 <= response.status_code < 500, (segment, response.text)


def test_a_lone_surrogate_in_a_namespace_property_is_a_400(server: RestServer, catalog: SqlCatalog) -> None:
    """Finding 8's surrogate, one step further: no database can store it, so it is refused."""
    for key, value in (("k\ud800", "v"), ("k", "\udfff")):
        message = _error(_post(server, "/v1/namespaces", {"namespace": ["n"], "properties": {key: value}}))
        assert "lone surrogate" in message
        body = {"removals": [], "updates": {key: value}}
        assert "lone surrogate" in _error(_post(server, "/v1/namespaces/db/properties", body))
    assert catalog.list_namespaces() == [("db",)]


def test_the_rest_client_refuses_the_same_names_before_sending(server: RestServer) -> None:
    client = server.client()
    try:
        for name in BAD_NAMES:
            with pytest.raises(ValidationError, match="invalid identifier"):
                client.create_table(("db", name), ROWS.schema)
            with pytest.raises(ValidationError, match="invalid identifier"):
                client.create_namespace((name,))
            with pytest.raises(ValidationError, match="invalid identifier"):
                client.rename_table("db.t", ("db", name))
            with pytest.raises(ValidationError, match="invalid identifier"):
                client.create_view(("db", name), ROWS.schema, "SELECT 1")
        assert client.list_tables("db") == [("db", "t")]
    finally:
        client.close()


def test_good_names_still_work(server: RestServer, catalog: SqlCatalog) -> None:
    """Dots inside a table name, spaces, non-ASCII letters, 255 bytes: a name, not a path."""
    for name in ("my.table", "with space", "é日本", "x" * 255, "..x", "x.."):
        response = _post(server, "/v1/namespaces/db/tables", {"name": name, "schema": SCHEMA_JSON})
        assert response.status_code == 200, response.text
        location = response.json()["metadata"]["location"]
        assert location == f"{catalog.warehouse}/db/{name}"


def test_registering_another_tables_metadata_is_refused(
    server: RestServer, catalog: SqlCatalog, tmp_path: Path
) -> None:
    """Finding 4: the copy would share the victim's files; dropping it with purge deleted them."""
    victim = catalog.load_table("db.t")
    victim.append(ROWS)
    victim = catalog.load_table("db.t")
    before = _files(tmp_path / "warehouse")
    message = _error(
        _post(
            server,
            "/v1/namespaces/db/register",
            {"name": "copy", "metadata-location": victim.metadata_location},
        )
    )
    assert "of table 'db.copy' is the location" in message and "of table 'db.t'" in message
    assert catalog.list_tables("db") == [("db", "t")]
    # Had it been registered, this purge would have removed the victim's files.
    assert httpx.delete(f"{server.url}/v1/namespaces/db/tables/copy?purgeRequested=true").status_code == 404
    assert _files(tmp_path / "warehouse") == before
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 3
    # Registering it again after a drop (files kept) is how a table moves between catalogs.
    catalog.drop_table("db.t")
    response = _post(
        server, "/v1/namespaces/db/register", {"name": "back", "metadata-location": victim.metadata_location}
    )
    assert response.status_code == 200, response.text
    assert catalog.load_table("db.back").scan().to_arrow().num_rows == 3


def _set_statistics(snapshot_id: int, path: str) -> dict[str, Any]:
    return {
        "requirements": [],
        "updates": [
            {
                "action": "set-statistics",
                "snapshot-id": snapshot_id,
                "statistics": {
                    "snapshot-id": snapshot_id,
                    "statistics-path": path,
                    "file-size-in-bytes": 1,
                    "file-footer-size-in-bytes": 1,
                    "blob-metadata": [],
                },
            }
        ],
    }


def test_a_statistics_file_outside_the_table_is_refused(
    server: RestServer, catalog: SqlCatalog, tmp_path: Path
) -> None:
    """Finding 5: a commit could reference any file as statistics; expiring the snapshot then
    deleted it. Now the file must lie in the table's own places."""
    table = catalog.load_table("db.t")
    table.append(ROWS)
    table.append(ROWS)
    table = catalog.load_table("db.t")
    first = table.metadata.snapshots[0].snapshot_id
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    sibling = catalog.create_table("db.t2", ROWS.schema)  # adjacent: t2 is not inside t
    for path in (str(outside), f"file://{outside}", f"{sibling.location}/metadata/x.stats", "/etc/passwd"):
        message = _error(_post(server, "/v1/namespaces/db/tables/t", _set_statistics(first, path)))
        assert "lies outside the table's own places" in message, message
    assert catalog.load_table("db.t").metadata.statistics == ()
    # Inside the table: accepted (so the refusals above are about the place, not the update).
    inside = f"{table.location}/metadata/{first}.stats"
    response = _post(server, "/v1/namespaces/db/tables/t", _set_statistics(first, inside))
    assert response.status_code == 200, response.text
    assert [s.statistics_path for s in catalog.load_table("db.t").metadata.statistics] == [inside]
    # Expiring the snapshot touches nothing outside.
    catalog.load_table("db.t").maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert len(catalog.load_table("db.t").metadata.snapshots) == 1
    assert outside.read_text() == "keep me"


def test_table_locations_outside_the_warehouse_are_4xx(
    server: RestServer, catalog: SqlCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 6. ``/srv/other`` and ``file:///...`` of the finding stand here as places under
    ``tmp_path`` outside the warehouse (so a regression writes nowhere else); ``../../relx``
    is resolved from a working directory inside ``tmp_path`` for the same reason."""
    cwd = tmp_path / "cwd" / "a" / "b"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    before = _files(tmp_path)
    cases = {
        "absolute": f"{tmp_path}/srv/other/t",
        "file-uri": f"file://{tmp_path}/srv/other/t",
        "relative": "../../relx",
        "proc": "/proc/self/cwd/t",
        "climbing": f"{catalog.warehouse}/db/../../escape",
        "warehouse-itself": str(catalog.warehouse),
        "inside-a-table": f"{catalog.load_table('db.t').location}/nested",
        "a-tables-own": catalog.load_table("db.t").location,
        "around-a-table": f"{catalog.warehouse}/db",
    }
    for case, location in cases.items():
        for route, body in (
            ("tables", {"name": "x", "schema": SCHEMA_JSON, "location": location}),
            ("tables", {"name": "x", "schema": SCHEMA_JSON, "location": location, "stage-create": True}),
            (
                "views",
                {
                    "name": "x",
                    "schema": SCHEMA_JSON,
                    "view-version": VIEW_VERSION_JSON,
                    "properties": {},
                    "location": location,
                },
            ),
        ):
            response = _post(server, f"/v1/namespaces/db/{route}", body)
            assert 400 <= response.status_code < 500, (case, route, response.text)
    assert _files(tmp_path) - before == set()
    assert not (tmp_path / "srv").exists() and not (tmp_path / "cwd" / "relx").exists()
    assert catalog.list_tables("db") == [("db", "t")]
    # Inside the warehouse, apart from every other table: 200.
    response = _post(
        server,
        "/v1/namespaces/db/tables",
        {"name": "x", "schema": SCHEMA_JSON, "location": f"{catalog.warehouse}/elsewhere/x"},
    )
    assert response.status_code == 200, response.text


def test_location_updates_over_http_are_confined(
    server: RestServer, catalog: SqlCatalog, tmp_path: Path
) -> None:
    """``set-location`` and the write-path properties, in table and view commits and in a
    create transaction, are held to the same rules."""
    t2 = catalog.create_table("db.t2", ROWS.schema)
    outside = f"{tmp_path}/outside"
    for update in (
        {"action": "set-location", "location": outside},
        {"action": "set-location", "location": t2.location},
        {"action": "set-properties", "updates": {"write.data.path": outside}},
        {"action": "set-properties", "updates": {"write.metadata.path": f"{t2.location}/metadata"}},
        {"action": "set-properties", "updates": {"write.data.path": "relative/data"}},
    ):
        body = {"requirements": [], "updates": [update]}
        response = _post(server, "/v1/namespaces/db/tables/t", body)
        assert 400 <= response.status_code < 500, (update, response.text)
    for update in (
        {"action": "set-location", "location": outside},
        {"action": "set-properties", "updates": {"write.metadata.path": f"{t2.location}/meta"}},
    ):
        response = _post(server, "/v1/namespaces/db/views/v", {"requirements": [], "updates": [update]})
        assert 400 <= response.status_code < 500, (update, response.text)
    create = {
        "requirements": [{"type": "assert-create"}],
        "updates": [
            {"action": "assign-uuid", "uuid": "00000000-0000-4000-8000-000000000009"},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": SCHEMA_JSON, "last-column-id": 1},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "set-location", "location": outside},
        ],
    }
    response = _post(server, "/v1/namespaces/db/tables/new", create)
    assert 400 <= response.status_code < 500, response.text
    assert not Path(outside).exists()
    assert catalog.list_tables("db") == [("db", "t"), ("db", "t2")]


def test_a_server_with_allowed_locations_accepts_them(tmp_path: Path) -> None:
    """``allowed-locations`` widens the places, for an operator who keeps tables elsewhere."""
    shared = tmp_path / "shared"
    c = make_sqlite_catalog(tmp_path, name="served", **{"allowed-locations": f"{shared}, s3://bucket/tables"})
    c.create_namespace("db")
    try:
        with running_server(c) as server:
            ok = _post(
                server,
                "/v1/namespaces/db/tables",
                {"name": "x", "schema": SCHEMA_JSON, "location": f"{shared}/x"},
            )
            assert ok.status_code == 200, ok.text
            refused = _post(
                server,
                "/v1/namespaces/db/tables",
                {"name": "y", "schema": SCHEMA_JSON, "location": f"{tmp_path}/sharedx/y"},
            )
            assert "allowed-locations" in _error(refused)
            client = RestCatalog("rest", server.url)
            try:
                assert client.load_table("db.x").location == f"{shared}/x"
            finally:
                client.close()
    finally:
        c.close()
