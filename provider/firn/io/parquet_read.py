"""Reading Parquet data files into a projected schema (spec: "Column Projection", "Schema Evolution").

File columns are matched to projected fields **by field id**, so renamed and reordered columns
read correctly. For ids absent from the file the spec's rules apply in order: the identity
partition value, then the name mapping (for files written without ids), then the field's
``initial-default``, then null. Type promotions (int -> long, float -> double, decimal precision
widening, date -> timestamp) are applied with vectorized casts.

Only the Parquet leaf columns a projection needs are decoded. With a row filter, row groups whose
statistics cannot match are skipped (pyarrow's statistics simplification) and the remaining rows
are filtered in memory per batch. Row positions (``_pos``, spec "Reserved Field IDs") are counted
from row-group offsets before filtering, so deletion vectors can be applied to the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from firn.errors import InvalidMetadata, Unsupported, ValidationError
from firn.io.arrow_schema import (
    FIELD_ID_KEY,
    apply_name_mapping,
    constant_array,
    field_id_of,
    has_field_ids,
    is_list_like,
    list_parts,
    null_mask,
    primitive_from_arrow,
    schema_to_arrow,
    storage,
    type_to_arrow,
)
from firn.io.base import FileIO
from firn.spec.field_ids import ROW_POSITION_COLUMN_ID
from firn.spec.name_mapping import NameMapping, create_mapping_from_schema
from firn.spec.schema import Schema
from firn.spec.types import (
    BinaryType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    UnknownType,
    UUIDType,
    can_promote,
)

# Spec "Reserved Field IDs": the ``_pos`` metadata column.
POS_FIELD_ID = ROW_POSITION_COLUMN_ID
POS_COLUMN = "_pos"
DEFAULT_BATCH_SIZE = 65_536
# Promotions are checked against the widest rules (v3); the table schema already enforced the
# rules of its own format version when it evolved.
_PROMOTION_FORMAT_VERSION = 3


@dataclass(eq=False)
class _Node:
    """A field of the file's Arrow schema with its id and the Parquet leaf columns under it."""

    field: pa.Field
    field_id: int | None
    leaves: list[int]
    children: list[_Node] = field(default_factory=list)

    def child(self, field_id: int) -> _Node | None:
        for c in self.children:
            if c.field_id == field_id:
                return c
        return None


def _build_nodes(arrow_schema: pa.Schema) -> list[_Node]:
    counter = [0]

    def build(f: pa.Field) -> _Node:
        dt = f.type
        if pa.types.is_struct(dt):
            kids = [build(dt.field(i)) for i in range(dt.num_fields)]
        elif pa.types.is_map(dt):
            kids = [build(dt.key_field), build(dt.item_field)]
        elif is_list_like(dt):
            kids = [build(dt.value_field)]
        else:
            counter[0] += 1
            return _Node(f, field_id_of(f), [counter[0] - 1])
        return _Node(f, field_id_of(f), [leaf for k in kids for leaf in k.leaves], kids)

    return [build(f) for f in arrow_schema]


def _kind_mismatch(location: str, column: str, node: _Node, t: IcebergType) -> InvalidMetadata:
    return InvalidMetadata(
        f"column {column!r} is {node.field.type} in the file but {t} in the table schema", location=location
    )


def _same_values(file_type: IcebergType, t: IcebergType) -> bool:
    """Physical forms other writers use for a type: ``fixed[16]`` without the UUID annotation
    for ``uuid``, and ``binary`` without the UTF8 annotation for ``string`` (Hive, old Spark)."""
    return (isinstance(t, UUIDType) and file_type == FixedType(16)) or (
        isinstance(t, StringType) and isinstance(file_type, BinaryType)
    )


