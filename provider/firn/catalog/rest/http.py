"""The REST client's HTTP session: base URI, headers, bearer tokens, and error mapping.

Every non-2xx answer becomes a :class:`~firn.errors.FirnError` subclass carrying the server's
message (the spec's ``{"error": {"message", "type", "code"}}``): 404 by the error type
(``NoSuchTableException``, ...) or the route's default, 409 by the route (``AlreadyExists``,
``NamespaceNotEmpty``, or ``CommitConflict`` on commits), 400/422 ``ValidationError``,
401/403/419 ``NotAuthorized``, 406/501 ``Unsupported``. On a commit route, 500/502/503/504
and a timeout or broken connection after the request was sent are ``CommitStateUnknown``
(spec "updateTable"; Iceberg Java's ``CommitErrorHandler``); anything else is ``FirnError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from firn.catalog.rest import protocol as p
from firn.catalog.rest.auth import TokenProvider
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
from firn.util.secrets import mask_secrets
from firn.util.version import __version__

# Statuses after which a commit may or may not have been applied (spec "updateTable").
COMMIT_UNKNOWN_STATUSES = frozenset({500, 502, 503, 504})
_NOT_FOUND_TYPES: dict[str, type[NotFound]] = {
    p.NO_SUCH_NAMESPACE: NoSuchNamespace,
    p.NO_SUCH_TABLE: NoSuchTable,
    p.NO_SUCH_VIEW: NoSuchView,
}


@dataclass(frozen=True, slots=True)
class Route:
    """How one route's error statuses map to Firn errors."""

    not_found: type[NotFound] = NotFound
    conflict: type[FirnError] = AlreadyExists
    commit: bool = False


def _timeout_s(properties: Mapping[str, str], key: str, default_ms: int) -> float:
    value = properties.get(key)
    try:
        ms = int(value) if value is not None else default_ms
    except ValueError:
        raise ValidationError(f"{key} must be an integer number of milliseconds, got {value!r}") from None
    if ms <= 0:
        raise ValidationError(f"{key} must be positive, got {ms}")
    return ms / 1000


def request_headers(properties: Mapping[str, str]) -> dict[str, str]:
    """``header.*`` properties as headers, plus the access-delegation default."""
    headers = {"User-Agent": f"firn/{__version__}", "X-Client-Version": f"firn {__version__}"}
    headers[p.ACCESS_DELEGATION_HEADER] = p.DEFAULT_ACCESS_DELEGATION
    for key, value in properties.items():
        if key.startswith(p.HEADER_PREFIX) and len(key) > len(p.HEADER_PREFIX):
            name = key[len(p.HEADER_PREFIX) :]
            # Header names are case-insensitive: a configured one replaces the default.
            for existing in [h for h in headers if h.lower() == name.lower()]:
                del headers[existing]
            headers[name] = value
    return {k: v for k, v in headers.items() if v}


_SESSION_KEYS = (
    p.URI,
    p.TOKEN,
    p.CREDENTIAL,
    p.OAUTH2_SERVER_URI,
    p.SCOPE,
    p.AUDIENCE,
    p.RESOURCE,
    p.CONNECT_TIMEOUT_MS,
    p.SOCKET_TIMEOUT_MS,
)


