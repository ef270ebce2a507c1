"""``firn.rest.app(catalog)``: a FastAPI app serving any Firn catalog over Iceberg's REST protocol.

Routes follow the OpenAPI spec (``open-api/rest-catalog-open-api.yaml`` of apache/iceberg):
``/v1/config``, ``/v1/oauth/tokens``, and under ``/v1/[<prefix>/]`` the namespace, table and
(for catalogs with views) view routes. ``/v1/config`` lists exactly the endpoints served.
Not served: multi-table transactions (answered 406: Firn catalogs commit one table at a
time), server-side scan planning, credential loading, remote signing and ``unregister``.

Hardened by default (:mod:`firn.rest.security`): only loopback names in ``Host``, request
bodies of at most 32 MiB, token requests rate-limited, and with authentication on, the
OpenAPI document and its pages (``/openapi.json``, ``/docs``, ``/redoc``) need the bearer
token like every catalog route.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from firn.catalog.base import Catalog
from firn.catalog.rest import protocol as p
from firn.rest.auth import DEFAULT_TOKEN_TTL_S, TokenAuthority
from firn.rest.errors import install_error_handlers
from firn.rest.namespaces import namespace_routes
from firn.rest.security import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_TOKEN_RATE_LIMIT,
    LOOPBACK_HOSTS,
    BodyLimit,
    HostAllowList,
    RateLimit,
    check_allowed_hosts,
)
from firn.rest.state import ServerState, TableConfigHook, served_table_defaults
from firn.rest.tables import table_routes
from firn.rest.views import view_routes
from firn.util.version import __version__


def app(
    catalog: Catalog,
    *,
    token: str | None = None,
    oauth_clients: Mapping[str, str] | None = None,
    token_ttl_seconds: float = DEFAULT_TOKEN_TTL_S,
    prefix: str | None = None,
    defaults: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    table_defaults: Mapping[str, str] | None = None,
    table_config: TableConfigHook | None = None,
    allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    token_rate_limit: RateLimit | None = DEFAULT_TOKEN_RATE_LIMIT,
) -> FastAPI:
    """Serve ``catalog`` over the REST protocol.

    * ``token``: a fixed bearer token every request must carry; ``oauth_clients``
      (``{client_id: secret}``): clients that may obtain tokens from ``/v1/oauth/tokens``,
      valid for ``token_ttl_seconds``. Without either, no authentication is asked for.
      ``token_rate_limit``: token requests allowed per client address (None: unlimited).
    * ``prefix``: serve the catalog routes under ``/v1/<prefix>/`` (sent to clients as the
      ``prefix`` override of ``/v1/config``); ``defaults`` / ``overrides``: more of
      ``/v1/config``.
    * ``table_defaults``: properties for tables created over REST that do not set them, over
      the catalog's own ``table-default.*`` properties (Iceberg's catalog convention). Other
      engines do not read V4, Firn's library default, so a table created over REST without a
      ``format-version`` is V2 (:data:`~firn.rest.state.REST_DEFAULT_FORMAT_VERSION`) unless
      one of these says otherwise.
    * ``table_config(identifier, metadata, mechanisms)``: the ``config`` returned with a
      loaded, created or registered table, given the mechanisms the client asked for in
      ``X-Iceberg-Access-Delegation`` (where a deployment vends storage credentials).
    * ``allowed_hosts``: the names the ``Host`` header may carry (loopback names by default;
      ``"*"`` for any); ``max_request_bytes``: the largest request body accepted.
    """
    clean_prefix = (prefix or "").strip("/")
    state = ServerState(
        catalog=catalog,
        auth=TokenAuthority(token, oauth_clients, token_ttl_seconds, rate_limit=token_rate_limit),
        prefix=clean_prefix,
        defaults=dict(defaults or {}),
        overrides={**(overrides or {}), **({p.PREFIX: clean_prefix} if clean_prefix else {})},
        table_defaults=served_table_defaults(catalog, table_defaults),
        table_config=table_config,
    )
    hosts = check_allowed_hosts(allowed_hosts)
    protected = state.auth.enabled
    api = FastAPI(
        title=f"Firn Iceberg REST catalog ({catalog.name})",
        version=__version__,
        description="The Apache Iceberg REST catalog protocol, served by Firn.",
        # With authentication on, the document and its pages are served below, behind it.
        openapi_url=None if protected else "/openapi.json",
        docs_url=None if protected else "/docs",
        redoc_url=None if protected else "/redoc",
    )
    api.state.firn = state
    install_error_handlers(api)
    api.add_middleware(BodyLimit, max_bytes=max_request_bytes)
    api.add_middleware(HostAllowList, allowed=hosts)  # added last: runs first
    authenticated = [Depends(state.authenticate)]
    if protected:
        _protected_docs(api, authenticated)
    endpoints = [*p.NAMESPACE_ENDPOINTS, *p.TABLE_ENDPOINTS]
    if state.serves_views:
        endpoints += p.VIEW_ENDPOINTS

    @api.get(f"/v1/{p.CONFIG}", dependencies=authenticated, operation_id="getConfig")
    def get_config(warehouse: str | None = None) -> dict[str, Any]:
        # One catalog is served whatever ``warehouse`` the client names.
        return {"defaults": dict(state.defaults), "overrides": dict(state.overrides), "endpoints": endpoints}

    @api.post(f"/v1/{p.OAUTH_TOKENS}", operation_id="getToken")
    async def get_token(request: Request) -> JSONResponse:
        return await state.auth.token_endpoint(request)

    base = f"/v1/{clean_prefix}" if clean_prefix else "/v1"
    api.include_router(namespace_routes(state), prefix=base, dependencies=authenticated)
    api.include_router(table_routes(state), prefix=base, dependencies=authenticated)
    if state.serves_views:
        api.include_router(view_routes(state), prefix=base, dependencies=authenticated)
    return api


def _protected_docs(api: FastAPI, authenticated: list[Any]) -> None:
    """``/openapi.json``, ``/docs`` and ``/redoc`` behind the bearer token (not in the schema)."""

    @api.get("/openapi.json", dependencies=authenticated, include_in_schema=False)
    def openapi() -> JSONResponse:
        return JSONResponse(api.openapi())

    @api.get("/docs", dependencies=authenticated, include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{api.title} - docs")

    @api.get("/redoc", dependencies=authenticated, include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{api.title} - ReDoc")


__all__ = ["app"]
