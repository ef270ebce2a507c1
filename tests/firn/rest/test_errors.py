"""Bad requests get the spec's error model with a 4xx, never a 500: malformed JSON, unknown
fields, wrong types and invalid Iceberg objects, over every route that takes a body, plus
bad query parameters and unknown routes. Unexpected server failures are 500s in the model."""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import sqlalchemy as sa

from firn.catalog.sql import SqlCatalog
from firn.errors import CommitStateUnknown, FirnError, NotAuthorized, ValidationError
from firn.rest.errors import status_for
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rest import RestServer, running_server

SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
}
VERSION_JSON = {
    "version-id": 1,
    "timestamp-ms": 1,
    "schema-id": 0,
    "summary": {"engine-name": "test"},
    "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
    "default-namespace": ["db"],
}

# Every route with a body, and one valid body for each (the cases below break it).
BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "create-namespace": ("/v1/namespaces", {"namespace": ["new"], "properties": {}}),
    "update-properties": ("/v1/namespaces/db/properties", {"removals": [], "updates": {"k": "v"}}),
    "create-table": ("/v1/namespaces/db/tables", {"name": "new", "schema": SCHEMA_JSON}),
    "register-table": ("/v1/namespaces/db/register", {"name": "new", "metadata-location": "/nowhere"}),
    "commit-table": ("/v1/namespaces/db/tables/t", {"requirements": [], "updates": []}),
    "rename-table": (
        "/v1/tables/rename",
        {"source": {"namespace": ["db"], "name": "t"}, "destination": {"namespace": ["db"], "name": "t"}},
    ),
    "metrics": ("/v1/namespaces/db/tables/t/metrics", {"report-type": "scan-report"}),
    "create-view": (
        "/v1/namespaces/db/views",
        {"name": "new", "schema": SCHEMA_JSON, "view-version": VERSION_JSON, "properties": {}},
    ),
    "commit-view": ("/v1/namespaces/db/views/v", {"requirements": [], "updates": []}),
    "register-view": ("/v1/namespaces/db/register-view", {"name": "new", "metadata-location": "/nowhere"}),
    "rename-view": (
        "/v1/views/rename",
        {"source": {"namespace": ["db"], "name": "v"}, "destination": {"namespace": ["db"], "name": "v"}},
    ),
}


# A place the operator allows (the catalog property) but the OS refuses to write: sysfs
# answers EPERM, even for root.
UNWRITABLE = "/sys/firn-test"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    catalog = make_sqlite_catalog(tmp_path_factory.mktemp("rest-errors"), **{"allowed-locations": UNWRITABLE})
    catalog.create_namespace("db")
    # A regular file inside the warehouse, for a location that runs through it.
    assert catalog.warehouse is not None
    Path(catalog.warehouse).mkdir(parents=True)
    Path(catalog.warehouse, "plain-file").write_bytes(b"x")
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]), properties={"format-version": "2"})
    catalog.create_view("db.v", pa.schema([("id", pa.int64())]), "SELECT 1")
    with running_server(catalog) as running:
        yield running
    catalog.close()


def _check_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "code"}
    assert error["code"] == status and isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and error["type"]
    return dict(error)


def _post(server: RestServer, path: str, content: bytes) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", content=content, headers={"Content-Type": "application/json"})