def session_settings(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties a :class:`RestSession` is built from (URI, auth, headers, timeouts)."""
    return {k: v for k, v in properties.items() if k in _SESSION_KEYS or k.startswith(p.HEADER_PREFIX)}


class RestSession:
    """One HTTP connection pool to a REST catalog, with its bearer token (thread-safe)."""

    def __init__(self, uri: str, properties: Mapping[str, str]) -> None:
        if not uri.startswith(("http://", "https://")):
            raise ValidationError(
                mask_secrets(f"a REST catalog URI must start with http:// or https://, got {uri!r}")
            )
        self.uri = uri.rstrip("/")
        timeout = httpx.Timeout(
            _timeout_s(properties, p.SOCKET_TIMEOUT_MS, p.DEFAULT_SOCKET_TIMEOUT_MS),
            connect=_timeout_s(properties, p.CONNECT_TIMEOUT_MS, p.DEFAULT_CONNECT_TIMEOUT_MS),
        )
        self._http = httpx.Client(base_url=self.uri, headers=request_headers(properties), timeout=timeout)
        params = {p.SCOPE: properties.get(p.SCOPE) or p.DEFAULT_SCOPE}
        for key in (p.AUDIENCE, p.RESOURCE):
            if properties.get(key):
                params[key] = properties[key]
        self.tokens = TokenProvider(
            token=properties.get(p.TOKEN),
            credential=properties.get(p.CREDENTIAL),
            token_uri=properties.get(p.OAUTH2_SERVER_URI) or f"{self.uri}/v1/{p.OAUTH_TOKENS}",
            params=params,
            post=self._http.post,
        )

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        route: Route = Route(),
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request (``path`` relative to the URI); raise the mapped error unless 2xx.

        A 401 is answered once by renewing the token (when a credential allows it) and
        sending the request again: the server refused it before doing anything.
        """
        content = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if content is not None else {}
        for attempt in range(2):
            auth = self.tokens.header()
            if auth:
                headers["Authorization"] = auth
            try:
                response = self._http.request(method, path, content=content, params=params, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                raise FirnError(
                    mask_secrets(f"{what}: cannot reach the REST catalog at {self.uri}: {e}")
                ) from e
            except httpx.HTTPError as e:
                if route.commit:
                    raise CommitStateUnknown(
                        f"{what}: the request was sent but no answer came ({type(e).__name__}: {e}); "
                        "the commit may or may not have been applied: check the table before retrying"
                    ) from e
                raise FirnError(
                    mask_secrets(f"{what}: request to {self.uri} failed ({type(e).__name__}: {e})")
                ) from e
            if response.status_code == 401 and attempt == 0 and self.tokens.renew(auth):
                continue
            break
        if response.status_code >= 400:
            error = error_for(response, what, route)
            if isinstance(error, NotAuthorized) and not self.tokens.configured:
                error = NotAuthorized(f"{error}; set the catalog property 'token' or 'credential'")
            raise error
        return response


def error_body(response: httpx.Response) -> tuple[str, str | None]:
    """(message, error type) of an error response; the raw text when it is not the model."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        error = data["error"]
        error_type = error.get("type")
        return str(error.get("message") or response.reason_phrase), str(error_type) if error_type else None
    text = response.text.strip()
    return (text[:500] if text else response.reason_phrase or f"HTTP {response.status_code}"), None


def error_for(response: httpx.Response, what: str, route: Route) -> FirnError:
    """The Firn error for a non-2xx response (see the module docstring)."""
    status = response.status_code
    message, error_type = error_body(response)
    text = f"{what}: {message} (HTTP {status}{', ' + error_type if error_type else ''})"
    cls: type[FirnError]
    if status == 404:
        cls = _NOT_FOUND_TYPES.get(error_type or "", route.not_found)
    elif status == 409:
        if error_type == p.NAMESPACE_NOT_EMPTY:
            cls = NamespaceNotEmpty
        elif route.commit:
            cls = CommitConflict
        else:
            cls = route.conflict
    elif status in (400, 422):
        cls = ValidationError
    elif status in (401, 403, 419):
        cls = NotAuthorized
    elif status in (406, 501):
        cls = Unsupported
    elif route.commit and status in COMMIT_UNKNOWN_STATUSES:
        cls = CommitStateUnknown
        text += "; the commit may or may not have been applied: check the table before retrying"
    else:
        cls = FirnError
    return cls(text)


__all__ = [
    "COMMIT_UNKNOWN_STATUSES",
    "RestSession",
    "Route",
    "error_for",
    "request_headers",
    "session_settings",
]
