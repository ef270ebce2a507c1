"""The Airflow plugin that mounts the table-health view.

``fastapi_apps`` mounts the view's app under ``/firn`` on the API server; ``external_views`` adds
"Firn table health" to the navigation's Browse menu, where the UI shows the page in a frame
(``url_route``) at ``/plugin/firn-table-health``.

Task processes load every plugin too (for macros), so this module stays light: the FastAPI app,
and with it the API server's security and database modules, is built on the first request.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from airflow.plugins_manager import AirflowPlugin

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

URL_PREFIX = "/firn"
PLUGIN_NAME = "firn_table_health"


class LazyHealthViewApp:
    """An ASGI app that builds :func:`~firn_airflow.health_view.app.create_app` when first called."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._app is None:
                from firn_airflow.health_view.app import create_app

                self._app = create_app()
            return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app if self._app is not None else self._get()
        await app(scope, receive, send)


class FirnTableHealthPlugin(AirflowPlugin):
    """Firn table health: metrics, history charts, maintenance events and recommendations."""

    name = PLUGIN_NAME
    fastapi_apps: list[Any] = [
        {"app": LazyHealthViewApp(), "url_prefix": URL_PREFIX, "name": "Firn table health"},
    ]
    external_views: list[Any] = [
        {
            "name": "Firn table health",
            # Trailing slash: the page loads its script and data by relative URLs.
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "firn-table-health",
        }
    ]


__all__ = ["PLUGIN_NAME", "URL_PREFIX", "FirnTableHealthPlugin", "LazyHealthViewApp"]