def _mutations(body: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    yield "malformed-json", json.dumps(body).encode()[:-1]
    yield "not-json", b"<xml/>"
    yield "empty-body", b""
    yield "array-body", b"[]"
    yield "unknown-field", json.dumps({**body, "unexpected": 1}).encode()
    for key, value in body.items():
        wrong: Any = 12345 if not isinstance(value, int) or isinstance(value, bool) else "12345"
        yield f"wrong-type-{key}", json.dumps({**body, key: wrong}).encode()
        if key not in ("properties", "removals", "updates", "requirements"):
            yield f"missing-{key}", json.dumps({k: v for k, v in body.items() if k != key}).encode()


CASES = [(route, name, content) for route, (_, body) in BODIES.items() for name, content in _mutations(body)]


@pytest.mark.parametrize(("route", "case", "content"), CASES, ids=[f"{r}-{c}" for r, c, _ in CASES])
def test_broken_bodies_are_400s(server: RestServer, route: str, case: str, content: bytes) -> None:
    error = _check_error(_post(server, BODIES[route][0], content), 400)
    assert error["type"] in ("BadRequestException", "ValidationException")


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/v1/namespaces/db/tables/t",
            {"requirements": [], "updates": [{"action": "nope"}]},
            "unsupported table update",
        ),
        (
            "/v1/namespaces/db/tables/t",
            {"requirements": [], "updates": [{"action": "set-location", "location": "x", "y": 1}]},
            "unknown field",
        ),
        (
            "/v1/namespaces/db/tables/t",
            {"requirements": [{"type": "assert-everything"}], "updates": []},
            "unknown table requirement type",
        ),
        (
            "/v1/namespaces/db/tables/t",
            {"requirements": [], "updates": [{"action": "add-snapshot", "snapshot": {"snapshot-id": "x"}}]},
            "'snapshot' is invalid",
        ),
        (
            "/v1/namespaces/db/tables/t",
            {
                "requirements": [],
                "updates": [
                    {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 9, "type": "branch"}
                ],
            },
            "unknown snapshot 9",
        ),
        (
            "/v1/namespaces/db/tables/t",
            {"identifier": {"namespace": ["db"], "name": "other"}, "requirements": [], "updates": []},
            "the path names 'db.t'",
        ),
        (
            "/v1/namespaces/db/tables",
            {"name": "x", "schema": {"type": "struct", "fields": [{"id": 1}]}},
            "invalid schema",
        ),
        (
            "/v1/namespaces/db/tables",
            {
                "name": "x",
                "schema": SCHEMA_JSON,
                "partition-spec": {"fields": [{"source-id": 1, "transform": "nope", "name": "p"}]},
            },
            "partition-spec",
        ),
        (
            "/v1/namespaces/db/views/v",
            {"updates": [{"action": "add-snapshot", "snapshot": {}}]},
            "unknown view update",
        ),
        (
            "/v1/namespaces/db/views/v",
            {"requirements": [{"type": "assert-table-uuid", "uuid": "x"}], "updates": []},
            "unknown view requirement",
        ),
        (
            "/v1/namespaces/db/views",
            {
                "name": "x",
                "schema": SCHEMA_JSON,
                "view-version": {**VERSION_JSON, "representations": []},
                "properties": {},
            },
            "at least one SQL representation",
        ),
        (
            "/v1/namespaces/db/tables/t/metrics",
            {"report-type": "weather-report"},
            "report-type must be one of",
        ),
        ("/v1/namespaces", {"namespace": []}, "invalid namespace"),
    ],
)
def test_invalid_iceberg_objects_are_400s(
    server: RestServer, path: str, body: dict[str, Any], message: str
) -> None:
    error = _check_error(_post(server, path, json.dumps(body).encode()), 400)
    assert message in error["message"]


def _nested_schema(depth: int) -> str:
    schema = '"long"'
    for i in range(depth):
        schema = (
            f'{{"type":"struct","fields":[{{"id":{i + 1},"name":"f{i}","required":false,"type":{schema}}}]}}'
        )
    return schema


