"""FirnHook against a real SQLite catalog, connection parsing, and the real `airflow connections` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from airflow.sdk import Connection

import firn
from firn.errors import NoSuchNamespace, NoSuchTable, ValidationError
from firn_airflow.errors import FirnConnectionError, FirnConnectionNotFound
from firn_airflow.hooks.connection import catalog_config
from firn_airflow.hooks.firn import FirnHook
from tests.fixtures.airflow import airflow_cli

pytestmark = pytest.mark.airflow

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})


def _connection(**fields: object) -> Connection:
    extra = fields.pop("extra", None)
    return Connection(
        conn_id=str(fields.pop("conn_id", "firn_x")),
        conn_type=str(fields.pop("conn_type", "firn")),
        extra=json.dumps(extra) if extra is not None else None,
        **fields,
    )


def _env_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "firn", **fields}))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A SQLite catalog (name 'default', as firn.load_catalog makes it) with db.a, db.b and ops.c."""
    catalog = firn.load_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    catalog.create_namespace("ops")
    for name in ("db.a", "db.b", "ops.c"):
        catalog.create_table(name, ROWS.schema, properties={"format-version": "2"}).append(ROWS)
    catalog.close()
    return tmp_path


def test_catalog_config_reads_every_field() -> None:
    config = catalog_config(
        _connection(
            host="postgresql://pg.example:5432/firn",
            login="firn",
            password="pw-123456",
            extra={
                "warehouse": "s3://bucket/wh",
                "catalog_name": "prod",
                "properties": {
                    "s3.endpoint": "http://minio:9000",
                    "s3.path-style-access": True,
                    "io.delete-threads": 4,
                },
                "s3_access_key_id": "AKIAEXAMPLE",
                "s3_secret_access_key": "secret-abcdef",
            },
        )
    )
    assert config.uri == "postgresql://firn:pw-123456@pg.example:5432/firn"
    assert config.display_uri == "postgresql://firn:***@pg.example:5432/firn"
    assert catalog_config(_connection(host="sqlite:////tmp/c.db")).display_uri == "sqlite:////tmp/c.db"
    assert config.name == "prod"
    assert config.warehouse == "s3://bucket/wh"
    assert dict(config.properties) == {
        "s3.endpoint": "http://minio:9000",
        "s3.path-style-access": "true",
        "io.delete-threads": "4",
        "s3.access-key-id": "AKIAEXAMPLE",
        "s3.secret-access-key": "secret-abcdef",
    }
    assert set(config.secrets) == {"pw-123456", "secret-abcdef"}
    assert config.redact("x secret-abcdef y pw-123456") == "x *** y ***"