class _Projection:
    """How one file maps onto the projected schema; built once per file."""

    def __init__(
        self,
        location: str,
        nodes: list[_Node],
        projected: Schema,
        constants: Mapping[int, Any],
        large_types: bool,
    ) -> None:
        self.location = location
        self.top = {n.field_id: n for n in nodes if n.field_id is not None}
        self.projected = projected
        self.constants = constants
        self.out_schema = schema_to_arrow(projected, large_types=large_types)
        self.columns: set[int] = set()
        for f in projected.fields:
            node = self.top.get(f.field_id)
            if node is not None:
                self._select(node, f, f.name)

    # -- which leaf columns to decode ---------------------------------------------------------
    def _select(self, node: _Node, f: NestedField, column: str) -> None:
        t = f.field_type
        if isinstance(t, UnknownType):
            return  # Appendix A: a file column for an unknown field is ignored
        if isinstance(t, StructType):
            if not pa.types.is_struct(node.field.type):
                raise _kind_mismatch(self.location, column, node, t)
            found = False
            for c in t.fields:
                cn = node.child(c.field_id)
                if cn is not None and not isinstance(c.field_type, UnknownType):
                    self._select(cn, c, f"{column}.{c.name}")
                    found = True
            if not found:
                # No projected child is in the file, but the struct's own nulls still are.
                self.columns.add(node.leaves[0])
        elif isinstance(t, ListType):
            if not is_list_like(node.field.type):
                raise _kind_mismatch(self.location, column, node, t)
            self._select(node.children[0], t.element_field, f"{column}.element")
        elif isinstance(t, MapType):
            if not pa.types.is_map(node.field.type):
                raise _kind_mismatch(self.location, column, node, t)
            self._select(node.children[0], t.key_field, f"{column}.key")
            self._select(node.children[1], t.value_field, f"{column}.value")
        else:
            if node.children:
                raise _kind_mismatch(self.location, column, node, t)
            self.columns.update(node.leaves)

    # -- converting decoded batches -------------------------------------------------------------
    def _missing(self, f: NestedField, length: int, target: pa.DataType) -> pa.Array:
        if isinstance(f.field_type, UnknownType):
            return pa.nulls(length, target)
        if f.field_id in self.constants:
            return constant_array(f.field_type, self.constants[f.field_id], length, arrow_type=target)
        return constant_array(f.field_type, f.initial_default, length, arrow_type=target)

    def _primitive(
        self, arr: pa.Array, node: _Node, f: NestedField, target: pa.DataType, column: str
    ) -> pa.Array:
        t = f.field_type
        assert isinstance(t, PrimitiveType)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if arr.type == target:
            return arr
        try:
            file_type = primitive_from_arrow(arr.type, column)
        except Unsupported as e:
            raise InvalidMetadata(str(e), location=self.location) from None
        if (
            file_type != t
            and not can_promote(file_type, t, _PROMOTION_FORMAT_VERSION)
            and not _same_values(file_type, t)
        ):
            raise InvalidMetadata(
                f"column {column!r} is {file_type} in the file and cannot be read as {t}",
                location=self.location,
            )
        if isinstance(t, UUIDType):
            return pa.ExtensionArray.from_storage(target, storage(arr))
        try:
            # Legacy timestamps (INT96 read as ns, or ms) may carry sub-microsecond digits that
            # the target unit cannot hold; truncating them is what every engine does.
            lossy_ok = pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target)
            return arr.cast(target, safe=not lossy_ok)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidMetadata(
                f"column {column!r}: cannot read {arr.type} as {t}: {e}", location=self.location
            ) from e

    def convert(
        self, arr: pa.Array, node: _Node, f: NestedField, target: pa.DataType, column: str
    ) -> pa.Array:
        t = f.field_type
        if isinstance(t, UnknownType):
            return pa.nulls(len(arr), target)
        if arr.type.equals(target, check_metadata=True):
            return arr
        if isinstance(t, StructType):
            children = []
            for c, ct in zip(t.fields, target):
                cn = node.child(c.field_id)
                idx = arr.type.get_field_index(cn.field.name) if cn is not None else -1
                if cn is None or idx < 0:
                    children.append(self._missing(c, len(arr), ct.type))
                else:
                    children.append(self.convert(arr.field(idx), cn, c, ct.type, f"{column}.{c.name}"))
            return pa.StructArray.from_arrays(children, fields=list(target), mask=null_mask(arr))
        if isinstance(t, ListType):
            offsets, values = list_parts(arr)
            elements = self.convert(
                values, node.children[0], t.element_field, target.value_type, f"{column}.element"
            )
            if pa.types.is_large_list(target):
                return pa.LargeListArray.from_arrays(
                    offsets.cast(pa.int64()), elements, type=target, mask=null_mask(arr)
                )
            return pa.ListArray.from_arrays(offsets, elements, type=target, mask=null_mask(arr))
        if isinstance(t, MapType):
            offsets, entries = list_parts(arr)
            keys = self.convert(
                entries.field(0), node.children[0], t.key_field, target.key_type, f"{column}.key"
            )
            items = self.convert(
                entries.field(1), node.children[1], t.value_field, target.item_type, f"{column}.value"
            )
            return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=null_mask(arr))
        return self._primitive(arr, node, f, target, column)

    def batch(self, raw: pa.RecordBatch) -> list[pa.Array]:
        out = []
        n = raw.num_rows
        for f, af in zip(self.projected.fields, self.out_schema):
            node = self.top.get(f.field_id)
            idx = raw.schema.get_field_index(node.field.name) if node is not None else -1
            if node is None or idx < 0:
                out.append(self._missing(f, n, af.type))
            else:
                out.append(self.convert(raw.column(idx), node, f, af.type, f.name))
        return out

    # -- row-group pruning -----------------------------------------------------------------------
    def aligned_schema(self, file_schema: pa.Schema) -> pa.Schema:
        """The file's schema with projected fields renamed to their current names.

        Field references in a filter over the output resolve against this schema to the
        file's physical positions. Fields not projected, or projected with a different type
        (a promotion), get names no filter can use, so filters on them never prune.
        """

        def hide(name: str) -> pa.Field:
            # Only positions matter for fields no filter may use; a null type also keeps
            # Substrait from seeing types (extensions, metadata) it cannot serialize.
            return pa.field(name, pa.null())

        def align(fa: pa.Field, node: _Node, f: NestedField | None, hidden: str) -> pa.Field:
            if f is None:
                return hide(hidden)
            t = f.field_type
            if isinstance(t, StructType) and pa.types.is_struct(fa.type):
                kids = []
                for i, cn in enumerate(node.children):
                    cf = t.field(cn.field_id) if cn.field_id is not None else None
                    kids.append(align(fa.type.field(i), cn, cf, f"{hidden}.{i}"))
                return pa.field(f.name, pa.struct(kids), fa.nullable)
            if (
                isinstance(t, PrimitiveType)
                and not isinstance(fa.type, pa.BaseExtensionType)
                and fa.type in (type_to_arrow(t), type_to_arrow(t, large_types=True))
            ):
                return pa.field(f.name, fa.type, fa.nullable)
            return hide(hidden)

        by_id = {f.field_id: f for f in self.projected.fields}
        fields = []
        for i, (fa, node) in enumerate(zip(file_schema, _build_nodes(file_schema))):
            f = by_id.get(node.field_id) if node.field_id is not None else None
            fields.append(align(fa, node, f, f"\x00unprojected.{i}"))
        return pa.schema(fields)


