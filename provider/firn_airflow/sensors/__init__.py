"""Sensors on Firn tables: health conditions and new commits, both deferrable."""

from __future__ import annotations

from firn_airflow.sensors.health import FirnTableHealthSensor
from firn_airflow.sensors.new_snapshot import FirnNewSnapshotSensor

__all__ = ["FirnNewSnapshotSensor", "FirnTableHealthSensor"]
