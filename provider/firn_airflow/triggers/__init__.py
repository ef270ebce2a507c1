"""Triggers: table health, new snapshots, and commits for ``AssetWatcher`` scheduling.

* :class:`FirnTableHealthTrigger` fires once ``table.health()`` meets conditions (the deferred
  half of :class:`~firn_airflow.sensors.FirnTableHealthSensor`);
* :class:`FirnNewSnapshotTrigger` fires once a branch has a commit after a watermark (the
  deferred half of :class:`~firn_airflow.sensors.FirnNewSnapshotSensor`);
* :class:`FirnCommitTrigger` fires once per commit, to schedule DAGs on a table's commits.

The triggerer imports a trigger's module inside its event loop, so these modules import in
milliseconds: nothing here imports the Firn library (Arrow, the catalogs, the table model) at
module level. Each trigger imports it on its first poll, in the worker thread that polls
(``asyncio.to_thread``), and every catalog and FileIO call runs in that thread too; between
polls the triggers sleep with ``asyncio.sleep``. None touches Airflow's metadata database.
This package names the three classes lazily (PEP 562) for the same reason.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from firn_airflow.triggers.commit import FirnCommitTrigger
    from firn_airflow.triggers.health import FirnTableHealthTrigger
    from firn_airflow.triggers.new_snapshot import FirnNewSnapshotTrigger

_MODULES = {
    "FirnCommitTrigger": "firn_airflow.triggers.commit",
    "FirnTableHealthTrigger": "firn_airflow.triggers.health",
    "FirnNewSnapshotTrigger": "firn_airflow.triggers.new_snapshot",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'firn_airflow.triggers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["FirnCommitTrigger", "FirnNewSnapshotTrigger", "FirnTableHealthTrigger"]