def _prune_row_groups(
    nf: pa.NativeFile, projection: _Projection, file_schema: pa.Schema, row_filter: pc.Expression
) -> tuple[pq.FileMetaData, list[int]] | None:
    """Row groups that may match ``row_filter`` (by statistics), or None if pruning is not possible."""
    try:
        aligned = projection.aligned_schema(file_schema)
        physical = pc.Expression.from_substrait(row_filter.to_substrait(aligned))
        fragment = ds.ParquetFileFormat().make_fragment(nf)
        kept = [piece.row_groups[0].id for piece in fragment.split_by_row_group(physical)]
        return fragment.metadata, kept
    except (pa.ArrowException, ValueError, TypeError, KeyError):
        # The filter references a column the file lacks, a promoted column, or something the
        # statistics simplifier cannot handle: read every row group and filter in memory.
        return None


def _resolve_ids(
    file_schema: pa.Schema, location: str, name_mapping: NameMapping | None, file_schema_hint: Schema | None
) -> pa.Schema:
    if has_field_ids(file_schema, require_all=False):
        return file_schema
    if name_mapping is None and file_schema_hint is not None:
        name_mapping = create_mapping_from_schema(file_schema_hint)
    if name_mapping is None:
        raise ValidationError(
            f"{location}: Parquet file has no Iceberg field ids and no name mapping was given "
            "(set the table property 'schema.name-mapping.default')"
        )
    return apply_name_mapping(file_schema, name_mapping)


