"""Both Firn sensors share one "poke once, then defer" path: FirnTableSensor."""

from __future__ import annotations

import pytest

from firn.errors import ValidationError
from firn_airflow.sensors import FirnNewSnapshotSensor, FirnTableHealthSensor
from firn_airflow.sensors.base import FirnTableSensor

pytestmark = pytest.mark.airflow

SENSORS = (FirnTableHealthSensor, FirnNewSnapshotSensor)


@pytest.mark.parametrize("sensor", SENSORS)
def test_the_sensors_inherit_execution_instead_of_copying_it(sensor: type[FirnTableSensor]) -> None:
    assert issubclass(sensor, FirnTableSensor)
    assert "execute" not in vars(sensor)
    assert "_table_reader" not in vars(sensor)
    assert {"table", "firn_conn_id"} <= set(sensor.template_fields)


def test_the_event_keys_name_the_trigger_results() -> None:
    assert FirnTableHealthSensor.event_key == "health"
    assert FirnNewSnapshotSensor.event_key == "snapshot"


@pytest.mark.parametrize("sensor", SENSORS)
def test_a_bad_table_name_fails_at_parse_time_in_both(sensor: type[FirnTableSensor]) -> None:
    extra = {"conditions": {"data_files": ">= 1"}} if sensor is FirnTableHealthSensor else {}
    with pytest.raises(ValidationError, match=r"'<namespace>\.<table>'"):
        sensor(task_id="s", table="events", **extra)  # type: ignore[arg-type]


def test_new_snapshot_sensor_cannot_defer_before_its_first_poke() -> None:
    sensor = FirnNewSnapshotSensor(task_id="s", table="db.events")
    with pytest.raises(RuntimeError, match="before the first poke"):
        sensor.trigger()
