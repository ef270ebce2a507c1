"""Bearer-token authentication for the server, and the OAuth2 token endpoint.

Authentication is off unless the app is given a fixed ``token`` or OAuth2 ``clients``
(``client_id -> client_secret``). With it on, every route except ``/v1/oauth/tokens`` needs
``Authorization: Bearer <token>``: the fixed token, or one the endpoint issued that has not
expired; every 401 says so in ``WWW-Authenticate``.

The endpoint (spec ``getToken``, form-encoded) issues a token only to a client that proves
itself with its id and secret (in the form or in HTTP Basic auth, RFC 6749 section 2.3.1):
for the client credentials grant, and for the token exchange grant (RFC 8693) where the
``subject_token`` must also be valid. A token alone never mints another: otherwise one leaked
token, or the fixed token, would stay valid forever. Without OAuth2 clients the endpoint
issues nothing. Requests to it are rate-limited per client address
(:class:`~firn.rest.security.RateLimiter`): 429 with ``Retry-After`` past the limit.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import math
import secrets
import threading
import time
from collections.abc import Mapping
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import JSONResponse

from firn.catalog.rest import protocol as p
from firn.rest.errors import BEARER_CHALLENGE, RestError
from firn.rest.security import DEFAULT_TOKEN_RATE_LIMIT, RateLimit, RateLimiter

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
DEFAULT_TOKEN_TTL_S = 3600
# The challenge of the token endpoint's 401: clients authenticate with id and secret (RFC 6749 5.2).
CLIENT_CHALLENGE = 'Basic realm="firn"'


class TokenAuthority:
    """Checks bearer tokens and issues OAuth2 access tokens (thread-safe, in memory)."""

    def __init__(
        self,
        token: str | None = None,
        clients: Mapping[str, str] | None = None,
        ttl_seconds: float = DEFAULT_TOKEN_TTL_S,
        rate_limit: RateLimit | None = DEFAULT_TOKEN_RATE_LIMIT,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"token lifetime must be positive, got {ttl_seconds}")
        # A token request is refused past this rate per client address (None: no limit).
        self.limiter = RateLimiter(rate_limit) if rate_limit is not None else None
        self._static = token or None
        self._clients = dict(clients or {})
        self.ttl_seconds = ttl_seconds
        self._issued: dict[str, float] = {}  # token -> expiry (monotonic seconds)
        self._lock = threading.Lock()
        self.issued_count = 0
        self.rejected_count = 0
        self.throttled_count = 0

    @property
    def enabled(self) -> bool:
        return self._static is not None or bool(self._clients)

    def valid(self, token: str) -> bool:
        if self._static is not None and _same(token, self._static):
            return True
        with self._lock:
            expiry = self._issued.get(token)
            if expiry is None:
                return False
            if time.monotonic() >= expiry:
                del self._issued[token]
                return False
            return True

    def issue(self) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            for old in [t for t, e in self._issued.items() if e <= now]:
                del self._issued[old]
            self._issued[token] = now + self.ttl_seconds
            self.issued_count += 1
        return token

    def revoke_all(self) -> None:
        """Forget every issued token (the fixed token stays valid)."""
        with self._lock:
            self._issued.clear()

    def check_client(self, client_id: str, secret: str) -> bool:
        expected = self._clients.get(client_id)
        return expected is not None and _same(secret, expected)

    # -- request handling ------------------------------------------------------------------
    def authenticate(self, request: Request) -> None:
        """Raise a 401 unless the request carries a valid bearer token (when auth is on)."""
        if not self.enabled:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            self.rejected_count += 1
            raise RestError(
                401, p.NOT_AUTHORIZED, "authentication required: send 'Authorization: Bearer <token>'"
            )
        if not self.valid(token.strip()):
            self.rejected_count += 1
            raise RestError(
                401,
                p.NOT_AUTHORIZED,
                "the bearer token is not valid (unknown or expired)",
                {"WWW-Authenticate": f'{BEARER_CHALLENGE}, error="invalid_token"'},
            )

    async def token_endpoint(self, request: Request) -> JSONResponse:
        """``POST /v1/oauth/tokens`` (RFC 6749 section 4.4; RFC 8693 for renewals): a token for
        a client that authenticates (module docstring)."""
        if self.limiter is not None:
            wait = self.limiter.acquire(request.client.host if request.client else "")
            if wait > 0:
                self.throttled_count += 1
                response = _oauth_error(
                    429, "slow_down", f"too many token requests from this address; retry in {wait:.0f} s"
                )
                response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
                return response
        raw = (await request.body()).decode("utf-8", errors="replace")
        form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
        grant = form.get("grant_type")
        if grant not in (CLIENT_CREDENTIALS, TOKEN_EXCHANGE):
            return _oauth_error(
                400,
                "unsupported_grant_type",
                f"grant_type {grant!r} is not supported; use {CLIENT_CREDENTIALS}",
            )
        if not self._clients:
            return _oauth_error(
                401, "invalid_client", "this server issues no tokens: it has no OAuth2 clients"
            )
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = _basic_credentials(request.headers.get("authorization", ""))
        if basic is not None:
            client_id, secret = basic
        if client_id is None or secret is None:
            what = "renewing a token" if grant == TOKEN_EXCHANGE else "a token"
            return _oauth_error(
                401 if grant == TOKEN_EXCHANGE else 400,
                "invalid_client" if grant == TOKEN_EXCHANGE else "invalid_request",
                f"{what} needs the client's credentials: client_id and client_secret "
                "(in the form or in HTTP Basic auth)",
            )
        if not self.check_client(client_id, secret):
            return _oauth_error(401, "invalid_client", f"unknown client {client_id!r} or wrong secret")
        if grant == TOKEN_EXCHANGE:
            subject = form.get("subject_token")
            if not subject:
                return _oauth_error(400, "invalid_request", "subject_token is required")
            if not self.valid(subject):
                return _oauth_error(
                    400, "invalid_grant", "the subject token is not valid (unknown or expired)"
                )
        return JSONResponse(
            {
                "access_token": self.issue(),
                "token_type": "bearer",
                "expires_in": int(self.ttl_seconds) if self.ttl_seconds >= 1 else 1,
                "issued_token_type": ACCESS_TOKEN_TYPE,
            }
        )


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison (of bytes: ``compare_digest`` refuses non-ASCII strings)."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _basic_credentials(header: str) -> tuple[str, str] | None:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, sep, secret = decoded.partition(":")
    return (client_id, secret) if sep else None


def _oauth_error(status: int, error: str, description: str) -> JSONResponse:
    """RFC 6749 section 5.2 error (the spec's ``OAuthError``); a 401 challenges the client to
    authenticate (RFC 6749 section 5.2, RFC 9110 section 11.6.1)."""
    headers = {"WWW-Authenticate": CLIENT_CHALLENGE} if status == 401 else None
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers=headers)


__all__ = ["TokenAuthority"]
