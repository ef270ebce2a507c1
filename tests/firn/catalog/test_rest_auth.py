"""Authentication between Firn's REST client and server: a fixed bearer token, and OAuth2
client credentials with tokens renewed before they expire and after a 401. (The server's
hardening over HTTP is in tests/firn/rest/test_security.py.)"""

from __future__ import annotations

import base64
import time

import httpx
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import NotAuthorized
from tests.fixtures.rest import running_server


def test_a_fixed_token_is_required(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(served_sqlite_catalog, token="s3cret") as server:
        with pytest.raises(
            NotAuthorized, match=r"authentication required.*HTTP 401.*'token' or 'credential'"
        ):
            server.client()
        with pytest.raises(NotAuthorized, match="not valid"):
            server.client(token="wrong")
        catalog = server.client(token="s3cret")
        try:
            catalog.create_namespace("db")
            assert catalog.list_namespaces() == [("db",)]
        finally:
            catalog.close()
        # Every catalog route is protected, not only the configuration.
        assert httpx.get(f"{server.url}/v1/namespaces").status_code == 401
        assert httpx.head(f"{server.url}/v1/namespaces/db").status_code == 401
        body = httpx.post(f"{server.url}/v1/namespaces", json={"namespace": ["x"]}).json()
        assert body["error"]["type"] == "NotAuthorizedException" and body["error"]["code"] == 401
        assert not served_sqlite_catalog.namespace_exists("x")
        # A token the server cannot even compare (not ASCII) is refused, not a 500.
        odd = httpx.get(f"{server.url}/v1/config", headers={"Authorization": b"Bearer \xc3\xa9t\xc3\xa9"})
        assert odd.status_code == 401


def test_oauth2_client_credentials(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(served_sqlite_catalog, oauth_clients={"etl": "pa:ss"}) as server:
        catalog = server.client(credential="etl:pa:ss")  # split at the first colon
        try:
            catalog.create_namespace("db")
            assert server.state.auth.issued_count == 1
        finally:
            catalog.close()
        explicit = server.client(
            credential="etl:pa:ss", **{"oauth2-server-uri": f"{server.url}/v1/oauth/tokens"}
        )
        explicit.close()
        with pytest.raises(NotAuthorized, match=r"invalid_client: unknown client 'etl' or wrong secret"):
            server.client(credential="etl:wrong")
        with pytest.raises(NotAuthorized, match="HTTP 401"):
            server.client()  # no credential, no token


def test_tokens_are_renewed_before_they_expire(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(
        served_sqlite_catalog, oauth_clients={"etl": "secret"}, token_ttl_seconds=2
    ) as server:
        catalog = server.client(credential="etl:secret")
        try:
            catalog.create_namespace("db")
            time.sleep(2.5)  # past the token's lifetime: the client renews before sending
            assert catalog.list_namespaces() == [("db",)]
            assert server.state.auth.issued_count == 2
            assert server.state.auth.rejected_count == 0  # renewed up front, never refused
        finally:
            catalog.close()


def test_a_401_renews_the_token_and_retries_once(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(served_sqlite_catalog, oauth_clients={"etl": "secret"}) as server:
        catalog = server.client(credential="etl:secret")
        fixed = server.client(token=_token(server.url, "etl", "secret"))
        try:
            catalog.create_namespace("db")
            server.state.auth.revoke_all()  # e.g. the server restarted and forgot its tokens
            assert catalog.namespace_exists("db")
            assert server.state.auth.rejected_count == 1 and server.state.auth.issued_count == 3
            # A fixed token cannot be renewed: the 401 surfaces.
            with pytest.raises(NotAuthorized, match="not valid"):
                fixed.list_namespaces()
        finally:
            catalog.close()
            fixed.close()


def _token(url: str, client_id: str, secret: str) -> str:
    response = httpx.post(
        f"{url}/v1/oauth/tokens",
        data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


def test_the_token_endpoint(served_sqlite_catalog: SqlCatalog) -> None:
    with running_server(
        served_sqlite_catalog, oauth_clients={"etl": "secret"}, token_ttl_seconds=600
    ) as server:
        url = f"{server.url}/v1/oauth/tokens"
        basic = base64.b64encode(b"etl:secret").decode()
        by_basic = httpx.post(
            url, data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {basic}"}
        )
        assert by_basic.status_code == 200
        body = by_basic.json()
        assert body["token_type"] == "bearer" and body["expires_in"] == 600
        assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
        exchange = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": body["access_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
        # A token renews only with the client's credentials: a token alone mints nothing.
        alone = httpx.post(url, data=exchange)
        assert alone.status_code == 401 and alone.json()["error"] == "invalid_client"
        assert alone.headers["WWW-Authenticate"] == 'Basic realm="firn"'
        exchanged = httpx.post(url, data=exchange, headers={"Authorization": f"Basic {basic}"})
        assert exchanged.status_code == 200 and exchanged.json()["access_token"] != body["access_token"]
        bad_subject = httpx.post(
            url,
            data={"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": "nope"},
            headers={"Authorization": f"Basic {basic}"},
        )
        assert bad_subject.status_code == 400 and bad_subject.json()["error"] == "invalid_grant"
        unsupported = httpx.post(url, data={"grant_type": "password"})
        assert unsupported.status_code == 400 and unsupported.json()["error"] == "unsupported_grant_type"
        missing = httpx.post(url, data={"grant_type": "client_credentials"})
        assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
        token = exchanged.json()["access_token"]
        ok = httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
