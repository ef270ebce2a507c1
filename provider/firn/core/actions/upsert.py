"""``table.upsert(data, join_cols=[...])``: update rows whose keys exist, insert the others.

One snapshot: existing rows whose join-column values match a source row are deleted —
merge-on-read (DVs on v3+, position delete files on v2) or copy-on-write per
``write.merge.mode`` — and the source rows are written as new data files. Semantics (SQL
``MERGE ... WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``, as PyIceberg's
``upsert``):

* Keys compare with SQL equality: a null in any join column never matches (such source rows
  are inserted).
* Two source rows with the same (non-null) key are a :class:`ValidationError`.
* With ``skip_unchanged_rows`` (default), a matched row whose values all equal the source row
  is neither deleted nor rewritten, and not counted as updated.
* Row lineage (v3, spec "Row Lineage"): an updated row keeps the ``_row_id`` of the row it
  replaces and gets a null ``_last_updated_sequence_number`` (so it reads as this commit's);
  inserted rows get new ids.

Matching is vectorized: a pruning filter (``in`` or a range per join column) plans the
candidate files, then each file's live rows are hash-joined with the source keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.actions.merge_on_read import merge_on_read_deletes, row_level_mode
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.actions.replan import Replanning
from firn.core.actions.write import RowDeletePlan, copy_on_write, file_scoped_deletes
from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_task
from firn.core.scan import DataScan
from firn.core.writer import LINEAGE_FIELDS, write_data_files
from firn.errors import ValidationError
from firn.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, col
from firn.io.arrow_schema import cast_to_schema, storage
from firn.io.deletion import delete_quietly
from firn.spec.content import DataFile
from firn.spec.deletion_scope import DeletionScope
from firn.spec.properties import RowLevelMode
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.types import PrimitiveType
from firn.util.arrow_chunks import bool_np

if TYPE_CHECKING:
    from firn.core.handle import TableHandle

# Up to this many distinct keys per column, the pruning filter is an ``in`` list (exact for
# metrics and partitions); above it, a ``between`` range keeps planning cheap.
MAX_IN_FILTER_VALUES = 1000


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What an upsert did: source rows that replaced existing rows, and rows inserted."""

    rows_updated: int
    rows_inserted: int


@dataclass
class _Candidate:
    task: FileScanTask
    rows: pa.Table  # live rows, with _pos (and lineage columns on v3+)
    row_idx: np.ndarray  # matched (row in file, source row) pairs
    src_idx: np.ndarray


def _key_columns(schema_names: Sequence[str], table: pa.Table) -> dict[str, Any]:
    # Extension types (uuid) join on their storage.
    return {f"k{i}": storage(table.column(n).combine_chunks()) for i, n in enumerate(schema_names)}


