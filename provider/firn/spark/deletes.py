"""Row-level deletes run on Spark: ``firn.spark.delete`` and ``firn.spark.merge_on_read_delete``.

The driver plans the files the predicate may touch (``table.scan(filter=...)``). Files the
predicate covers entirely by their partition or column metrics (strict evaluation) are removed
without reading them. Every other candidate file is one Spark task, which reads the file's live
rows (deletes applied) with ``_pos`` and evaluates the predicate:

* merge-on-read: the task returns the matching positions; the driver commits them through
  ``table.row_delta()`` (``delete_rows_at``: deletion vectors on v3+, merged with each file's
  earlier deletes; position delete files on v2), files whose every live row matched being
  removed instead;
* copy-on-write (``delete`` on a table whose ``write.delete.mode`` is copy-on-write, and
  always on v1): the task writes the surviving rows as new data files (same spec and
  partition; v3 row lineage kept) and the driver commits one ``overwrite`` replacing the files.

Commits validate against concurrent changes since the planned snapshot with the table's
``write.delete.isolation-level`` (as ``table.delete`` does). When the only conflicts are
concurrent ``replace`` commits (a compaction moved the matched rows), the delete is planned
and run again on the refreshed table (``firn.core.actions.replan``) instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.actions.merge_on_read import row_level_mode
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.actions.replan import MAX_REPLANS
from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_task
from firn.core.scan import to_expression
from firn.core.writer import LINEAGE_FIELDS, write_data_files
from firn.deletes.writers import referenced_data_file_of
from firn.errors import RewrittenConcurrently, ValidationError
from firn.expressions import (
    AlwaysTrue,
    BooleanExpression,
    PartitionEvaluator,
    StrictMetricsEvaluator,
    bind,
    evaluate,
    partition_struct,
    project_strict,
    referenced_names,
)
from firn.spark.config import catalog_config, executor_io, executor_metadata
from firn.spec.content import DataFile
from firn.spec.properties import RowLevelMode
from firn.spec.schema import Schema
from firn.spec.snapshots import MAIN_BRANCH, Operation
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_ROW_LEVEL_DELETES
from firn.table.table import Table
from firn.util.secrets import masked_repr

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class RowDeleteResult:
    """What a Spark delete committed (``snapshot_id`` None: no row matched, nothing committed)."""

    table: str
    mode: str
    snapshot_id: int | None
    deleted_rows: int
    removed_data_files: int
    rewritten_data_files: int
    added_data_files: int
    spark_tasks: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Unit:
    """One candidate file for a Spark task."""

    __repr__ = masked_repr  # io_properties may hold storage credentials

    task: FileScanTask
    metadata_location: str
    io_properties: Mapping[str, str]
    predicate: BooleanExpression
    copy_on_write: bool


def _read_rows(unit: _Unit, metadata: TableMetadata, schema: Schema) -> pa.Table:
    if unit.copy_on_write:
        projection = schema
    else:
        tops = sorted({n.split(".", 1)[0] for n in referenced_names(unit.predicate)})
        projection = schema.select(tops)
    meta: tuple[str, ...] = ("_pos",)
    if unit.copy_on_write and metadata.tracks_row_lineage:
        # Spec "Row Lineage": rewritten survivors keep their _row_id.
        meta = ("_pos", *LINEAGE_FIELDS)
    plan = ReadPlan(
        table_schema=schema,
        projection=projection,
        metadata_columns=meta,
        output_order=(*(f.name for f in projection.fields), *meta),
        specs=dict(metadata.specs),
    )
    full = FileScanTask(unit.task.file, unit.task.data_sequence_number, unit.task.delete_files, None)
    io = executor_io(unit.io_properties, unit.metadata_location)
    batches = list(read_task(io, full, plan))
    return pa.Table.from_batches(batches, schema=plan.output_schema)


def _match_file(unit: _Unit) -> dict[str, Any]:
    """Executor side: the file's matching positions, or (copy-on-write) its survivors written."""
    io = executor_io(unit.io_properties, unit.metadata_location)
    metadata = executor_metadata(io, unit.metadata_location)
    schema = metadata.schema()
    rows = _read_rows(unit, metadata, schema)
    mask = evaluate(bind(schema, unit.predicate), rows) if rows.num_rows else pa.array([], pa.bool_())
    matched = int(pc.sum(mask).as_py() or 0)
    out: dict[str, Any] = {"path": unit.task.file.file_path, "live": rows.num_rows, "matched": matched}
    if matched == 0 or matched == rows.num_rows:
        return out
    if not unit.copy_on_write:
        positions = rows.column("_pos").filter(mask).to_numpy().astype(np.int64)
        out["positions"] = positions.tobytes()
        return out
    names = [f.name for f in schema.fields]
    keep = names + [n for n in LINEAGE_FIELDS if n in rows.column_names]
    survivors = rows.filter(pc.invert(mask)).select(keep)
    spec = metadata.spec_by_id(unit.task.file.spec_id)
    out["files"] = write_data_files(io, metadata, survivors, spec=spec, lineage=len(keep) > len(names))
    return out


