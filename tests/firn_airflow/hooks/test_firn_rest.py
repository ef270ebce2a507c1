"""FirnHook with a REST catalog URI: the connection's host is ``rest+http://...`` exactly as it
would be ``sqlite:///...``, against a real Firn REST server (uvicorn on 127.0.0.1) serving a
real SQLite catalog. Credentials go in the connection's catalog properties (``token`` or
``credential``), which are masked like the SQL catalog's password."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.errors import NoSuchTable, NotAuthorized
from firn_airflow.errors import FirnConnectionError
from firn_airflow.hooks.firn import FirnHook
from tests.fixtures.airflow import airflow_cli
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rest import RestServer, running_server

pytestmark = pytest.mark.airflow

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
TOKEN = "rest-token-31415"
CLIENT_SECRET = "client-secret-27182"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RestServer]:
    """A SQLite catalog with db.a, db.b and ops.c behind a REST server that wants a bearer
    token (``TOKEN``) or an OAuth2 client ``airflow`` / ``CLIENT_SECRET``."""
    catalog: SqlCatalog = make_sqlite_catalog(tmp_path, name="served")
    catalog.create_namespace("db")
    catalog.create_namespace("ops")
    for name in ("db.a", "db.b", "ops.c"):
        catalog.create_table(name, ROWS.schema, properties={"format-version": "2"}).append(ROWS)
    with running_server(catalog, token=TOKEN, oauth_clients={"airflow": CLIENT_SECRET}) as server:
        yield server
    catalog.close()


def _env_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "firn", **fields}))


@pytest.mark.parametrize(
    "properties",
    [{"token": TOKEN}, {"credential": f"airflow:{CLIENT_SECRET}"}],
    ids=["bearer-token", "oauth2-client-credentials"],
)
def test_hook_opens_a_rest_catalog(
    served: RestServer, monkeypatch: pytest.MonkeyPatch, properties: dict[str, str]
) -> None:
    _env_connection(
        monkeypatch,
        "firn_rest",
        host=served.rest_uri,
        extra={"catalog_name": "lake", "properties": properties},
    )
    hook = FirnHook("firn_rest")
    try:
        catalog = hook.get_catalog()
        assert isinstance(catalog, RestCatalog) and catalog.uri == served.url and catalog.name == "lake"
        assert hook.list_namespaces() == ["db", "ops"]
        assert hook.list_tables("db") == ["db.a", "db.b"]
        table = hook.load_table("ops.c")
        assert table.scan().to_arrow().sort_by("id").equals(ROWS)
        # The table is the served catalog's: a write through the hook lands there.
        table.append(ROWS)
        assert served.catalog.load_table("ops.c").scan().count() == 6
        with pytest.raises(NoSuchTable, match=r"'db\.missing'.*\(connection 'firn_rest'\)"):
            hook.load_table("db.missing")
        secret = next(iter(properties.values()))
        assert secret in hook.get_config().secrets  # registered with the secrets masker
        ok, message = hook.test_connection()
    finally:
        hook.close()
    assert ok, message
    assert message == f"Connected to Firn catalog 'lake' at {served.rest_uri}: 2 top-level namespace(s)"


@pytest.mark.parametrize(
    ("properties", "problem"),
    [
        ({}, r"NotAuthorized: .*HTTP 401.*set the catalog property 'token' or 'credential'"),
        ({"token": "wrong-token-1618"}, r"NotAuthorized: .*HTTP 401"),
        ({"credential": "airflow:wrong-secret-1618"}, r"NotAuthorized: OAuth2 token request .* failed"),
    ],
    ids=["no-credentials", "wrong-token", "wrong-secret"],
)
def test_refused_credentials_fail_the_connection_test_without_the_secret(
    served: RestServer, monkeypatch: pytest.MonkeyPatch, properties: dict[str, str], problem: str
) -> None:
    _env_connection(monkeypatch, "firn_rest", host=served.rest_uri, extra={"properties": properties})
    ok, message = FirnHook("firn_rest").test_connection()
    assert not ok
    assert re.search(problem, message), message
    assert "wrong-token-1618" not in message and "wrong-secret-1618" not in message
    with pytest.raises(NotAuthorized, match=r"\(connection 'firn_rest'\)"):
        FirnHook("firn_rest").get_catalog()


def test_login_and_password_are_for_sql_catalogs(served: RestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _env_connection(monkeypatch, "firn_rest", host=served.rest_uri, login="airflow", password=CLIENT_SECRET)
    with pytest.raises(FirnConnectionError, match="a 'rest' catalog takes none") as info:
        FirnHook("firn_rest").get_catalog()
    assert CLIENT_SECRET not in str(info.value)


def test_airflow_cli_tests_a_rest_connection(served: RestServer, airflow_home: Path) -> None:
    airflow_cli(
        "connections",
        "add",
        "firn_rest_cli",
        "--conn-type",
        "firn",
        "--conn-host",
        served.rest_uri,
        "--conn-extra",
        json.dumps({"properties": {"token": TOKEN}}),
    )
    tested = airflow_cli("connections", "test", "firn_rest_cli")
    assert "Connection success!" in tested.stdout, tested.stdout + tested.stderr
    assert TOKEN not in tested.stdout + tested.stderr
    # The test reached the server: a wrong token fails it, with the server's answer.
    airflow_cli(
        "connections",
        "add",
        "firn_rest_cli_bad",
        "--conn-type",
        "firn",
        "--conn-host",
        served.rest_uri,
        "--conn-extra",
        json.dumps({"properties": {"token": "wrong-token-1618"}}),
    )
    failed = airflow_cli("connections", "test", "firn_rest_cli_bad", check=False)
    assert "Connection failed!" in failed.stdout, failed.stdout + failed.stderr
    assert "HTTP 401" in failed.stdout and "wrong-token-1618" not in failed.stdout + failed.stderr
