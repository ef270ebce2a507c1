"""Incremental append scans: the rows that ``append`` snapshots of a range added.

``table.scan(from_snapshot_id=a, to_snapshot_id=b)`` reads the data files that the ``append``
snapshots in ``(a, b]`` added (``firn.core.snapshot_range``), as Iceberg Java's
``IncrementalAppendScan`` does:

* rows are read as they were appended: a delete committed later does not hide them (append
  snapshots carry no delete files, so nothing of their own applies either);
* ``replace`` snapshots (compaction, delete and manifest rewrites, root flushes) add no data;
  their rewritten files are never read again;
* ``overwrite`` and ``delete`` snapshots are skipped too, including the rows an overwrite or
  an upsert inserts: they change existing rows, which only a changelog can express
  (``table.changelog(...)``, ``firn.core.changelog``).

Each append snapshot's added files come from what it wrote alone (``snapshot_changes``):
v1-v3, the manifests it added; V4, its root and the leaves it added (seed 004: "the Root
Manifest reflects the last change"), so planning costs O(change), never O(table).
"""

from __future__ import annotations

from collections.abc import Iterable

from firn.core.planning import FileScanTask, SpecEvaluators
from firn.core.trees import snapshot_changes
from firn.expressions import BooleanExpression, InclusiveMetricsEvaluator
from firn.io.base import FileIO
from firn.spec.schema import Schema
from firn.spec.snapshots import Operation, Snapshot
from firn.spec.table_metadata import TableMetadata


def plan_appends(
    io: FileIO,
    metadata: TableMetadata,
    snapshots: Iterable[Snapshot],
    schema: Schema,
    row_filter: BooleanExpression,
    *,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """Scan tasks for the data files the ``append`` snapshots among ``snapshots`` added, in
    commit order, pruned by partitions and column metrics like a full scan's."""
    evaluators = SpecEvaluators(metadata, schema, row_filter, case_sensitive)
    metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive=case_sensitive)
    tasks: list[FileScanTask] = []
    for snap in snapshots:
        if snap.summary.operation is not Operation.APPEND:
            continue
        changes = snapshot_changes(io, metadata, snap)
        for f in changes.added_data_files:
            pev = evaluators.partition(f.spec_id)
            if pev is not None and not pev.eval(f.partition):
                continue
            if not metrics.eval(f):
                continue
            tasks.append(
                FileScanTask(
                    file=f,
                    data_sequence_number=changes.data_sequence_number(f),
                    residual=evaluators.residual(f.spec_id).residual_for(f.partition),
                )
            )
    return tasks


__all__ = ["plan_appends"]
