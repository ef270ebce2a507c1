"""View routes (spec "Catalog API": listViews ... registerView), for catalogs with views."""

from __future__ import annotations

from typing import Any, cast

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from firn.catalog.rest import protocol as p
from firn.errors import NoSuchView, ValidationError
from firn.rest import commits
from firn.rest.errors import RestError
from firn.rest.models import CommitViewRequest, CreateViewRequest, RegisterViewRequest, RenameRequest
from firn.rest.routing import StrictJsonRoute
from firn.rest.state import ServerState, check_identifier, identifiers_body, namespace_param, paginate, parse
from firn.spec.schema_json import schema_from_json
from firn.spec.view_metadata import SQLViewRepresentation, ViewMetadata, normalize_dialect
from firn.spec.view_metadata_json import version_from_dict, view_metadata_to_dict
from firn.views.updates import AssertViewUUID, view_update_from_json


def view_result(metadata: ViewMetadata, location: str) -> JSONResponse:
    """A ``LoadViewResult``."""
    return JSONResponse(
        {"metadata-location": location, "metadata": view_metadata_to_dict(metadata), "config": {}}
    )


def view_routes(state: ServerState) -> APIRouter:
    router = APIRouter(route_class=StrictJsonRoute)
    # Checked by the app (ServerState.serves_views): the catalog has every view method.
    views = cast(commits.ServedViews, state.catalog)

    @router.get(f"/{p.VIEWS}", operation_id="listViews")
    def list_views(
        namespace: str,
        page_token: str | None = Query(None, alias="pageToken"),
        page_size: int | None = Query(None, alias="pageSize", ge=1),
    ) -> dict[str, Any]:
        page, token = paginate(views.list_views(namespace_param(namespace)), page_token, page_size)
        return identifiers_body(page, token)

    @router.post(f"/{p.VIEWS}", operation_id="createView")
    def create_view(namespace: str, body: CreateViewRequest) -> JSONResponse:
        ns = namespace_param(namespace)
        schema = parse("schema", schema_from_json, body.schema_)
        # The version's schema-id is replaced by the id given to ``schema`` (spec).
        version = parse("view-version", version_from_dict, body.view_version)
        sql: dict[str, str] = {}
        for rep in version.representations:
            if not isinstance(rep, SQLViewRepresentation):
                raise RestError(400, p.BAD_REQUEST, f"unsupported view representation type {rep.type!r}")
            if any(normalize_dialect(d) == normalize_dialect(rep.dialect) for d in sql):
                raise ValidationError(f"two SQL representations of dialect {rep.dialect!r}")
            sql[rep.dialect] = rep.sql
        if not sql:
            raise ValidationError("a view version needs at least one SQL representation")
        view = views.create_view(
            (*ns, body.name),
            schema,
            sql,
            default_namespace=version.default_namespace,
            default_catalog=version.default_catalog,
            properties=body.properties,
            location=body.location,
            summary=version.summary,
        )
        return view_result(view.metadata, view.metadata_location)

    @router.get(f"/{p.VIEW}", operation_id="loadView")
    def load_view(namespace: str, view: str) -> JSONResponse:
        loaded = views.load_view((*namespace_param(namespace), view))
        return view_result(loaded.metadata, loaded.metadata_location)

    @router.head(f"/{p.VIEW}", status_code=204, operation_id="viewExists")
    def view_exists(namespace: str, view: str) -> Response:
        ident = (*namespace_param(namespace), view)
        if not views.view_exists(ident):
            raise NoSuchView(f"view {'.'.join(ident)!r} does not exist")
        return Response(status_code=204)

    @router.post(f"/{p.VIEW}", operation_id="replaceView")
    def replace_view(namespace: str, view: str, body: CommitViewRequest) -> JSONResponse:
        ns = namespace_param(namespace)
        check_identifier(body.identifier, ns, view)
        requirements = [AssertViewUUID.from_json(r) for r in body.requirements]
        updates = [view_update_from_json(u) for u in body.updates]
        metadata, location = commits.commit_view(views, (*ns, view), requirements, updates)
        return view_result(metadata, location)

    @router.delete(f"/{p.VIEW}", status_code=204, operation_id="dropView")
    def drop_view(namespace: str, view: str) -> Response:
        views.drop_view((*namespace_param(namespace), view))
        return Response(status_code=204)

    @router.post(f"/{p.RENAME_VIEW}", status_code=204, operation_id="renameView")
    def rename_view(body: RenameRequest) -> Response:
        views.rename_view(
            (*body.source.namespace, body.source.name), (*body.destination.namespace, body.destination.name)
        )
        return Response(status_code=204)

    @router.post(f"/{p.REGISTER_VIEW}", operation_id="registerView")
    def register_view(namespace: str, body: RegisterViewRequest) -> JSONResponse:
        registered = views.register_view((*namespace_param(namespace), body.name), body.metadata_location)
        return view_result(registered.metadata, registered.metadata_location)

    return router


__all__ = ["view_result", "view_routes"]
