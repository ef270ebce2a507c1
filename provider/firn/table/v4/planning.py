"""Scan planning for V4 snapshots, vectorized with pyarrow (seed 004, DESIGN "V4 layout").

1. Read the root; keep live entries; prune by aggregated/file ``content_stats`` and, for
   files, by the inclusive partition projection — all as Arrow compute over columns.
2. Read the surviving data manifests in parallel with their *affiliated* delete manifests,
   plus unaffiliated delete manifests; apply manifest DVs as ordinal masks; prune leaf entries
   by their stats.
3. Match deletes to data files by the sequence-number rules (DVs: data seq <= DV seq, by
   path; equality deletes: strictly older data in the same partition or global).

No Python loop runs per data entry until tasks are materialized; a table without deletes
goes straight from Arrow columns to tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.deletes.index import DeleteFileIndex
from firn.expressions import AlwaysTrue, BooleanExpression, bind, evaluate
from firn.expressions.projection import partition_struct, project_inclusive
from firn.io.base import FileIO
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.table.planning import FileScanTask, _SpecEvaluators, partition_type_or_none
from firn.table.v4.state import (
    ROOT,
    live_mask,
    live_mdvs,
    manifest_refs,
    mdv_keep_mask,
    read_leaves,
    root_table,
)
from firn.table.v4.stats_filter import might_match


def _np(arr: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def partition_mask(
    table: pa.Table, md: TableMetadata, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool
) -> np.ndarray:
    """Inclusive partition pruning of file entries, per spec, vectorized."""
    n = table.num_rows
    out = np.ones(n, dtype=bool)
    if n == 0 or isinstance(row_filter, AlwaysTrue) or "partition" not in table.column_names:
        return out
    spec_ids = table.column("partition_spec_id").to_numpy()
    part = table.column("partition")
    for spec_id in np.unique(spec_ids):
        spec = md.specs.get(int(spec_id))
        if spec is None or not spec.fields or partition_type_or_none(spec, schema) is None:
            continue
        projected = project_inclusive(row_filter, spec, schema, case_sensitive=case_sensitive)
        if isinstance(projected, AlwaysTrue):
            continue
        pstruct = partition_struct(spec, schema)
        sel = spec_ids == spec_id
        idx = pa.array(np.nonzero(sel)[0])
        sub = part.take(idx)
        cols = {}
        for pf, f in zip(spec.fields, pstruct.fields):
            cols[f.name] = pc.struct_field(sub, f"p{pf.field_id}")
        ptable = pa.table(cols)
        mask = _np(evaluate(projected, ptable))
        out[np.nonzero(sel)[0]] = mask
    return out


class PlannedTasks(Sequence[FileScanTask]):
    """The planned files of a V4 scan, kept columnar; tasks are built on access."""

    def __init__(
        self,
        data: pa.Table,
        deletes: DeleteFileIndex | None,
        md: TableMetadata,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool,
        origins: pa.Table,
    ) -> None:
        self._data = data
        self._deletes = deletes
        self._md = md
        self._schema = schema
        self._filter = row_filter
        self._case_sensitive = case_sensitive
        self._origins = origins
        self._tasks: list[FileScanTask] | None = None

    def __len__(self) -> int:
        return self._data.num_rows

    @overload
    def __getitem__(self, i: int) -> FileScanTask: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[FileScanTask]: ...

    def __getitem__(self, i: int | slice) -> FileScanTask | Sequence[FileScanTask]:
        return self.tasks()[i]

    def __iter__(self) -> Iterator[FileScanTask]:
        return iter(self.tasks())

    @property
    def table(self) -> pa.Table:
        """The planned data-file entries as Arrow (V4 content-entry layout)."""
        return self._data

    def tasks(self) -> list[FileScanTask]:
        if self._tasks is None:
            self._tasks = self._materialize()
        return self._tasks

    def _materialize(self) -> list[FileScanTask]:
        d = self._data
        n = d.num_rows
        if n == 0:
            return []
        pids = specs_partition_ids(self._md)
        layout = V4Layout.for_metadata(self._md)
        loc = d.column("location").to_pylist()
        fmt = d.column("file_format").to_pylist()
        rc = d.column("record_count").to_pylist()
        size = d.column("file_size_in_bytes").to_pylist()
        spec = d.column("partition_spec_id").to_pylist()
        frid = d.column("first_row_id").to_pylist()
        seq = pc.struct_field(d.column("version_info"), "sequence_number").to_pylist()
        sort = d.column("sort_order_id").to_pylist()
        o_man = self._origins.column("manifest").to_pylist()
        o_ord = self._origins.column("ordinal").to_pylist()
        partitions = _partition_tuples(d, pids, layout)
        evaluators = _SpecEvaluators(self._md, self._schema, self._filter, self._case_sensitive)
        residual_cache: dict[tuple[Any, ...], BooleanExpression] = {}
        formats = {f.value: f for f in FileFormat}
        out = []
        deletes = self._deletes
        for i in range(n):
            p = partitions[i]
            key = (spec[i], p)
            residual = residual_cache.get(key)
            if residual is None:
                residual = evaluators.residual(spec[i]).residual_for(p)
                residual_cache[key] = residual
            f = DataFile(
                FileContent.DATA,
                loc[i],
                formats[fmt[i]],
                p,
                rc[i],
                size[i] or 0,
                spec[i],
                sort_order_id=sort[i],
                first_row_id=frid[i],
            )
            s = seq[i] or 0
            dfs = deletes.for_data_file(f, s) if deletes is not None else ()
            out.append(FileScanTask(f, s, dfs, residual, (o_man[i], o_ord[i])))
        return out


def _partition_tuples(
    d: pa.Table, pids: dict[int, tuple[int, ...]], layout: V4Layout
) -> list[tuple[Any, ...]]:
    from firn.manifests.v4_layout import storage_to_internal, to_internal_storage

    n = d.num_rows
    if "partition" not in d.column_names or not layout.partition:
        return [()] * n
    part = to_internal_storage(d.column("partition"))
    children = {
        c.field_id: [
            storage_to_internal(c.iceberg_type, v) for v in pc.struct_field(part, c.name).to_pylist()
        ]
        for c in layout.partition
    }
    spec = d.column("partition_spec_id").to_pylist()
    out: list[tuple[Any, ...]] = []
    for i in range(n):
        ids = pids.get(spec[i], ())
        out.append(tuple(children[fid][i] if fid in children else None for fid in ids))
    return out


def _delete_entries(md: TableMetadata, table: pa.Table) -> list[Any]:
    layout = V4Layout.for_metadata(md)
    return layout.to_entries(table, specs_partition_ids(md), with_stats=False)


def plan_root(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot,
    schema: Schema,
    row_filter: BooleanExpression,
    *,
    case_sensitive: bool = True,
) -> PlannedTasks:
    """Plan the data files (with deletes and residuals) of a V4 snapshot."""
    layout = V4Layout.for_metadata(md)
    root = root_table(io, md, snapshot)
    bound = bind(schema, row_filter, case_sensitive=case_sensitive)
    live = _np(live_mask(root))
    ct = root.column("content_type").to_numpy()
    stats_ok = might_match(root, bound, layout)
    is_file = np.isin(ct, [int(FileContent.DATA), int(FileContent.EQUALITY_DELETES)])
    part_ok = np.ones(root.num_rows, dtype=bool)
    if is_file.any():
        part_ok = partition_mask(root, md, schema, row_filter, case_sensitive) | ~is_file

    refs = manifest_refs(root)
    mdvs = live_mdvs(io, root)
    data_refs = [r for r in refs if r.content is FileContent.DATA_MANIFEST and stats_ok[r.row]]
    selected = {r.location for r in data_refs}
    # Affiliated delete manifests go with their data manifest; unaffiliated ones are pruned
    # by their own stats (seed 004 "Optional Affinity").
    delete_refs = [
        r
        for r in refs
        if r.content is FileContent.DELETE_MANIFEST
        and (
            (r.referenced_file is not None and r.referenced_file in selected)
            or (r.referenced_file is None and stats_ok[r.row])
        )
    ]

    # Root-level files.
    root_data_sel = live & (ct == int(FileContent.DATA)) & stats_ok & part_ok
    data_parts = [root.filter(pa.array(root_data_sel))]
    origin_parts = [_origins(ROOT, np.nonzero(root_data_sel)[0])]
    root_del_sel = live & np.isin(ct, [int(FileContent.POSITION_DELETES), int(FileContent.EQUALITY_DELETES)])
    delete_parts = [root.filter(pa.array(root_del_sel))]

    leaves = read_leaves(io, md, [*data_refs, *delete_refs])
    for ref, leaf in zip([*data_refs, *delete_refs], leaves):
        keep = mdv_keep_mask(mdvs.get(ref.location, (0, None))[1], leaf.num_rows) & _np(live_mask(leaf))
        if ref.content is FileContent.DATA_MANIFEST:
            keep &= might_match(leaf, bound, layout)
            keep &= partition_mask(leaf, md, schema, row_filter, case_sensitive)
            data_parts.append(leaf.filter(pa.array(keep)))
            origin_parts.append(_origins(ref.location, np.nonzero(keep)[0]))
        else:
            delete_parts.append(leaf.filter(pa.array(keep)))

    data = pa.concat_tables(data_parts)
    origins = pa.concat_tables(origin_parts)
    delete_table = pa.concat_tables(delete_parts)
    index = None
    if delete_table.num_rows:
        index = DeleteFileIndex(_as_entries(md, delete_table), md.specs)
    return PlannedTasks(data, index, md, schema, row_filter, case_sensitive, origins)


def _as_entries(md: TableMetadata, table: pa.Table) -> list[Any]:
    return _delete_entries(md, table)


def _origins(manifest: str, ordinals: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "manifest": pa.array([manifest] * len(ordinals), pa.string()),
            "ordinal": pa.array(ordinals, pa.int64()),
        }
    )


__all__ = ["PlannedTasks", "partition_mask", "plan_root"]
