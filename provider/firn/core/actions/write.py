"""Building the write actions behind ``table.append/add_files/overwrite/delete``.

Data files are written before the commit (once, not per retry); the returned action then
commits them and reports them through ``written_files`` so a failed commit can delete them. Row-level deletes plan against the branch's current snapshot and record it, so that
concurrent commits are validated per the isolation level (``actions.overwrite``); ``delete``
and ``overwrite`` plan again when the only conflicts are concurrent rewrites
(``actions.replan``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from firn.core.actions.append import AppendFiles
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.actions.replan import Replanning
from firn.core.commit import CommitContext
from firn.core.planning import FileScanTask, partition_type_or_none
from firn.core.reader import ReadPlan, read_task
from firn.core.scan import DataScan, to_expression
from firn.core.updates import SetProperties, TableRequirement, TableUpdate
from firn.core.writer import LINEAGE_FIELDS, write_data_files
from firn.errors import AlreadyExists, ValidationError
from firn.expressions import (
    AlwaysTrue,
    BooleanExpression,
    PartitionEvaluator,
    StrictMetricsEvaluator,
    bind,
    evaluate,
)
from firn.expressions.projection import partition_struct, project_strict
from firn.io.deletion import delete_quietly
from firn.spec.content import DataFile, FileContent
from firn.spec.deletion_scope import DeletionScope
from firn.spec.partitioning import PartitionSpec
from firn.spec.properties import (
    DEFAULT_NAME_MAPPING,
    METRICS_MODE_COLUMN_PREFIX,
    RowLevelMode,
    TableProperties,
)
from firn.spec.snapshots import MAIN_BRANCH, Operation
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_ROW_LEVEL_DELETES

if TYPE_CHECKING:
    from firn.core.handle import TableHandle


def _ref_or_none(table: TableHandle, branch: str) -> str | None:
    return branch if table.metadata.refs.get(branch) is not None else None


def append_action(
    table: TableHandle,
    data: pa.Table,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    stage_only: bool = False,
) -> AppendFiles | None:
    if not isinstance(data, pa.Table | pa.RecordBatch):
        raise ValidationError(f"append takes a pyarrow Table, got {type(data).__name__}")
    if data.num_rows == 0:
        return None
    files = write_data_files(table.io, table.metadata, data)
    return AppendFiles(
        files,
        branch=branch,
        snapshot_properties=snapshot_properties,
        stage_only=stage_only,
        written_files=[f.file_path for f in files],
    )


def _partition_from_bounds(spec: PartitionSpec, table: TableHandle, f: DataFile) -> tuple[object, ...]:
    """Infer a registered file's partition tuple from its column bounds (as PyIceberg and
    Spark's add_files do): each transform must map the lower and upper bound to the same value.
    Bounds say nothing about the values between them under a transform that does not preserve
    order (bucket), so there the bounds must be equal."""
    from firn.spec import values

    schema = table.metadata.schema()
    out: list[object] = []
    for pf in spec.fields:
        if pf.transform.is_void:
            out.append(None)
            continue
        src = schema.find_field(pf.source_id)
        lo = (f.lower_bounds or {}).get(pf.source_id)
        hi = (f.upper_bounds or {}).get(pf.source_id)
        if lo is None or hi is None:
            if (f.null_value_counts or {}).get(pf.source_id) == f.record_count:
                out.append(None)
                continue
            raise ValidationError(
                f"cannot register {f.file_path}: no statistics for partition source column {src.name!r}"
            )
        low = values.from_bytes(src.field_type, lo)
        high = values.from_bytes(src.field_type, hi)
        if low != high and not pf.transform.preserves_order:
            raise ValidationError(
                f"cannot register {f.file_path}: partition field {pf.name!r} ({pf.transform}) does not "
                f"preserve order, so column {src.name!r} must hold a single value to infer the "
                f"partition; it ranges over {low!r} .. {high!r}"
            )
        a = pf.transform.apply(src.field_type, low)
        b = pf.transform.apply(src.field_type, high)
        if a != b:
            raise ValidationError(
                f"cannot register {f.file_path}: it spans several partitions of {pf.name!r} "
                f"({pf.transform}: {a!r} .. {b!r}); add_files needs one partition per file"
            )
        if (f.null_value_counts or {}).get(pf.source_id, 0) > 0:
            raise ValidationError(
                f"cannot register {f.file_path}: column {src.name!r} mixes nulls and values in one file"
            )
        out.append(a)
    return tuple(out)


class _RegisterFiles(AppendFiles):
    """``add_files``: an append that also sets ``schema.name-mapping.default`` (built from the
    schema the files were read with) when the table has none, so files without Iceberg field
    ids stay readable (as PyIceberg's add_files does)."""

    def __init__(self, files: Sequence[DataFile], *, name_mapping: str, **kwargs: Any) -> None:
        super().__init__(files, **kwargs)
        self.name_mapping = name_mapping

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        updates, requirements = super().apply(base, ctx)
        if base.table_properties.name_mapping_json is None:
            updates = [SetProperties({DEFAULT_NAME_MAPPING: self.name_mapping}), *updates]
        return updates, requirements


def add_files_action(
    table: TableHandle,
    paths: Sequence[str],
    *,
    branch: str = MAIN_BRANCH,
    check_duplicate_files: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> AppendFiles:
    from firn.io.parquet import metrics_from_parquet_footer
    from firn.spec.name_mapping import create_mapping_from_schema, parse_name_mapping

    if len(set(paths)) != len(paths):
        raise ValidationError("add_files was given the same path twice")
    md = table.metadata
    schema = md.schema()
    if check_duplicate_files and paths:
        wanted = set(paths)
        present = {t.file.file_path for t in DataScan(table, ref=_ref_or_none(table, branch)).plan_files()}
        dupes = sorted(wanted & present)
        if dupes:
            raise AlreadyExists(f"{len(dupes)} file(s) are already in {table.name}, e.g. {dupes[0]}")
    existing_mapping = md.table_properties.name_mapping_json
    mapping = (
        parse_name_mapping(existing_mapping)
        if existing_mapping is not None
        else create_mapping_from_schema(schema)
    )
    spec = md.spec()
    props = md.table_properties
    if spec.fields:
        # Partition inference needs the exact bounds of the source columns, not truncated ones.
        full = {
            f"{METRICS_MODE_COLUMN_PREFIX}{schema.find_column_name(pf.source_id)}": "full"
            for pf in spec.fields
            if not pf.transform.is_void
        }
        props = TableProperties.parse({**props.raw, **full})
    files = []
    for p in paths:
        result = metrics_from_parquet_footer(table.io, p, schema, props, name_mapping=mapping)
        f = result.to_data_file(spec_id=spec.spec_id)
        if spec.fields:
            f = f.evolve(partition=_partition_from_bounds(spec, table, f))
        files.append(f)
    return _RegisterFiles(
        files, name_mapping=mapping.to_json(), branch=branch, snapshot_properties=snapshot_properties
    )


@dataclass
class RowDeletePlan:
    """The outcome of matching a row filter against a snapshot's files."""

    starting_snapshot_id: int | None
    removed_data: list[DataFile] = field(default_factory=list)
    removed_deletes: list[DataFile] = field(default_factory=list)
    # Partially matching files: the task and its live rows with a "__match" column.
    partial: list[tuple[FileScanTask, pa.Table]] = field(default_factory=list)
    rewritten_files: list[DataFile] = field(default_factory=list)


def _strict_partition(table: TableHandle, expr: BooleanExpression) -> dict[int, PartitionEvaluator | None]:
    schema = table.metadata.schema()
    out: dict[int, PartitionEvaluator | None] = {}
    for spec in table.metadata.partition_specs:
        if not spec.fields or partition_type_or_none(spec, schema) is None:
            out[spec.spec_id] = None
            continue
        out[spec.spec_id] = PartitionEvaluator(
            partition_struct(spec, schema), project_strict(expr, spec, schema)
        )
    return out


def file_scoped_deletes(task: FileScanTask) -> list[DataFile]:
    """Delete files that only refer to this task's data file (removed along with it): DVs and
    position delete files whose ``referenced_data_file`` or ``file_path`` bounds name it."""
    from firn.deletes.writers import referenced_data_file_of

    return [d for d in task.delete_files if referenced_data_file_of(d) == task.file.file_path]


def match_rows(table: TableHandle, expr: BooleanExpression, branch: str) -> RowDeletePlan:
    """Classify the files the filter may touch: wholly matching (removed), partially matching
    (with a mask of matching live rows and their positions), or untouched."""
    scan = DataScan(table, filter=expr, ref=_ref_or_none(table, branch))
    snap = scan.snapshot
    plan = RowDeletePlan(snap.snapshot_id if snap is not None else None)
    if snap is None:
        return plan
    schema = table.metadata.schema()
    bound = bind(schema, expr)
    strict_metrics = StrictMetricsEvaluator(schema, expr)
    strict_parts = _strict_partition(table, expr)
    # v3: carry row lineage so rewritten survivors keep their _row_id (spec "Row Lineage").
    meta = ("_pos", *LINEAGE_FIELDS) if table.metadata.tracks_row_lineage else ("_pos",)
    read_plan = ReadPlan(
        table_schema=schema,
        projection=schema,
        metadata_columns=meta,
        output_order=(*(f.name for f in schema.fields), *meta),
        specs=dict(table.metadata.specs),
        name_mapping=scan.name_mapping,
    )
    for task in scan.plan_files():
        f = task.file
        sp = strict_parts.get(f.spec_id)
        if (
            isinstance(expr, AlwaysTrue)
            or (sp is not None and sp.eval(f.partition))
            or strict_metrics.eval(f)
        ):
            plan.removed_data.append(f)
            plan.removed_deletes.extend(file_scoped_deletes(task))
            continue
        # Read live rows without the residual: we need the exact matching set.
        full = FileScanTask(f, task.data_sequence_number, task.delete_files, None, task.origin)
        batches = list(read_task(table.io, full, read_plan))
        if not batches:
            continue
        rows = pa.Table.from_batches(batches)
        mask = evaluate(bound, rows)
        matched = pc.sum(mask).as_py() or 0
        if matched == 0:
            continue
        if matched == rows.num_rows:
            plan.removed_data.append(f)
            plan.removed_deletes.extend(file_scoped_deletes(task))
            continue
        plan.partial.append((task, rows.append_column("__match", mask)))
    return plan


def copy_on_write(table: TableHandle, plan: RowDeletePlan) -> list[DataFile]:
    """Rewrite partially matching files with their surviving rows (same spec and partition).

    Spec "Row Lineage": moved rows keep their non-null ``_row_id`` and, being unmodified, their
    ``_last_updated_sequence_number``; both are written into the new files (v3+).
    """
    added: list[DataFile] = []
    schema = table.metadata.schema()
    names = [f.name for f in schema.fields]
    try:
        for task, rows in plan.partial:
            keep = names + [n for n in LINEAGE_FIELDS if n in rows.column_names]
            survivors = rows.filter(pc.invert(rows.column("__match"))).select(keep)
            plan.removed_data.append(task.file)
            plan.removed_deletes.extend(file_scoped_deletes(task))
            if survivors.num_rows:
                spec = table.metadata.spec_by_id(task.file.spec_id)
                added.extend(
                    write_data_files(
                        table.io, table.metadata, survivors, spec=spec, lineage=len(keep) > len(names)
                    )
                )
    except BaseException:
        delete_quietly(
            table.io,
            DeletionScope.for_written(table.name, table.metadata),
            [f.file_path for f in added],
            "rewrite",
        )
        raise
    return added


def delete_action(
    table: TableHandle,
    filter: BooleanExpression | str,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> Replanning:
    """The action deleting the rows matching ``filter``, planned again if a concurrent
    rewrite moves them (``actions.replan``)."""
    if filter is None:  # destructive operations are safe by default: never "all rows" by omission
        raise ValidationError("delete needs a filter; pass 'true' to delete every row")
    expr = to_expression(filter)
    return Replanning(table, lambda t: _plan_delete(t, expr, branch, snapshot_properties))


def _plan_delete(
    table: TableHandle,
    expr: BooleanExpression,
    branch: str,
    snapshot_properties: Mapping[str, str] | None,
) -> OverwriteFiles:
    md = table.metadata
    props = md.table_properties
    plan = match_rows(table, expr, branch)
    if (
        props.delete_mode is RowLevelMode.MERGE_ON_READ
        and md.format_version >= MIN_FORMAT_VERSION_ROW_LEVEL_DELETES
    ):
        from firn.core.actions.merge_on_read import merge_on_read_deletes

        added_deletes, replaced_deletes, written = merge_on_read_deletes(table, plan)
        return OverwriteFiles(
            starting_snapshot_id=plan.starting_snapshot_id,
            removed_data=plan.removed_data,
            added_deletes=added_deletes,
            removed_deletes=[*plan.removed_deletes, *replaced_deletes],
            conflict_filter=expr,
            isolation_level=props.delete_isolation_level,
            validate_deletes_for=[*plan.removed_data, *(t.file for t, _ in plan.partial)],
            operation=Operation.DELETE,
            branch=branch,
            snapshot_properties=snapshot_properties,
            written_files=written,
            required_data_files=[t.file.file_path for t, _ in plan.partial],
        )
    added = copy_on_write(table, plan)
    return OverwriteFiles(
        starting_snapshot_id=plan.starting_snapshot_id,
        added_data=added,
        removed_data=plan.removed_data,
        removed_deletes=plan.removed_deletes,
        conflict_filter=expr,
        isolation_level=props.delete_isolation_level,
        operation=Operation.OVERWRITE if added else Operation.DELETE,
        branch=branch,
        snapshot_properties=snapshot_properties,
        written_files=[f.file_path for f in added],
    )


def overwrite_action(
    table: TableHandle,
    data: pa.Table,
    filter: BooleanExpression | str | None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> Replanning:
    """The action replacing the rows matching ``filter`` with ``data``. ``data`` is written
    once; a re-plan after a concurrent rewrite (``actions.replan``) only matches the filter
    again."""
    if not isinstance(data, pa.Table | pa.RecordBatch):
        raise ValidationError(f"overwrite takes a pyarrow Table, got {type(data).__name__}")
    expr = to_expression(filter)
    new_files = write_data_files(table.io, table.metadata, data) if data.num_rows else []
    try:
        return Replanning(
            table,
            lambda t: _plan_overwrite(t, new_files, expr, branch, snapshot_properties, delete_new=True),
        )
    except BaseException:
        delete_quietly(
            table.io,
            DeletionScope.for_written(table.name, table.metadata),
            [f.file_path for f in new_files],
            "overwrite",
        )
        raise


def overwrite_files_action(
    table: TableHandle,
    files: Sequence[DataFile],
    filter: BooleanExpression | str | None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    delete_on_failure: bool = False,
) -> Replanning:
    """``overwrite`` with data files written elsewhere (e.g. by Spark tasks); they are deleted
    when the commit fails only with ``delete_on_failure``."""
    for f in files:
        if f.content is not FileContent.DATA:
            raise ValidationError(f"overwrite takes data files only; {f.file_path} is {f.content.name}")
    expr = to_expression(filter)
    given = list(files)
    return Replanning(
        table,
        lambda t: _plan_overwrite(t, given, expr, branch, snapshot_properties, delete_new=delete_on_failure),
    )


def _plan_overwrite(
    table: TableHandle,
    new_files: list[DataFile],
    expr: BooleanExpression,
    branch: str,
    snapshot_properties: Mapping[str, str] | None,
    *,
    delete_new: bool,
) -> OverwriteFiles:
    md = table.metadata
    plan = match_rows(table, expr, branch)
    rewritten = copy_on_write(table, plan)
    written = [*rewritten, *new_files] if delete_new else rewritten
    return OverwriteFiles(
        starting_snapshot_id=plan.starting_snapshot_id,
        added_data=[*rewritten, *new_files],
        removed_data=plan.removed_data,
        removed_deletes=plan.removed_deletes,
        conflict_filter=expr,
        isolation_level=md.table_properties.merge_isolation_level,
        operation=Operation.OVERWRITE,
        branch=branch,
        snapshot_properties=snapshot_properties,
        written_files=[f.file_path for f in written],
    )


__all__ = [
    "RowDeletePlan",
    "add_files_action",
    "append_action",
    "copy_on_write",
    "delete_action",
    "file_scoped_deletes",
    "match_rows",
    "overwrite_action",
    "overwrite_files_action",
]