# Requests the fuzz pass (test_fuzz.py) once answered with a 500.
FOUND_BY_FUZZING = [
    (
        "infinity",
        "/v1/namespaces/db/tables",
        b'{"name": "x", "schema": {"type": "struct", "schema-id": Infinity, "fields": []}}',
        "malformed JSON: Infinity is not a JSON number at position 56",
    ),
    (
        "nan",
        "/v1/namespaces/db/tables/t",
        b'{"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": NaN}]}',
        "malformed JSON: NaN is not a JSON number",
    ),
    (
        "minus-infinity",
        "/v1/namespaces/db/views/v",
        b'{"updates": [{"action": "set-current-view-version", "view-version-id": -Infinity}]}',
        "malformed JSON: -Infinity is not a JSON number",
    ),
    (
        "too-deep",
        "/v1/namespaces/db/tables",
        f'{{"name": "deep", "schema": {_nested_schema(2000)}}}'.encode(),
        "malformed JSON: it is nested too deeply",
    ),
    (
        "too-many-digits",
        "/v1/namespaces",
        b'{"namespace": ["n"], "properties": {"k": ' + b"9" * 5000 + b"}}",
        "malformed JSON: Exceeds the limit (4300 digits)",
    ),
    (
        "name-too-long-for-a-file",
        "/v1/namespaces/db/tables",
        json.dumps({"name": "x" * 1000, "schema": SCHEMA_JSON}).encode(),
        # Refused by the identifier rule before a metadata file is written.
        "is 1000 bytes long in UTF-8; the limit is 255",
    ),
    # {warehouse} stands for the served catalog's warehouse: locations outside it are refused
    # before the file system is reached (test_confinement_over_http.py).
    (
        "location-too-long-for-a-file",
        "/v1/namespaces/db/register",
        json.dumps({"name": "r", "metadata-location": "{warehouse}/" + "y" * 1000}).encode(),
        "File name too long",
    ),
    (
        "view-location-too-long-for-a-file",
        "/v1/namespaces/db/register-view",
        json.dumps({"name": "r", "metadata-location": "{warehouse}/" + "y" * 1000}).encode(),
        "File name too long",
    ),
    (
        "location-through-a-file",
        "/v1/namespaces/db/tables",
        json.dumps({"name": "x", "location": "{warehouse}/plain-file/x", "schema": SCHEMA_JSON}).encode(),
        "Not a directory",
    ),
]


@pytest.mark.parametrize(
    ("path", "content", "message"),
    [case[1:] for case in FOUND_BY_FUZZING],
    ids=[case[0] for case in FOUND_BY_FUZZING],
)
def test_what_fuzzing_found_is_400s(server: RestServer, path: str, content: bytes, message: str) -> None:
    assert isinstance(server.catalog, SqlCatalog) and server.catalog.warehouse
    content = content.replace(b"{warehouse}", server.catalog.warehouse.encode())
    error = _check_error(_post(server, path, content), 400)
    assert message in error["message"]


def test_a_location_the_server_may_not_write_is_a_403(server: RestServer) -> None:
    body = {"name": "x", "location": f"{UNWRITABLE}/x", "schema": SCHEMA_JSON}
    error = _check_error(_post(server, "/v1/namespaces/db/tables", json.dumps(body).encode()), 403)
    assert error["type"] == "ForbiddenException" and "Operation not permitted" in error["message"]


