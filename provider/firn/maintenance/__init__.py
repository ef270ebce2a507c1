"""Table maintenance: one planner per operation, plans that serialize to JSON, runners, commits.

Reach it through ``table.maintenance``::

    op = table.maintenance.expire_snapshots(retain_last=5)
    print(op.plan())          # dry run: a frozen, JSON-serializable plan
    result = op.run()         # work units on a runner, one commit; a typed result

Each method's keyword arguments are its options dataclass (:mod:`firn.maintenance.options`);
every operation is declared once in :mod:`firn.maintenance.registry`.
"""

from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    Skipped,
)
from firn.maintenance.expire_snapshots import ExpireSnapshots, ExpireSnapshotsPlan, ExpireSnapshotsResult
from firn.maintenance.flush_root import FlushRoot, FlushRootPlan, FlushRootResult
from firn.maintenance.health import TableHealth, table_health
from firn.maintenance.options import (
    ExpireSnapshotsOptions,
    FlushRootOptions,
    MaintenanceOptions,
    RemoveOrphanFilesOptions,
    RewriteDataFilesOptions,
    RewriteDeletionVectorsOptions,
    RewriteManifestsOptions,
    RewritePositionDeleteFilesOptions,
)
from firn.maintenance.recommend import Estimate, Recommendation
from firn.maintenance.registry import OperationSpec
from firn.maintenance.remove_orphan_files import (
    RemoveOrphanFiles,
    RemoveOrphanFilesPlan,
    RemoveOrphanFilesResult,
)
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
    "Estimate",
    "ExpireSnapshots",
    "ExpireSnapshotsPlan",
    "ExpireSnapshotsOptions",
    "ExpireSnapshotsResult",
    "FlushRoot",
    "FlushRootOptions",
    "FlushRootPlan",
    "FlushRootResult",
    "LocalRunner",
    "MaintainedTable",
    "MaintenanceOperation",
    "MaintenanceOptions",
    "MaintenancePlan",
    "MaintenanceResult",
    "RemoveOrphanFiles",
    "OperationSpec",
    "RemoveOrphanFilesOptions",
    "RemoveOrphanFilesPlan",
    "RemoveOrphanFilesResult",
    "RewriteDataFiles",
    "RewriteDataFilesOptions",
    "RewriteDataFilesPlan",
    "RewriteDataFilesResult",
    "RewriteDeletionVectors",
    "RewriteDeletionVectorsOptions",
    "RewriteDeletionVectorsPlan",
    "RewriteDeletionVectorsResult",
    "RewriteManifests",
    "RewriteManifestsOptions",
    "RewriteManifestsPlan",
    "RewriteManifestsResult",
    "RewritePositionDeleteFiles",
    "RewritePositionDeleteFilesOptions",
    "RewritePositionDeleteFilesPlan",
    "RewritePositionDeleteFilesResult",
    "Runner",
    "Recommendation",
    "Skipped",
    "TableHealth",
    "TableMaintenance",
    "WorkUnit",
    "table_health",
]
