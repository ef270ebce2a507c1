"""The ``table.maintenance`` namespace: one method per operation, each returning an operation
with ``plan()`` (the dry run) and ``run(runner=None)``.

Each method's keyword-only arguments are its options dataclass's fields
(``firn.maintenance.options``), defaults and types included: the signature is the dataclass's,
so a default is written once. Operations registered at run time (``firn.maintenance.registry``)
are reached with :meth:`TableMaintenance.operation`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from firn.errors import ValidationError
from firn.maintenance.base import MaintainedTable, MaintenanceOperation
from firn.maintenance.expire_snapshots import ExpireSnapshots
from firn.maintenance.flush_root import FlushRoot
from firn.maintenance.health import table_health
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
from firn.maintenance.recommend import Recommendation, recommend
from firn.maintenance.registry import spec_for_table
from firn.maintenance.remove_orphan_files import RemoveOrphanFiles
from firn.maintenance.rewrite_data_files import RewriteDataFiles
from firn.maintenance.rewrite_deletion_vectors import RewriteDeletionVectors
from firn.maintenance.rewrite_manifests import RewriteManifests
from firn.maintenance.rewrite_position_deletes import RewritePositionDeleteFiles

P = ParamSpec("P")
OptionsT = TypeVar("OptionsT", bound=MaintenanceOptions)
Op = TypeVar("Op", bound=MaintenanceOperation[Any, Any, Any])


def _method(
    options: Callable[P, OptionsT], operation: Callable[[MaintainedTable, OptionsT], Op], doc: str
) -> Callable[Concatenate[TableMaintenance, P], Op]:
    """A ``table.maintenance`` method taking ``options``' fields as keyword arguments."""

    def method(self: TableMaintenance, /, *args: P.args, **kwargs: P.kwargs) -> Op:
        # Through ``from_iceberg``: a misspelt keyword is a ValidationError naming the close
        # matches (not a bare TypeError); the fields are keyword-only, so ``args`` is empty.
        if args:
            raise ValidationError(f"{options.__name__} takes keyword arguments only")
        return operation(self._table, cast("type[OptionsT]", options).from_iceberg(kwargs))

    params = list(inspect.signature(options).parameters.values())
    method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY), *params]
    )
    method.__doc__ = doc
    return method


class TableMaintenance:
    """``table.maintenance``: maintenance operations of one table."""

    def __init__(self, table: MaintainedTable) -> None:
        self._table = table

    def recommend(self) -> list[Recommendation]:
        """The operations worth running now, in nightly order, each with its reason, options
        and an estimate; read from ``table.health()`` and the ``maintenance.*`` thresholds
        (see ``firn.maintenance.recommend``)."""
        return recommend(table_health(self._table), self._table.metadata.properties)

    def operation(
        self, name: str, options: MaintenanceOptions | Mapping[str, object] | None = None
    ) -> MaintenanceOperation[Any, Any, Any]:
        """The operation ``name`` (a registry name or short name, e.g. ``"compact"``) with
        ``options`` (a dataclass, or a mapping by Iceberg name), for this table's format version
        (``rewrite-dvs`` is ``rewrite_position_delete_files`` on v2)."""
        return spec_for_table(name, self._table.metadata.format_version).create(self._table, options)

    flush_root = _method(
        FlushRootOptions,
        FlushRoot,
        """Move root entries of a V4 table into leaf manifests (thresholds: ``commit.root.*``).""",
    )
    expire_snapshots = _method(
        ExpireSnapshotsOptions,
        ExpireSnapshots,
        """Expire snapshots by the retention policy and delete the files only they reach
        (Iceberg's ``expire_snapshots``; ``stream_results`` is accepted, no effect).""",
    )
    remove_orphan_files = _method(
        RemoveOrphanFilesOptions,
        RemoveOrphanFiles,
        """Find files under the table location that no snapshot or metadata file references;
        with ``delete=True`` (Iceberg: ``dry-run=false``) record new ones and delete those an
        earlier run recorded at least ``orphans.grace`` ago (two phases; only inside the table's
        own places, never through a symlink or into another table's location).""",
    )
    rewrite_data_files = _method(
        RewriteDataFilesOptions,
        RewriteDataFiles,
        """Compaction (Iceberg's ``rewrite_data_files``): bin-pack or sort small files and files
        with many deletes into files of ``target_file_size_bytes``.""",
    )
    rewrite_deletion_vectors = _method(
        RewriteDeletionVectorsOptions,
        RewriteDeletionVectors,
        """v3/V4: merge each data file's position deletes into one DV, convert v2 position
        delete files to DVs, pack DVs of small Puffin files together, drop dangling deletes,
        and list data files above ``delete_ratio_threshold`` for ``rewrite_data_files``.""",
    )
    rewrite_position_delete_files = _method(
        RewritePositionDeleteFilesOptions,
        RewritePositionDeleteFiles,
        """Iceberg's ``rewrite_position_delete_files``: on v2, compact position delete files
        (dropping dangling positions); on v3+, convert leftover v2 position deletes to DVs.""",
    )
    rewrite_manifests = _method(
        RewriteManifestsOptions,
        RewriteManifests,
        """Iceberg's ``rewrite_manifests``: v1-v3 manifests clustered by partition up to
        ``commit.manifest.target-size-bytes``; V4 small leaves merged and manifest DVs folded.""",
    )


__all__ = ["TableMaintenance"]