def test_the_server_replays_the_view_rules(server: RestServer) -> None:
    """A client that skips the checks still cannot break the view spec's rules."""
    view = httpx.get(f"{server.url}/v1/namespaces/db/views/v").json()["metadata"]
    version = {
        **view["versions"][0],
        "version-id": 2,
        "representations": [{"type": "sql", "sql": "SELECT 2", "dialect": "trino"}],
    }
    body = {
        "updates": [
            {"action": "add-view-version", "view-version": version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ]
    }
    error = _check_error(_post(server, "/v1/namespaces/db/views/v", json.dumps(body).encode()), 400)
    assert "drop SQL dialect(s) ['spark']" in error["message"]
    stale = {
        "requirements": [{"type": "assert-view-uuid", "uuid": "not-this-view"}],
        "updates": body["updates"],
    }
    error = _check_error(_post(server, "/v1/namespaces/db/views/v", json.dumps(stale).encode()), 409)
    assert error["type"] == "CommitFailedException"


@pytest.mark.parametrize(
    ("method", "path", "status", "error_type"),
    [
        ("GET", "/v1/namespaces?pageSize=abc", 400, "BadRequestException"),
        ("GET", "/v1/namespaces?pageSize=0", 400, "BadRequestException"),
        ("GET", "/v1/namespaces/db/tables?pageToken=x&pageSize=2", 400, "BadRequestException"),
        ("GET", "/v1/namespaces/db/tables/t?snapshots=some", 400, "BadRequestException"),
        ("DELETE", "/v1/namespaces/db/tables/t?purgeRequested=maybe", 400, "BadRequestException"),
        ("GET", "/v1/namespaces/db%1F/tables", 400, "BadRequestException"),
        ("GET", "/v1/unknown/route", 404, "NotFoundException"),
        ("PUT", "/v1/namespaces", 405, "UnsupportedOperationException"),
        ("GET", "/v1/namespaces/nope", 404, "NoSuchNamespaceException"),
        ("GET", "/v1/namespaces/db/tables/nope", 404, "NoSuchTableException"),
        ("GET", "/v1/namespaces/db/views/nope", 404, "NoSuchViewException"),
        ("POST", "/v1/transactions/commit", 406, "UnsupportedOperationException"),
    ],
)
def test_query_and_route_errors(
    server: RestServer, method: str, path: str, status: int, error_type: str
) -> None:
    error = _check_error(httpx.request(method, f"{server.url}{path}"), status)
    assert error["type"] == error_type


def test_head_routes_answer_without_a_body(server: RestServer) -> None:
    assert httpx.head(f"{server.url}/v1/namespaces/db").status_code == 204
    assert httpx.head(f"{server.url}/v1/namespaces/nope").status_code == 404
    assert httpx.head(f"{server.url}/v1/namespaces/db/tables/t").status_code == 204
    assert httpx.head(f"{server.url}/v1/namespaces/db/views/v").status_code == 204
    assert httpx.head(f"{server.url}/v1/namespaces/db/views/t").status_code == 404  # a table, not a view


class _Broken(SqlCatalog):
    def load_table(self, identifier: Any) -> Any:
        raise RuntimeError("disk on fire")


def test_unexpected_failures_are_500s_in_the_error_model(tmp_path: Path) -> None:
    catalog = _Broken("broken", f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    with running_server(catalog) as server:
        error = _check_error(httpx.get(f"{server.url}/v1/namespaces/db/tables/t"), 500)
        assert error["type"] == "InternalServerError" and "disk on fire" in error["message"]
        commit = _post(server, "/v1/namespaces/db/tables/t", b'{"requirements": [], "updates": []}')
        error = _check_error(commit, 500)
        assert error["type"] == "CommitStateUnknownException"
    catalog.close()


def _raised(error: FirnError, cause: BaseException | None) -> FirnError:
    try:
        try:
            if cause is not None:
                raise cause
            raise error
        except FirnError:
            raise
        except BaseException as e:
            raise error from e
    except FirnError as raised:
        return raised


@pytest.mark.parametrize(
    ("error", "cause", "status"),
    [
        # A location the request named: a 4xx (issue 18: /proc/self/... answered 500).
        (FirnError("/proc/self/x: write failed"), FileNotFoundError(errno.ENOENT, "No such file"), 400),
        (FirnError("/x: write failed"), NotADirectoryError(errno.ENOTDIR, "Not a directory"), 400),
        (FirnError("/x: write failed"), PermissionError(errno.EACCES, "Permission denied"), 403),
        (FirnError("/x: write failed"), OSError(errno.EROFS, "Read-only file system"), 403),
        (FirnError("s3://b/k: read failed"), OSError("AWS Error NETWORK_CONNECTION"), 400),
        (FirnError("s3://b/k: read failed"), pa.ArrowInvalid("bad"), 400),
        (ValidationError("/dev/zero: cannot read it: it is a character device"), None, 400),
        (FirnError("anything Firn refuses on purpose"), None, 400),
        # What the server depends on, not the request.
        (FirnError("/x: write failed"), OSError(errno.ENOSPC, "No space left on device"), 507),
        (
            FirnError("catalog 'c': insert failed"),
            sa.exc.OperationalError("INSERT", {}, Exception("locked")),
            503,
        ),
        (
            FirnError("cannot reach the REST catalog"),
            ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
            503,
        ),
        (NotAuthorized("the upstream catalog refused the credentials"), None, 403),
        # The spec's updateTable: the client must not assume the commit failed.
        (CommitStateUnknown("the database connection dropped during the commit"), None, 500),
    ],
)
def test_every_firn_error_has_a_status(error: FirnError, cause: BaseException | None, status: int) -> None:
    assert status_for(_raised(error, cause))[0] == status
