"""One operator per maintenance operation (``table.maintenance.<operation>``); everything they
share -- runners, lease, skips, results, asset events, lineage -- is in
:class:`~firn_airflow.operators.base.FirnMaintenanceBaseOperator`.

Their options are Iceberg's procedure options (see each ``table.maintenance`` method); only
the ones nearly every DAG sets have their own argument.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from firn.maintenance import registry
from firn.maintenance.operations import (
    EXPIRE_SNAPSHOTS,
    FLUSH_ROOT,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_DELETION_VECTORS,
    REWRITE_MANIFESTS,
)
from firn.spec.versions import MIN_FORMAT_VERSION_ROOT_MANIFEST
from firn_airflow.operators.base import FirnMaintenanceBaseOperator

if TYPE_CHECKING:
    from firn.table.table import Table

# A point in time: an aware datetime, ISO-8601 text with an offset (what
# ``{{ data_interval_end - macros.timedelta(days=5) }}`` renders to) or epoch milliseconds.
PointInTime = dt.datetime | str | int


class FirnRewriteDeletionVectorsOperator(FirnMaintenanceBaseOperator):
    """Merge and pack deletion vectors, convert position delete files into DVs and drop dangling
    deletes (v3/V4: ``rewrite_deletion_vectors``); on v2 tables, Iceberg's
    ``rewrite_position_delete_files``. Options: ``min-input-files``, ``delete-ratio-threshold``,
    ``where``, ... (see ``table.maintenance.rewrite_deletion_vectors``)."""

    OPERATION = REWRITE_DELETION_VECTORS


class FirnRewriteDataFilesOperator(FirnMaintenanceBaseOperator):
    """Compaction (Iceberg's ``rewrite_data_files``): bin-pack or sort small files and files with
    many deletes. Options: ``strategy``, ``min-input-files``, ``target-file-size-bytes``,
    ``where``, ``partial-progress.enabled``, ... (see ``table.maintenance.rewrite_data_files``)."""

    OPERATION = REWRITE_DATA_FILES


class FirnRewriteManifestsOperator(FirnMaintenanceBaseOperator):
    """Iceberg's ``rewrite_manifests``: cluster manifests by partition (v1-v3); on V4 tables merge
    small leaf manifests and fold manifest DVs. Options: ``spec-id``, ``sort-by``, ``branch``."""

    OPERATION = REWRITE_MANIFESTS


class FirnFlushRootManifestOperator(FirnMaintenanceBaseOperator):
    """Move a V4 table's root-manifest entries into leaf manifests (thresholds: the table's
    ``commit.root.*`` properties; ``options={"force": True}`` flushes regardless). A table below
    format version 4 has no root manifest: the task skips, saying so, so one maintenance chain
    serves tables of every version."""

    OPERATION = FLUSH_ROOT

    def skip_reason(self, table: Table) -> str | None:
        if table.format_version < MIN_FORMAT_VERSION_ROOT_MANIFEST:
            return (
                f"{table.name} is format version {table.format_version}: only V4 tables have a root "
                "manifest to flush; skipped"
            )
        return None


class FirnExpireSnapshotsOperator(FirnMaintenanceBaseOperator):
    """Expire snapshots by the retention policy and delete the files only they reach (Iceberg's
    ``expire_snapshots``).

    :param older_than: expire snapshots older than this (templated): an aware datetime, ISO-8601
        text or epoch milliseconds; default the table's ``history.expire.max-snapshot-age-ms``.
    :param retain_last: keep at least this many snapshots (templated); default the table's
        ``history.expire.min-snapshots-to-keep``.
    """

    OPERATION = EXPIRE_SNAPSHOTS
    template_fields: Sequence[str] = (
        *FirnMaintenanceBaseOperator.template_fields,
        "older_than",
        "retain_last",
    )

    def __init__(
        self, *, older_than: PointInTime | None = None, retain_last: int | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.older_than = older_than
        self.retain_last = retain_last

    def explicit_options(self) -> dict[str, object]:
        return {"older_than": self.older_than, "retain_last": self.retain_last}


class FirnRemoveOrphanFilesOperator(FirnMaintenanceBaseOperator):
    """Find files under the table location that nothing references (Iceberg's
    ``remove_orphan_files``). Like Iceberg's procedure it changes nothing unless
    ``options={"delete": True}`` (Iceberg's ``dry-run`` false): by default the result lists the orphans (paths, count,
    bytes). With it, removal has two phases: a run records new orphans under
    ``metadata/orphans/`` and deletes those an earlier run recorded at least ``orphans.grace``
    ago (a table property, default ``1d``); only inside the table's own locations. The result
    (XCom) and the task log say what was recorded, deleted and kept. ``dry_run=True`` instead
    only plans, as for every operator.

    :param older_than: only files last modified before this are orphans (templated; default
        3 days ago; less than a day ago needs ``options={"force": True}``).
    """

    OPERATION = REMOVE_ORPHAN_FILES
    template_fields: Sequence[str] = (*FirnMaintenanceBaseOperator.template_fields, "older_than")

    def __init__(self, *, older_than: PointInTime | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.older_than = older_than

    def explicit_options(self) -> dict[str, object]:
        return {"older_than": self.older_than}


# Operators with arguments or skips of their own; every other registered operation gets a
# plain one from :func:`operator_for`.
_OPERATORS: dict[str, type[FirnMaintenanceBaseOperator]] = {
    op.OPERATION: op
    for op in (
        FirnRewriteDeletionVectorsOperator,
        FirnRewriteDataFilesOperator,
        FirnFlushRootManifestOperator,
        FirnRewriteManifestsOperator,
        FirnExpireSnapshotsOperator,
        FirnRemoveOrphanFilesOperator,
    )
}


def operator_for(name: str) -> type[FirnMaintenanceBaseOperator]:
    """The operator class of the registered operation ``name`` (or short name): one of the
    classes above, or for an operation registered since, a plain subclass running it."""
    spec = registry.spec(name)
    found = _OPERATORS.get(spec.name)
    if found is None:
        title = "".join(part.title() for part in spec.name.split("_"))
        found = type(
            f"Firn{title}Operator",
            (FirnMaintenanceBaseOperator,),
            {
                "OPERATION": spec.name,
                "__doc__": f"Run ``{spec.name}``: {spec.summary}.",
                "__module__": __name__,
            },
        )
        _OPERATORS[spec.name] = found
    return found


__all__ = [
    "FirnExpireSnapshotsOperator",
    "FirnFlushRootManifestOperator",
    "FirnRemoveOrphanFilesOperator",
    "FirnRewriteDataFilesOperator",
    "FirnRewriteDeletionVectorsOperator",
    "FirnRewriteManifestsOperator",
    "PointInTime",
    "operator_for",
]
