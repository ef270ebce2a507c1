"""Reading planned tasks into Arrow: projection by field id, deletes, residuals, metadata columns.

For each task the reader streams the data file with the columns the projection, the
residual filter and any equality deletes need; pushes the residual filter into the Parquet
read; masks deleted positions (DVs / position deletes) through the ``_pos`` column; anti-joins
equality deletes; and adds the requested metadata columns (``_file``, ``_pos``, ``_spec_id``,
v3 ``_row_id`` and ``_last_updated_sequence_number`` by the spec's inheritance rules).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from firn.core.planning import FileScanTask
from firn.deletes.apply import EqualityDeletes, PositionDeleteFilter, load_positions
from firn.expressions import AlwaysTrue, referenced_field_ids, to_arrow_expression
from firn.io.arrow_schema import schema_to_arrow
from firn.io.base import FileIO
from firn.io.parquet_read import read_parquet
from firn.spec.field_ids import (
    FILE_PATH_COLUMN_ID,
    LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID,
    METADATA_COLUMN_NAMES,
    ROW_ID_COLUMN_ID,
    ROW_POSITION_COLUMN_ID,
    SPEC_ID_COLUMN_ID,
)
from firn.spec.name_mapping import NameMapping
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.types import INT, LONG, STRING, NestedField

MAX_READ_THREADS = 4
METADATA_FIELDS = {
    "_file": NestedField(FILE_PATH_COLUMN_ID, "_file", STRING, True),
    "_pos": NestedField(ROW_POSITION_COLUMN_ID, "_pos", LONG, True),
    "_spec_id": NestedField(SPEC_ID_COLUMN_ID, "_spec_id", INT, True),
    "_row_id": NestedField(ROW_ID_COLUMN_ID, "_row_id", LONG, False),
    "_last_updated_sequence_number": NestedField(
        LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID, "_last_updated_sequence_number", LONG, False
    ),
}


@dataclass(frozen=True)
class ReadPlan:
    """What to read for every task of one scan."""

    table_schema: Schema  # the schema filters are bound to (current or time-travel schema)
    projection: Schema  # data columns to return
    metadata_columns: tuple[str, ...]  # requested metadata columns, in order
    output_order: tuple[str, ...]  # final column order (data and metadata names)
    specs: dict[int, PartitionSpec]
    name_mapping: NameMapping | None = None
    batch_size: int = 131_072

    @property
    def output_schema(self) -> pa.Schema:
        fields = list(schema_to_arrow(self.projection))
        for name in self.metadata_columns:
            fields.append(schema_to_arrow(Schema(METADATA_FIELDS[name]))[0])
        by_name = {f.name: f for f in fields}
        return pa.schema([by_name[n] for n in self.output_order])


def _partition_constants(task: FileScanTask, plan: ReadPlan) -> dict[int, Any]:
    spec = plan.specs.get(task.file.spec_id)
    if spec is None:
        return {}
    return {
        pf.source_id: value for pf, value in zip(spec.fields, task.file.partition) if pf.transform.is_identity
    }


def read_task(io: FileIO, task: FileScanTask, plan: ReadPlan) -> Iterator[pa.RecordBatch]:
    """Stream one task's live rows as batches in ``plan.output_schema``."""
    f = task.file
    residual = task.residual if task.residual is not None else AlwaysTrue()
    eq = EqualityDeletes(io, plan.table_schema, task.delete_files, plan.name_mapping)
    positions = load_positions(io, f, task.delete_files)
    position_filter = PositionDeleteFilter(positions, f.record_count) if positions else None
    meta = set(plan.metadata_columns)
    lineage = bool(meta & {"_row_id", "_last_updated_sequence_number"})

    needed_ids = set(plan.projection.field_ids) | referenced_field_ids(residual) | eq.required_field_ids()
    read_schema = plan.table_schema.select_ids(
        {i for i in needed_ids if plan.table_schema.find_field_or_none(i)}
    )
    if lineage:
        extra = [METADATA_FIELDS["_row_id"], METADATA_FIELDS["_last_updated_sequence_number"]]
        read_schema = Schema(*read_schema.fields, *extra, schema_id=read_schema.schema_id)
    names_by_id = {fid: read_schema.find_column_name(fid) or "" for fid in read_schema.field_ids}
    row_filter = None if isinstance(residual, AlwaysTrue) else to_arrow_expression(residual)
    include_pos = position_filter is not None or "_pos" in meta or lineage

    for batch in read_parquet(
        io,
        f.file_path,
        projected=read_schema,
        name_mapping=plan.name_mapping,
        row_filter=row_filter,
        partition_constants=_partition_constants(task, plan),
        batch_size=plan.batch_size,
        include_pos=include_pos,
    ):
        if batch.num_rows == 0:
            continue
        if position_filter is not None:
            keep = position_filter.keep_mask(batch.column("_pos"))
            if keep is not None:
                batch = batch.filter(pa.array(keep))
        if not eq.is_empty and batch.num_rows:
            keep_eq = eq.keep_mask(batch, names_by_id)
            if keep_eq is not None:
                batch = batch.filter(keep_eq)
        if batch.num_rows == 0:
            continue
        yield _finish(batch, task, plan, meta)


