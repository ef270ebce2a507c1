"""Building the first metadata of a new table (what ``catalog.create_table`` commits)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from firn.errors import ValidationError
from firn.spec.partitioning import (
    INITIAL_SPEC_ID,
    PARTITION_FIELD_ID_START,
    UNPARTITIONED,
    PartitionField,
    PartitionSpec,
    build_partition_spec,
)
from firn.spec.properties import FORMAT_VERSION, RESERVED_PROPERTIES, TableProperties
from firn.spec.schema import Schema, assign_fresh_ids
from firn.spec.sorting import UNSORTED, SortField, SortOrder, build_sort_order
from firn.spec.table_metadata import TableMetadata, now_ms
from firn.spec.versions import (
    DEFAULT_FORMAT_VERSION,
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_TRACKED_PARTITION_FIELD_IDS,
    check_format_version,
)

SchemaLike = Any  # firn Schema or pyarrow.Schema
PartitionSpecLike = PartitionSpec | Sequence[Any] | None
SortOrderLike = SortOrder | Sequence[Any] | None


def to_firn_schema(schema: SchemaLike) -> Schema:
    """Accept a firn :class:`Schema` or a ``pyarrow.Schema`` (field ids from metadata or assigned)."""
    if isinstance(schema, Schema):
        return schema
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a hard dependency
        pa = None
    if pa is not None and isinstance(schema, pa.Schema):
        from firn.io.arrow_schema import schema_from_arrow

        return schema_from_arrow(schema)
    raise ValidationError(f"schema must be a firn Schema or a pyarrow.Schema, got {type(schema).__name__}")


def _rebind_spec(spec: PartitionSpec, old: Schema, new: Schema) -> PartitionSpec:
    """Re-point source ids of a spec built against ``old`` to the same-named fields of ``new``."""
    fields = []
    next_id = PARTITION_FIELD_ID_START - 1
    for pf in spec.fields:
        name = old.find_column_name(pf.source_id)
        if name is None:
            raise ValidationError(f"partition field {pf.name!r} references unknown source id {pf.source_id}")
        next_id += 1
        fields.append(PartitionField(new.find_field(name).field_id, next_id, pf.transform, pf.name))
    return build_partition_spec(new, fields, spec_id=INITIAL_SPEC_ID)


def _rebind_order(order: SortOrder, old: Schema, new: Schema) -> SortOrder:
    fields = []
    for sf in order.fields:
        name = old.find_column_name(sf.source_id)
        if name is None:
            raise ValidationError(f"sort field references unknown source id {sf.source_id}")
        fields.append(SortField(new.find_field(name).field_id, sf.transform, sf.direction, sf.null_order))
    return SortOrder(1, tuple(fields)) if fields else UNSORTED


def new_table_metadata(
    schema: SchemaLike,
    *,
    location: str,
    partition_spec: PartitionSpecLike = None,
    sort_order: SortOrderLike = None,
    properties: Mapping[str, str] | None = None,
    format_version: int | None = None,
    table_uuid: uuid.UUID | None = None,
) -> TableMetadata:
    """Metadata for a new, empty table: fresh field ids, spec ids from 1000, validated.

    ``format_version`` may also come from the ``format-version`` property (which is not
    stored). Firn's default is :data:`DEFAULT_FORMAT_VERSION`.
    """
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    requested: object = format_version
    if requested is None:
        requested = props.get(FORMAT_VERSION, DEFAULT_FORMAT_VERSION)
    version = check_format_version(requested)
    for key in RESERVED_PROPERTIES:
        props.pop(key, None)
    TableProperties.parse(props)  # reject malformed properties up front

    user_schema = to_firn_schema(schema)
    _ = user_schema.field_ids  # indexing the schema rejects duplicate field ids (ValidationError)
    fresh, last_column_id = assign_fresh_ids(user_schema.with_schema_id(0))
    fresh.validate(version)

    if partition_spec is None:
        spec = UNPARTITIONED
    elif isinstance(partition_spec, PartitionSpec):
        spec = _rebind_spec(partition_spec, user_schema, fresh)
    else:
        spec = build_partition_spec(fresh, partition_spec, spec_id=INITIAL_SPEC_ID)
    if version < MIN_FORMAT_VERSION_TRACKED_PARTITION_FIELD_IDS:
        # v1 requires the spec's field ids to start at 1000 in order (spec Appendix C).
        for i, pf in enumerate(spec.fields):
            if pf.field_id != PARTITION_FIELD_ID_START + i:
                raise ValidationError("v1 partition field ids must be 1000, 1001, ... in spec order")

    if sort_order is None:
        order = UNSORTED
    elif isinstance(sort_order, SortOrder):
        order = _rebind_order(sort_order, user_schema, fresh)
    else:
        order = build_sort_order(fresh, sort_order, order_id=1)

    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid or uuid.uuid4(),
        location=location.rstrip("/"),
        last_sequence_number=0,
        last_updated_ms=now_ms(),
        last_column_id=last_column_id,
        schemas=(fresh,),
        current_schema_id=fresh.schema_id,
        partition_specs=(spec,),
        default_spec_id=spec.spec_id,
        last_partition_id=max(spec.last_assigned_field_id, PARTITION_FIELD_ID_START - 1),
        sort_orders=(order,) if order.is_unsorted else (UNSORTED, order),
        default_sort_order_id=order.order_id,
        properties=MappingProxyType(props),
        next_row_id=0 if version >= MIN_FORMAT_VERSION_ROW_LINEAGE else None,
    )


__all__ = ["new_table_metadata", "to_firn_schema"]
