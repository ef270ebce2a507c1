"""Rewriting one file group of ``rewrite_data_files``: the work unit, runnable anywhere.

A unit reads its data files with every delete applied (DVs, position and equality deletes;
``firn.core.reader``) and writes them again through the table's writer (partitioned by the
output spec, Parquet with field ids and the column metrics the table's properties ask for),
then returns the new files as JSON (``firn.spec.content_json``). On v3+ tables the rows keep
their lineage: ``_row_id`` and ``_last_updated_sequence_number`` are read (inherited values
made explicit) and written into the new files (spec "Row Lineage"), as copy-on-write does.

Bin-pack units stream: the group is cut into as many consecutive runs of input files as it
has expected output files (by on-disk size), and each run is read and written before the
next, so memory holds one output file's rows. Sort units read the whole group, sort it by the
sort order, and split it into that many files, so each file covers one range of the sort key.

Also here: parsing Iceberg's ``sort_order`` strings (``"id DESC NULLS LAST,name"``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as ds

from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_tasks
from firn.core.writer import LINEAGE_FIELDS, write_data_files
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap
from firn.errors import FirnError, Unsupported, ValidationError
from firn.expressions import AlwaysTrue
from firn.io.arrow_schema import field_id_of, schema_to_arrow
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.maintenance.rewrite_planning import FileGroup
from firn.maintenance.runner import UnitContext, UnitResult, WorkUnit, execute_unit
from firn.maintenance.serde import from_jsonable
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.content_json import data_file_to_json
from firn.spec.deletion_scope import DeletionScope
from firn.spec.name_mapping import parse_name_mapping
from firn.spec.schema import Schema
from firn.spec.schema_json import sort_order_from_json
from firn.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from firn.spec.table_metadata import TableMetadata
from firn.spec.transforms import parse_transform

UNIT_KIND = "rewrite-data-file-group"
# A larger in-memory target than any run holds: one output file per partition per run.
_ONE_FILE = 2**62


# -- sort orders from text ------------------------------------------------------------------------------
_TERM = re.compile(
    r"^\s*(?P<expr>.+?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*$", re.IGNORECASE
)
_CALL = re.compile(r"^(?P<name>\w+)\s*\((?P<args>.*)\)$", re.S)
_TRANSFORM_NAMES = {
    "identity": "identity",
    "year": "year",
    "years": "year",
    "month": "month",
    "months": "month",
    "day": "day",
    "days": "day",
    "date": "day",
    "hour": "hour",
    "hours": "hour",
    "date_hour": "hour",
}


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _sort_term(schema: Schema, expr: str) -> tuple[int, str]:
    """(source field id, transform text) of one sort term: ``col``, ``days(ts)``,
    ``bucket(16, id)`` or ``truncate(4, name)`` (either argument order)."""
    expr = expr.strip().strip("`")
    call = _CALL.match(expr)
    if call is None:
        field = schema.find_field_or_none(expr) or schema.find_field_or_none(expr, case_sensitive=False)
        if field is None:
            raise ValidationError(f"sort_order: unknown column {expr!r}; columns: {schema.column_names}")
        return field.field_id, "identity"
    name = call.group("name").lower()
    args = [a.strip().strip("`") for a in call.group("args").split(",")]
    if name == "zorder":
        raise Unsupported("sort_order: zorder(...) is not supported; sort by columns instead")
    columns = [a for a in args if not a.lstrip("-").isdigit()]
    numbers = [int(a) for a in args if a.lstrip("-").isdigit()]
    if len(columns) != 1:
        raise ValidationError(f"sort_order: {expr!r} must name exactly one column")
    field = schema.find_field_or_none(columns[0]) or schema.find_field_or_none(
        columns[0], case_sensitive=False
    )
    if field is None:
        raise ValidationError(f"sort_order: unknown column {columns[0]!r} in {expr!r}")
    if name in ("bucket", "truncate"):
        if len(numbers) != 1:
            raise ValidationError(f"sort_order: {name} needs one integer argument in {expr!r}")
        return field.field_id, f"{name}[{numbers[0]}]"
    transform = _TRANSFORM_NAMES.get(name)
    if transform is None or numbers:
        raise ValidationError(f"sort_order: unknown transform {expr!r}")
    return field.field_id, transform


def parse_sort_order(schema: Schema, text: str, *, existing: Sequence[SortOrder] = ()) -> SortOrder:
    """Iceberg's ``sort_order`` procedure argument: comma-separated ``term [ASC|DESC]
    [NULLS FIRST|NULLS LAST]``; ascending puts nulls first and descending last unless told.
    The order gets the id of an equal order of the table, else one the table does not use."""
    fields: list[SortField] = []
    for part in _split_top_level(text):
        m = _TERM.match(part)
        if not part or m is None:
            raise ValidationError(f"sort_order: cannot parse {part!r} in {text!r}")
        source_id, transform = _sort_term(schema, m.group("expr"))
        direction = SortDirection.DESC if (m.group("dir") or "").lower() == "desc" else SortDirection.ASC
        nulls = m.group("nulls")
        if nulls is None:
            null_order = NullOrder.NULLS_FIRST if direction is SortDirection.ASC else NullOrder.NULLS_LAST
        else:
            null_order = NullOrder.NULLS_FIRST if nulls.lower() == "first" else NullOrder.NULLS_LAST
        fields.append(SortField(source_id, parse_transform(transform), direction, null_order))
    order = SortOrder(1, tuple(fields))
    for o in existing:
        if not o.is_unsorted and o.same_order(order):
            return o
    return SortOrder(max([o.order_id for o in existing], default=0) + 1, tuple(fields))


# -- reading and writing a group ------------------------------------------------------------------------
def _read_plan(md: TableMetadata) -> ReadPlan:
    schema = md.schema()
    meta = tuple(LINEAGE_FIELDS) if md.tracks_row_lineage else ()
    text = md.table_properties.name_mapping_json
    return ReadPlan(
        table_schema=schema,
        projection=schema,
        metadata_columns=meta,
        output_order=(*(f.name for f in schema.fields), *meta),
        specs=dict(md.specs),
        name_mapping=parse_name_mapping(text) if text else None,
    )


def _same_field(a: pa.Field, b: pa.Field) -> bool:
    """Same name, field id and type, recursively (nullability aside: the writer checks it)."""
    if a.name != b.name or field_id_of(a) != field_id_of(b):
        return False
    ta, tb = a.type, b.type
    if pa.types.is_struct(ta) and pa.types.is_struct(tb):
        return ta.num_fields == tb.num_fields and all(
            _same_field(ta.field(i), tb.field(i)) for i in range(ta.num_fields)
        )
    if pa.types.is_list(ta) and pa.types.is_list(tb):
        return _same_field(ta.value_field, tb.value_field)
    if pa.types.is_map(ta) and pa.types.is_map(tb):
        return _same_field(ta.key_field, tb.key_field) and _same_field(ta.item_field, tb.item_field)
    return bool(ta == tb)


def _fast_candidate(task: FileScanTask) -> bool:
    """A Parquet file whose deletes are only positions (DVs or position files), read whole."""
    if task.file.file_format is not FileFormat.PARQUET:
        return False
    if task.residual is not None and not isinstance(task.residual, AlwaysTrue):
        return False
    return all(d.content is FileContent.POSITION_DELETES for d in task.delete_files)


def _batch_read(
    io: FileIO, md: TableMetadata, tasks: Sequence[FileScanTask], plan: ReadPlan
) -> tuple[pa.Table | None, list[FileScanTask]]:
    """The live rows of the files of ``tasks`` written with exactly the current schema (names,
    field ids and types; no stored lineage columns) and with only positional deletes, read as
    one pyarrow dataset (C++ threads decode many small files at once, several times faster
    than opening them one by one), in ``plan``'s output schema; and the tasks left for the
    reader (other layouts, equality deletes, a FileIO that is not pyarrow's...).

    Positions are row indexes within each file: Arrow's ``ToTable`` assembles batches by
    fragment and batch index, so the table holds the files in the order given, each file's
    rows in file order. Deleted positions are masked out with one mask over the whole table,
    and on v3+ the inherited ``_row_id`` (``first_row_id`` + position) and
    ``_last_updated_sequence_number`` (the data sequence number) are made explicit, as the
    reader does for a file that stores neither (spec "Row Lineage")."""
    locate = getattr(io, "arrow_filesystem", None)
    candidates = [t for t in tasks if _fast_candidate(t)]
    if locate is None or not candidates:
        return None, list(tasks)
    located = [locate(t.file.file_path) for t in candidates]
    fs = located[0][0]
    if any(f is not fs for f, _ in located):
        return None, list(tasks)
    expected = schema_to_arrow(md.schema())

    def inspect(i: int) -> tuple[bool, PositionBitmap | None]:
        # Reading footers and DVs releases the GIL: a few threads check many small files faster.
        fragment, task = fragments[i], candidates[i]
        physical = fragment.physical_schema
        same = len(physical) == len(expected) and all(map(_same_field, physical, expected))
        if not same or fragment.metadata.num_rows != task.file.record_count:
            return False, None
        return True, load_positions(io, task.file, task.delete_files) if task.delete_files else None

    try:
        # Page CRCs are verified as on the per-file path; a damaged file fails this fast path
        # and the per-file reader below then names it.
        parquet = ds.ParquetFileFormat(
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
        )
        dataset = ds.dataset([p for _, p in located], format=parquet, filesystem=fs)
        fragments = list(dataset.get_fragments())
        with ThreadPoolExecutor(max_workers=min(4, len(fragments))) as pool:
            checked = list(pool.map(inspect, range(len(fragments))))
        chosen = [i for i, (ok, _) in enumerate(checked) if ok]
        if not chosen:
            return None, list(tasks)
        if len(chosen) < len(fragments):
            # The fragments keep the footers already read. The schema is a chosen file's: the
            # dataset's is the first file's, which may be one left to the reader.
            dataset = ds.FileSystemDataset(
                [fragments[i] for i in chosen], fragments[chosen[0]].physical_schema, parquet, filesystem=fs
            )
        table = dataset.to_table()
    except (pa.ArrowException, OSError):
        return None, list(tasks)  # the reader will say what is wrong with which file
    fast = [candidates[i] for i in chosen]
    counts = [t.file.record_count for t in fast]
    if table.num_rows != sum(counts):
        return None, list(tasks)
    fast_ids = {id(t) for t in fast}
    rest = [t for t in tasks if id(t) not in fast_ids]
    starts = np.cumsum([0, *counts])
    keep: npt.NDArray[np.bool_] | None = None
    for n, i in enumerate(chosen):
        positions = checked[i][1]
        if positions:
            if keep is None:
                keep = np.ones(table.num_rows, dtype=np.bool_)
            keep[starts[n] : starts[n + 1]] &= ~positions.deleted_mask(counts[n])
    if plan.metadata_columns:
        table = _with_inherited_lineage(table, fast, starts)
    if keep is not None:
        table = table.filter(pa.array(keep))
    return table.select(list(plan.output_order)).cast(plan.output_schema), rest


def _with_inherited_lineage(
    table: pa.Table, tasks: Sequence[FileScanTask], starts: npt.NDArray[np.int64]
) -> pa.Table:
    """``table`` with ``_row_id`` and ``_last_updated_sequence_number`` of files that store
    neither: ``first_row_id`` + position and the data sequence number, or null for a file
    without a ``first_row_id`` (spec "Row Lineage")."""
    total = table.num_rows
    row_ids = np.zeros(total, dtype=np.int64)
    seqs = np.zeros(total, dtype=np.int64)
    null = np.zeros(total, dtype=np.bool_)
    for n, task in enumerate(tasks):
        lo, hi = int(starts[n]), int(starts[n + 1])
        first = task.file.first_row_id
        if first is None:
            null[lo:hi] = True
        else:
            row_ids[lo:hi] = np.arange(first, first + hi - lo, dtype=np.int64)
            seqs[lo:hi] = task.data_sequence_number
    mask = null if null.any() else None
    table = table.append_column("_row_id", pa.array(row_ids, mask=mask))
    return table.append_column("_last_updated_sequence_number", pa.array(seqs, mask=mask))


def _read(io: FileIO, md: TableMetadata, tasks: Sequence[FileScanTask], plan: ReadPlan) -> pa.Table:
    """The live rows of ``tasks`` (deletes applied), in ``plan``'s output schema."""
    fast, rest = _batch_read(io, md, tasks, plan)
    parts: list[pa.Table] = []
    if fast is not None and fast.num_rows:
        parts.append(fast)
    batches = list(read_tasks(io, rest, plan)) if rest else []
    if batches:
        parts.append(pa.Table.from_batches(batches, schema=plan.output_schema))
    if not parts:
        return plan.output_schema.empty_table()
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _runs(tasks: Sequence[FileScanTask], count: int) -> list[list[FileScanTask]]:
    """``tasks`` cut into ``count`` consecutive runs of about equal on-disk size."""
    if count <= 1 or len(tasks) <= 1:
        return [list(tasks)]
    total = sum(t.file.file_size_in_bytes for t in tasks)
    share = total / count
    runs: list[list[FileScanTask]] = [[]]
    acc = 0
    for t in tasks:
        if runs[-1] and acc >= share * len(runs) and len(runs) < count:
            runs.append([])
        runs[-1].append(t)
        acc += t.file.file_size_in_bytes
    return runs


def rewrite_group(
    io: FileIO,
    md: TableMetadata,
    group: FileGroup,
    *,
    output_spec_id: int,
    sort_order: SortOrder | None,
    target_file_size_bytes: int,
) -> tuple[list[DataFile], int]:
    """Rewrite ``group`` (see the module docstring); returns the new files and the rows they
    hold. On failure the files already written are deleted."""
    spec = md.spec_by_id(output_spec_id)
    plan = _read_plan(md)
    lineage = bool(plan.metadata_columns)
    tasks = [gf.task() for gf in group.files]
    written: list[DataFile] = []
    rows = 0
    try:
        if sort_order is None:
            for run in _runs(tasks, group.output_files):
                data = _read(io, md, run, plan)
                rows += data.num_rows
                written += write_data_files(
                    io, md, data, spec=spec, lineage=lineage, target_file_size_bytes=_ONE_FILE
                )
        else:
            data = _read(io, md, tasks, plan)
            rows = data.num_rows
            if rows:
                # A group holds one partition of the output spec, unless it gathers files of
                # other specs (planning puts those together): then the writer splits by partition.
                single = all(gf.file.get("spec-id") == output_spec_id for gf in group.files)
                target = _sorted_split_target(data, group, not single, target_file_size_bytes)
                written += write_data_files(
                    io,
                    md,
                    data,
                    spec=spec,
                    lineage=lineage,
                    sort_order=sort_order,
                    target_file_size_bytes=target,
                )
    except BaseException:
        delete_quietly(
            io, DeletionScope.for_written(md.location, md), [f.file_path for f in written], "rewrite output"
        )
        raise
    return written, rows


def _sorted_split_target(data: pa.Table, group: FileGroup, partitioned: bool, target_bytes: int) -> int:
    """The in-memory split size that makes the writer cut a sorted group into its expected
    number of files (one partition), or files of about the target size on disk (several)."""
    bytes_per_row = data.nbytes / data.num_rows
    if partitioned:
        ratio = data.nbytes / max(1, group.input_bytes)
        return max(1, int(target_bytes * ratio))
    per_file = math.ceil(data.num_rows / max(1, group.output_files))
    # A margin of 1% keeps float rounding from adding a tiny extra file.
    return max(1, int(per_file * bytes_per_row * 1.01))


def _unit(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    group = from_jsonable(FileGroup, payload["group"], where="file group")
    order_json = payload.get("sort-order")
    try:
        files, rows = rewrite_group(
            ctx.io,
            ctx.metadata,
            group,
            output_spec_id=int(payload["output-spec-id"]),
            sort_order=sort_order_from_json(order_json) if order_json is not None else None,
            target_file_size_bytes=int(payload["target-file-size-bytes"]),
        )
    except FirnError as e:
        return {"group-id": group.group_id, "added": [], "records": 0, "error": f"{type(e).__name__}: {e}"}
    except (OSError, pa.ArrowException) as e:
        return {"group-id": group.group_id, "added": [], "records": 0, "error": f"{type(e).__name__}: {e}"}
    return {"group-id": group.group_id, "added": [data_file_to_json(f) for f in files], "records": rows}


def rewrite_file_group(unit: WorkUnit) -> UnitResult:
    """The work unit of ``rewrite_data_files``: rewrite one file group (module level, so a
    Spark runner can ship it by reference). A failure is reported in the result
    (``error``), after deleting what the unit wrote, so other groups can still commit."""
    return execute_unit(_unit, unit)


__all__ = ["UNIT_KIND", "parse_sort_order", "rewrite_file_group", "rewrite_group"]
