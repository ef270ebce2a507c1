"""JSON serde for types, schemas, partition specs, sort orders and name mappings (Appendix C)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from firn.errors import InvalidMetadata, ValidationError
from firn.spec import values
from firn.spec.field_ids import MAX_TABLE_FIELD_ID
from firn.spec.json_fields import (
    get_bool,
    get_int,
    get_list,
    get_object,
    get_str,
    opt_int,
    opt_int_list,
    opt_str,
    require,
)
from firn.spec.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from firn.spec.schema import Schema
from firn.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from firn.spec.transforms import parse_transform
from firn.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    primitive_from_string,
)

_E = TypeVar("_E", bound=enum.Enum)


# -- types ----------------------------------------------------------------------------------
def type_to_json(t: IcebergType) -> Any:
    if isinstance(t, PrimitiveType):
        return str(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise InvalidMetadata(f"cannot serialize type {t!r}")


def field_to_json(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = values.to_json(f.field_type, f.initial_default)
    if f.write_default is not None:
        out["write-default"] = values.to_json(f.field_type, f.write_default)
    return out


def type_from_json(data: Any) -> IcebergType:
    if isinstance(data, str):
        try:
            return primitive_from_string(data)
        except ValueError as e:
            raise InvalidMetadata(str(e)) from e
    if not isinstance(data, Mapping):
        raise InvalidMetadata(f"cannot parse type from {data!r}")
    kind = data.get("type")
    if kind == "struct":
        return StructType(*(field_from_json(f) for f in get_list(data, "fields", "struct type")))
    if kind == "list":
        return ListType(
            get_int(data, "element-id", "list type"),
            type_from_json(require(data, "element", "list type")),
            get_bool(data, "element-required", "list type"),
        )
    if kind == "map":
        return MapType(
            get_int(data, "key-id", "map type"),
            type_from_json(require(data, "key", "map type")),
            get_int(data, "value-id", "map type"),
            type_from_json(require(data, "value", "map type")),
            get_bool(data, "value-required", "map type"),
        )
    raise InvalidMetadata(f"unknown nested type {kind!r}")


def field_from_json(data: Mapping[str, Any]) -> NestedField:
    name = get_str(data, "name", "schema field")
    what = f"schema field {name!r}"
    fid = get_int(data, "id", what)
    t = type_from_json(require(data, "type", what))
    initial = data.get("initial-default")
    write = data.get("write-default")
    return NestedField(
        field_id=fid,
        name=name,
        field_type=t,
        required=get_bool(data, "required", what),
        doc=opt_str(data, "doc", what),
        initial_default=values.from_json(t, initial) if initial is not None else None,
        write_default=values.from_json(t, write) if write is not None else None,
    )


# -- schemas ----------------------------------------------------------------------------------
def schema_to_json(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "struct", "schema-id": schema.schema_id}
    if schema.identifier_field_ids:
        out["identifier-field-ids"] = list(schema.identifier_field_ids)
    out["fields"] = [field_to_json(f) for f in schema.fields]
    return out


def schema_from_json(data: Mapping[str, Any]) -> Schema:
    get_object(data, "schema")
    # v1 metadata's single ``schema`` may have no id (Java: 0 then).
    schema_id = opt_int(data, "schema-id", "schema")
    what = f"schema {schema_id or 0}"
    fields = [field_from_json(f) for f in get_list(data, "fields", what)]
    schema = Schema(
        *fields,
        schema_id=schema_id or 0,
        identifier_field_ids=opt_int_list(data, "identifier-field-ids", what) or (),
    )
    # Field ids are how every file is read: a duplicate or reserved id would silently read the
    # wrong column, so reject them here (where the error can name the file) and not at scan time.
    try:
        ids = schema.field_ids
    except ValidationError as e:
        raise InvalidMetadata(f"schema {schema.schema_id}: {e}") from None
    bad = sorted(i for i in ids if i < 0 or i > MAX_TABLE_FIELD_ID)
    if bad:
        raise InvalidMetadata(
            f"schema {schema.schema_id} has field id {bad[0]}; table field ids must be in "
            f"0..{MAX_TABLE_FIELD_ID} (ids above are reserved for metadata columns)"
        )
    return schema


# -- partition specs --------------------------------------------------------------------------
def partition_field_to_json(f: PartitionField) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "transform": str(f.transform)}
    if f.source_ids is not None and len(f.source_ids) > 1:
        out["source-ids"] = list(f.source_ids)
    else:
        out["source-id"] = f.source_id
    out["field-id"] = f.field_id
    return out


def partition_spec_to_json(spec: PartitionSpec) -> dict[str, Any]:
    return {"spec-id": spec.spec_id, "fields": [partition_field_to_json(f) for f in spec.fields]}


def partition_fields_from_json(
    data: Sequence[Mapping[str, Any]], *, implicit_ids: bool
) -> tuple[PartitionField, ...]:
    if not isinstance(data, list | tuple):
        raise InvalidMetadata(f"partition fields must be a list, got {type(data).__name__}")
    out: list[PartitionField] = []
    for i, f in enumerate(data):
        name = get_str(f, "name", "partition field")
        what = f"partition field {name!r}"
        source_ids = _source_ids(f, what)
        source_id = source_ids[0] if source_ids else get_int(f, "source-id", what)
        field_id = opt_int(f, "field-id", what)
        if field_id is None:
            if not implicit_ids:
                raise InvalidMetadata(f"{what} is missing field-id")
            field_id = PARTITION_FIELD_ID_START + i
        out.append(
            PartitionField(
                source_id=source_id,
                field_id=field_id,
                transform=parse_transform(get_str(f, "transform", what)),
                name=name,
                source_ids=source_ids if source_ids is not None and len(source_ids) > 1 else None,
            )
        )
    return tuple(out)


def _source_ids(f: Mapping[str, Any], what: str) -> tuple[int, ...] | None:
    """``source-ids`` (v3 multi-argument transforms); ``None`` when absent, never empty."""
    source_ids = opt_int_list(f, "source-ids", what)
    if source_ids is not None and not source_ids:
        raise InvalidMetadata(f"{what}: 'source-ids' must not be empty")
    return source_ids


def partition_spec_from_json(data: Mapping[str, Any]) -> PartitionSpec:
    spec_id = opt_int(data, "spec-id", "partition spec")
    what = f"partition spec {spec_id or 0}"
    return PartitionSpec(
        spec_id or 0,
        partition_fields_from_json(get_list(data, "fields", what), implicit_ids=True),
    )


# -- sort orders ------------------------------------------------------------------------------
def sort_order_to_json(order: SortOrder) -> dict[str, Any]:
    fields = []
    for f in order.fields:
        item: dict[str, Any] = {"transform": str(f.transform)}
        if f.source_ids is not None and len(f.source_ids) > 1:
            item["source-ids"] = list(f.source_ids)
        else:
            item["source-id"] = f.source_id
        item["direction"] = f.direction.value
        item["null-order"] = f.null_order.value
        fields.append(item)
    return {"order-id": order.order_id, "fields": fields}


def sort_order_from_json(data: Mapping[str, Any]) -> SortOrder:
    order_id = get_int(data, "order-id", "sort order")
    what = f"sort order {order_id} field"
    fields = []
    for f in get_list(data, "fields", f"sort order {order_id}"):
        sids = _source_ids(f, what)
        fields.append(
            SortField(
                source_id=sids[0] if sids else get_int(f, "source-id", what),
                transform=parse_transform(get_str(f, "transform", what)),
                direction=_enum(SortDirection, get_str(f, "direction", what), "direction", what),
                null_order=_enum(NullOrder, get_str(f, "null-order", what), "null-order", what),
                source_ids=sids if sids and len(sids) > 1 else None,
            )
        )
    return SortOrder(order_id, tuple(fields))


def _enum(kind: type[_E], text: str, key: str, what: str) -> _E:
    try:
        return kind(text.lower())
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise InvalidMetadata(f"{what}: {key!r} must be one of {allowed}, got {text!r}") from None


__all__ = [
    "field_from_json",
    "field_to_json",
    "partition_fields_from_json",
    "partition_field_to_json",
    "partition_spec_from_json",
    "partition_spec_to_json",
    "schema_from_json",
    "schema_to_json",
    "sort_order_from_json",
    "sort_order_to_json",
    "type_from_json",
    "type_to_json",
]
