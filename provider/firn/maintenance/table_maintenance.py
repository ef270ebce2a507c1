"""The ``table.maintenance`` namespace: one method per operation, each returning an operation
with ``plan()`` (the dry run) and ``run(runner=None)``."""

from __future__ import annotations

from firn.maintenance.base import MaintainedTable
from firn.maintenance.expire_snapshots import ExpireSnapshots
from firn.maintenance.flush_root import FlushRoot
from firn.maintenance.health import table_health
from firn.maintenance.recommend import Recommendation, recommend
from firn.maintenance.remove_orphan_files import RemoveOrphanFiles
from firn.maintenance.rewrite_data_files import RewriteDataFiles
from firn.maintenance.rewrite_deletion_vectors import RewriteDeletionVectors
from firn.maintenance.rewrite_manifests import RewriteManifests
from firn.maintenance.rewrite_position_deletes import RewritePositionDeleteFiles


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
        ``clean_expired_metadata``, ``max_concurrent_deletes``, ``stream_results`` (accepted,
        no effect)."""
        return ExpireSnapshots(self._table, **options)

    def remove_orphan_files(self, **options: object) -> RemoveOrphanFiles:
        """Find files under the table location that no snapshot or metadata file references;
        with ``dry_run=False`` record new ones and delete those an earlier run recorded at least
        ``orphans.grace`` ago (two phases; only inside the table's own places, never through a
        symlink or into another table's location). Options (Iceberg's): ``older_than``,
        ``location``, ``dry_run``, ``max_concurrent_deletes``, ``prefix_mismatch_mode``,
        ``equal_schemes``, ``equal_authorities``, ``stream_results`` and ``prefix_listing``
        (accepted, no effect); Firn's ``force``."""
        return RemoveOrphanFiles(self._table, **options)

    def rewrite_data_files(self, **options: object) -> RewriteDataFiles:
        """Compaction (Iceberg's ``rewrite_data_files``): bin-pack or sort small files and files
        with many deletes into files of ``target_file_size_bytes``. Options are Iceberg's, with
        ``_`` for ``-`` (``min_input_files``, ``partial_progress_enabled``, ``where``, ...)."""
        return RewriteDataFiles(self._table, **options)

    def rewrite_deletion_vectors(self, **options: object) -> RewriteDeletionVectors:
        """v3/V4: merge each data file's position deletes into one DV, convert v2 position
        delete files to DVs, pack DVs of small Puffin files together, drop dangling deletes,
        and list data files above ``delete_ratio_threshold`` for ``rewrite_data_files``."""
        return RewriteDeletionVectors(self._table, **options)

    def rewrite_position_delete_files(self, **options: object) -> RewritePositionDeleteFiles:
        """Iceberg's ``rewrite_position_delete_files``: on v2, compact position delete files
        (dropping dangling positions); on v3+, convert leftover v2 position deletes to DVs."""
        return RewritePositionDeleteFiles(self._table, **options)

    def rewrite_manifests(self, **options: object) -> RewriteManifests:
        """Iceberg's ``rewrite_manifests``: v1-v3 manifests clustered by partition up to
        ``commit.manifest.target-size-bytes``; V4 small leaves merged and manifest DVs folded.
        Options: ``spec_id``, ``sort_by``, ``use_caching``, ``branch``."""
        return RewriteManifests(self._table, **options)


__all__ = ["TableMaintenance"]
