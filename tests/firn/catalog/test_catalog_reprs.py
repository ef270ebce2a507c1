"""The repr() of a catalog or FileIO never shows a credential (issue 18): real catalogs,
opened with passwords, tokens and storage secrets in their URI and properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.io.pyarrow_io import PyArrowFileIO
from tests.fixtures.catalogs import POSTGRES_URL, make_sqlite_catalog, postgres_unavailable
from tests.fixtures.rest import running_server

SECRETS = {"s3.secret-access-key": "REPRSECRET-1", "token": "REPRTOKEN-2"}


def _assert_clean(obj: object) -> None:
    for text in (repr(obj), str(obj)):
        for secret in ("REPRSECRET-1", "REPRTOKEN-2", "REPRPASS-3"):
            assert secret not in text, text


def test_sqlite_catalog_and_its_fileio(tmp_path: Path) -> None:
    catalog = make_sqlite_catalog(tmp_path, **SECRETS)
    try:
        assert catalog.io.properties["s3.secret-access-key"] == "REPRSECRET-1"
        _assert_clean(catalog)
        _assert_clean(catalog.io)
        _assert_clean(PyArrowFileIO(SECRETS))
    finally:
        catalog.close()


def test_postgres_catalog_with_a_password_in_its_uri(tmp_path: Path) -> None:
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    # The test server trusts local connections, so any password opens it.
    scheme, rest = POSTGRES_URL.split("://", 1)
    user, _, host = rest.partition("@")
    catalog = SqlCatalog("repr_test", f"{scheme}://{user}:REPRPASS-3@{host}", warehouse=str(tmp_path))
    try:
        assert catalog.list_namespaces() is not None
        _assert_clean(catalog)
        assert ":***@" in repr(catalog)
    finally:
        catalog.close()


def test_rest_client_with_credentials_in_its_uri_and_properties(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(served_sqlite_catalog) as server:
        host = server.url.removeprefix("http://")
        client = RestCatalog("rest", f"http://user:REPRPASS-3@{host}", properties=SECRETS)
        try:
            client.create_namespace("db")  # the client works with what it was given
            _assert_clean(client)
            assert "user:***@" in repr(client)
        finally:
            client.close()
