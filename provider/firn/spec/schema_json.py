"""JSON serde for types, schemas, partition specs, sort orders and name mappings (Appendix C)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from firn.errors import InvalidMetadata, ValidationError
from firn.spec import values
from firn.spec.field_ids import MAX_TABLE_FIELD_ID
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


def _req(obj: Mapping[str, Any], key: str, what: str) -> Any:
    try:
        return obj[key]
    except (KeyError, TypeError):
        raise InvalidMetadata(f"{what} is missing required field {key!r}") from None


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
        return StructType(*(field_from_json(f) for f in _req(data, "fields", "struct type")))
    if kind == "list":
        return ListType(
            int(_req(data, "element-id", "list type")),
            type_from_json(_req(data, "element", "list type")),
            bool(_req(data, "element-required", "list type")),
        )
    if kind == "map":
        return MapType(
            int(_req(data, "key-id", "map type")),
            type_from_json(_req(data, "key", "map type")),
            int(_req(data, "value-id", "map type")),
            type_from_json(_req(data, "value", "map type")),
            bool(_req(data, "value-required", "map type")),
        )
    raise InvalidMetadata(f"unknown nested type {kind!r}")


def field_from_json(data: Mapping[str, Any]) -> NestedField:
    t = type_from_json(_req(data, "type", "schema field"))
    initial = data.get("initial-default")
    write = data.get("write-default")
    fid = _req(data, "id", "schema field")
    if not isinstance(fid, int) or isinstance(fid, bool):
        raise InvalidMetadata(f"schema field id must be an integer, got {fid!r}")
    return NestedField(
        field_id=fid,
        name=str(_req(data, "name", "schema field")),
        field_type=t,
        required=bool(_req(data, "required", "schema field")),
        doc=data.get("doc"),
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
    if not isinstance(data, Mapping):
        raise InvalidMetadata(f"schema must be a JSON object, got {type(data).__name__}")
    fields = [field_from_json(f) for f in _req(data, "fields", "schema")]
    schema = Schema(
        *fields,
        schema_id=int(data.get("schema-id", 0)),
        identifier_field_ids=[int(i) for i in data.get("identifier-field-ids") or ()],
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
    out: list[PartitionField] = []
    for i, f in enumerate(data):
        source_ids = f.get("source-ids")
        if source_ids is not None:
            source_ids = tuple(int(x) for x in source_ids)
            source_id = source_ids[0]
        else:
            source_id = int(_req(f, "source-id", "partition field"))
        field_id = f.get("field-id")
        if field_id is None:
            if not implicit_ids:
                raise InvalidMetadata(f"partition field {f.get('name')!r} is missing field-id")
            field_id = PARTITION_FIELD_ID_START + i
        out.append(
            PartitionField(
                source_id=source_id,
                field_id=int(field_id),
                transform=parse_transform(str(_req(f, "transform", "partition field"))),
                name=str(_req(f, "name", "partition field")),
                source_ids=source_ids if source_ids is not None and len(source_ids) > 1 else None,
            )
        )
    return tuple(out)


def partition_spec_from_json(data: Mapping[str, Any]) -> PartitionSpec:
    return PartitionSpec(
        int(data.get("spec-id", 0)),
        partition_fields_from_json(_req(data, "fields", "partition spec"), implicit_ids=True),
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
    fields = []
    for f in _req(data, "fields", "sort order"):
        source_ids = f.get("source-ids")
        sids = tuple(int(x) for x in source_ids) if source_ids is not None else None
        fields.append(
            SortField(
                source_id=sids[0] if sids else int(_req(f, "source-id", "sort field")),
                transform=parse_transform(str(_req(f, "transform", "sort field"))),
                direction=SortDirection(str(_req(f, "direction", "sort field")).lower()),
                null_order=NullOrder(str(_req(f, "null-order", "sort field")).lower()),
                source_ids=sids if sids and len(sids) > 1 else None,
            )
        )
    return SortOrder(int(_req(data, "order-id", "sort order")), tuple(fields))


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