def _valid_keys(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    valid = np.ones(table.num_rows, dtype=bool)
    for n in names:
        column = table.column(n)
        if column.null_count:
            valid &= pc.is_valid(column).to_numpy(zero_copy_only=False)
    return valid


def _check_duplicates(keys: pa.Table, names: Sequence[str]) -> None:
    key_names = [f"k{i}" for i in range(len(names))]
    counts = keys.group_by(key_names).aggregate([([], "count_all")])
    dupes = counts.filter(pc.greater(counts.column("count_all"), 1))
    if dupes.num_rows:
        sample = {n: dupes.column(k)[0].as_py() for n, k in zip(names, key_names)}
        raise ValidationError(
            f"upsert input has {dupes.num_rows} duplicate key(s) on {list(names)}, e.g. {sample}; "
            "each key may appear once"
        )


def _pruning_filter(source: pa.Table, names: Sequence[str], valid: np.ndarray) -> BooleanExpression:
    """A filter every existing row matching some source key satisfies (for planning only)."""
    if not valid.any():
        return AlwaysFalse()
    mask = pa.array(valid)
    parts: list[BooleanExpression] = []
    for n in names:
        column = source.column(n).filter(mask).combine_chunks()
        values = pc.unique(storage(column))
        if isinstance(column.type, pa.BaseExtensionType):
            values = pa.ExtensionArray.from_storage(column.type, values)  # uuid: UUID literals
        if len(values) <= MAX_IN_FILTER_VALUES:
            parts.append(col(n).isin(values.to_pylist()))
            continue
        try:
            bounds = pc.min_max(values)
        except pa.ArrowNotImplementedError:
            continue  # no order for this type: do not prune on it
        parts.append(col(n).between(bounds["min"].as_py(), bounds["max"].as_py()))
    if not parts:
        return AlwaysTrue()
    return and_(*parts) if len(parts) > 1 else parts[0]


def _same(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Null-safe element-wise equality (NaN equals NaN): whether an update changes nothing."""
    t = a.type
    nested = pa.types.is_nested(t)
    if not nested:
        a, b = storage(a), storage(b)
        try:
            eq = pc.fill_null(pc.equal(a, b), False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            nested = True
        else:
            same = pc.or_(eq, pc.and_(pc.is_null(a), pc.is_null(b)))
            if pa.types.is_floating(a.type):
                same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
            return bool_np(same)
    # Lists, maps, structs: compared as Python values (one comparison per matched row).
    return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist())], dtype=bool)


def _changed_sources(
    candidates: Sequence[_Candidate], source: pa.Table, value_columns: Sequence[str]
) -> np.ndarray:
    """Source row indices whose values differ from at least one row they match."""
    changed: list[np.ndarray] = []
    for c in candidates:
        if not value_columns:
            break
        existing = c.rows.select(value_columns).take(pa.array(c.row_idx))
        incoming = source.select(value_columns).take(pa.array(c.src_idx))
        same = np.ones(len(c.row_idx), dtype=bool)
        for n in value_columns:
            same &= _same(existing.column(n).combine_chunks(), incoming.column(n).combine_chunks())
        changed.append(c.src_idx[~same])
    return np.unique(np.concatenate(changed)) if changed else np.zeros(0, dtype=np.int64)


def _read_candidates(
    table: TableHandle, expr: BooleanExpression, branch: str, source_keys: pa.Table, names: Sequence[str]
) -> tuple[int | None, list[_Candidate]]:
    ref = branch if table.metadata.refs.get(branch) is not None else None
    scan = DataScan(table, filter=expr, ref=ref)
    snap = scan.snapshot
    if snap is None or isinstance(expr, AlwaysFalse):
        return (snap.snapshot_id if snap is not None else None), []
    schema = table.metadata.schema()
    meta = ("_pos", *LINEAGE_FIELDS) if table.metadata.tracks_row_lineage else ("_pos",)
    plan = ReadPlan(
        table_schema=schema,
        projection=schema,
        metadata_columns=meta,
        output_order=(*(f.name for f in schema.fields), *meta),
        specs=dict(table.metadata.specs),
        name_mapping=scan.name_mapping,
    )
    key_names = [f"k{i}" for i in range(len(names))]
    out: list[_Candidate] = []
    for task in scan.plan_files():
        # Every live row, not only the residual's: positions must be exact.
        full = FileScanTask(task.file, task.data_sequence_number, task.delete_files, None, task.origin)
        batches = list(read_task(table.io, full, plan))
        if not batches:
            continue
        rows = pa.Table.from_batches(batches)
        valid = _valid_keys(rows, names)
        left = pa.table({**_key_columns(names, rows), "__row": np.arange(rows.num_rows, dtype=np.int64)})
        if not valid.all():
            left = left.filter(pa.array(valid))
        pairs = left.join(source_keys, keys=key_names, join_type="inner")
        if pairs.num_rows == 0:
            continue
        out.append(
            _Candidate(
                task,
                rows,
                pairs.column("__row").to_numpy(),
                pairs.column("__src").to_numpy(),
            )
        )
    return snap.snapshot_id, out


def _with_row_ids(rows: pa.Table, row_ids: pa.Array) -> pa.Table:
    """Spec "Row Lineage": updated rows keep their ``_row_id``; a null sequence number makes
    them inherit the commit's (they were modified); inserted rows have null ids."""
    return rows.append_column("_row_id", row_ids).append_column(
        "_last_updated_sequence_number", pa.nulls(rows.num_rows, pa.int64())
    )


def _join_columns(table: TableHandle, join_cols: Sequence[str] | None, case_sensitive: bool) -> list[str]:
    """The join columns' schema names: top-level primitive columns, each once (default: the
    schema's identifier fields)."""
    schema = table.metadata.schema()
    if join_cols is None:
        join_cols = schema.identifier_field_names
        if not join_cols:
            raise ValidationError(
                f"upsert needs join_cols: table {table.name} has no identifier fields to default to"
            )
    if not join_cols:
        raise ValidationError("upsert needs at least one join column")
    names: list[str] = []
    for name in join_cols:
        f = schema.find_field(name, case_sensitive=case_sensitive)
        if schema.parent_id(f.field_id) is not None or not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(f"join column {name!r} must be a top-level primitive column")
        if f.name in names:
            raise ValidationError(f"join column {name!r} was given twice")
        names.append(f.name)
    return names


def _matched_rows(
    candidates: Sequence[_Candidate],
    source: pa.Table,
    value_columns: Sequence[str],
    *,
    update: bool,
    insert: bool,
    skip_unchanged_rows: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Source rows to write as updates (they replace the rows they match) and as inserts."""
    matched = (
        np.unique(np.concatenate([c.src_idx for c in candidates])) if candidates else np.zeros(0, np.int64)
    )
    if not update:
        updated = np.zeros(0, dtype=np.int64)
    elif skip_unchanged_rows:
        updated = _changed_sources(candidates, source, value_columns)
    else:
        updated = matched
    inserted = (
        np.setdiff1d(np.arange(source.num_rows, dtype=np.int64), matched)
        if insert
        else np.zeros(0, dtype=np.int64)
    )
    return updated, inserted


def _delete_plan(
    candidates: Sequence[_Candidate], updated: np.ndarray, starting_snapshot_id: int | None, lineage: bool
) -> tuple[RowDeletePlan, pa.Array | None]:
    """Existing rows to delete (every row matching an updated source row) and, with row
    lineage, the ``_row_id`` each updated source row keeps (the first row it matches)."""
    plan = RowDeletePlan(starting_snapshot_id)
    id_src: list[np.ndarray] = []
    id_values: list[pa.Array] = []
    for c in candidates:
        hit = np.isin(c.src_idx, updated)
        if not hit.any():
            continue
        mask = np.zeros(c.rows.num_rows, dtype=np.bool_)
        mask[c.row_idx[hit]] = True
        if lineage:
            id_src.append(c.src_idx[hit])
            id_values.append(c.rows.column("_row_id").take(pa.array(c.row_idx[hit])).combine_chunks())
        if mask.all():
            plan.removed_data.append(c.task.file)
            plan.removed_deletes.extend(file_scoped_deletes(c.task))
        else:
            plan.partial.append((c.task, c.rows.append_column("__match", pa.array(mask))))
    if not lineage:
        return plan, None
    row_ids = pa.nulls(len(updated), pa.int64())
    if id_src:
        srcs = np.concatenate(id_src)
        ids = pa.concat_arrays(id_values)
        # A source row matching several existing rows keeps the first one's id.
        unique_srcs, first = np.unique(srcs, return_index=True)
        row_ids = ids.take(pa.array(first[np.searchsorted(unique_srcs, updated)]))
    return plan, row_ids


def _write_files(
    table: TableHandle, plan: RowDeletePlan, to_write: pa.Table, *, mor: bool, lineage: bool
) -> tuple[list[DataFile], list[DataFile], list[DataFile], list[DataFile], list[str]]:
    """Write the deletes (merge-on-read) or rewritten files (copy-on-write), then the new rows;
    on failure everything written is deleted. Returns (added deletes, replaced deletes,
    rewritten data files, new data files, every written path)."""
    added_deletes: list[DataFile] = []
    replaced: list[DataFile] = []
    written: list[str] = []
    rewritten: list[DataFile] = []
    try:
        if mor:
            added_deletes, replaced, written = merge_on_read_deletes(table, plan)
        else:
            rewritten = copy_on_write(table, plan)
            written = [f.file_path for f in rewritten]
        new_files = write_data_files(table.io, table.metadata, to_write, lineage=lineage)
        written += [f.file_path for f in new_files]
    except BaseException:
        delete_quietly(
            table.io,
            DeletionScope.for_written(table.name, table.metadata),
            [*written, *(f.file_path for f in rewritten)],
            "upsert",
        )
        raise
    return added_deletes, replaced, rewritten, new_files, written


def upsert_action(
    table: TableHandle,
    data: pa.Table,
    join_cols: Sequence[str] | None,
    *,
    when_matched_update_all: bool = True,
    when_not_matched_insert_all: bool = True,
    skip_unchanged_rows: bool = True,
    case_sensitive: bool = True,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> tuple[Replanning | None, UpsertResult]:
    """Plan and write an upsert; returns the action to commit (None: nothing to do) and counts.

    A concurrent rewrite of the files it matched makes it plan again on the refreshed table
    (``actions.replan``); rewrites change no rows, so the counts stay the same."""
    if not isinstance(data, pa.Table | pa.RecordBatch):
        raise ValidationError(f"upsert takes a pyarrow Table, got {type(data).__name__}")
    results: list[UpsertResult] = []

    def planner(t: TableHandle) -> OverwriteFiles | None:
        action, result = _plan_upsert(
            t,
            data,
            join_cols,
            when_matched_update_all=when_matched_update_all,
            when_not_matched_insert_all=when_not_matched_insert_all,
            skip_unchanged_rows=skip_unchanged_rows,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )
        results.append(result)
        return action

    replanning = Replanning(table, planner)
    return (None if replanning.is_noop else replanning), results[-1]


def _plan_upsert(
    table: TableHandle,
    data: pa.Table,
    join_cols: Sequence[str] | None,
    *,
    when_matched_update_all: bool,
    when_not_matched_insert_all: bool,
    skip_unchanged_rows: bool,
    case_sensitive: bool,
    branch: str,
    snapshot_properties: Mapping[str, str] | None,
) -> tuple[OverwriteFiles | None, UpsertResult]:
    md = table.metadata
    schema = md.schema()
    names = _join_columns(table, join_cols, case_sensitive)
    source = cast_to_schema(data, schema)
    if source.num_rows == 0:
        return None, UpsertResult(0, 0)

    valid = _valid_keys(source, names)
    source_keys = pa.table(
        {**_key_columns(names, source), "__src": np.arange(source.num_rows, dtype=np.int64)}
    )
    if not valid.all():
        source_keys = source_keys.filter(pa.array(valid))
    _check_duplicates(source_keys, names)
    expr = _pruning_filter(source, names, valid)
    starting_snapshot_id, candidates = _read_candidates(table, expr, branch, source_keys, names)
    updated, inserted = _matched_rows(
        candidates,
        source,
        [f.name for f in schema.fields if f.name not in names],
        update=when_matched_update_all,
        insert=when_not_matched_insert_all,
        skip_unchanged_rows=skip_unchanged_rows,
    )
    result = UpsertResult(len(updated), len(inserted))
    if not len(updated) and not len(inserted):
        return None, result

    lineage = md.tracks_row_lineage
    plan, row_ids = _delete_plan(candidates, updated, starting_snapshot_id, lineage)
    new_rows = [source.take(pa.array(updated)), source.take(pa.array(inserted))]
    if row_ids is not None:
        new_rows = [
            _with_row_ids(new_rows[0], row_ids),
            _with_row_ids(new_rows[1], pa.nulls(len(inserted), pa.int64())),
        ]
    mor = row_level_mode(md.table_properties, "merge", md.format_version) is RowLevelMode.MERGE_ON_READ
    added_deletes, replaced, rewritten, new_files, written = _write_files(
        table, plan, pa.concat_tables(new_rows), mor=mor, lineage=lineage
    )
    partial_files = [t.file for t, _ in plan.partial]
    action = OverwriteFiles(
        starting_snapshot_id=starting_snapshot_id,
        added_data=[*rewritten, *new_files],
        removed_data=plan.removed_data,
        added_deletes=added_deletes,
        removed_deletes=[*plan.removed_deletes, *replaced],
        # Serializable: rows with these keys appended concurrently would become duplicates.
        conflict_filter=expr,
        isolation_level=md.table_properties.merge_isolation_level,
        validate_deletes_for=[*plan.removed_data, *partial_files],
        branch=branch,
        snapshot_properties=snapshot_properties,
        written_files=written,
        required_data_files=[f.file_path for f in partial_files] if mor else (),
    )
    return action, result


__all__ = ["MAX_IN_FILTER_VALUES", "UpsertResult", "upsert_action"]
