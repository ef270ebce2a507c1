"""The ``table.maintenance`` namespace: one method per operation, each returning an operation
with ``plan()`` (the dry run) and ``run(runner=None)``."""

from __future__ import annotations

from firn.maintenance.base import MaintainedTable
from firn.maintenance.flush_root import FlushRoot


class TableMaintenance:
    """``table.maintenance``: maintenance operations of one table."""

    def __init__(self, table: MaintainedTable) -> None:
        self._table = table

    def flush_root(self, **options: object) -> FlushRoot:
        """Move root entries of a V4 table into leaf manifests (thresholds: ``commit.root.*``).
        Options: ``force``, ``affiliate``, ``branch``."""
        return FlushRoot(self._table, **options)


__all__ = ["TableMaintenance"]