def _strict_partitions(md: TableMetadata, expr: BooleanExpression) -> dict[int, PartitionEvaluator | None]:
    schema = md.schema()
    out: dict[int, PartitionEvaluator | None] = {}
    for spec in md.partition_specs:
        try:
            out[spec.spec_id] = (
                PartitionEvaluator(partition_struct(spec, schema), project_strict(expr, spec, schema))
                if spec.fields
                else None
            )
        except Exception:  # a spec whose source column was dropped: no strict answer
            out[spec.spec_id] = None
    return out


def _file_scoped(task: FileScanTask) -> list[DataFile]:
    return [d for d in task.delete_files if referenced_data_file_of(d) == task.file.file_path]


def delete(
    spark: SparkSession,
    table: str | Table,
    predicate: BooleanExpression | str,
    *,
    catalog: str | None = None,
    warehouse: str | None = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    **catalog_properties: str,
) -> RowDeleteResult:
    """Delete the rows matching ``predicate`` per the table's ``write.delete.mode`` (see the
    module docstring), the matching done by Spark tasks. ``table`` is a loaded table or a name
    in the catalog given by ``catalog``/``warehouse``/properties or ``spark.firn.catalog.*``."""
    t = _load(spark, table, catalog, warehouse, catalog_properties)
    mode = row_level_mode(t.metadata.table_properties, "delete", t.format_version)
    return _replanning_delete(
        spark, t, predicate, mode is RowLevelMode.MERGE_ON_READ, branch, snapshot_properties
    )


def merge_on_read_delete(
    spark: SparkSession,
    table: str | Table,
    predicate: BooleanExpression | str,
    *,
    catalog: str | None = None,
    warehouse: str | None = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    **catalog_properties: str,
) -> RowDeleteResult:
    """Delete the rows matching ``predicate`` with deletion vectors (v3+) or position delete
    files (v2), whatever ``write.delete.mode`` says; v1 tables have no delete files."""
    t = _load(spark, table, catalog, warehouse, catalog_properties)
    if t.format_version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        raise ValidationError(
            f"{t.name} is format version {t.format_version}, which has no delete files; "
            "use firn.spark.delete (copy-on-write) or upgrade the table"
        )
    return _replanning_delete(spark, t, predicate, True, branch, snapshot_properties)


def _replanning_delete(
    spark: SparkSession,
    table: Table,
    predicate: BooleanExpression | str,
    merge_on_read: bool,
    branch: str,
    snapshot_properties: Mapping[str, str] | None,
) -> RowDeleteResult:
    """:func:`_delete`, planned and run again when the only conflicts were concurrent rewrites
    (``firn.core.actions.replan``): they moved the matching rows without changing them, so
    matching them again in their new files deletes exactly the rows the predicate meant."""
    for _ in range(MAX_REPLANS):
        try:
            return _delete(spark, table, predicate, merge_on_read, branch, snapshot_properties)
        except RewrittenConcurrently:
            table.refresh()
    return _delete(spark, table, predicate, merge_on_read, branch, snapshot_properties)


def _load(
    spark: SparkSession, table: str | Table, catalog: str | None, warehouse: str | None, props: dict[str, str]
) -> Table:
    if isinstance(table, Table):
        return table.refresh()
    return catalog_config(spark, catalog, warehouse, **props).load().load_table(table)


