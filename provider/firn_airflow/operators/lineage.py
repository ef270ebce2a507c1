"""What a maintenance run did to its table, for OpenLineage.

:func:`maintenance_lineage` reads the results a task produced (``result.to_dict()`` of each
operation run) and sums what was rewritten, added and deleted. :func:`openlineage_facets`
turns that into an OpenLineage ``OperatorLineage`` on the table, named as OpenLineage names
stored datasets (:func:`dataset_identity`: storage namespace, location path, and the catalog's
name in a ``symlinks`` facet):

* the input dataset, with ``inputStatistics``: the files, bytes and rows rewritten (read and
  replaced);
* the output dataset, with ``outputStatistics`` (the files, bytes and rows written) and the
  custom ``firn_maintenance`` facet (operations run; files and bytes rewritten, added, deleted).

The OpenLineage classes are imported inside those functions only, so the provider imports and
runs without the ``apache-airflow-providers-openlineage`` package; the numbers and names
themselves come from pure functions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from firn.errors import ValidationError
from firn.maintenance import registry
from firn.maintenance.base import MaintenanceResult
from firn.maintenance.operations import EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES
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
    """The lineage figures of one operation's result (the registry names which result field
    holds each: ``OperationSpec.lineage``)."""
    try:
        spec = registry.spec(str(entry.get("operation")))
    except ValidationError:
        return {}
    return {figure: _sum_values(entry, name) for figure, name in spec.lineage.items()}


def deletion_summary(entry: Mapping[str, Any]) -> str | None:
    """One log line of what a run that deletes files (expiry, orphan removal) recorded,
    deleted and kept; None for other operations and for plans."""
    op = entry.get("operation")
    if op not in (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES) or "description" in entry:
        return None
    parts = []
    if op == REMOVE_ORPHAN_FILES:
        recorded = entry.get("recorded_file_locations") or []
        grace = _int(entry, "grace_ms")
        parts.append(
            f"recorded {len(recorded)} new orphans"
            + (f" (deleted by a run at least {grace / 3_600_000:g} h later: orphans.grace)" if grace else "")
        )
        parts.append(f"{_int(entry, 'waiting_files') or 0} recorded orphans still within their grace")
    parts.append(f"deleted {_sum_values(entry, 'deleted_files') or 0} files")
    parts.append(
        f"kept {_int(entry, 'kept_outside_location') or 0} outside the table's own locations "
        "(or inside another table's; never deleted)"
    )
    prefix = "dry run, nothing changed: would have " if entry.get("dry_run") is True else ""
    return prefix + ", ".join(parts)


def maintenance_lineage(results: Iterable[Mapping[str, Any] | MaintenanceResult]) -> MaintenanceLineage:
    """Sum the figures of ``results``: typed results (each carries its figures,
    ``MaintenanceResult.lineage_figures``) or their ``to_dict()``."""
    totals: dict[str, int | None] = {}
    operations: list[str] = []
    for entry in results:
        if isinstance(entry, MaintenanceResult):
            operations.append(entry.OPERATION)
            figures: Mapping[str, int | None] = entry.lineage_figures()
        else:
            # A dry run's plan (``"dry_run": true`` with its ``description``) changed nothing,
            # nor did a failed table's entry.
            if "error" in entry or (entry.get("dry_run") is True and "description" in entry):
                continue
            operations.append(str(entry.get("operation")))
            figures = _figures(entry)
        for key, value in figures.items():
            if value is not None:
                totals[key] = (totals.get(key) or 0) + value
    return MaintenanceLineage(operations=tuple(operations), **totals)


@dataclass(frozen=True, kw_only=True)
class DatasetIdentity:
    """How OpenLineage names a Firn table (its naming spec, "Dataset Naming").

    The table is a dataset of the storage that holds it: ``namespace`` is the storage's
    ``scheme://authority`` (``file`` for a local path, ``s3://<bucket>``, ``gs://<bucket>``,
    ``hdfs://<namenode>:<port>``, ...) and ``name`` the table location's path in it (the
    object key, without a leading slash, on object stores). The catalog's name for it is an
    alternative identifier for the symlinks facet: ``firn://<connection id>`` (the authority of
    the table's Airflow asset URI) and the dotted table name, of type ``TABLE``.
    """

    namespace: str
    name: str
    catalog_namespace: str
    catalog_name: str


# Object stores: the spec names their datasets by object key, which has no leading slash.
_OBJECT_STORES = frozenset({"s3", "gs", "abfss", "wasbs"})
# Spellings Hadoop-style clients use for the same stores (OpenLineage names them by the store).
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def storage_identity(location: str) -> tuple[str, str]:
    """OpenLineage ``(namespace, name)`` of a storage location such as a table's ``location``."""
    text = location.strip().rstrip("/")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if not scheme or len(scheme) == 1:  # a bare path (a one-letter "scheme" is a drive letter)
        return "file", text or "/"
    if scheme == "file":
        # file:///p and file:/p are local; file://host/p is a remote file system.
        return ("file" if parts.netloc in ("", "localhost") else f"file://{parts.netloc}"), parts.path or "/"
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    # Credentials never belong in a dataset name (abfss's container@account is not userinfo).
    userinfo, at, host = parts.netloc.rpartition("@")
    authority = host if at and ":" in userinfo else parts.netloc
    path = parts.path.lstrip("/") if scheme in _OBJECT_STORES else parts.path or "/"
    return f"{scheme}://{authority}", path


