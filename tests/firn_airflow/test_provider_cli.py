"""What Airflow's real CLI shows of the provider: the package (``providers list`` / ``get``) with
every hook, operator, sensor and trigger, the ``firn`` connection type's hook and form fields,
and the triggers it registers. (``airflow connections add --conn-type firn`` and ``airflow
connections test`` are run in tests/firn_airflow/hooks/test_firn.py and test_firn_rest.py.)"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from firn_airflow import __version__
from tests.fixtures.airflow import airflow_cli

pytestmark = pytest.mark.airflow

PACKAGE = "airflow-provider-firn"
OPERATORS = {
    "FirnExpireSnapshotsOperator",
    "FirnFlushRootManifestOperator",
    "FirnMaintenanceOperator",
    "FirnRemoveOrphanFilesOperator",
    "FirnRewriteDataFilesOperator",
    "FirnRewriteDeletionVectorsOperator",
    "FirnRewriteManifestsOperator",
    "FirnSparkSubmitOperator",
}
SENSORS = {"FirnTableHealthSensor", "FirnNewSnapshotSensor"}
TRIGGERS = {"FirnTableHealthTrigger", "FirnNewSnapshotTrigger", "FirnCommitTrigger"}
HOOKS = {"FirnHook"}


def _cli_json(*args: str) -> Any:
    out = airflow_cli(*args, "--output", "json").stdout
    return json.loads(out[out.index("[") :])  # warnings may be logged before the document


def _classes(modules: list[str], base: type) -> set[str]:
    """The public subclasses of ``base`` defined in ``modules``."""
    return {
        name
        for module in modules
        for name, obj in vars(importlib.import_module(module)).items()
        if inspect.isclass(obj)
        and issubclass(obj, base)
        and obj.__module__ == module
        and not name.startswith("_")
    }


def test_providers_list_and_get_show_every_hook_operator_sensor_and_trigger(airflow_home: Path) -> None:
    from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    listed = {p["package_name"]: p for p in _cli_json("providers", "list")}
    assert listed[PACKAGE]["version"] == __version__

    (info,) = _cli_json("providers", "get", PACKAGE, "--full")
    assert info["package-name"] == PACKAGE and info["name"] == "Firn"

    def modules(kind: str) -> list[str]:
        (entry,) = info[kind]
        assert entry["integration-name"] == "Firn"
        return list(entry["python-modules"])

    assert _classes(modules("hooks"), BaseHook) == HOOKS
    assert _classes(modules("operators"), BaseOperator) == OPERATORS
    assert _classes(modules("sensors"), BaseSensorOperator) == SENSORS
    assert _classes(modules("triggers"), BaseTrigger) == TRIGGERS
    (conn_type,) = info["connection-types"]
    assert (conn_type["connection-type"], conn_type["hook-class-name"]) == (
        "firn",
        "firn_airflow.hooks.firn.FirnHook",
    )
    assert [a["schemes"] for a in info["asset-uris"]] == [["firn"]]


def test_providers_hooks_triggers_and_widgets_register_the_connection_type(airflow_home: Path) -> None:
    hooks = [h for h in _cli_json("providers", "hooks") if h.get("package_name") == PACKAGE]
    assert hooks == [
        {
            "connection_type": "firn",
            "class": "firn_airflow.hooks.firn.FirnHook",
            "conn_id_attribute_name": "firn_conn_id",
            "package_name": PACKAGE,
            "hook_name": "Firn",
        }
    ]

    triggers = {t["class"] for t in _cli_json("providers", "triggers") if t.get("package_name") == PACKAGE}
    assert triggers == {
        "firn_airflow.triggers.commit",
        "firn_airflow.triggers.health",
        "firn_airflow.triggers.new_snapshot",
    }

    widgets = {
        w["connection_parameter_name"]
        for w in _cli_json("providers", "widgets")
        if w.get("package_name") == PACKAGE
    }
    assert widgets == {
        f"extra__firn__{name}"
        for name in (
            "warehouse",
            "catalog_name",
            "properties",
            "s3_access_key_id",
            "s3_secret_access_key",
            "s3_session_token",
        )
    }
