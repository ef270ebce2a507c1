"""The maintenance operations, declared once each.

An :class:`OperationSpec` names an operation (``rewrite_data_files``) and its short name (the
CLI subcommand and Spark job operation, ``compact``), and holds its operation, options, plan
and result classes, the operation it gives way to on tables below a format version (v2 tables
have no deletion vectors: ``rewrite-dvs`` runs ``rewrite_position_delete_files``) and the
lineage figures its result reports. ``table.maintenance``, the CLI, the Spark job and the
Airflow operators, task group and lineage all read this registry: adding an operation is one
new module plus one :func:`register` call.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from firn.errors import ValidationError
from firn.maintenance.base import MaintainedTable, MaintenanceOperation, MaintenancePlan, MaintenanceResult
from firn.maintenance.expire_snapshots import ExpireSnapshots, ExpireSnapshotsPlan, ExpireSnapshotsResult
from firn.maintenance.flush_root import FlushRoot, FlushRootPlan, FlushRootResult
from firn.maintenance.operations import (
    EXPIRE_SNAPSHOTS,
    FLUSH_ROOT,
    NIGHTLY_ORDER,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_DELETION_VECTORS,
    REWRITE_MANIFESTS,
    REWRITE_POSITION_DELETE_FILES,
)
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
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS


@dataclass(frozen=True, kw_only=True)
class OperationSpec:
    """One maintenance operation, as every layer sees it.

    :param name: the ``table.maintenance`` method and the plan's and result's ``operation``.
    :param short_name: the CLI subcommand and Spark job operation (None: reached only through
        another operation's ``fallback``).
    :param fallback: ``(format_version, name)``: below that version, run ``name`` instead.
    :param nightly: a step of the nightly chain (the Airflow task group).
    """

    name: str
    short_name: str | None
    operation: type[MaintenanceOperation[Any, Any, Any]]
    options: type[MaintenanceOptions]
    plan: type[MaintenancePlan[Any]]
    result: type[MaintenanceResult]
    summary: str
    fallback: tuple[int, str] | None = None
    nightly: bool = True

    @property
    def lineage(self) -> Mapping[str, str]:
        """The lineage figures the result reports -> the result field holding each."""
        return self.result.LINEAGE

    def create(
        self, table: MaintainedTable, options: MaintenanceOptions | Mapping[str, object] | None = None
    ) -> MaintenanceOperation[Any, Any, Any]:
        """The operation on ``table``; ``options`` is the dataclass or a mapping by Iceberg or
        keyword name (an unknown name is a ``ValidationError`` naming the close matches)."""
        if not isinstance(options, MaintenanceOptions):
            options = self.options.from_iceberg(options)
        elif not isinstance(options, self.options):
            raise ValidationError(f"{self.name} takes {self.options.__name__}, got {type(options).__name__}")
        return self.operation(table, options)

    def result_from_dict(self, data: Mapping[str, Any]) -> MaintenanceResult:
        """The typed result ``data`` (``result.to_dict()``, e.g. a Spark job's) describes."""
        return self.result.from_dict(data)


_REGISTRY: dict[str, OperationSpec] = {}


def register(spec: OperationSpec) -> OperationSpec:
    """Add ``spec`` (its name and short name must be new)."""
    taken = {s.short_name for s in _REGISTRY.values()} | set(_REGISTRY)
    if spec.name in taken or (spec.short_name is not None and spec.short_name in taken):
        raise ValidationError(
            f"maintenance operation {spec.name!r} / {spec.short_name!r} is already registered"
        )
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove the operation ``name`` (tests that register a toy operation clean up with it)."""
    _REGISTRY.pop(name, None)


def specs() -> list[OperationSpec]:
    """Every registered operation: the nightly chain in its order, then the others."""
    order = {name: i for i, name in enumerate(NIGHTLY_ORDER)}
    return sorted(_REGISTRY.values(), key=lambda s: order.get(s.name, len(order)))


def nightly_order() -> list[str]:
    """The names of the nightly steps, in the order a nightly run takes."""
    return [s.name for s in specs() if s.nightly]


def short_names() -> dict[str, str]:
    """Short name -> name, for the operations that have one."""
    return {s.short_name: s.name for s in specs() if s.short_name is not None}


def spec(name: str) -> OperationSpec:
    """The operation ``name`` or short name ``name``; a ``ValidationError`` naming close
    matches when there is none."""
    found = _REGISTRY.get(name) or _REGISTRY.get(short_names().get(name, ""))
    if found is None:
        known = [*short_names(), *_REGISTRY]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValidationError(f"unknown maintenance operation {name!r}; known: {', '.join(known)}{hint}")
    return found


def spec_for_table(name: str, format_version: int) -> OperationSpec:
    """The operation that runs ``name`` on a table of ``format_version`` (its fallback below
    the version it needs)."""
    found = spec(name)
    if found.fallback is not None and format_version < found.fallback[0]:
        return spec(found.fallback[1])
    return found


def result_from_dict(data: Mapping[str, Any]) -> MaintenanceResult:
    """The typed result of ``data["operation"]``."""
    return spec(str(data.get("operation"))).result_from_dict(data)


for _spec in (
    OperationSpec(
        name=REWRITE_DELETION_VECTORS,
        short_name="rewrite-dvs",
        operation=RewriteDeletionVectors,
        options=RewriteDeletionVectorsOptions,
        plan=RewriteDeletionVectorsPlan,
        result=RewriteDeletionVectorsResult,
        summary="merge and pack deletion vectors, convert position delete files, drop dangling deletes",
        fallback=(MIN_FORMAT_VERSION_DELETION_VECTORS, REWRITE_POSITION_DELETE_FILES),
    ),
    OperationSpec(
        name=REWRITE_DATA_FILES,
        short_name="compact",
        operation=RewriteDataFiles,
        options=RewriteDataFilesOptions,
        plan=RewriteDataFilesPlan,
        result=RewriteDataFilesResult,
        summary="compaction: bin-pack or sort small files and files with many deletes",
    ),
    OperationSpec(
        name=FLUSH_ROOT,
        short_name="flush",
        operation=FlushRoot,
        options=FlushRootOptions,
        plan=FlushRootPlan,
        result=FlushRootResult,
        summary="move a V4 table's root-manifest entries into leaf manifests",
    ),
    OperationSpec(
        name=REWRITE_MANIFESTS,
        short_name="rewrite-manifests",
        operation=RewriteManifests,
        options=RewriteManifestsOptions,
        plan=RewriteManifestsPlan,
        result=RewriteManifestsResult,
        summary="cluster manifests by partition (v1-v3); merge small leaves, fold manifest DVs (V4)",
    ),
    OperationSpec(
        name=EXPIRE_SNAPSHOTS,
        short_name="expire",
        operation=ExpireSnapshots,
        options=ExpireSnapshotsOptions,
        plan=ExpireSnapshotsPlan,
        result=ExpireSnapshotsResult,
        summary="expire snapshots by the retention policy and delete the files only they reach",
    ),
    OperationSpec(
        name=REMOVE_ORPHAN_FILES,
        short_name="orphans",
        operation=RemoveOrphanFiles,
        options=RemoveOrphanFilesOptions,
        plan=RemoveOrphanFilesPlan,
        result=RemoveOrphanFilesResult,
        summary="find (and with delete=True remove) files nothing references",
    ),
    OperationSpec(
        name=REWRITE_POSITION_DELETE_FILES,
        short_name=None,
        operation=RewritePositionDeleteFiles,
        options=RewritePositionDeleteFilesOptions,
        plan=RewritePositionDeleteFilesPlan,
        result=RewritePositionDeleteFilesResult,
        summary="compact position delete files (v2); convert them to deletion vectors (v3+)",
        nightly=False,
    ),
):
    register(_spec)


__all__ = [
    "OperationSpec",
    "nightly_order",
    "register",
    "result_from_dict",
    "short_names",
    "spec",
    "spec_for_table",
    "specs",
    "unregister",
]
