"""Table maintenance: one planner per operation, plans that serialize to JSON, commits.

Reach it through ``table.maintenance``::

    table.maintenance.flush_root().plan()      # dry run
    table.maintenance.flush_root().commit()    # FlushRootResult
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firn.maintenance.flush_root import FlushRoot, FlushRootPlan, FlushRootResult

if TYPE_CHECKING:
    from firn.core.handle import TableHandle


class TableMaintenance:
    """The ``table.maintenance`` namespace."""

    def __init__(self, table: TableHandle) -> None:
        self._table = table

    def flush_root(self, *, force: bool = False, affiliate: bool = True) -> FlushRoot:
        """Move root entries of a V4 table into leaf manifests (thresholds: ``commit.root.*``)."""
        return FlushRoot(self._table, force=force, affiliate=affiliate)


__all__ = ["FlushRoot", "FlushRootPlan", "FlushRootResult", "TableMaintenance"]
