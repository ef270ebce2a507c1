"""``firn.rest.app(catalog)``: a FastAPI app serving any Firn catalog over Iceberg's REST protocol.

Routes follow the OpenAPI spec (``open-api/rest-catalog-open-api.yaml`` of apache/iceberg):
``/v1/config``, ``/v1/oauth/tokens``, and under ``/v1/[<prefix>/]`` the namespace, table and
(for catalogs with views) view routes. ``/v1/config`` lists exactly the endpoints served.
Not served: multi-table transactions (answered 406: Firn catalogs commit one table at a
time), server-side scan planning, credential loading, remote signing and ``unregister``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from firn.catalog.base import Catalog
from firn.catalog.rest import protocol as p
from firn.rest.auth import DEFAULT_TOKEN_TTL_S, TokenAuthority
from firn.rest.errors import install_error_handlers
from firn.rest.namespaces import namespace_routes
from firn.rest.state import ServerState, TableConfigHook
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
) -> FastAPI:
    """Serve ``catalog`` over the REST protocol.

    * ``token``: a fixed bearer token every request must carry; ``oauth_clients``
      (``{client_id: secret}``): clients that may obtain tokens from ``/v1/oauth/tokens``,
      valid for ``token_ttl_seconds``. Without either, no authentication is asked for.
    * ``prefix``: serve the catalog routes under ``/v1/<prefix>/`` (sent to clients as the
      ``prefix`` override of ``/v1/config``); ``defaults`` / ``overrides``: more of
      ``/v1/config``.
    * ``table_defaults``: properties for tables created over REST that do not set them
      (e.g. ``{"format-version": "2"}`` for engines that do not read V4, Firn's default).
    * ``table_config(identifier, metadata, mechanisms)``: the ``config`` returned with a
      loaded, created or registered table, given the mechanisms the client asked for in
      ``X-Iceberg-Access-Delegation`` (where a deployment vends storage credentials).
    """
    clean_prefix = (prefix or "").strip("/")
    state = ServerState(
        catalog=catalog,
        auth=TokenAuthority(token, oauth_clients, token_ttl_seconds),
        prefix=clean_prefix,
        defaults=dict(defaults or {}),
        overrides={**(overrides or {}), **({p.PREFIX: clean_prefix} if clean_prefix else {})},
        table_defaults=dict(table_defaults or {}),
        table_config=table_config,
    )
    api = FastAPI(
        title=f"Firn Iceberg REST catalog ({catalog.name})",
        version=__version__,
        description="The Apache Iceberg REST catalog protocol, served by Firn.",
    )
    api.state.firn = state
    install_error_handlers(api)
    authenticated = [Depends(state.authenticate)]
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


__all__ = ["app"]
