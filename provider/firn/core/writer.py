"""Writing Arrow data as partitioned Parquet data files (spec: "Partitioning", "Writing data files").

:func:`write_data_files` validates the input against the table's current schema, computes each
partition field with the vectorized transforms, groups rows by partition with Arrow's hash
group-by (one ``take`` for the whole input, then zero-copy slices per partition; never a Python
loop per row), splits partitions larger than ``write.target-file-size-bytes`` into several files,
and writes each file with field ids and metrics. The result is the list of ``DataFile``\\s for an
append, overwrite or rewrite to commit; nothing is committed here.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from firn.io.arrow_partitions import group_rows, groupable, partition_keys, source_column
from firn.io.arrow_schema import FIELD_ID_KEY, arrow_scalar_to_internal, cast_to_schema
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.io.parquet import ParquetWriteResult, write_parquet_file
from firn.spec.content import DataFile, PartitionTuple
from firn.spec.deletion_scope import DeletionScope
from firn.spec.field_ids import LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID, ROW_ID_COLUMN_ID
from firn.spec.locations import DefaultLocationProvider, LocationProvider
from firn.spec.partitioning import PartitionSpec
from firn.spec.properties import METRICS_MODE_COLUMN_PREFIX, TableProperties
from firn.spec.schema import Schema
from firn.spec.sorting import NullOrder, SortDirection, SortOrder
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import LONG, NestedField

# Files written concurrently by one call; pyarrow releases the GIL while encoding.
MAX_WRITE_THREADS = 8


# Spec "Row Lineage": the reserved columns a row-moving writer copies into new files.
LINEAGE_FIELDS = {
    "_row_id": NestedField(ROW_ID_COLUMN_ID, "_row_id", LONG, False),
    "_last_updated_sequence_number": NestedField(
        LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID, "_last_updated_sequence_number", LONG, False
    ),
}


def _with_lineage_columns(
    data: pa.Table, source: pa.Table, schema: Schema, props: TableProperties, names: list[str]
) -> tuple[pa.Table, Schema, TableProperties]:
    """Append the lineage columns (as int64 with reserved ids) after the table columns; they
    get no column metrics (they are not table columns, and pruning never uses them)."""
    fields = [LINEAGE_FIELDS[n] for n in names]
    for f in fields:
        data = data.append_column(
            pa.field(f.name, pa.int64(), True, {FIELD_ID_KEY: str(f.field_id).encode()}),
            source.column(f.name).cast(pa.int64()),
        )
    no_metrics = {f"{METRICS_MODE_COLUMN_PREFIX}{n}": "none" for n in names}
    return data, Schema(*schema.fields, *fields), TableProperties.parse({**props.raw, **no_metrics})


def _sort(data: pa.Table, schema: Schema, order: SortOrder) -> pa.Table:
    """Sort rows by a sort order (transforms applied), with per-field direction and null order."""
    columns: dict[str, Any] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, sf in enumerate(order.fields):
        values = sf.transform.apply_arrow(
            schema.find_type(sf.source_id), source_column(data, schema, sf.source_id)
        )
        values = groupable(values)
        # Arrow puts nulls last; a leading validity key gives each field its own null order.
        columns[f"v{i}"] = pc.is_valid(values)
        columns[f"s{i}"] = values
        nulls_first = sf.null_order is NullOrder.NULLS_FIRST
        sort_keys.append((f"v{i}", "ascending" if nulls_first else "descending"))
        sort_keys.append((f"s{i}", "ascending" if sf.direction is SortDirection.ASC else "descending"))
    indices = pc.sort_indices(pa.table(columns), sort_keys=sort_keys)
    return data.take(indices)


def _file_slices(num_rows: int, bytes_per_row: float, target_bytes: int) -> list[tuple[int, int]]:
    # The in-memory width over-estimates the compressed size, so files come out at or below
    # the target; one file per partition is the common case.
    rows_per_file = max(1, int(target_bytes // max(bytes_per_row, 1.0)))
    count = max(1, math.ceil(num_rows / rows_per_file))
    per_file = math.ceil(num_rows / count)
    return [(start, min(per_file, num_rows - start)) for start in range(0, num_rows, per_file)]


@dataclass(frozen=True, slots=True)
class _Task:
    location: str
    rows: pa.Table
    partition: PartitionTuple


def write_data_files(
    io: FileIO,
    metadata: TableMetadata,
    table: pa.Table | pa.RecordBatch,
    *,
    spec: PartitionSpec | None = None,
    location_provider: LocationProvider | None = None,
    sort: bool = False,
    lineage: bool = False,
    sort_order: SortOrder | None = None,
    target_file_size_bytes: int | None = None,
) -> list[DataFile]:
    """Write ``table`` as Parquet data files of ``metadata``'s current schema and ``spec``.

    ``spec`` defaults to the table's default spec. With ``sort=True`` each file's rows are
    sorted by the table's default sort order and the files record its id; otherwise
    ``sort_order_id`` is left unset. Files are named ``<uuid>-<n>.parquet`` under
    ``<data dir>/<partition path>/``. Returns one ``DataFile`` per written file (none for
    empty input). If any file fails to write, the files already written are deleted.

    ``lineage=True`` (v3+ writers that move rows, spec "Row Lineage"): ``table`` may also hold
    ``_row_id`` / ``_last_updated_sequence_number`` columns, which are written with their
    reserved field ids (nulls are inherited on read).

    ``sort_order`` sorts each file's rows by that order instead (compaction's sort strategy);
    files record its id only when it is one of the table's sort orders. ``target_file_size_bytes``
    replaces ``write.target-file-size-bytes`` as the in-memory size at which files are split.
    """
    schema = metadata.schema()
    spec = spec if spec is not None else metadata.spec()
    props: TableProperties = metadata.table_properties
    provider = (
        location_provider if location_provider is not None else DefaultLocationProvider.for_table(metadata)
    )
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    lineage_columns = [n for n in LINEAGE_FIELDS if lineage and n in table.column_names]
    data = cast_to_schema(table.drop_columns(lineage_columns), schema)
    write_schema = schema
    if lineage_columns:
        data, write_schema, props = _with_lineage_columns(data, table, schema, props, lineage_columns)
    if data.num_rows == 0:
        return []
    order = sort_order if sort_order is not None else (metadata.sort_order() if sort else None)
    if order is not None and order.is_unsorted:
        order = None
    target = (
        target_file_size_bytes if target_file_size_bytes is not None else props.write_target_file_size_bytes
    )
    partition_type = spec.partition_type(schema)

    if spec.fields:
        keys = partition_keys(data, schema, spec)
        data, spans, key_rows = group_rows(data, keys)
        partitions = [
            tuple(
                arrow_scalar_to_internal(pt.field_type, key_rows.column(j)[i])
                for j, pt in enumerate(partition_type.fields)
            )
            for i in range(len(spans))
        ]
    else:
        spans, partitions = [(0, data.num_rows)], [()]

    bytes_per_row = data.nbytes / data.num_rows
    write_id = uuid.uuid4()
    tasks: list[_Task] = []
    for (offset, length), partition in zip(spans, partitions):
        rows = data.slice(offset, length)
        if order is not None:
            rows = _sort(rows, schema, order)
        path = spec.partition_path(partition, schema) if spec.fields else None
        for start, count in _file_slices(length, bytes_per_row, target):
            name = f"{write_id}-{len(tasks):05d}.parquet"
            tasks.append(_Task(provider.new_data_location(name, path), rows.slice(start, count), partition))

    def run(task: _Task) -> ParquetWriteResult:
        return write_parquet_file(io, task.location, task.rows, write_schema, props, sort_order=order)

    results = _run_all(io, metadata, tasks, run)
    sort_order_id = None
    if order is not None and any(
        o.order_id == order.order_id and o.same_order(order) for o in metadata.sort_orders
    ):
        sort_order_id = order.order_id
    return [
        r.to_data_file(partition=t.partition, spec_id=spec.spec_id, sort_order_id=sort_order_id)
        for t, r in zip(tasks, results)
    ]


def _run_all(
    io: FileIO, metadata: TableMetadata, tasks: Sequence[_Task], run: Any
) -> list[ParquetWriteResult]:
    if len(tasks) == 1:
        return [run(tasks[0])]
    with ThreadPoolExecutor(max_workers=min(MAX_WRITE_THREADS, len(tasks))) as pool:
        futures = [pool.submit(run, t) for t in tasks]
        results: list[ParquetWriteResult] = []
        error: BaseException | None = None
        for fut in futures:
            try:
                results.append(fut.result())
            except BaseException as e:
                error = error or e
    if error is not None:
        # Nothing refers to these files yet; remove them rather than leave orphans.
        scope = DeletionScope.for_written(metadata.location, metadata)
        delete_quietly(io, scope, [r.location for r in results], "unreferenced data")
        raise error
    return results


__all__ = ["LINEAGE_FIELDS", "write_data_files"]