def dataset_identity(firn_conn_id: str, table: str, location: str) -> DatasetIdentity:
    """The OpenLineage identity of ``table`` (at ``location``) of connection ``firn_conn_id``."""
    namespace, name = storage_identity(location)
    return DatasetIdentity(
        namespace=namespace,
        name=name,
        catalog_namespace=f"{ASSET_SCHEME}://{firn_conn_id}",
        catalog_name=table,
    )


# The custom facet's key: OpenLineage asks custom facets to carry their producer's prefix.
MAINTENANCE_FACET = "firn_maintenance"


@functools.cache
def _maintenance_facet_class() -> type:
    """``FirnMaintenanceOutputDatasetFacet``: built on first use, as it subclasses a class of the
    optional OpenLineage client."""
    import attr
    from openlineage.client.generated.base import OutputDatasetFacet

    @attr.define
    class FirnMaintenanceOutputDatasetFacet(OutputDatasetFacet):
        """What a Firn maintenance run did to the table: the operations it ran and the files
        and bytes it rewrote (read and replaced), added and deleted."""

        # OpenLineage spells facet fields in camelCase.
        operations: list[str] = attr.field(factory=list)
        filesRewritten: int | None = attr.field(default=None)
        bytesRewritten: int | None = attr.field(default=None)
        recordsRewritten: int | None = attr.field(default=None)
        filesAdded: int | None = attr.field(default=None)
        bytesAdded: int | None = attr.field(default=None)
        filesDeleted: int | None = attr.field(default=None)
        bytesDeleted: int | None = attr.field(default=None)

        # Counts, not secrets: the event redactor may leave them alone.
        _additional_skip_redact: ClassVar[list[str]] = [
            "operations",
            "filesRewritten",
            "bytesRewritten",
            "recordsRewritten",
            "filesAdded",
            "bytesAdded",
            "filesDeleted",
            "bytesDeleted",
        ]

    FirnMaintenanceOutputDatasetFacet.__module__ = __name__
    return FirnMaintenanceOutputDatasetFacet


def maintenance_facet(lineage: MaintenanceLineage) -> Any:
    """The ``firn_maintenance`` output-dataset facet of ``lineage`` (needs the OpenLineage client)."""
    return _maintenance_facet_class()(
        operations=list(lineage.operations),
        filesRewritten=lineage.files_rewritten,
        bytesRewritten=lineage.bytes_rewritten,
        recordsRewritten=lineage.records_rewritten,
        filesAdded=lineage.files_added,
        bytesAdded=lineage.bytes_added,
        filesDeleted=lineage.files_deleted,
        bytesDeleted=lineage.bytes_deleted,
    )


def openlineage_facets(identity: DatasetIdentity, lineage: MaintenanceLineage) -> Any:
    """An ``OperatorLineage`` for a run on the table ``identity`` names (needs the OpenLineage
    provider): the table is the input, with ``inputStatistics`` of what was rewritten, and the
    output, with ``outputStatistics`` of what was written and the ``firn_maintenance`` facet;
    both carry the ``symlinks`` facet with the catalog's name for the table."""
    from airflow.providers.common.compat.openlineage.facet import (
        Identifier,
        InputDataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
        SymlinksDatasetFacet,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    def dataset_facets() -> dict[str, Any]:
        return {
            "symlinks": SymlinksDatasetFacet(
                identifiers=[
                    Identifier(namespace=identity.catalog_namespace, name=identity.catalog_name, type="TABLE")
                ]
            )
        }

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
    output_facets: dict[str, Any] = {MAINTENANCE_FACET: maintenance_facet(lineage)}
    if lineage.files_added is not None or lineage.bytes_added is not None:
        # Expiry and orphan removal write nothing: no statistics rather than empty ones.
        output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(
            rowCount=lineage.records_rewritten, size=lineage.bytes_added, fileCount=lineage.files_added
        )
    output = OutputDataset(
        namespace=identity.namespace, name=identity.name, facets=dataset_facets(), outputFacets=output_facets
    )
    return OperatorLineage(
        inputs=[
            InputDataset(
                namespace=identity.namespace,
                name=identity.name,
                facets=dataset_facets(),
                inputFacets=input_facets,
            )
        ],
        outputs=[output],
    )


__all__ = [
    "MAINTENANCE_FACET",
    "DatasetIdentity",
    "MaintenanceLineage",
    "dataset_identity",
    "deletion_summary",
    "maintenance_facet",
    "maintenance_lineage",
    "openlineage_facets",
    "storage_identity",
]