def _finish(batch: pa.RecordBatch, task: FileScanTask, plan: ReadPlan, meta: set[str]) -> pa.RecordBatch:
    columns: dict[str, Any] = {}
    for field in plan.projection.fields:
        columns[field.name] = batch.column(field.name)
    n = batch.num_rows
    f = task.file
    if "_file" in meta:
        columns["_file"] = pc.fill_null(pa.nulls(n, pa.string()), f.file_path)
    if "_pos" in meta:
        columns["_pos"] = batch.column("_pos")
    if "_spec_id" in meta:
        columns["_spec_id"] = pc.fill_null(pa.nulls(n, pa.int32()), f.spec_id)
    if "_row_id" in meta or "_last_updated_sequence_number" in meta:
        stored_ids = batch.column("_row_id")
        stored_seq = batch.column("_last_updated_sequence_number")
        if f.first_row_id is None:
            # Spec "Row Lineage": without a first_row_id both read as null (unless stored).
            row_ids, seqs = stored_ids, stored_seq
        else:
            inherited = pc.add(batch.column("_pos"), pa.scalar(f.first_row_id, pa.int64()))
            row_ids = pc.coalesce(stored_ids, inherited)
            seqs = pc.coalesce(stored_seq, pa.scalar(task.data_sequence_number, pa.int64()))
        if "_row_id" in meta:
            columns["_row_id"] = row_ids
        if "_last_updated_sequence_number" in meta:
            columns["_last_updated_sequence_number"] = seqs
    schema = plan.output_schema
    arrays = []
    for name in plan.output_order:
        arr = columns[name]
        target = schema.field(name).type
        if arr.type != target:
            arr = arr.cast(target)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_tasks(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    plan: ReadPlan,
    *,
    limit: int | None = None,
    threads: int = MAX_READ_THREADS,
) -> Iterator[pa.RecordBatch]:
    """Stream every task's rows, reading up to ``threads`` files ahead in parallel, in task order."""
    remaining = limit

    def load(task: FileScanTask) -> list[pa.RecordBatch]:
        return list(read_task(io, task, plan))

    if threads <= 1 or len(tasks) <= 1:
        sources: Iterator[list[pa.RecordBatch]] = (load(t) for t in tasks)
        yield from _limited(sources, remaining)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        window: list[Future[list[pa.RecordBatch]]] = []
        it = iter(tasks)

        def fill() -> None:
            while len(window) < threads * 2:
                nxt = next(it, None)
                if nxt is None:
                    return
                window.append(pool.submit(load, nxt))

        def gen() -> Iterator[list[pa.RecordBatch]]:
            fill()
            while window:
                fut = window.pop(0)
                result = fut.result()
                fill()
                yield result

        try:
            yield from _limited(gen(), remaining)
        finally:
            for fut in window:
                fut.cancel()


def _limited(sources: Iterator[list[pa.RecordBatch]], limit: int | None) -> Iterator[pa.RecordBatch]:
    remaining = limit
    for batches in sources:
        for b in batches:
            if remaining is not None:
                if remaining <= 0:
                    return
                if b.num_rows > remaining:
                    b = b.slice(0, remaining)
                remaining -= b.num_rows
            yield b
        if remaining is not None and remaining <= 0:
            return


__all__ = ["METADATA_COLUMN_NAMES", "METADATA_FIELDS", "ReadPlan", "read_task", "read_tasks"]
