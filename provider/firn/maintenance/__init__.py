"""Table maintenance: one planner per operation, plans that serialize to JSON, runners, commits.

Reach it through ``table.maintenance``::

    op = table.maintenance.flush_root(force=True)
    print(op.plan())          # dry run: a frozen, JSON-serializable plan
    result = op.run()         # work units on a runner, one commit; a typed result
"""

from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    Skipped,
)
from firn.maintenance.flush_root import FlushRoot, FlushRootPlan, FlushRootResult
from firn.maintenance.rewrite_data_files import RewriteDataFiles, RewriteDataFilesPlan, RewriteDataFilesResult
from firn.maintenance.rewrite_deletion_vectors import (
    RewriteDeletionVectors,
    RewriteDeletionVectorsPlan,
    RewriteDeletionVectorsResult,
)
from firn.maintenance.rewrite_manifests import RewriteManifests, RewriteManifestsPlan, RewriteManifestsResult
from firn.maintenance.rewrite_position_deletes import (
    RewritePositionDeleteFiles,
    RewritePositionDeleteFilesPlan,
    RewritePositionDeleteFilesResult,
)
from firn.maintenance.runner import LocalRunner, Runner, WorkUnit
from firn.maintenance.table_maintenance import TableMaintenance

__all__ = [
    "FlushRoot",
    "FlushRootPlan",
    "FlushRootResult",
    "LocalRunner",
    "MaintainedTable",
    "MaintenanceOperation",
    "MaintenancePlan",
    "MaintenanceResult",
    "RewriteDataFiles",
    "RewriteDataFilesPlan",
    "RewriteDataFilesResult",
    "RewriteDeletionVectors",
    "RewriteDeletionVectorsPlan",
    "RewriteDeletionVectorsResult",
    "RewriteManifests",
    "RewriteManifestsPlan",
    "RewriteManifestsResult",
    "RewritePositionDeleteFiles",
    "RewritePositionDeleteFilesPlan",
    "RewritePositionDeleteFilesResult",
    "Runner",
    "Skipped",
    "TableMaintenance",
    "WorkUnit",
]
