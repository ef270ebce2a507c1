"""The Iceberg REST catalog protocol as both sides of Firn speak it (OpenAPI
``open-api/rest-catalog-open-api.yaml`` of apache/iceberg): routes, the endpoint strings of
``/v1/config``, namespace encoding in paths, error types, and the client properties.

The server (``firn.rest``) and the client (:mod:`firn.catalog.rest.catalog`) both import
these names, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from firn.errors import ValidationError

# -- client properties (names as Iceberg Java and PyIceberg spell them) ------------------------
URI = "uri"
WAREHOUSE = "warehouse"
PREFIX = "prefix"
CREDENTIAL = "credential"  # "client_id:client_secret" (or only the secret)
TOKEN = "token"  # a bearer token to start with
OAUTH2_SERVER_URI = "oauth2-server-uri"  # default: <uri>/v1/oauth/tokens (deprecated route)
SCOPE = "scope"
DEFAULT_SCOPE = "catalog"
AUDIENCE = "audience"
RESOURCE = "resource"
HEADER_PREFIX = "header."  # header.<Name>=<value> is sent with every request
NAMESPACE_SEPARATOR = "namespace-separator"
PAGE_SIZE = "rest-page-size"
# For servers that list no endpoints in /v1/config but do serve views (PyIceberg's name).
VIEW_ENDPOINTS_SUPPORTED = "view-endpoints-supported"
CONNECT_TIMEOUT_MS = "rest.client.connection-timeout-ms"
SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms"
DEFAULT_CONNECT_TIMEOUT_MS = 10_000
DEFAULT_SOCKET_TIMEOUT_MS = 120_000
# Java and PyIceberg send this header with every request unless configured otherwise
# (``header.X-Iceberg-Access-Delegation``; an empty value sends none).
ACCESS_DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
DEFAULT_ACCESS_DELEGATION = "vended-credentials"

# The spec's namespace separator in paths and in ``parent`` (the unit separator, 0x1F).
DEFAULT_SEPARATOR = "\x1f"

# -- error types (Iceberg Java's exception names, which clients match on) ----------------------
NO_SUCH_NAMESPACE = "NoSuchNamespaceException"
NO_SUCH_TABLE = "NoSuchTableException"
NO_SUCH_VIEW = "NoSuchViewException"
NOT_FOUND = "NotFoundException"
ALREADY_EXISTS = "AlreadyExistsException"
NAMESPACE_NOT_EMPTY = "NamespaceNotEmptyException"
COMMIT_FAILED = "CommitFailedException"
COMMIT_STATE_UNKNOWN = "CommitStateUnknownException"
BAD_REQUEST = "BadRequestException"
VALIDATION = "ValidationException"
UNPROCESSABLE = "UnprocessableEntityException"
NOT_AUTHORIZED = "NotAuthorizedException"
FORBIDDEN = "ForbiddenException"
UNSUPPORTED = "UnsupportedOperationException"
SERVER_ERROR = "InternalServerError"

# -- routes (relative to <uri>/v1/ and, for the catalog routes, the prefix) --------------------
CONFIG = "config"
OAUTH_TOKENS = "oauth/tokens"

V1 = "/v1/{prefix}"
NAMESPACES = "namespaces"
NAMESPACE = "namespaces/{namespace}"
NAMESPACE_PROPERTIES = "namespaces/{namespace}/properties"
TABLES = "namespaces/{namespace}/tables"
TABLE = "namespaces/{namespace}/tables/{table}"
TABLE_METRICS = "namespaces/{namespace}/tables/{table}/metrics"
REGISTER_TABLE = "namespaces/{namespace}/register"
RENAME_TABLE = "tables/rename"
TRANSACTIONS_COMMIT = "transactions/commit"
VIEWS = "namespaces/{namespace}/views"
VIEW = "namespaces/{namespace}/views/{view}"
REGISTER_VIEW = "namespaces/{namespace}/register-view"
RENAME_VIEW = "views/rename"


def endpoint(method: str, route: str) -> str:
    """An entry of ``/v1/config``'s ``endpoints``: ``"<VERB> /v1/{prefix}/<route>"``."""
    return f"{method} {V1}/{route}"


# Spec "getConfig": what a client may assume when the server lists no endpoints.
DEFAULT_ENDPOINTS = frozenset(
    endpoint(m, r)
    for m, r in (
        ("GET", NAMESPACES),
        ("POST", NAMESPACES),
        ("GET", NAMESPACE),
        ("DELETE", NAMESPACE),
        ("POST", NAMESPACE_PROPERTIES),
        ("GET", TABLES),
        ("POST", TABLES),
        ("GET", TABLE),
        ("POST", TABLE),
        ("DELETE", TABLE),
        ("POST", REGISTER_TABLE),
        ("POST", TABLE_METRICS),
        ("POST", RENAME_TABLE),
        ("POST", TRANSACTIONS_COMMIT),
    )
)

NAMESPACE_ENDPOINTS = tuple(
    endpoint(m, r)
    for m, r in (
        ("GET", NAMESPACES),
        ("POST", NAMESPACES),
        ("GET", NAMESPACE),
        ("HEAD", NAMESPACE),
        ("DELETE", NAMESPACE),
        ("POST", NAMESPACE_PROPERTIES),
    )
)
TABLE_ENDPOINTS = tuple(
    endpoint(m, r)
    for m, r in (
        ("GET", TABLES),
        ("POST", TABLES),
        ("GET", TABLE),
        ("HEAD", TABLE),
        ("POST", TABLE),
        ("DELETE", TABLE),
        ("POST", REGISTER_TABLE),
        ("POST", TABLE_METRICS),
        ("POST", RENAME_TABLE),
    )
)
VIEW_ENDPOINTS = tuple(
    endpoint(m, r)
    for m, r in (
        ("GET", VIEWS),
        ("POST", VIEWS),
        ("GET", VIEW),
        ("HEAD", VIEW),
        ("POST", VIEW),
        ("DELETE", VIEW),
        ("POST", REGISTER_VIEW),
        ("POST", RENAME_VIEW),
    )
)


# -- namespaces in paths -------------------------------------------------------------------------
def encode_namespace(namespace: Sequence[str], separator: str = DEFAULT_SEPARATOR) -> str:
    """A namespace as one path segment: levels percent-encoded, joined by the separator."""
    return quote(separator, safe="").join(quote(level, safe="") for level in namespace)


def decode_namespace(value: str, separator: str = DEFAULT_SEPARATOR) -> tuple[str, ...]:
    """The levels of a decoded path segment or ``parent`` value. Spec: servers accept both the
    advertised separator and 0x1F."""
    if not value:
        return ()
    if separator != DEFAULT_SEPARATOR:
        value = value.replace(separator, DEFAULT_SEPARATOR)
    levels = tuple(value.split(DEFAULT_SEPARATOR))
    if any(not level for level in levels):
        raise ValidationError(f"invalid namespace {value!r}: empty level")
    return levels


def identifier_json(namespace: Sequence[str], name: str) -> dict[str, Any]:
    """The spec's ``TableIdentifier`` object."""
    return {"namespace": list(namespace), "name": name}


def error_body(code: int, error_type: str, message: str) -> dict[str, Any]:
    """The spec's ``IcebergErrorResponse``."""
    return {"error": {"message": message, "type": error_type, "code": code}}


__all__ = [name for name in dir() if name.isupper()] + [
    "decode_namespace",
    "encode_namespace",
    "endpoint",
    "error_body",
    "identifier_json",
]
