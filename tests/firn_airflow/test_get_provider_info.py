"""Provider registration: the provider-info dict, and discovery by Airflow's real CLI and
providers manager."""

from __future__ import annotations

import json
from importlib.metadata import distribution
from pathlib import Path

import pytest

from firn_airflow.get_provider_info import get_provider_info
from tests.fixtures.airflow import airflow_cli

pytestmark = pytest.mark.airflow


def test_provider_info_matches_airflows_schema_and_the_distribution() -> None:
    import airflow
    import jsonschema

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    # Discovery refuses a provider whose package-name is not its distribution's name.
    assert info["package-name"] == distribution("airflow-provider-firn").metadata["Name"]
    assert info["hooks"] == [{"integration-name": "Firn", "python-modules": ["firn_airflow.hooks.firn"]}]
    (conn_type,) = info["connection-types"]
    assert conn_type["connection-type"] == "firn"
    assert conn_type["hook-class-name"] == "firn_airflow.hooks.firn.FirnHook"
    secret = conn_type["conn-fields"]["s3_secret_access_key"]["schema"]
    assert secret["format"] == "password"
    assert conn_type["conn-fields"]["properties"]["schema"]["type"] == ["object", "null"]
    assert conn_type["ui-field-behaviour"]["relabeling"]["host"] == "Catalog URI"
    assert info["asset-uris"] == [
        {
            "schemes": ["firn"],
            "handler": "firn_airflow.assets.sanitize_uri",
            "factory": "firn_airflow.assets.create_asset",
        }
    ]


def test_providers_managers_register_hook_form_and_asset_scheme(airflow_home: Path) -> None:
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    from firn_airflow.assets import create_asset, sanitize_uri

    pm = ProvidersManager()
    runtime = ProvidersManagerTaskRuntime()
    assert "airflow-provider-firn" in pm.providers
    hook = runtime.hooks["firn"]
    assert hook is not None
    assert hook.hook_class_name == "firn_airflow.hooks.firn.FirnHook"
    assert hook.connection_id_attribute_name == "firn_conn_id"
    assert hook.connection_testable
    widgets = pm.connection_form_widgets
    assert widgets["extra__firn__s3_secret_access_key"].is_sensitive
    assert not widgets["extra__firn__warehouse"].is_sensitive
    assert pm.field_behaviours["firn"]["hidden_fields"] == ["schema", "port"]
    assert runtime.asset_uri_handlers["firn"] is sanitize_uri
    assert runtime.asset_factories["firn"] is create_asset


def test_airflow_providers_list_shows_the_provider(airflow_home: Path) -> None:
    out = airflow_cli("providers", "list", "--output", "json").stdout
    providers = {p["package_name"]: p for p in json.loads(out[out.index("[") :])}
    assert providers["airflow-provider-firn"]["version"] == get_provider_info()["versions"][0]


def test_every_maintenance_operator_is_listed() -> None:
    import importlib
    import inspect

    from airflow.sdk import BaseOperator

    from firn_airflow import operators

    (entry,) = get_provider_info()["operators"]
    assert entry["integration-name"] == "Firn"
    defined = {
        name
        for module in entry["python-modules"]
        for name, obj in vars(importlib.import_module(module)).items()
        if inspect.isclass(obj) and issubclass(obj, BaseOperator) and obj.__module__ == module
    }
    maintenance = {
        "FirnExpireSnapshotsOperator",
        "FirnFlushRootManifestOperator",
        "FirnMaintenanceOperator",
        "FirnRemoveOrphanFilesOperator",
        "FirnRewriteDataFilesOperator",
        "FirnRewriteDeletionVectorsOperator",
        "FirnRewriteManifestsOperator",
    }
    assert maintenance <= defined <= set(operators.__all__)