def _read(
    io: FileIO,
    location: str,
    projected: Schema,
    file_schema_hint: Schema | None,
    name_mapping: NameMapping | None,
    row_filter: pc.Expression | None,
    partition_constants: Mapping[int, Any] | None,
    batch_size: int,
    include_pos: bool,
    large_types: bool,
    whole: bool,
) -> Iterator[pa.RecordBatch]:
    if batch_size <= 0:
        raise ValidationError(f"batch_size must be positive, got {batch_size}")
    nf = io.new_input(location).open_arrow()
    try:
        # Pages written with a CRC (Firn's, parquet-mr's) are checked: damage is an error, not
        # wrong values. Pages without one are read as before.
        pf = pq.ParquetFile(nf, pre_buffer=True, page_checksum_verification=True)
        file_schema = _resolve_ids(pf.schema_arrow, location, name_mapping, file_schema_hint)
        projection = _Projection(
            location, _build_nodes(file_schema), projected, partition_constants or {}, large_types
        )
        metadata = pf.metadata
        row_groups = list(range(metadata.num_row_groups))
        if row_filter is not None and row_groups:
            pruned = _prune_row_groups(nf, projection, file_schema, row_filter)
            if pruned is not None:
                row_groups = pruned[1]
        out_schema = projection.out_schema.append(_pos_field()) if include_pos else projection.out_schema
        starts = _row_group_starts(metadata)
        columns = sorted(projection.columns)
        # Positions need to know where each batch starts, so read one row group at a time then.
        groups = [[rg] for rg in row_groups] if include_pos else [row_groups]
        for group in groups:
            if not group:
                continue
            pos = starts[group[0]]
            raws: Iterator[pa.RecordBatch]
            if whole:
                # Decoding whole row groups at once is faster than streaming (pre-buffered,
                # column-parallel); the batches are zero-copy views of the decoded table.
                raws = iter(
                    pf.reader.read_row_groups(group, column_indices=columns, use_threads=True).to_batches()
                )
            else:
                raws = pf.reader.iter_batches(
                    batch_size, row_groups=group, column_indices=columns, use_threads=True
                )
            for raw in raws:
                arrays = projection.batch(raw)
                if include_pos:
                    arrays.append(pa.array(np.arange(pos, pos + raw.num_rows, dtype=np.int64)))
                    pos += raw.num_rows
                batch = pa.RecordBatch.from_arrays(arrays, schema=out_schema)
                if row_filter is not None:
                    batch = _apply_filter(batch, row_filter)
                    if batch.num_rows == 0:
                        continue
                yield batch
    except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
        # A damaged footer surfaces as OSError ("Couldn't deserialize thrift") or, in a column
        # name, as UnicodeDecodeError, not as ArrowException.
        raise InvalidMetadata(f"cannot read Parquet file: {e}", location=location) from e
    finally:
        nf.close()


