"""The table-health view: a FastAPI app the Airflow API server mounts (see :mod:`.plugin`).

Routes (relative to the mount prefix, ``/firn`` by default):

* ``GET /`` — the page (HTML; charts drawn in the browser by the vendored uPlot);
* ``GET /static/...`` — the page's script, styles and uPlot (no CDN);
* ``GET /api/connections`` — the ``firn`` connections the user may read;
* ``GET /api/tables?conn_id=`` — every table of the catalog with its health and recommendations;
* ``GET /api/tables/{table}?conn_id=`` — one table: health, recommendations, snapshot
  history, maintenance events and the chart series.

Integers a browser cannot hold exactly (64-bit snapshot ids) are sent as strings.

Airflow does not protect plugin apps by itself, so every route requires an authenticated
Airflow user (the UI's JWT cookie or a bearer token); the JSON routes also require read access
to the connection (and to assets, for the maintenance history) from the auth manager.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from airflow.api_fastapi.auth.managers.models.resource_details import AssetDetails, ConnectionDetails
from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from firn.errors import FirnError, NotFound, ValidationError
from firn_airflow.assets import table_asset_uri
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.errors import FirnConnectionError
from firn_airflow.health_view import data
from firn_airflow.health_view.charts import build_charts
from firn_airflow.hooks.firn import FirnHook

STATIC_DIR = Path(str(files("firn_airflow.health_view") / "static"))
PAGE = files("firn_airflow.health_view") / "page.html"

ConnIdQuery = Query(DEFAULT_CONN_ID, min_length=1, max_length=250, description="A Firn connection id")


def _authorize(user: Any, conn_id: str | None, *, assets: bool = False) -> None:
    from airflow.api_fastapi.app import get_auth_manager

    manager = get_auth_manager()
    allowed = manager.is_authorized_connection(
        method="GET", details=ConnectionDetails(conn_id=conn_id), user=user
    )
    if allowed and assets:
        allowed = manager.is_authorized_asset(method="GET", details=AssetDetails(), user=user)
    if not allowed:
        what = f"connection {conn_id!r}" if conn_id else "connections"
        raise HTTPException(status_code=403, detail=f"not allowed to read {what}")


def _http_error(error: FirnError) -> HTTPException:
    """Map a Firn error to a status: unknown connection/table 404, bad input 400, else 502."""
    if isinstance(error, NotFound):
        return HTTPException(status_code=404, detail=str(error))
    if isinstance(error, FirnConnectionError | ValidationError):
        return HTTPException(status_code=400, detail=str(error))
    return HTTPException(status_code=502, detail=str(error))


def _outcome(result: data.Outcome) -> dict[str, Any]:
    return {"value": result.value, "error": result.error}


def create_app() -> FastAPI:
    """A new instance of the view's app (the plugin mounts one)."""
    app = FastAPI(
        title="Firn table health",
        description="Health, history and maintenance of the tables of a Firn catalog connection.",
        docs_url=None,
        redoc_url=None,
    )
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(user: GetUserDep) -> HTMLResponse:
        return HTMLResponse(PAGE.read_text(encoding="utf-8"))

    @app.get("/api/connections")
    def connections(user: GetUserDep, session: SessionDep) -> dict[str, Any]:
        from airflow.api_fastapi.app import get_auth_manager

        manager = get_auth_manager()
        ids = [
            conn_id
            for conn_id in data.firn_connection_ids(session)
            if manager.is_authorized_connection(
                method="GET", details=ConnectionDetails(conn_id=conn_id), user=user
            )
        ]
        return {"default": DEFAULT_CONN_ID, "connections": ids}

    @app.get("/api/tables")
    def tables(user: GetUserDep, conn_id: str = ConnIdQuery) -> dict[str, Any]:
        _authorize(user, conn_id)
        hook = FirnHook(conn_id)
        try:
            config = hook.get_config()
            catalog = hook.get_catalog()
            rows: list[dict[str, Any]] = []
            for name in data.all_tables(catalog):
                loaded = data.Outcome.of(catalog.load_table, name)
                if loaded.error is not None:
                    rows.append({"table": name, "error": loaded.error})
                    continue
                table = loaded.value
                rows.append(
                    {
                        "table": name,
                        "format_version": table.format_version,
                        "health": _outcome(health := data.Outcome.of(data.table_health, table)),
                        "health_display": data.health_display(health.value),
                        "recommendations": _outcome(data.Outcome.of(data.table_recommendations, table)),
                    }
                )
        except FirnError as e:
            raise _http_error(e) from None
        finally:
            hook.close()
        return data.browser_safe(
            {"conn_id": conn_id, "catalog": config.name, "catalog_uri": config.display_uri, "tables": rows}
        )

    @app.get("/api/tables/{table}")
    def table_detail(
        table: str, user: GetUserDep, session: SessionDep, conn_id: str = ConnIdQuery
    ) -> dict[str, Any]:
        _authorize(user, conn_id, assets=True)
        hook = FirnHook(conn_id)
        try:
            loaded = hook.load_table(table)
            health = data.Outcome.of(data.table_health, loaded)
            recommendations = data.Outcome.of(data.table_recommendations, loaded)
            history = data.snapshot_history(loaded)
            asset_uri = table_asset_uri(conn_id, table)
        except FirnError as e:
            raise _http_error(e) from None
        finally:
            hook.close()
        events = data.maintenance_events(session, conn_id, table)
        return data.browser_safe(
            {
                "conn_id": conn_id,
                "table": table,
                "format_version": loaded.format_version,
                "asset_uri": asset_uri,
                "health": _outcome(health),
                "health_display": data.health_display(health.value),
                "recommendations": _outcome(recommendations),
                "snapshots": history,
                "events": events,
                "charts": build_charts(history, events, health.value),
            }
        )

    return app


__all__ = ["STATIC_DIR", "create_app"]
