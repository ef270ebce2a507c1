"""The Airflow plugin that mounts the table-health view.

``fastapi_apps`` mounts :func:`~firn_airflow.health_view.app.create_app` under ``/firn`` on the
API server; ``external_views`` adds "Firn table health" to the navigation's Browse menu, where
the UI shows the page in a frame (``url_route``) at ``/plugin/firn-table-health``.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from firn_airflow.health_view.app import create_app

URL_PREFIX = "/firn"
PLUGIN_NAME = "firn_table_health"


class FirnTableHealthPlugin(AirflowPlugin):
    """Firn table health: metrics, history charts, maintenance events and recommendations."""

    name = PLUGIN_NAME
    fastapi_apps: list[Any] = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "Firn table health"},
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


__all__ = ["PLUGIN_NAME", "URL_PREFIX", "FirnTableHealthPlugin"]
