"""How Firn's REST client maps a server's error answers to ``FirnError`` subclasses.

The server is Firn's, for real (uvicorn, a SQLite catalog), behind a small ASGI middleware that
answers chosen requests with a chosen status and body instead, as a failing or foreign server
(Polaris, a proxy, a gateway) would. Every status the spec lists for a route is mapped; the
server's message and error type reach the exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotAuthorized,
    NotFound,
    Unsupported,
    ValidationError,
)
from tests.fixtures.rest import RestServer, running_server

SCHEMA = pa.schema([("id", pa.int64())])


@dataclass
class Fault:
    """Answer requests whose method is ``method`` and whose path matches ``path`` with ``status``
    and ``body`` (JSON for a dict, else raw text)."""

    method: str
    path: str
    status: int
    body: dict[str, Any] | str
    hits: int = 0


@dataclass
class FaultInjector:
    """ASGI middleware: the first matching :class:`Fault` answers; otherwise the app does."""

    app: Any
    faults: list[Fault] = field(default_factory=list)

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] == "http":
            for fault in self.faults:
                if scope["method"] == fault.method and re.fullmatch(fault.path, scope["path"]):
                    fault.hits += 1
                    await _answer(fault, send)
                    return
        await self.app(scope, receive, send)


async def _answer(fault: Fault, send: Callable[..., Any]) -> None:
    is_json = isinstance(fault.body, dict)
    content = (json.dumps(fault.body) if is_json else str(fault.body)).encode()
    content_type = b"application/json" if is_json else b"text/html"
    headers = [(b"content-type", content_type), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": fault.status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def error(status: int, error_type: str, message: str = "the server says no") -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "code": status}}


@pytest.fixture
def injected(served_sqlite_catalog: SqlCatalog) -> Iterator[tuple[RestServer, FaultInjector]]:
    served_sqlite_catalog.create_namespace("db")
    served_sqlite_catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    served_sqlite_catalog.create_view("db.v", SCHEMA, "SELECT 1 AS id")
    injectors: list[FaultInjector] = []

    def wrap(app: Any) -> FaultInjector:
        injectors.append(FaultInjector(app))
        return injectors[-1]

    with running_server(served_sqlite_catalog, wrap=wrap) as server:
        yield server, injectors[0]


TABLE = r"/v1/namespaces/db/tables/t"
NAMESPACES = r"/v1/namespaces"
NAMESPACE = r"/v1/namespaces/db"
VIEW = r"/v1/namespaces/db/views/v"


def _load_table(c: RestCatalog) -> object:
    return c.load_table("db.t")


def _create_namespace(c: RestCatalog) -> object:
    c.create_namespace("other")
    return None


def _drop_namespace(c: RestCatalog) -> object:
    c.drop_namespace("db")
    return None


def _load_view(c: RestCatalog) -> object:
    return c.load_view("db.v")


def _list_namespaces(c: RestCatalog) -> object:
    return c.list_namespaces()


# (operation, faulted method and path, status, body) -> the exception class and message part.
CASES: list[tuple[str, Callable[[RestCatalog], object], str, str, int, Any, type[FirnError], str]] = [
    (
        "load-404-table",
        _load_table,
        "GET",
        TABLE,
        404,
        error(404, "NoSuchTableException"),
        NoSuchTable,
        "NoSuchTableException",
    ),
    (
        "load-404-namespace",
        _load_table,
        "GET",
        TABLE,
        404,
        error(404, "NoSuchNamespaceException"),
        NoSuchNamespace,
        "NoSuchNamespaceException",
    ),
    (
        "load-404-untyped",
        _load_table,
        "GET",
        TABLE,
        404,
        "<h1>Not Found</h1>",
        NoSuchTable,
        "<h1>Not Found</h1> (HTTP 404)",
    ),
    (
        "view-404-untyped",
        _load_view,
        "GET",
        VIEW,
        404,
        error(404, "NotFoundException"),
        NoSuchView,
        "NotFoundException",
    ),
    (
        "create-ns-409",
        _create_namespace,
        "POST",
        NAMESPACES,
        409,
        error(409, "AlreadyExistsException"),
        AlreadyExists,
        "HTTP 409",
    ),
    (
        "drop-ns-409",
        _drop_namespace,
        "DELETE",
        NAMESPACE,
        409,
        error(409, "NamespaceNotEmptyException"),
        NamespaceNotEmpty,
        "HTTP 409",
    ),
    (
        "load-400",
        _load_table,
        "GET",
        TABLE,
        400,
        error(400, "BadRequestException", "malformed"),
        ValidationError,
        "malformed (HTTP 400, BadRequestException)",
    ),
    (
        "load-422",
        _load_table,
        "GET",
        TABLE,
        422,
        error(422, "ValidationException"),
        ValidationError,
        "HTTP 422",
    ),
    (
        "load-401",
        _load_table,
        "GET",
        TABLE,
        401,
        error(401, "NotAuthorizedException"),
        NotAuthorized,
        "set the catalog property 'token' or 'credential'",
    ),
    (
        "load-403",
        _load_table,
        "GET",
        TABLE,
        403,
        error(403, "ForbiddenException", "not yours"),
        NotAuthorized,
        "not yours (HTTP 403, ForbiddenException)",
    ),
    (
        "load-419",
        _load_table,
        "GET",
        TABLE,
        419,
        error(419, "AuthenticationTimeoutException"),
        NotAuthorized,
        "HTTP 419",
    ),
    (
        "load-406",
        _load_table,
        "GET",
        TABLE,
        406,
        error(406, "UnsupportedOperationException"),
        Unsupported,
        "HTTP 406",
    ),
    (
        "load-501",
        _load_table,
        "GET",
        TABLE,
        501,
        error(501, "NotImplementedException"),
        Unsupported,
        "HTTP 501",
    ),
    (
        "list-503",
        _list_namespaces,
        "GET",
        NAMESPACES,
        503,
        error(503, "SlowDownException", "busy"),
        FirnError,
        "busy (HTTP 503, SlowDownException)",
    ),
    (
        "load-500-html",
        _load_table,
        "GET",
        TABLE,
        500,
        "<html>gateway</html>",
        FirnError,
        "<html>gateway</html> (HTTP 500)",
    ),
]


@pytest.mark.parametrize(
    ("operation", "method", "path", "status", "body", "expected", "message"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_error_answers_map_to_firn_errors(
    injected: tuple[RestServer, FaultInjector],
    operation: Callable[[RestCatalog], object],
    method: str,
    path: str,
    status: int,
    body: Any,
    expected: type[FirnError],
    message: str,
) -> None:
    server, injector = injected
    catalog = server.client()
    try:
        injector.faults.append(Fault(method, path, status, body))
        with pytest.raises(expected) as info:
            operation(catalog)
        assert type(info.value) is expected, repr(info.value)
        assert message in str(info.value)
        # Outside a commit, a failure is never "state unknown", and no 404 is a bare NotFound.
        assert not isinstance(info.value, CommitStateUnknown | CommitConflict)
        assert status != 404 or type(info.value) is not NotFound
        assert injector.faults[-1].hits == 1  # answered once: only a 401 with a credential is retried
    finally:
        catalog.close()


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_on_a_commit_are_commit_state_unknown(
    injected: tuple[RestServer, FaultInjector], status: int
) -> None:
    server, injector = injected
    catalog = server.client()
    try:
        table = catalog.load_table("db.t")
        injector.faults.append(Fault("POST", TABLE, status, error(status, "ServiceFailureException", "lost")))
        with pytest.raises(
            CommitStateUnknown, match=rf"lost \(HTTP {status}, .*may or may not have been applied"
        ):
            table.append(pa.table({"id": [1]}, schema=SCHEMA))
        assert injector.faults[-1].hits == 1  # never retried: the first attempt may have landed
    finally:
        catalog.close()
    assert server.catalog.load_table("db.t").scan().count() == 0


def test_a_409_on_a_commit_is_retried_then_a_commit_conflict(
    injected: tuple[RestServer, FaultInjector],
) -> None:
    server, injector = injected
    server.catalog.load_table("db.t").set_properties(
        {"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "1"}
    )
    catalog = server.client()
    try:
        table = catalog.load_table("db.t")
        fault = Fault("POST", TABLE, 409, error(409, "CommitFailedException", "requirement failed"))
        injector.faults.append(fault)
        with pytest.raises(CommitConflict, match=r"requirement failed \(HTTP 409, CommitFailedException\)"):
            table.append(pa.table({"id": [1]}, schema=SCHEMA))
        assert fault.hits == 3  # the first attempt and two retries, each after a refresh
        injector.faults.clear()
        table.refresh().append(pa.table({"id": [2]}, schema=SCHEMA))  # the server was fine all along
    finally:
        catalog.close()
    assert server.catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist() == [2]


def test_a_409_on_a_view_commit_is_retried_on_fresh_metadata(
    injected: tuple[RestServer, FaultInjector],
) -> None:
    server, injector = injected
    catalog = server.client()
    try:
        fault = Fault("POST", VIEW, 409, error(409, "CommitFailedException", "raced"))
        injector.faults.append(fault)
        with pytest.raises(CommitConflict, match=r"changed concurrently .* raced \(HTTP 409"):
            catalog.replace_view("db.v", SCHEMA, "SELECT 2 AS id")
        assert fault.hits == 5  # commit.retry.num-retries (4) retries
        injector.faults.clear()
        assert catalog.replace_view("db.v", SCHEMA, "SELECT 2 AS id").sql_for("spark") == "SELECT 2 AS id"
    finally:
        catalog.close()
