"""Errors as the REST spec answers them: ``{"error": {"message", "type", "code"}}``.

Every failure reaches the client in that model with the status the spec gives the route:
a Firn error by its kind (:func:`status_for`), an invalid request (malformed JSON, a missing,
mistyped or unknown field, a bad query parameter) as 400, an unknown route as 404 — never
FastAPI's own ``{"detail": ...}`` bodies.

No input produces a 500. A Firn error is the server refusing something a request named, so
each kind has a 4xx; a failure to read or write a location the request named (a device, a
missing directory, ``/proc/...``, a file past a read cap) is a 4xx naming the location. What
remains: ``CommitStateUnknown`` (500, as the spec's ``updateTable`` has it: the client must
not assume the commit failed), the catalog's database or a fronted REST catalog failing
(503), the disk being full (507), and a bug (500, logged with its traceback). Every 401 carries ``WWW-Authenticate``
(RFC 9110 section 11.6.1), and no message shows a secret (:func:`firn.util.secrets.mask_secrets`).
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from firn.catalog.rest import protocol as p
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    InvalidMetadata,
    LeaseHeld,
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

logger = logging.getLogger(__name__)

# Most specific first: the first matching class decides.
_STATUS: tuple[tuple[type[FirnError], int, str], ...] = (
    (NoSuchNamespace, 404, p.NO_SUCH_NAMESPACE),
    (NoSuchTable, 404, p.NO_SUCH_TABLE),
    (NoSuchView, 404, p.NO_SUCH_VIEW),
    (NotFound, 404, p.NOT_FOUND),
    (NamespaceNotEmpty, 409, p.NAMESPACE_NOT_EMPTY),
    (AlreadyExists, 409, p.ALREADY_EXISTS),
    (CommitConflict, 409, p.COMMIT_FAILED),
    (LeaseHeld, 409, p.COMMIT_FAILED),
    (CommitStateUnknown, 500, p.COMMIT_STATE_UNKNOWN),
    (ValidationError, 400, p.VALIDATION),
    (InvalidMetadata, 400, p.BAD_REQUEST),
    (Unsupported, 406, p.UNSUPPORTED),
    # The served catalog is itself a client (a REST catalog behind this one) and was refused.
    (NotAuthorized, 403, p.FORBIDDEN),
)

# Error types of the statuses the spec's error model does not name.
REQUEST_TOO_LARGE = "RequestTooLargeException"
TOO_MANY_REQUESTS = "TooManyRequestsException"
SERVICE_UNAVAILABLE = "ServiceUnavailableException"
INSUFFICIENT_STORAGE = "InsufficientStorageException"

# The challenge of every 401 (RFC 6750 section 3): the server takes bearer tokens.
BEARER_CHALLENGE = 'Bearer realm="firn"'


class RestError(Exception):
    """An error answer with an explicit status and type (and headers, e.g. ``Retry-After``)."""

    def __init__(
        self, status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = dict(headers or {})


# Storage errors caused by the location a request named: a 4xx naming it. A path the server
# may not write is a 403; a full disk is the server's condition (507); any other failure of a
# named location (missing and not creatable, through a file, a device, too long) is a 400.
_FORBIDDEN_PATH_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def _causes(error: BaseException) -> list[BaseException]:
    """``error``'s chain of causes (``raise ... from``), nearest first."""
    out: list[BaseException] = []
    seen: set[int] = {id(error)}
    cause = error.__cause__ or error.__context__
    while cause is not None and id(cause) not in seen:
        out.append(cause)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return out


def _is_service_failure(error: BaseException) -> bool:
    """A failure of what the server depends on: its catalog database (SQLAlchemy), a REST
    catalog it fronts (httpx), or a connection to either."""
    root = type(error).__module__.split(".")[0]
    return root in ("sqlalchemy", "httpx", "httpcore") or isinstance(error, ConnectionError | TimeoutError)


def status_for(error: FirnError) -> tuple[int, str]:
    """The HTTP status and error type of a Firn error (module docstring)."""
    for cls, status, error_type in _STATUS:
        if isinstance(error, cls):
            return status, error_type
    causes = _causes(error)
    os_error = next((c for c in causes if isinstance(c, OSError) and c.errno is not None), None)
    if os_error is not None and os_error.errno in _FORBIDDEN_PATH_ERRNOS:
        return 403, p.FORBIDDEN
    if os_error is not None and os_error.errno in _NO_SPACE_ERRNOS:
        return 507, INSUFFICIENT_STORAGE
    if any(_is_service_failure(c) for c in causes):
        return 503, SERVICE_UNAVAILABLE  # the catalog's database or upstream failed, not the request
    if any(isinstance(c, OSError | pa.ArrowException) for c in causes):
        return 400, p.BAD_REQUEST  # reading or writing a location the request named
    # Any other FirnError is Firn refusing what the request asked for.
    return 400, p.BAD_REQUEST


def error_response(
    status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """An answer in the spec's error model. Written as ASCII JSON, so that no message (a lone
    surrogate a client sent, say) can fail to encode; secrets in the message are masked."""
    body = json.dumps(p.error_body(status, error_type, mask_secrets(message)), ensure_ascii=True)
    all_headers = dict(headers or {})
    if status == 401:
        all_headers.setdefault("WWW-Authenticate", BEARER_CHALLENGE)
    return Response(body, status_code=status, media_type="application/json", headers=all_headers)


def describe_validation_errors(errors: Sequence[Any]) -> str:
    """One line per problem: where (body.field, query.pageSize) and what."""
    parts = []
    for err in errors[:10]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        if err.get("type") == "json_invalid":
            detail = (err.get("ctx") or {}).get("error") or err.get("msg")
            position = err.get("loc", (None, None))[-1]
            parts.append(f"malformed JSON: {detail}" + (f" at position {position}" if position else ""))
        elif err.get("type") == "extra_forbidden":
            parts.append(f"unknown field {loc!r}")
        elif err.get("type") == "missing" and loc == "body":
            parts.append("a JSON request body is required")
        elif err.get("type") == "missing":
            parts.append(f"missing required field {loc!r}")
        else:
            parts.append(f"{loc}: {err.get('msg')}")
    more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
    return "invalid request: " + "; ".join(parts) + more


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in the spec's error model."""

    @app.exception_handler(RestError)
    async def _rest_error(request: Request, exc: RestError) -> Response:
        return error_response(exc.status, exc.error_type, exc.message, exc.headers)

    @app.exception_handler(FirnError)
    async def _firn_error(request: Request, exc: FirnError) -> Response:
        status, error_type = status_for(exc)
        if status >= 500:
            logger.error(
                "%s %s failed: %s", request.method, request.url.path, mask_secrets(str(exc)), exc_info=exc
            )
        return error_response(status, error_type, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, p.BAD_REQUEST, describe_validation_errors(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        error_type = {404: p.NOT_FOUND, 405: p.UNSUPPORTED}.get(exc.status_code, p.BAD_REQUEST)
        message = f"{request.method} {request.url.path}: {exc.detail}"
        return error_response(exc.status_code, error_type, message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        logger.error("%s %s failed unexpectedly", request.method, request.url.path, exc_info=exc)
        return error_response(500, p.SERVER_ERROR, f"{type(exc).__name__}: {exc}")


__all__ = [
    "BEARER_CHALLENGE",
    "INSUFFICIENT_STORAGE",
    "REQUEST_TOO_LARGE",
    "SERVICE_UNAVAILABLE",
    "TOO_MANY_REQUESTS",
    "RestError",
    "describe_validation_errors",
    "error_response",
    "install_error_handlers",
    "status_for",
]
