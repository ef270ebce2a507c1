"""Errors as the REST spec answers them: ``{"error": {"message", "type", "code"}}``.

Every failure reaches the client in that model with the status the spec gives the route:
a Firn error by its kind (:func:`status_for`), an invalid request (malformed JSON, a missing,
mistyped or unknown field, a bad query parameter) as 400, an unknown route as 404, and
anything unexpected as 500 — never FastAPI's own ``{"detail": ...}`` bodies.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
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
    NotFound,
    Unsupported,
    ValidationError,
)

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
)


class RestError(Exception):
    """An error answer with an explicit status and type."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


# Storage errors caused by the path a request named (too long, through a file, not valid), not
# by the server: a 400, like any other invalid input. A path the server may not write is a 403.
_BAD_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EINVAL})
_FORBIDDEN_PATH_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def _os_error_cause(error: BaseException) -> OSError | None:
    seen: set[int] = set()
    cause: BaseException | None = error.__cause__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, OSError) and cause.errno is not None:
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return None


def status_for(error: FirnError) -> tuple[int, str]:
    """The HTTP status and error type of a Firn error."""
    for cls, status, error_type in _STATUS:
        if isinstance(error, cls):
            return status, error_type
    os_error = _os_error_cause(error)
    if os_error is not None and os_error.errno in _BAD_PATH_ERRNOS:
        return 400, p.BAD_REQUEST
    if os_error is not None and os_error.errno in _FORBIDDEN_PATH_ERRNOS:
        return 403, p.FORBIDDEN
    return 500, p.SERVER_ERROR


def error_response(status: int, error_type: str, message: str) -> JSONResponse:
    return JSONResponse(p.error_body(status, error_type, message), status_code=status)


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
    async def _rest_error(request: Request, exc: RestError) -> JSONResponse:
        return error_response(exc.status, exc.error_type, exc.message)

    @app.exception_handler(FirnError)
    async def _firn_error(request: Request, exc: FirnError) -> JSONResponse:
        status, error_type = status_for(exc)
        if status >= 500:
            logger.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
        return error_response(status, error_type, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, p.BAD_REQUEST, describe_validation_errors(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error_type = {404: p.NOT_FOUND, 405: p.UNSUPPORTED}.get(exc.status_code, p.BAD_REQUEST)
        message = f"{request.method} {request.url.path}: {exc.detail}"
        return error_response(exc.status_code, error_type, message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("%s %s failed unexpectedly", request.method, request.url.path, exc_info=exc)
        return error_response(500, p.SERVER_ERROR, f"{type(exc).__name__}: {exc}")


__all__ = [
    "RestError",
    "describe_validation_errors",
    "error_response",
    "install_error_handlers",
    "status_for",
]
