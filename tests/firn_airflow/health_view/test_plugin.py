"""The plugin is loaded by Airflow (real CLI) and its routes refuse anonymous users."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from firn_airflow.health_view.plugin import PLUGIN_NAME, URL_PREFIX
from tests.fixtures.airflow import REPO, airflow_cli

pytestmark = pytest.mark.airflow


def test_airflow_plugins_lists_the_view(airflow_home: Path) -> None:
    out = airflow_cli("plugins", "--output", "json").stdout
    plugins = {p["name"]: p for p in json.loads(out[out.index("[") :])}
    plugin = plugins[PLUGIN_NAME]
    assert plugin["source"] == "$PLUGINS_FOLDER/firn_table_health.py"
    assert plugin["fastapi_apps"] == [
        {
            "app": "firn_airflow.health_view.plugin.LazyHealthViewApp",
            "url_prefix": URL_PREFIX,
            "name": "Firn table health",
        }
    ]
    (view,) = plugin["external_views"]
    assert view["href"] == f"{URL_PREFIX}/" and view["destination"] == "nav"
    assert (REPO / "plugins" / "firn_table_health.py").is_file()


def test_loading_the_plugin_imports_no_api_server_modules() -> None:
    # Task processes load plugins for their macros: the view's app is built on first request.
    code = (
        "import sys, airflow.sdk; import firn_airflow.health_view.plugin as p; "
        "assert 'airflow.api_fastapi.core_api.security' not in sys.modules, 'security'; "
        "assert 'firn_airflow.health_view.app' not in sys.modules, 'app'; "
        "assert 'firn' not in sys.modules, 'firn'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_api_server_mounts_the_view_and_requires_a_user(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A separate API server app without the "everyone is admin" shortcut: no token, no data.
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "False")
    monkeypatch.setenv("AIRFLOW_CONN_FIRN_LISTED", json.dumps({"conn_type": "firn", "host": "memory://"}))
    from airflow.api_fastapi.app import create_app

    # Core only: an execution API app here would share the module-level services registry of
    # the session's API server (airflow_api_server), and closing this client's lifespan would
    # drop that server's JWTValidator, failing every later dag.test(use_executor=True).
    with TestClient(create_app(apps="core")) as client:
        for path in ("/firn/", "/firn/api/connections", "/firn/api/tables", "/firn/api/tables/db.t"):
            response = client.get(path)
            assert response.status_code == 401, path
            assert response.json()["detail"] == "Not authenticated"
        # A signed-in viewer may open the page but not read connections (simple auth manager:
        # connections need the "op" role).
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

        viewer = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="viewer", role="viewer"))
        headers = {"Authorization": f"Bearer {viewer}"}
        assert client.get("/firn/", headers=headers).status_code == 200
        refused = client.get("/firn/api/tables", headers=headers)
        assert refused.status_code == 403
        assert refused.json()["detail"] == "not allowed to read connection 'firn_default'"
        assert "firn_listed" not in client.get("/firn/api/connections", headers=headers).json()["connections"]
        admin = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
        listed = client.get("/firn/api/connections", headers={"Authorization": f"Bearer {admin}"})
        assert "firn_listed" in listed.json()["connections"]
        # Static files carry no data and are served to anyone (the login page may need none).
        script = client.get("/firn/static/uPlot.iife.min.js")
        assert script.status_code == 200
        assert script.text.startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
