"""Reading files laid out differently from Firn's own: older Java field names, other field
orders, missing optional fields, deprecated v1 fields, schemas without field ids."""

from __future__ import annotations

import io
from typing import Any

import fastavro

from firn.manifests import read_manifest, read_manifest_list
from firn.spec.content import EntryStatus, FileContent, FileFormat, ManifestContent, ManifestFile


def _avro(schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="deflate")
    return buf.getvalue()


def _opt(name: str, t: Any, fid: int | None) -> dict[str, Any]:
    f: dict[str, Any] = {"name": name, "type": ["null", t], "default": None}
    if fid is not None:
        f["field-id"] = fid
    return f


def _req(name: str, t: Any, fid: int | None) -> dict[str, Any]:
    f: dict[str, Any] = {"name": name, "type": t}
    if fid is not None:
        f["field-id"] = fid
    return f


def _kv(key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [_req("key", "int", key_id), _req("value", value_type, value_id)],
        },
    }


def test_old_java_v1_manifest_list_names() -> None:
    """Java once named 504-506 ``added_data_files_count`` etc.; ids are what count."""
    schema = {
        "type": "record",
        "name": "manifest_file",
        "fields": [
            _req("manifest_path", "string", 500),
            _req("manifest_length", "long", 501),
            _req("partition_spec_id", "int", 502),
            _opt("added_snapshot_id", "long", 503),
            _opt("added_data_files_count", "int", 504),
            _opt("existing_data_files_count", "int", 505),
            _opt("deleted_data_files_count", "int", 506),
            _opt(
                "partitions",
                {
                    "type": "array",
                    "element-id": 508,
                    "items": {
                        "type": "record",
                        "name": "r508",
                        "fields": [
                            _req("contains_null", "boolean", 509),
                            _opt("lower_bound", "bytes", 510),
                            _opt("upper_bound", "bytes", 511),
                        ],
                    },
                },
                507,
            ),
        ],
    }
    data = _avro(
        schema,
        [
            {
                "manifest_path": "s3://t/m1.avro",
                "manifest_length": 99,
                "partition_spec_id": 0,
                "added_snapshot_id": 5,
                "added_data_files_count": 2,
                "existing_data_files_count": 0,
                "deleted_data_files_count": 1,
                "partitions": [{"contains_null": True, "lower_bound": b"a", "upper_bound": b"z"}],
            }
        ],
    )
    (m,) = read_manifest_list(data, location="s3://t/list.avro")
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (2, 0, 1)
    assert m.added_rows_count is None
    assert (m.content, m.sequence_number, m.min_sequence_number) == (ManifestContent.DATA, 0, 0)
    assert m.partitions is not None
    (summary,) = m.partitions
    assert (summary.contains_null, summary.contains_nan, summary.lower_bound) == (True, None, b"a")


def test_v1_manifest_with_deprecated_fields_and_other_order() -> None:
    """A v1 manifest with block_size, file_ordinal, sort_columns and distinct_counts, fields
    shuffled, no nan_value_counts, and an Avro ``map`` for one metric (nonconforming writer)."""
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            _req("file_format", "string", 101),
            _req("file_path", "string", 100),
            _req(
                "partition",
                {
                    "type": "record",
                    "name": "r102",
                    "fields": [_opt("day", {"type": "int", "logicalType": "date"}, 1000)],
                },
                102,
            ),
            _req("file_size_in_bytes", "long", 104),
            _req("record_count", "long", 103),
            _req("block_size_in_bytes", "long", 105),
            _opt("file_ordinal", "int", 106),
            _opt("sort_columns", {"type": "array", "items": "int", "element-id": 112}, 107),
            _opt("value_counts", _kv(119, 120, "long"), 109),
            _opt("distinct_counts", _kv(123, 124, "long"), 111),
            _opt("upper_bounds", {"type": "map", "values": "bytes", "key-id": 129, "value-id": 130}, 128),
        ],
    }
    schema = {
        "type": "record",
        "name": "manifest_entry",
        "fields": [_req("data_file", data_file, 2), _req("snapshot_id", "long", 1), _req("status", "int", 0)],
    }
    record = {
        "status": 0,
        "snapshot_id": 12,
        "data_file": {
            "file_format": "parquet",
            "file_path": "s3://t/data/a.parquet",
            "partition": {"day": 19_000},
            "file_size_in_bytes": 10,
            "record_count": 3,
            "block_size_in_bytes": 67108864,
            "file_ordinal": None,
            "sort_columns": None,
            "value_counts": [{"key": 1, "value": 3}],
            "distinct_counts": [{"key": 1, "value": 2}],
            "upper_bounds": {"1": b"\x07"},
        },
    }
    mf = ManifestFile("s3://t/m.avro", 1, 0, sequence_number=0, min_sequence_number=0, added_snapshot_id=12)
    (entry,) = read_manifest(_avro(schema, [record]), mf)
    assert (entry.status, entry.snapshot_id, entry.sequence_number, entry.file_sequence_number) == (
        EntryStatus.EXISTING,
        12,
        0,
        0,
    )
    df = entry.data_file
    assert (df.content, df.file_format, df.file_path) == (
        FileContent.DATA,
        FileFormat.PARQUET,
        "s3://t/data/a.parquet",
    )
    assert df.partition == (19_000,)
    assert df.value_counts == {1: 3} and df.upper_bounds == {1: b"\x07"}
    assert df.nan_value_counts is None and df.sort_order_id is None and df.equality_ids is None


def test_schema_without_field_ids_reads_by_spec_names() -> None:
    schema = {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _req("status", "int", None),
            _opt("snapshot_id", "long", None),
            _opt("sequence_number", "long", None),
            _opt("file_sequence_number", "long", None),
            _req(
                "data_file",
                {
                    "type": "record",
                    "name": "r2",
                    "fields": [
                        _req("content", "int", None),
                        _req("file_path", "string", None),
                        _req("file_format", "string", None),
                        _req("partition", {"type": "record", "name": "r102", "fields": []}, None),
                        _req("record_count", "long", None),
                        _req("file_size_in_bytes", "long", None),
                        _opt("equality_ids", {"type": "array", "items": "int"}, None),
                    ],
                },
                None,
            ),
        ],
    }
    record = {
        "status": 1,
        "snapshot_id": None,
        "sequence_number": None,
        "file_sequence_number": None,
        "data_file": {
            "content": 2,
            "file_path": "s3://t/eq.parquet",
            "file_format": "PARQUET",
            "partition": {},
            "record_count": 1,
            "file_size_in_bytes": 5,
            "equality_ids": [3],
        },
    }
    mf = ManifestFile("s3://t/m.avro", 1, 0, ManifestContent.DELETES, sequence_number=4, added_snapshot_id=8)
    (entry,) = read_manifest(_avro(schema, [record]), mf)
    assert (entry.snapshot_id, entry.sequence_number) == (8, 4)
    assert entry.data_file.content is FileContent.EQUALITY_DELETES and entry.data_file.equality_ids == (3,)