def _delete(
    spark: SparkSession,
    table: Table,
    predicate: BooleanExpression | str,
    merge_on_read: bool,
    branch: str,
    snapshot_properties: Mapping[str, str] | None,
) -> RowDeleteResult:
    if predicate is None:  # destructive operations are safe by default: never "all rows" by omission
        raise ValidationError("delete needs a predicate; pass 'true' to delete every row")
    expr = to_expression(predicate)
    md = table.metadata
    scan = table.scan(filter=expr, ref=branch if md.refs.get(branch) is not None else None)
    snap = scan.snapshot
    mode = "merge-on-read" if merge_on_read else "copy-on-write"
    if snap is None:
        return RowDeleteResult(table.name, mode, None, 0, 0, 0, 0, 0)
    schema = md.schema()
    strict_metrics = StrictMetricsEvaluator(schema, expr)
    strict_parts = _strict_partitions(md, expr)
    whole: list[FileScanTask] = []
    units: list[_Unit] = []
    for task in scan.plan_files():
        sp = strict_parts.get(task.file.spec_id)
        covered = (
            isinstance(expr, AlwaysTrue)
            or (sp is not None and sp.eval(task.file.partition))
            or strict_metrics.eval(task.file)
        )
        if covered and not task.delete_files:
            whole.append(task)
        else:
            units.append(
                _Unit(task, table.metadata_location, dict(table.io.properties), expr, not merge_on_read)
            )
    results: list[dict[str, Any]] = []
    if units:
        sc = spark.sparkContext
        results = sc.parallelize(units, numSlices=len(units)).map(_match_file).collect()
    by_path = {u.task.file.file_path: u.task for u in units}
    # Covered files without deletes hold exactly record_count live rows; covered files with
    # deletes went to the tasks, which count their live rows.
    deleted = sum(t.file.record_count for t in whole)
    removed: list[FileScanTask] = list(whole)
    partial: list[tuple[FileScanTask, dict[str, Any]]] = []
    for r in results:
        deleted += r["matched"]
        if r["matched"] == 0:
            continue
        if r["matched"] == r["live"]:
            removed.append(by_path[r["path"]])
        else:
            partial.append((by_path[r["path"]], r))
    if not removed and not partial:
        return RowDeleteResult(table.name, mode, None, 0, 0, 0, 0, len(units))
    props = table.metadata.table_properties
    if merge_on_read:
        rd = table.row_delta(branch=branch, snapshot_properties=snapshot_properties)
        rd.validate_from_snapshot(snap.snapshot_id)
        rd.conflict_detection_filter(expr)
        rd.isolation_level(props.delete_isolation_level)
        rd.remove_data_files([t.file for t in removed])
        for task, r in partial:
            rd.delete_rows_at(task.file.file_path, np.frombuffer(r["positions"], dtype=np.int64))
        result = rd.commit()
        added = 0
    else:
        new_files = [f for _, r in partial for f in r["files"]]
        replaced = [*removed, *(t for t, _ in partial)]
        action = OverwriteFiles(
            starting_snapshot_id=snap.snapshot_id,
            added_data=new_files,
            removed_data=[t.file for t in replaced],
            removed_deletes=[d for t in replaced for d in _file_scoped(t)],
            conflict_filter=expr,
            isolation_level=props.delete_isolation_level,
            operation=Operation.OVERWRITE if new_files else Operation.DELETE,
            branch=branch,
            snapshot_properties=snapshot_properties,
            written_files=[f.file_path for f in new_files],
        )
        # A failed commit deletes the new files itself (unless its outcome is unknown).
        result = table.transaction().add_action(action).commit()
        added = len(new_files)
    return RowDeleteResult(
        table=table.name,
        mode=mode,
        snapshot_id=result.snapshot.snapshot_id if result.snapshot is not None else None,
        deleted_rows=deleted,
        removed_data_files=len(removed),
        rewritten_data_files=0 if merge_on_read else len(partial),
        added_data_files=added,
        spark_tasks=len(units),
    )


__all__ = ["RowDeleteResult", "delete", "merge_on_read_delete"]
