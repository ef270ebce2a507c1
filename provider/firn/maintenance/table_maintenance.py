"""The ``table.maintenance`` namespace: one method per operation, each returning an operation
with ``plan()`` (the dry run) and ``run(runner=None)``."""

from __future__ import annotations

from firn.maintenance.base import MaintainedTable
from firn.maintenance.expire_snapshots import ExpireSnapshots
from firn.maintenance.flush_root import FlushRoot
from firn.maintenance.health import table_health
from firn.maintenance.recommend import Recommendation, recommend
from firn.maintenance.remove_orphan_files import RemoveOrphanFiles


class TableMaintenance:
    """``table.maintenance``: maintenance operations of one table."""

    def __init__(self, table: MaintainedTable) -> None:
        self._table = table

    def flush_root(self, **options: object) -> FlushRoot:
        """Move root entries of a V4 table into leaf manifests (thresholds: ``commit.root.*``).
        Options: ``force``, ``affiliate``, ``branch``."""
        return FlushRoot(self._table, **options)

    def recommend(self) -> list[Recommendation]:
        """The operations worth running now, in nightly order, each with its reason, options
        and an estimate; read from ``table.health()`` and the ``maintenance.*`` thresholds
        (see ``firn.maintenance.recommend``)."""
        return recommend(table_health(self._table), self._table.metadata.properties)

    def expire_snapshots(self, **options: object) -> ExpireSnapshots:
        """Expire snapshots by the retention policy and delete the files only they reach.
        Options (Iceberg's): ``older_than``, ``retain_last``, ``snapshot_ids``,
        ``clean_expired_metadata``, ``max_concurrent_deletes``."""
        return ExpireSnapshots(self._table, **options)

    def remove_orphan_files(self, **options: object) -> RemoveOrphanFiles:
        """Find (and with ``dry_run=False`` delete) files under the table location that no
        snapshot or metadata file references. Options (Iceberg's): ``older_than``,
        ``location``, ``dry_run``, ``max_concurrent_deletes``, ``prefix_mismatch_mode``,
        ``equal_schemes``, ``equal_authorities``; Firn's ``force``."""
        return RemoveOrphanFiles(self._table, **options)


__all__ = ["TableMaintenance"]
