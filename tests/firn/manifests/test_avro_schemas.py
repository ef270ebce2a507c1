"""The written Avro schemas match Iceberg Java's (notes §1, §2): record names, field ids, order,
optional unions, int-keyed maps as ``k<key>_v<value>`` arrays, partition logical types."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from firn.errors import Unsupported
from firn.io.memory import InMemoryFileIO
from firn.manifests import write_manifest, write_manifest_list
from firn.manifests.avro_schemas import avro_name, decimal_required_bytes, manifest_entry_schema
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.types import (
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    VARIANT,
    NestedField,
    StructType,
    TimeType,
)

from .factories import added, data_file, dv, partition

# notes §2 "Java write order".
ENTRY_ORDER = {1: [0, 1, 2], 2: [0, 1, 3, 4, 2], 3: [0, 1, 3, 4, 2]}
FILE_ORDER = {
    1: [100, 101, 102, 103, 104, 105, 108, 109, 110, 137, 125, 128, 131, 132, 140],
    2: [134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 143],
    3: [134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 142, 143, 144, 145],
}
# notes §1 "Java write order".
LIST_ORDER = {
    1: [500, 501, 502, 503, 504, 505, 506, 507, 512, 513, 514, 519],
    2: [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519],
    3: [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519, 520],
}
MAPS = {
    108: (117, 118, "long"),
    109: (119, 120, "long"),
    110: (121, 122, "long"),
    137: (138, 139, "long"),
    125: (126, 127, "bytes"),
    128: (129, 130, "bytes"),
}


def _header_schema(data: bytes) -> dict[str, Any]:
    """The schema exactly as stored in the file header (not fastavro's parsed form)."""
    reader = fastavro.reader(io.BytesIO(data))
    return json.loads(reader.metadata["avro.schema"])


def _field(record: dict[str, Any], field_id: int) -> dict[str, Any]:
    return next(f for f in record["fields"] if f.get("field-id") == field_id)


def _inner(t: Any) -> Any:
    assert isinstance(t, list) and t[0] == "null" and len(t) == 2, t
    return t[1]


def _manifest_schema(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> dict[str, Any]:
    entry = added(dv(1) if version == 3 else data_file(1), snapshot_id=1)
    content = 1 if version == 3 else 0
    from firn.spec.content import ManifestContent

    mf = write_manifest(
        fio.new_output(f"m{version}.avro"),
        [entry],
        spec=spec,
        schema=schema,
        format_version=version,
        content=ManifestContent(content),
        snapshot_id=1,
    )
    return _header_schema(fio.new_input(mf.manifest_path).read())


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_entry_schema_matches_java(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    s = _manifest_schema(fio, spec, schema, version)
    assert s["type"] == "record" and s["name"] == "manifest_entry"
    assert [f["field-id"] for f in s["fields"]] == ENTRY_ORDER[version]
    assert [f["name"] for f in s["fields"]][:2] == ["status", "snapshot_id"]
    assert _field(s, 0)["type"] == "int"
    snapshot = _field(s, 1)
    if version == 1:
        assert snapshot["type"] == "long"
    else:
        assert snapshot["type"] == ["null", "long"] and snapshot["default"] is None
        assert _field(s, 3)["type"] == ["null", "long"] and _field(s, 4)["name"] == "file_sequence_number"

    data_file_record = _field(s, 2)["type"]
    assert data_file_record["name"] == "r2"
    assert [f["field-id"] for f in data_file_record["fields"]] == FILE_ORDER[version]
    if version == 1:
        assert _field(data_file_record, 105)["type"] == "long"
    else:
        assert _field(data_file_record, 134) == {"name": "content", "type": "int", "field-id": 134}
    for map_id, (key_id, value_id, value_type) in MAPS.items():
        f = _field(data_file_record, map_id)
        assert f["default"] is None
        array = _inner(f["type"])
        assert array["type"] == "array" and array["logicalType"] == "map"
        assert array["items"]["name"] == f"k{key_id}_v{value_id}"
        assert array["items"]["fields"] == [
            {"field-id": key_id, "name": "key", "type": "int"},
            {"field-id": value_id, "name": "value", "type": value_type},
        ]
    split = _inner(_field(data_file_record, 132)["type"])
    assert split == {"type": "array", "items": "long", "element-id": 133}
    if version >= 2:
        assert _inner(_field(data_file_record, 135)["type"]) == {
            "type": "array",
            "items": "int",
            "element-id": 136,
        }
        assert _inner(_field(data_file_record, 143)["type"]) == "string"


def test_partition_record_types(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    s = _manifest_schema(fio, spec, schema, 2)
    part = _field(_field(s, 2)["type"], 102)
    assert part["name"] == "partition"
    record = part["type"]
    assert record["name"] == "r102"
    assert [f["field-id"] for f in record["fields"]] == [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007]
    types = {f["name"]: _inner(f["type"]) for f in record["fields"]}
    assert all(f["default"] is None for f in record["fields"])
    assert types["ts_day"] == {"type": "int", "logicalType": "date"}
    assert types["amount"] == {
        "type": "fixed",
        "name": "decimal_9_2",
        "size": 4,
        "logicalType": "decimal",
        "precision": 9,
        "scale": 2,
    }
    assert types["uid"] == {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
    assert types["score"] == "double"
    assert types["id_bucket_4"] == "int"
    assert types["region"] == "string"
    assert types["code"] == {"type": "fixed", "name": "fixed_3", "size": 3}
    assert types["ts_hour"] == "int"


def test_time_and_timestamp_partition_types() -> None:
    pt = StructType(
        NestedField(1000, "t", TimeType()),
        NestedField(1001, "ts", TIMESTAMP),
        NestedField(1002, "ts_ns", TIMESTAMP_NS),
        NestedField(1003, "tstz_ns", TIMESTAMPTZ_NS),
        NestedField(1004, "nothing", UNKNOWN),
    )
    fields = manifest_entry_schema(pt, 3)["fields"][4]["type"]["fields"][3]["type"]["fields"]
    assert [_inner(f["type"]) for f in fields[:4]] == [
        {"type": "long", "logicalType": "time-micros"},
        {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
        {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False},
        {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
    ]
    assert fields[4]["type"] == "null"


def test_repeated_named_partition_types_are_referenced_by_name() -> None:
    from firn.spec.types import DecimalType

    pt = StructType(NestedField(1000, "a", DecimalType(9, 2)), NestedField(1001, "b", DecimalType(9, 2)))
    schema = manifest_entry_schema(pt, 2)
    fastavro.parse_schema(schema)  # would fail on a redefined name
    fields = schema["fields"][4]["type"]["fields"][3]["type"]["fields"]
    assert _inner(fields[1]["type"]) == "decimal_9_2"


def test_unsupported_partition_type() -> None:
    with pytest.raises(Unsupported):
        manifest_entry_schema(StructType(NestedField(1000, "v", VARIANT)), 3)
    with pytest.raises(Unsupported):
        manifest_entry_schema(StructType(), 4)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_file_schema_matches_java(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    mf = write_manifest(
        fio.new_output("m.avro"),
        [added(data_file(1), 9)],
        spec=spec,
        schema=schema,
        format_version=version,
        snapshot_id=9,
    )
    write_manifest_list(
        fio.new_output("list.avro"),
        [mf],
        format_version=version,
        snapshot_id=9,
        parent_snapshot_id=None,
        sequence_number=1,
        first_row_id=0,
    )
    s = _header_schema(fio.new_input("list.avro").read())
    assert s["name"] == "manifest_file"
    assert [f["field-id"] for f in s["fields"]] == LIST_ORDER[version]
    names = {f["field-id"]: f["name"] for f in s["fields"]}
    assert names[504] == "added_files_count" and names[512] == "added_rows_count"
    partitions = _inner(_field(s, 507)["type"])
    assert partitions["type"] == "array" and partitions["element-id"] == 508
    element = partitions["items"]
    assert element["name"] == "r508"
    assert [(f["field-id"], f["name"]) for f in element["fields"]] == [
        (509, "contains_null"),
        (518, "contains_nan"),
        (510, "lower_bound"),
        (511, "upper_bound"),
    ]
    assert element["fields"][0]["type"] == "boolean"
    assert element["fields"][1]["type"] == ["null", "boolean"]
    counts = _field(s, 504)["type"]
    assert counts == (["null", "int"] if version == 1 else "int")
    if version == 3:
        assert _field(s, 520)["type"] == ["null", "long"]


def test_avro_name_sanitizing_like_java() -> None:
    assert avro_name("ts_day") == "ts_day"
    assert avro_name("ts-day") == "ts_x2Dday"
    assert avro_name("1st") == "_1st"
    assert avro_name("a.b") == "a_x2Eb"


def test_decimal_required_bytes() -> None:
    assert [decimal_required_bytes(p) for p in (1, 2, 3, 9, 10, 18, 19, 38)] == [1, 1, 2, 4, 5, 8, 9, 16]


def test_partition_helper_matches_spec_width(spec: PartitionSpec) -> None:
    assert len(partition(0)) == len(spec.fields)