def test_uri_credentials_win_and_older_prefixed_extras_are_read() -> None:
    config = catalog_config(
        _connection(
            host="postgresql://owner:inline-pass@db:5432/firn",
            login="other",
            password="ignored-pass",
            extra={"extra__firn__warehouse": "/data/wh", "extra__firn__properties": '{"a": "b"}'},
        )
    )
    assert config.uri == "postgresql://owner:inline-pass@db:5432/firn"
    assert config.warehouse == "/data/wh"
    assert dict(config.properties) == {"a": "b"}
    assert config.name == "default"
    assert "inline-pass" in config.secrets


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"conn_type": "postgres", "host": "db"}, "has type 'postgres'; a Firn connection has type 'firn'"),
        ({"host": ""}, "has no catalog URI"),
        ({"host": "sqlite:///c.db", "extra": {"properties": ["a"]}}, "must be a JSON object"),
        ({"host": "sqlite:///c.db", "extra": {"properties": "{not json"}}, "is not valid JSON"),
        (
            {"host": "sqlite:///c.db", "extra": {"properties": {"a": {"b": 1}}}},
            "property 'a' must be a string",
        ),
        ({"host": "sqlite:///c.db", "login": "u", "password": "pw-123456"}, "a 'sqlite' catalog takes none"),
    ],
)
def test_malformed_connections_raise_one_clear_error(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(FirnConnectionError, match="connection 'firn_x'") as info:
        catalog_config(_connection(**fields))
    assert problem in str(info.value)
    assert "pw-123456" not in str(info.value)


def test_hook_opens_the_catalog_and_its_tables(warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _env_connection(
        monkeypatch,
        "firn_test",
        host=f"sqlite:///{warehouse / 'catalog.db'}",
        extra={"warehouse": str(warehouse / "wh")},
    )
    hook = FirnHook("firn_test")
    try:
        assert hook.get_catalog() is hook.get_conn()
        assert hook.get_catalog().name == "default"
        assert hook.list_namespaces() == ["db", "ops"]
        assert hook.list_tables("db") == ["db.a", "db.b"]
        table = hook.load_table("ops.c")
        assert table.scan().to_arrow().sort_by("id").equals(ROWS)
        ok, message = hook.test_connection()
    finally:
        hook.close()
    assert ok, message
    assert message == (
        f"Connected to Firn catalog 'default' at sqlite:///{warehouse / 'catalog.db'}: 2 top-level namespace(s)"
    )


def test_bad_names_give_one_clear_error(warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _env_connection(monkeypatch, "firn_test", host=f"sqlite:///{warehouse / 'catalog.db'}")
    hook = FirnHook("firn_test")
    with pytest.raises(
        NoSuchTable,
        match=r"table 'db\.missing' does not exist in catalog 'default' \(connection 'firn_test'\)",
    ):
        hook.load_table("db.missing")
    with pytest.raises(ValidationError, match="needs a namespace"):
        hook.load_table("events")
    with pytest.raises(NoSuchNamespace, match="namespace 'nope' does not exist"):
        hook.list_tables("nope")
    hook.close()
    with pytest.raises(FirnConnectionNotFound, match="Firn connection 'firn_nope' is not defined") as info:
        FirnHook("firn_nope").get_catalog()
    assert "AIRFLOW_CONN_FIRN_NOPE" in str(info.value)
    ok, message = FirnHook("firn_nope").test_connection()
    assert not ok
    assert "FirnConnectionNotFound: Firn connection 'firn_nope' is not defined" in message


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        # Port 1 on localhost refuses at once.
        ({"host": "postgresql://firn@127.0.0.1:1/firn", "password": "pg-pass-7777"}, "127.0.0.1"),
        ({"host": "postgresql://firn:pg-pass-7777@127.0.0.1:1/firn"}, "127.0.0.1"),
        ({"host": "mysql://firn:pg-pass-7777@db/firn"}, "unsupported catalog URI 'mysql://firn:***@db/firn'"),
    ],
)
def test_failed_connection_test_names_the_problem_not_the_password(
    fields: dict[str, str], problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env_connection(monkeypatch, "firn_pg", **fields)
    ok, message = FirnHook("firn_pg").test_connection()
    assert not ok
    assert problem in message
    assert "pg-pass-7777" not in message


def test_airflow_cli_accepts_and_tests_firn_connections(airflow_home: Path, tmp_path: Path) -> None:
    catalog_db = tmp_path / "cli" / "catalog.db"
    airflow_cli(
        "connections",
        "add",
        "firn_cli",
        "--conn-type",
        "firn",
        "--conn-host",
        f"sqlite:///{catalog_db}",
        "--conn-extra",
        json.dumps({"warehouse": str(tmp_path / "cli" / "wh"), "s3_secret_access_key": "cli-secret-4242"}),
    )
    tested = airflow_cli("connections", "test", "firn_cli")
    assert "Connection success!" in tested.stdout, tested.stdout + tested.stderr
    # The hook really opened the catalog: SQLite created the catalog file and its tables.
    assert catalog_db.exists()
    assert "cli-secret-4242" not in tested.stdout + tested.stderr

    airflow_cli("connections", "add", "firn_cli_bad", "--conn-type", "firn", "--conn-host", "mysql://db/firn")
    failed = airflow_cli("connections", "test", "firn_cli_bad", check=False)
    assert "Connection failed!" in failed.stdout, failed.stdout + failed.stderr
    assert "unsupported catalog URI 'mysql://db/firn'" in failed.stdout
