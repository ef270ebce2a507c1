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

import pyarrow as pa
import pyarrow.dataset as ds

from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_tasks
from firn.core.writer import LINEAGE_FIELDS, write_data_files
from firn.errors import FirnError, Unsupported, ValidationError
from firn.io.arrow_schema import field_id_of, schema_to_arrow
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.maintenance.rewrite_planning import FileGroup
from firn.maintenance.runner import UnitContext, UnitResult, WorkUnit, execute_unit
from firn.maintenance.serde import from_jsonable
from firn.spec.content import DataFile, FileFormat
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


def _batch_read(io: FileIO, md: TableMetadata, tasks: Sequence[FileScanTask]) -> pa.Table | None:
    """Files with no deletes, written with exactly the current schema (names, field ids and
    types), read as one pyarrow dataset: C++ threads decode many small files at once, several
    times faster than opening them one by one. None when that is not possible here (other
    files go through the reader): on v3+, where rows carry lineage by position, for a FileIO
    that is not pyarrow's, or when a file's layout differs (a renamed or added column...)."""
    locate = getattr(io, "arrow_filesystem", None)
    if md.tracks_row_lineage or locate is None or not tasks:
        return None
    if any(t.file.file_format is not FileFormat.PARQUET for t in tasks):
        return None
    located = [locate(t.file.file_path) for t in tasks]
    fs = located[0][0]
    if any(f is not fs for f, _ in located):
        return None
    expected = schema_to_arrow(md.schema())
    try:
        # Page CRCs are verified as on the per-file path; a damaged file fails this fast path
        # and the per-file reader below then names it.
        parquet = ds.ParquetFileFormat(
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
        )
        dataset = ds.dataset([p for _, p in located], format=parquet, filesystem=fs)
        fragments = list(dataset.get_fragments())
        # Reading the footers releases the GIL: a few threads check many small files faster.
        with ThreadPoolExecutor(max_workers=min(4, len(fragments))) as pool:
            schemas = list(pool.map(lambda f: f.physical_schema, fragments))
        for physical in schemas:
            if len(physical) != len(expected) or not all(map(_same_field, physical, expected)):
                return None
        table = dataset.to_table()
    except (pa.ArrowException, OSError):
        return None  # the reader will say what is wrong with which file
    if table.num_rows != sum(t.file.record_count for t in tasks):
        return None
    return table


def _read(io: FileIO, md: TableMetadata, tasks: Sequence[FileScanTask], plan: ReadPlan) -> pa.Table:
    """The live rows of ``tasks`` (deletes applied), in ``plan``'s output schema."""
    plain = [t for t in tasks if not t.delete_files]
    fast = _batch_read(io, md, plain) if plain else None
    rest = [t for t in tasks if t.delete_files] if fast is not None else list(tasks)
    parts: list[pa.Table] = []
    if fast is not None and fast.num_rows:
        parts.append(fast.cast(plan.output_schema))
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
