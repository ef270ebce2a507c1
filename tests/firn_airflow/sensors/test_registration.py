"""The sensors and triggers are registered with Airflow's providers manager."""

from __future__ import annotations

import importlib

import pytest

from firn_airflow.get_provider_info import SENSOR_MODULES, TRIGGER_MODULES, get_provider_info

pytestmark = pytest.mark.airflow


def test_provider_info_lists_the_sensor_and_trigger_modules() -> None:
    info = get_provider_info()
    assert info["sensors"] == [
        {
            "integration-name": "Firn",
            "python-modules": ["firn_airflow.sensors.health", "firn_airflow.sensors.new_snapshot"],
        }
    ]
    assert info["triggers"] == [
        {
            "integration-name": "Firn",
            "python-modules": [
                "firn_airflow.triggers.health",
                "firn_airflow.triggers.new_snapshot",
                "firn_airflow.triggers.commit",
            ],
        }
    ]
    exported = {
        "firn_airflow.sensors.health": "FirnTableHealthSensor",
        "firn_airflow.sensors.new_snapshot": "FirnNewSnapshotSensor",
        "firn_airflow.triggers.health": "FirnTableHealthTrigger",
        "firn_airflow.triggers.new_snapshot": "FirnNewSnapshotTrigger",
        "firn_airflow.triggers.commit": "FirnCommitTrigger",
    }
    for module in (*SENSOR_MODULES, *TRIGGER_MODULES):
        assert hasattr(importlib.import_module(module), exported[module])


def test_providers_manager_knows_the_triggers() -> None:
    from airflow.providers_manager import ProvidersManager

    ours = {
        t.trigger_class_name for t in ProvidersManager().trigger if t.package_name == "airflow-provider-firn"
    }
    assert ours == set(TRIGGER_MODULES)
