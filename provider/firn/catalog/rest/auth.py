"""Bearer tokens for the REST client: a fixed token, or OAuth2 client credentials with refresh.

OAuth2 client credentials (RFC 6749 section 4.4): ``credential`` is ``client_id:client_secret``
(or only a secret), exchanged at ``oauth2-server-uri`` (default: the catalog's deprecated
``/v1/oauth/tokens`` route) for an access token. The token is renewed before it expires (once
less than a tenth of its lifetime, at most five minutes, is left) and whenever the server
answers 401; a fixed ``token`` without a credential cannot be renewed, so a 401 then surfaces
as :class:`~firn.errors.NotAuthorized`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from firn.errors import FirnError, NotAuthorized

# Renew when less than this share of the token's lifetime is left (capped below).
REFRESH_FRACTION = 0.1
MAX_REFRESH_WINDOW_S = 300.0


class TokenProvider:
    """Supplies the ``Authorization`` header value; thread-safe."""

    def __init__(
        self,
        *,
        token: str | None,
        credential: str | None,
        token_uri: str,
        params: Mapping[str, str],
        post: Callable[..., httpx.Response],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._token = token or None
        self._credential = credential or None
        self._token_uri = token_uri
        self._params = dict(params)
        self._post = post
        self._clock = clock
        self._renew_at: float | None = None
        self._lock = threading.Lock()
        self.fetches = 0  # tokens obtained so far (for diagnostics and tests)

    @property
    def configured(self) -> bool:
        """Whether a token or a credential was given at all."""
        return self._token is not None or self._credential is not None

    def header(self) -> str | None:
        """The header for the next request, renewing the token first when it is due."""
        with self._lock:
            if self._credential is not None and (
                self._token is None or (self._renew_at is not None and self._clock() >= self._renew_at)
            ):
                self._fetch()
            return f"Bearer {self._token}" if self._token else None

    def renew(self, rejected: str | None) -> bool:
        """After a 401: obtain a new token unless another thread already replaced ``rejected``.
        False when there is no credential to obtain one with."""
        if self._credential is None:
            return False
        with self._lock:
            if rejected is None or rejected == (f"Bearer {self._token}" if self._token else None):
                self._fetch()
        return True

    def _fetch(self) -> None:
        # Split at the first colon, as Java and PyIceberg do; no colon: the value is the secret.
        client_id, sep, secret = (self._credential or "").partition(":")
        if not sep:
            client_id, secret = "", client_id
        form = {"grant_type": "client_credentials", "client_secret": secret, **self._params}
        if client_id:
            form["client_id"] = client_id
        try:
            response = self._post(self._token_uri, data=form)
        except httpx.HTTPError as e:
            raise FirnError(f"cannot reach the OAuth2 token endpoint {self._token_uri}: {e}") from e
        body = _json_or_none(response)
        if response.status_code != 200 or not isinstance(body, Mapping) or "access_token" not in body:
            detail = _oauth_error(body) or response.text[:200]
            raise NotAuthorized(
                f"OAuth2 token request to {self._token_uri} failed (HTTP {response.status_code}): {detail}"
            )
        self._token = str(body["access_token"])
        self.fetches += 1
        expires_in = body.get("expires_in")
        if isinstance(expires_in, int | float) and expires_in > 0:
            window = min(MAX_REFRESH_WINDOW_S, expires_in * REFRESH_FRACTION)
            self._renew_at = self._clock() + expires_in - window
        else:
            self._renew_at = None  # no expiry given: renewed only when the server answers 401


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _oauth_error(body: Any) -> str | None:
    """RFC 6749 section 5.2 ``{"error", "error_description"}``, or the REST error model."""
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, str):
        description = body.get("error_description")
        return f"{error}: {description}" if description else error
    if isinstance(error, Mapping):
        return str(error.get("message"))
    return None


__all__ = ["TokenProvider"]
