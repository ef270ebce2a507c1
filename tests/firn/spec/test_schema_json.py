"""Schema, partition spec and sort order JSON: a value of the wrong JSON type is refused with
an error naming the object and the field, never coerced (``1.5`` was read as field id 1)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from firn.errors import InvalidMetadata
from firn.spec.schema_json import (
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    sort_order_from_json,
    sort_order_to_json,
)

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 1,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "tags", "required": False, "type": {
            "type": "list", "element-id": 4, "element": "string", "element-required": False}},
        {"id": 3, "name": "attrs", "required": False, "doc": "free-form", "type": {
            "type": "map", "key-id": 5, "key": "string", "value-id": 6, "value": "int",
            "value-required": True}},
    ],
}  # fmt: skip
SPEC: dict[str, Any] = {
    "spec-id": 2,
    "fields": [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "id_trunc", "transform": "truncate[4]", "source-id": 1, "field-id": 1001},
    ],
}
ORDER: dict[str, Any] = {
    "order-id": 1,
    "fields": [
        {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "bucket[4]", "source-id": 2, "direction": "desc", "null-order": "nulls-last"},
    ],
}

WRONG = [(1.5, "1.5"), (1.0, "1.0"), (True, "True"), ("1", "'1'")]


def _with(doc: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    *parents, last = path.split("/")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def test_valid_documents_round_trip() -> None:
    schema = schema_from_json(SCHEMA)
    assert schema.schema_id == 1 and schema.identifier_field_ids == (1,)
    assert schema_to_json(schema) == SCHEMA
    spec = partition_spec_from_json(SPEC)
    assert partition_spec_to_json(spec) == SPEC
    assert sort_order_to_json(sort_order_from_json(ORDER)) == ORDER


SCHEMA_INTS = [
    ("schema-id", "schema", "'schema-id'"),
    ("fields/0/id", "schema field 'id'", "'id'"),
    ("fields/1/type/element-id", "list type", "'element-id'"),
    ("fields/2/type/key-id", "map type", "'key-id'"),
    ("fields/2/type/value-id", "map type", "'value-id'"),
]


@pytest.mark.parametrize(("path", "what", "key"), SCHEMA_INTS, ids=[p for p, _, _ in SCHEMA_INTS])
@pytest.mark.parametrize(("value", "shown"), WRONG, ids=[s for _, s in WRONG])
def test_schema_integers_are_not_coerced(path: str, what: str, key: str, value: object, shown: str) -> None:
    with pytest.raises(InvalidMetadata, match=rf"^{what}: {key} must be an integer, got {shown}$"):
        schema_from_json(_with(SCHEMA, path, value))


@pytest.mark.parametrize(("value", "shown"), WRONG, ids=[s for _, s in WRONG])
def test_identifier_field_ids_are_integers(value: object, shown: str) -> None:
    with pytest.raises(
        InvalidMetadata, match=r"^schema 1: 'identifier-field-ids' must be a list of integers"
    ):
        schema_from_json(_with(SCHEMA, "identifier-field-ids", [value]))


def test_field_ids_beyond_32_bits_are_refused() -> None:
    with pytest.raises(
        InvalidMetadata, match=r"'id' must be an integer in \[-2147483648, 2147483647\], got 4294967297"
    ):
        schema_from_json(_with(SCHEMA, "fields/0/id", 2**32 + 1))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("fields/0/required", "false", r"schema field 'id': 'required' must be true or false, got 'false'"),
        ("fields/0/required", 1, r"schema field 'id': 'required' must be true or false, got 1"),
        ("fields/1/type/element-required", "no", r"list type: 'element-required' must be true or false"),
        ("fields/2/type/value-required", 0, r"map type: 'value-required' must be true or false"),
        ("fields/0/name", 7, r"schema field: 'name' must be a string, got 7"),
        ("fields/2/doc", 3, r"schema field 'attrs': 'doc' must be a string or null, got 3"),
        ("fields", {"id": 1}, r"schema 1: 'fields' must be a list, got dict"),
        ("fields/1/type/type", "array", r"unknown nested type 'array'"),
    ],
)
def test_schema_booleans_strings_and_lists_are_not_coerced(path: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=message):
        schema_from_json(_with(SCHEMA, path, value))


SPEC_CASES = [
    ("spec-id", 1.5, r"^partition spec: 'spec-id' must be an integer, got 1.5$"),
    ("spec-id", True, r"^partition spec: 'spec-id' must be an integer, got True$"),
    ("fields/0/source-id", 1.0, r"^partition field 'id_bucket': 'source-id' must be an integer, got 1.0$"),
    ("fields/1/field-id", "1001", r"^partition field 'id_trunc': 'field-id' must be an integer, got '1001'$"),
    ("fields/1/field-id", 1001.5, r"'field-id' must be an integer, got 1001.5"),
    ("fields/0/source-ids", [1, 2.5], r"'source-ids' must be a list of integers"),
    ("fields/0/source-ids", [], r"'source-ids' must not be empty"),
    ("fields/0/transform", 16, r"^partition field 'id_bucket': 'transform' must be a string, got 16$"),
    ("fields/0/name", None, r"^partition field: 'name' must be a string, got None$"),
    ("fields", "id", r"^partition spec 2: 'fields' must be a list, got str$"),
]


@pytest.mark.parametrize(("path", "value", "message"), SPEC_CASES)
def test_partition_spec_fields_are_not_coerced(path: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=message):
        partition_spec_from_json(_with(SPEC, path, value))


ORDER_CASES = [
    ("order-id", 1.5, r"^sort order: 'order-id' must be an integer, got 1.5$"),
    ("order-id", False, r"^sort order: 'order-id' must be an integer, got False$"),
    ("fields/0/source-id", "1", r"^sort order 1 field: 'source-id' must be an integer, got '1'$"),
    ("fields/1/source-id", 2.0, r"'source-id' must be an integer, got 2.0"),
    ("fields/0/direction", "up", r"'direction' must be one of 'asc', 'desc', got 'up'"),
    ("fields/0/null-order", True, r"'null-order' must be a string, got True"),
    ("fields/1/transform", ["bucket", 4], r"'transform' must be a string"),
]


@pytest.mark.parametrize(("path", "value", "message"), ORDER_CASES)
def test_sort_order_fields_are_not_coerced(path: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=message):
        sort_order_from_json(_with(ORDER, path, value))


@pytest.mark.parametrize(
    "read", [schema_from_json, partition_spec_from_json, sort_order_from_json], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("doc", [[1], "schema", 3])
def test_not_an_object(read: Callable[[Any], object], doc: object) -> None:
    with pytest.raises(InvalidMetadata, match="must be a JSON object"):
        read(doc)
