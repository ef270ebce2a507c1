"""Triggers: table health, new snapshots, and commits for ``AssetWatcher`` scheduling.

* :class:`FirnTableHealthTrigger` fires once ``table.health()`` meets conditions (the deferred
  half of :class:`~firn_airflow.sensors.FirnTableHealthSensor`);
* :class:`FirnNewSnapshotTrigger` fires once a branch has a commit after a watermark (the
  deferred half of :class:`~firn_airflow.sensors.FirnNewSnapshotSensor`);
* :class:`FirnCommitTrigger` fires once per commit, to schedule DAGs on a table's commits.

All of them read the catalog in worker threads and sleep with ``asyncio.sleep``; none touches
Airflow's metadata database.
"""

from __future__ import annotations

from firn_airflow.triggers.commit import FirnCommitTrigger
from firn_airflow.triggers.health import FirnTableHealthTrigger
from firn_airflow.triggers.new_snapshot import FirnNewSnapshotTrigger

__all__ = ["FirnCommitTrigger", "FirnNewSnapshotTrigger", "FirnTableHealthTrigger"]
