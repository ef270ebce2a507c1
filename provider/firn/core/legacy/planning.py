"""Planning a v1-v3 snapshot's scan: prune manifests and entries, match deletes to data files."""

from __future__ import annotations

from collections.abc import Sequence

from firn.core.legacy.reader import read_manifests_parallel, snapshot_manifests
from firn.core.planning import FileScanTask, SpecEvaluators, build_tasks, select_entries
from firn.deletes.index import DeleteFileIndex
from firn.expressions import BooleanExpression, InclusiveMetricsEvaluator
from firn.io.base import FileIO
from firn.spec.content import ManifestContent, ManifestEntry, ManifestFile
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata


def plan_legacy(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    schema: Schema,
    row_filter: BooleanExpression,
    *,
    case_sensitive: bool = True,
    manifests: Sequence[ManifestFile] | None = None,
) -> list[FileScanTask]:
    """Plan the files of a v1-v3 snapshot (manifest list + manifests)."""
    all_manifests = list(manifests) if manifests is not None else snapshot_manifests(io, snapshot)
    evaluators = SpecEvaluators(metadata, schema, row_filter, case_sensitive)
    metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive=case_sensitive)

    def keep_manifest(m: ManifestFile) -> bool:
        if not (m.has_added_files() or m.has_existing_files()):
            return False
        ev = evaluators.manifest(m.partition_spec_id)
        return ev is None or ev.eval(m)

    data_manifests = [m for m in all_manifests if m.content is ManifestContent.DATA and keep_manifest(m)]
    delete_manifests = [m for m in all_manifests if m.content is ManifestContent.DELETES and keep_manifest(m)]
    read = read_manifests_parallel(io, [*data_manifests, *delete_manifests], metadata, schema)
    data_entries = [
        e for entries in read[: len(data_manifests)] for e in select_entries(entries, evaluators, metrics)
    ]
    delete_entries = [
        e for entries in read[len(data_manifests) :] for e in select_entries(entries, evaluators, metrics)
    ]
    index = DeleteFileIndex(delete_entries, metadata.specs)
    return build_tasks(data_entries, index, evaluators)


def legacy_delete_entries(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestEntry]:
    """Every live delete entry of a v1-v3 snapshot, with its sequence numbers (no pruning)."""
    manifests = [
        m
        for m in snapshot_manifests(io, snapshot)
        if m.content is ManifestContent.DELETES and (m.has_added_files() or m.has_existing_files())
    ]
    read = read_manifests_parallel(io, manifests, metadata, metadata.schema())
    return [e for entries in read for e in entries if e.is_live]


__all__ = ["legacy_delete_entries", "plan_legacy"]
