"""Splitting Arrow rows by the partition tuples of a partition spec (vectorized transforms)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from firn.errors import Unsupported, ValidationError
from firn.io.arrow_schema import arrow_scalar_to_internal, storage
from firn.spec.content import PartitionTuple
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.types import StructType


def source_column(data: pa.Table, schema: Schema, source_id: int) -> pa.ChunkedArray:
    """The values of a (possibly nested) source column; null wherever a parent struct is null."""
    name = schema.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"partition source id {source_id} is not in the current schema")
    path: list[int] = []
    cur: Any = schema.as_struct()
    fid = source_id
    chain = [fid]
    while (parent := schema.parent_id(fid)) is not None:
        chain.append(parent)
        fid = parent
    for fid in reversed(chain):
        if not isinstance(cur, StructType):
            raise Unsupported(f"cannot partition by {name!r}: it is nested in a list or map")
        idx = [f.field_id for f in cur.fields].index(fid)
        path.append(idx)
        cur = cur.fields[idx].field_type
    col = data.column(path[0])
    for idx in path[1:]:
        # ChunkedArray.flatten() merges the parent's validity into the child.
        col = col.flatten()[idx]
    return col


def partition_keys(data: pa.Table, schema: Schema, spec: PartitionSpec) -> list[pa.Array]:
    keys = []
    for pf in spec.fields:
        if pf.source_ids is not None and len(pf.source_ids) > 1:
            raise Unsupported(f"partition field {pf.name!r}: multi-argument transforms cannot be written yet")
        source_type = schema.find_type(pf.source_id)
        values = source_column(data, schema, pf.source_id)
        keys.append(pf.transform.apply_arrow(source_type, values))
    return keys


def groupable(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if isinstance(arr, pa.ChunkedArray):
        return (
            pa.chunked_array([storage(c) for c in arr.chunks])
            if isinstance(arr.type, pa.BaseExtensionType)
            else arr
        )
    return storage(arr)


def group_rows(data: pa.Table, keys: list[pa.Array]) -> tuple[pa.Table, list[tuple[int, int]], pa.Table]:
    """Rows reordered so each partition is contiguous, the ``(offset, length)`` of each
    partition, and one row of key values per partition. Row order within a partition is kept."""
    names = [f"k{i}" for i in range(len(keys))]
    key_table = pa.table(
        {**{n: groupable(k) for n, k in zip(names, keys)}, "__row": np.arange(data.num_rows)}
    )
    grouped = key_table.group_by(names, use_threads=False).aggregate([("__row", "list")])
    rows = grouped.column("__row_list").combine_chunks()
    offsets = rows.offsets.to_numpy()
    offsets = offsets - offsets[0]
    reordered = data.take(rows.flatten())
    spans = [(int(offsets[i]), int(offsets[i + 1] - offsets[i])) for i in range(grouped.num_rows)]
    return reordered, spans, grouped.select(names)


def partition_rows(
    data: pa.Table, schema: Schema, spec: PartitionSpec
) -> list[tuple[PartitionTuple, pa.Table]]:
    """Split rows (already cast to ``schema``, which must hold the spec's source columns) into
    one table per partition tuple of ``spec``; an unpartitioned spec gives one group."""
    if not spec.fields:
        return [((), data)]
    partition_type = spec.partition_type(schema)
    reordered, spans, key_rows = group_rows(data, partition_keys(data, schema, spec))
    return [
        (
            tuple(
                arrow_scalar_to_internal(pt.field_type, key_rows.column(j)[i])
                for j, pt in enumerate(partition_type.fields)
            ),
            reordered.slice(offset, length),
        )
        for i, (offset, length) in enumerate(spans)
    ]


__all__ = ["group_rows", "groupable", "partition_keys", "partition_rows", "source_column"]
