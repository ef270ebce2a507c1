"""Namespace routes (spec "Catalog API": listNamespaces ... updateProperties)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from firn.catalog.base import to_identifier
from firn.catalog.rest import protocol as p
from firn.errors import NoSuchNamespace
from firn.rest.errors import RestError
from firn.rest.models import CreateNamespaceRequest, UpdateNamespacePropertiesRequest
from firn.rest.routing import StrictJsonRoute
from firn.rest.state import ServerState, namespace_param, paginate


def namespace_routes(state: ServerState) -> APIRouter:
    router = APIRouter(route_class=StrictJsonRoute)
    catalog = state.catalog

    @router.get(f"/{p.NAMESPACES}", operation_id="listNamespaces")
    def list_namespaces(
        parent: str | None = None,
        page_token: str | None = Query(None, alias="pageToken"),
        page_size: int | None = Query(None, alias="pageSize", ge=1),
    ) -> dict[str, Any]:
        # Spec: an empty parent is treated as absent.
        parent_ns = namespace_param(parent) if parent else ()
        page, token = paginate(catalog.list_namespaces(parent_ns), page_token, page_size)
        body: dict[str, Any] = {"namespaces": [list(ns) for ns in page]}
        if token is not None:
            body["next-page-token"] = token
        return body

    @router.post(f"/{p.NAMESPACES}", operation_id="createNamespace")
    def create_namespace(request: CreateNamespaceRequest) -> dict[str, Any]:
        if not request.namespace:
            raise RestError(400, p.BAD_REQUEST, "invalid namespace []: it is empty")
        ns = to_identifier(request.namespace)  # the identifier rule, whatever catalog is served
        catalog.create_namespace(ns, request.properties)
        return {"namespace": list(ns), "properties": catalog.load_namespace_properties(ns)}

    @router.get(f"/{p.NAMESPACE}", operation_id="loadNamespaceMetadata")
    def load_namespace(namespace: str) -> dict[str, Any]:
        ns = namespace_param(namespace)
        return {"namespace": list(ns), "properties": catalog.load_namespace_properties(ns)}

    @router.head(f"/{p.NAMESPACE}", status_code=204, operation_id="namespaceExists")
    def namespace_exists(namespace: str) -> Response:
        ns = namespace_param(namespace)
        if not catalog.namespace_exists(ns):
            raise NoSuchNamespace(f"namespace {'.'.join(ns)!r} does not exist")
        return Response(status_code=204)

    @router.delete(f"/{p.NAMESPACE}", status_code=204, operation_id="dropNamespace")
    def drop_namespace(namespace: str) -> Response:
        catalog.drop_namespace(namespace_param(namespace))
        return Response(status_code=204)

    @router.post(f"/{p.NAMESPACE_PROPERTIES}", operation_id="updateProperties")
    def update_properties(namespace: str, request: UpdateNamespacePropertiesRequest) -> JSONResponse:
        ns = namespace_param(namespace)
        overlap = sorted(set(request.removals) & set(request.updates))
        if overlap:
            # Spec: 422 when a key is both removed and updated.
            raise RestError(422, p.UNPROCESSABLE, f"properties both removed and updated: {overlap}")
        summary = catalog.update_namespace_properties(ns, set(request.removals), request.updates)
        return JSONResponse(
            {
                "updated": list(summary.updated),
                "removed": list(summary.removed),
                "missing": list(summary.missing),
            }
        )

    return router


__all__ = ["namespace_routes"]
