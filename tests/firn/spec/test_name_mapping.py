"""Name mappings: Appendix C JSON, creation from a schema, lookups by name path."""

from __future__ import annotations

import json

import pytest

from firn.errors import ValidationError
from firn.spec.name_mapping import MappedField, NameMapping, create_mapping_from_schema, parse_name_mapping
from firn.spec.schema import Schema
from firn.spec.types import DOUBLE, INT, LONG, STRING, ListType, MapType, NestedField, StructType

SPEC_EXAMPLE = """
[ { "field-id": 1, "names": ["id", "record_id"] },
   { "field-id": 2, "names": ["data"] },
   { "field-id": 3, "names": ["location"], "fields": [
       { "field-id": 4, "names": ["latitude", "lat"] },
       { "field-id": 5, "names": ["longitude", "long"] }
     ] } ]
"""


def test_parse_spec_example_and_lookup_aliases() -> None:
    m = parse_name_mapping(SPEC_EXAMPLE)
    assert m.id_for(["id"]) == 1
    assert m.id_for(["record_id"]) == 1
    assert m.id_for(["data"]) == 2
    assert m.id_for(["location", "lat"]) == 4
    assert m.id_for(["location", "latitude"]) == 4
    assert m.id_for(["location", "long"]) == 5
    assert m.id_for(["location", "altitude"]) is None
    assert m.id_for(["missing"]) is None
    assert m.id_for([]) is None
    assert m.find_by_id(5) == MappedField(("longitude", "long"), 5)


def test_json_round_trip_keeps_structure() -> None:
    m = parse_name_mapping(SPEC_EXAMPLE)
    text = m.to_json()
    assert parse_name_mapping(text) == m
    assert json.loads(text) == json.loads(SPEC_EXAMPLE)


def test_dotted_names_are_literal_not_paths() -> None:
    m = parse_name_mapping(
        '[{"field-id": 7, "names": ["a.b"]}, {"field-id": 8, "names": ["a"], "fields": []}]'
    )
    assert m.id_for(["a.b"]) == 7
    assert m.id_for(["a", "b"]) is None


def test_fields_without_id_and_empty_names() -> None:
    m = parse_name_mapping('[{"names": ["extra"]}, {"field-id": 3, "names": []}]')
    assert m.find(["extra"]) is not None
    assert m.id_for(["extra"]) is None
    assert m.find_by_id(3) == MappedField((), 3)
    # Serialization omits the absent id and children.
    assert m.to_list() == [{"names": ["extra"]}, {"names": [], "field-id": 3}]


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "not json",
        '[{"names": "id"}]',
        '[{"names": ["id"], "field-id": "1"}]',
        '[{"names": ["id"], "fields": {}}]',
        '[{"names": ["id"], "field-id": 1}, {"names": ["id"], "field-id": 2}]',
    ],
)
def test_invalid_mappings_are_rejected(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_name_mapping(text)


def test_create_mapping_from_nested_schema() -> None:
    schema = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(
            2,
            "point",
            StructType(NestedField(3, "x", DOUBLE), NestedField(4, "y", DOUBLE)),
        ),
        NestedField(5, "tags", ListType(6, STRING)),
        NestedField(7, "props", MapType(8, STRING, 9, StructType(NestedField(10, "v", INT)))),
    )
    m = create_mapping_from_schema(schema)
    assert m.id_for(["id"]) == 1
    assert m.id_for(["point", "y"]) == 4
    assert m.id_for(["tags", "element"]) == 6
    assert m.id_for(["props", "key"]) == 8
    assert m.id_for(["props", "value"]) == 9
    assert m.id_for(["props", "value", "v"]) == 10
    assert [f.field_id for f in m] == [1, 2, 5, 7]
    assert NameMapping.from_list(json.loads(m.to_json())) == m