def _apply_filter(batch: pa.RecordBatch, row_filter: pc.Expression) -> pa.RecordBatch:
    try:
        return batch.filter(row_filter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValidationError(
            f"row filter {row_filter} cannot be evaluated on columns {batch.schema.names}: {e}"
        ) from e


def read_parquet(
    io: FileIO,
    location: str,
    *,
    projected: Schema,
    file_schema_hint: Schema | None = None,
    name_mapping: NameMapping | None = None,
    row_filter: pc.Expression | None = None,
    partition_constants: Mapping[int, Any] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    include_pos: bool = False,
    large_types: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Stream a data file as batches of ``projected`` (current names, projected order).

    ``row_filter`` is an Arrow expression over the *output* columns (current names; it may only
    reference projected columns or ``_pos``); rows where it is not true are dropped.
    ``partition_constants`` maps field ids to internal values used for columns the file lacks
    (identity partition values). ``name_mapping`` gives ids to files written without them;
    ``file_schema_hint``, the schema such a file was written with, is the fallback mapping.
    With ``include_pos`` a trailing ``_pos`` int64 column holds each row's position in the file,
    counted before filtering. Batches hold at most ``batch_size`` rows.
    """
    return _read(
        io,
        location,
        projected,
        file_schema_hint,
        name_mapping,
        row_filter,
        partition_constants,
        batch_size,
        include_pos,
        large_types,
        whole=False,
    )


def _pos_field() -> pa.Field:
    return pa.field(
        POS_COLUMN, pa.int64(), nullable=False, metadata={FIELD_ID_KEY: str(POS_FIELD_ID).encode()}
    )


def _row_group_starts(metadata: pq.FileMetaData) -> list[int]:
    starts, total = [], 0
    for rg in range(metadata.num_row_groups):
        starts.append(total)
        total += metadata.row_group(rg).num_rows
    return starts


def check_file_schema(
    location: str, file_schema: pa.Schema, schema: Schema, name_mapping: NameMapping | None = None
) -> None:
    """Raise :class:`InvalidMetadata` (naming the file and column) unless every column of
    ``file_schema`` that maps to a field of ``schema`` can be read as that field's type, by the
    rules reads apply (same type, an allowed promotion, or another writer's physical form).
    Checks only the schema, so registering a file (``add_files``) can refuse one that no
    scan could read before committing it."""
    resolved = _resolve_ids(file_schema, location, name_mapping, schema)
    projection = _Projection(location, _build_nodes(resolved), schema, {}, False)  # structure

    def visit(node: _Node, f: NestedField, column: str) -> None:
        t = f.field_type
        if isinstance(t, UnknownType):
            return
        if isinstance(t, StructType):
            for c in t.fields:
                child = node.child(c.field_id)
                if child is not None:
                    visit(child, c, f"{column}.{c.name}")
        elif isinstance(t, ListType):
            visit(node.children[0], t.element_field, f"{column}.element")
        elif isinstance(t, MapType):
            visit(node.children[0], t.key_field, f"{column}.key")
            visit(node.children[1], t.value_field, f"{column}.value")
        elif isinstance(t, PrimitiveType):
            dt = node.field.type
            if pa.types.is_dictionary(dt):
                dt = dt.value_type
            if dt == type_to_arrow(t):
                return
            try:
                file_type = primitive_from_arrow(dt, column)
            except Unsupported as e:
                raise InvalidMetadata(str(e), location=location) from None
            readable = (
                file_type == t
                or can_promote(file_type, t, _PROMOTION_FORMAT_VERSION)
                or _same_values(file_type, t)
            )
            if not readable:
                raise InvalidMetadata(
                    f"column {column!r} is {file_type} in the file and cannot be read as {t}",
                    location=location,
                )

    for f in schema.fields:
        node = projection.top.get(f.field_id)
        if node is not None:
            visit(node, f, f.name)


def read_parquet_table(
    io: FileIO,
    location: str,
    *,
    projected: Schema,
    file_schema_hint: Schema | None = None,
    name_mapping: NameMapping | None = None,
    row_filter: pc.Expression | None = None,
    partition_constants: Mapping[int, Any] | None = None,
    include_pos: bool = False,
    large_types: bool = False,
) -> pa.Table:
    """The whole file as one table of ``projected`` (see :func:`read_parquet` for the options).

    Decodes whole row groups at once, which is faster than streaming when the result is
    materialized anyway. An empty table with the projected schema if no row matches.
    """
    batches = list(
        _read(
            io,
            location,
            projected,
            file_schema_hint,
            name_mapping,
            row_filter,
            partition_constants,
            DEFAULT_BATCH_SIZE,
            include_pos,
            large_types,
            whole=True,
        )
    )
    if batches:
        return pa.Table.from_batches(batches)
    schema = schema_to_arrow(projected, large_types=large_types)
    if include_pos:
        schema = schema.append(_pos_field())
    return schema.empty_table()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "POS_COLUMN",
    "POS_FIELD_ID",
    "check_file_schema",
    "read_parquet",
    "read_parquet_table",
]
