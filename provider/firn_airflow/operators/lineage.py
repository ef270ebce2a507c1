"""What a maintenance run did to its table, for OpenLineage.

:func:`maintenance_lineage` reads the results a task produced (``result.to_dict()`` of each
operation run) and sums what was rewritten, added and deleted. :func:`openlineage_facets`
turns that into an OpenLineage ``OperatorLineage``: the table is the input dataset with an
``inputStatistics`` facet (the files, bytes and rows rewritten, i.e. read and replaced) and the
output dataset with an ``outputStatistics`` facet (the files, bytes and rows written). The
OpenLineage classes are imported inside that function only, so the provider works without the
``apache-airflow-providers-openlineage`` package; the numbers themselves come from the pure
function and are tested without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from firn.maintenance.operations import (
    EXPIRE_SNAPSHOTS,
    FLUSH_ROOT,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_DELETION_VECTORS,
    REWRITE_MANIFESTS,
    REWRITE_POSITION_DELETE_FILES,
)
from firn_airflow.constants import ASSET_SCHEME


@dataclass(frozen=True, kw_only=True)
class MaintenanceLineage:
    """Totals over the operations a task ran; None: no operation reports that figure.

    ``files_rewritten`` / ``bytes_rewritten`` / ``records_rewritten`` are what was read and
    replaced (data files by compaction, delete files by a delete rewrite, manifests by a
    manifest rewrite); ``files_added`` / ``bytes_added`` what was written in their place (and
    the leaves a root flush writes); ``files_deleted`` / ``bytes_deleted`` what expiry and
    orphan removal deleted.
    """

    operations: tuple[str, ...] = ()
    files_rewritten: int | None = None
    bytes_rewritten: int | None = None
    records_rewritten: int | None = None
    files_added: int | None = None
    bytes_added: int | None = None
    files_deleted: int | None = None
    bytes_deleted: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def totals(self) -> dict[str, int]:
        """The figures that are known, by name (for an asset event's result)."""
        return {k: v for k, v in self.to_dict().items() if k != "operations" and isinstance(v, int)}


def _int(entry: Mapping[str, Any], key: str) -> int | None:
    value = entry.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _sum_values(entry: Mapping[str, Any], key: str) -> int | None:
    value = entry.get(key)
    if isinstance(value, Mapping):
        return sum(int(v) for v in value.values() if isinstance(v, int | float))
    return _int(entry, key)


def _figures(entry: Mapping[str, Any]) -> dict[str, int | None]:
    """The lineage figures of one operation's result."""
    op = entry.get("operation")
    if op == REWRITE_DATA_FILES:
        return {
            "files_rewritten": _int(entry, "rewritten_data_files_count"),
            "bytes_rewritten": _int(entry, "rewritten_bytes_count"),
            "records_rewritten": _int(entry, "rewritten_records"),
            "files_added": _int(entry, "added_data_files_count"),
            "bytes_added": _int(entry, "added_bytes_count"),
        }
    if op in (REWRITE_DELETION_VECTORS, REWRITE_POSITION_DELETE_FILES):
        return {
            "files_rewritten": _int(entry, "rewritten_delete_files_count"),
            "bytes_rewritten": _int(entry, "rewritten_bytes_count"),
            "files_added": _int(entry, "added_delete_files_count"),
            "bytes_added": _int(entry, "added_bytes_count"),
        }
    if op == REWRITE_MANIFESTS:
        return {
            "files_rewritten": _int(entry, "rewritten_manifests_count"),
            "files_added": _int(entry, "added_manifests_count"),
        }
    if op == FLUSH_ROOT:
        return {"files_added": _int(entry, "leaves_written"), "bytes_added": _int(entry, "bytes_written")}
    if op in (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES):
        return {
            "files_deleted": _sum_values(entry, "deleted_files"),
            "bytes_deleted": _sum_values(entry, "deleted_bytes"),
        }
    return {}


def maintenance_lineage(results: Iterable[Mapping[str, Any]]) -> MaintenanceLineage:
    """Sum the figures of ``results`` (each an operation's ``result.to_dict()``)."""
    totals: dict[str, int | None] = {}
    operations: list[str] = []
    for entry in results:
        # A dry run's plan (``"dry_run": true`` with its ``description``) changed nothing, nor did
        # a failed table's entry.
        if "error" in entry or (entry.get("dry_run") is True and "description" in entry):
            continue
        operations.append(str(entry.get("operation")))
        for key, value in _figures(entry).items():
            if value is not None:
                totals[key] = (totals.get(key) or 0) + value
    return MaintenanceLineage(operations=tuple(operations), **totals)


def dataset_identity(firn_conn_id: str, table: str) -> tuple[str, str]:
    """The OpenLineage dataset ``(namespace, name)`` of ``table``: the catalog (the Firn
    connection id, as in the table's asset URI) and the dotted table name."""
    return f"{ASSET_SCHEME}://{firn_conn_id}", table


def openlineage_facets(firn_conn_id: str, table: str, lineage: MaintenanceLineage) -> Any:
    """An ``OperatorLineage`` for a run on ``table`` (needs the OpenLineage provider)."""
    from airflow.providers.common.compat.openlineage.facet import (
        InputDataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    namespace, name = dataset_identity(firn_conn_id, table)
    input_facets: dict[str, Any] = {}
    if lineage.files_rewritten is not None or lineage.bytes_rewritten is not None:
        try:
            from openlineage.client.generated.input_statistics_input_dataset import (  # type: ignore[import-not-found, unused-ignore]
                InputStatisticsInputDatasetFacet,
            )
        except ImportError:  # an OpenLineage client older than the input-statistics facet
            pass
        else:
            input_facets["inputStatistics"] = InputStatisticsInputDatasetFacet(
                rowCount=lineage.records_rewritten,
                size=lineage.bytes_rewritten,
                fileCount=lineage.files_rewritten,
            )
    output = OutputDataset(
        namespace=namespace,
        name=name,
        outputFacets={
            "outputStatistics": OutputStatisticsOutputDatasetFacet(
                rowCount=lineage.records_rewritten, size=lineage.bytes_added, fileCount=lineage.files_added
            )
        },
    )
    return OperatorLineage(
        inputs=[InputDataset(namespace=namespace, name=name, inputFacets=input_facets)],
        outputs=[output],
    )


__all__ = ["MaintenanceLineage", "dataset_identity", "maintenance_lineage", "openlineage_facets"]
