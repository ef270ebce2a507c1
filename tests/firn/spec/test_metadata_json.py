"""Table metadata JSON: every integer, boolean and string field is read with its JSON type and
Java's width; a wrong one is an ``InvalidMetadata`` that names the file, the object and the
field, never a coerced value (``1.5`` was read as 1, ``true`` as 1, ``"false"`` as True)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from firn.errors import InvalidMetadata
from firn.spec.metadata_json import metadata_from_json, metadata_to_json
from firn.spec.snapshots import RefType

FILE = "s3://bucket/wh/db/t/metadata/00003-1b2c.metadata.json"

# A v2 table in the shape (keys, order, conventions) Iceberg Java's TableMetadataParser writes:
# two snapshots, a tag, a partition spec and sort order, statistics and both logs.
JAVA_SHAPED_V2: dict[str, Any] = {
    "format-version": 2,
    "table-uuid": "2d1f5a2e-7c1b-4f1e-9d55-0b6c7a3e9f10",
    "location": "s3://bucket/wh/db/t",
    "last-sequence-number": 2,
    "last-updated-ms": 1731000002000,
    "last-column-id": 3,
    "current-schema-id": 0,
    "schemas": [
        {
            "type": "struct",
            "schema-id": 0,
            "identifier-field-ids": [1],
            "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"},
                {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
                {"id": 3, "name": "region", "required": False, "type": "string", "doc": "ISO code"},
            ],
        }
    ],
    "default-spec-id": 0,
    "partition-specs": [
        {
            "spec-id": 0,
            "fields": [
                {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000},
                {"name": "region", "transform": "identity", "source-id": 3, "field-id": 1001},
            ],
        }
    ],
    "last-partition-id": 1001,
    "default-sort-order-id": 1,
    "sort-orders": [
        {
            "order-id": 1,
            "fields": [
                {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}
            ],
        }
    ],
    "properties": {"write.format.default": "parquet", "commit.retry.num-retries": "4"},
    "current-snapshot-id": 3051729675574597004,
    "refs": {
        "main": {"snapshot-id": 3051729675574597004, "type": "branch"},
        "audit": {
            "snapshot-id": 3055729675574597004,
            "type": "tag",
            "max-ref-age-ms": 86400000,
        },
        "dev": {
            "snapshot-id": 3051729675574597004,
            "type": "branch",
            "min-snapshots-to-keep": 2,
            "max-snapshot-age-ms": 3600000,
        },
    },
    "snapshots": [
        {
            "sequence-number": 1,
            "snapshot-id": 3055729675574597004,
            "timestamp-ms": 1731000001000,
            "summary": {"operation": "append", "added-data-files": "1", "total-records": "10"},
            "manifest-list": "s3://bucket/wh/db/t/metadata/snap-3055729675574597004-1-a.avro",
            "schema-id": 0,
        },
        {
            "sequence-number": 2,
            "snapshot-id": 3051729675574597004,
            "parent-snapshot-id": 3055729675574597004,
            "timestamp-ms": 1731000002000,
            "summary": {"operation": "overwrite", "added-data-files": "2", "deleted-data-files": "1"},
            "manifest-list": "s3://bucket/wh/db/t/metadata/snap-3051729675574597004-2-b.avro",
            "schema-id": 0,
        },
    ],
    "statistics": [
        {
            "snapshot-id": 3051729675574597004,
            "statistics-path": "s3://bucket/wh/db/t/metadata/stats-1.puffin",
            "file-size-in-bytes": 413,
            "file-footer-size-in-bytes": 42,
            "blob-metadata": [
                {
                    "type": "apache-datasketches-theta-v1",
                    "snapshot-id": 3051729675574597004,
                    "sequence-number": 2,
                    "fields": [1],
                    "properties": {"ndv": "10"},
                }
            ],
        }
    ],
    "partition-statistics": [
        {
            "snapshot-id": 3051729675574597004,
            "statistics-path": "s3://bucket/wh/db/t/metadata/partition-stats-1.parquet",
            "file-size-in-bytes": 1024,
        }
    ],
    "snapshot-log": [
        {"timestamp-ms": 1731000001000, "snapshot-id": 3055729675574597004},
        {"timestamp-ms": 1731000002000, "snapshot-id": 3051729675574597004},
    ],
    "metadata-log": [
        {
            "timestamp-ms": 1731000000000,
            "metadata-file": "s3://bucket/wh/db/t/metadata/00000-a.metadata.json",
        },
        {
            "timestamp-ms": 1731000001000,
            "metadata-file": "s3://bucket/wh/db/t/metadata/00001-b.metadata.json",
        },
    ],
}


def _v3() -> dict[str, Any]:
    doc = copy.deepcopy(JAVA_SHAPED_V2)
    doc["format-version"] = 3
    doc["next-row-id"] = 30
    doc["snapshots"][0].update({"first-row-id": 0, "added-rows": 10})
    doc["snapshots"][1].update({"first-row-id": 10, "added-rows": 20})
    return doc


def _read(doc: dict[str, Any]) -> Any:
    return metadata_from_json(json.dumps(doc), location=FILE)


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


def test_java_shaped_v2_and_v3_metadata_read_with_every_field() -> None:
    md = _read(JAVA_SHAPED_V2)
    assert md.current_snapshot_id == 3051729675574597004 and md.last_sequence_number == 2
    assert [s.parent_snapshot_id for s in md.snapshots] == [None, 3055729675574597004]
    assert md.schema().identifier_field_ids == (1,) and md.schema().find_field("region").doc == "ISO code"
    assert [f.field_id for f in md.spec().fields] == [1000, 1001] and md.last_partition_id == 1001
    assert md.refs["audit"].ref_type is RefType.TAG and md.refs["audit"].max_ref_age_ms == 86400000
    assert md.refs["dev"].min_snapshots_to_keep == 2 and md.refs["dev"].max_snapshot_age_ms == 3600000
    assert md.statistics[0].blob_metadata[0].fields == (1,)
    assert md.partition_statistics[0].file_size_in_bytes == 1024
    assert [e.snapshot_id for e in md.snapshot_log] == [3055729675574597004, 3051729675574597004]
    assert md.metadata_log[1].metadata_file.endswith("00001-b.metadata.json")
    v3 = _read(_v3())
    assert v3.next_row_id == 30 and [(s.first_row_id, s.added_rows) for s in v3.snapshots] == [
        (0, 10),
        (10, 20),
    ]
    # Firn writes what it read: reading its own output gives the same JSON again.
    assert json.loads(metadata_to_json(_read(json.loads(metadata_to_json(md))))) == json.loads(
        metadata_to_json(md)
    )


def test_v2_without_snapshots_and_v1_conventions_still_read() -> None:
    doc = copy.deepcopy(JAVA_SHAPED_V2)
    for key in ("refs", "snapshots", "statistics", "partition-statistics", "snapshot-log", "metadata-log"):
        doc.pop(key)
    doc["current-snapshot-id"] = -1  # Java before v3: -1 for "no current snapshot"
    md = _read(doc)
    assert md.current_snapshot_id is None and md.snapshots == ()
    v1 = {
        "format-version": 1,
        "table-uuid": "2d1f5a2e-7c1b-4f1e-9d55-0b6c7a3e9f10",
        "location": "s3://bucket/wh/db/t",
        "last-updated-ms": 1731000000000,
        "last-column-id": 1,
        "schema": {"type": "struct", "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]},
        "partition-spec": [{"name": "id", "transform": "identity", "source-id": 1}],
        "properties": {},
        "current-snapshot-id": -1,
        "snapshots": [],
    }
    md1 = _read(v1)
    assert md1.schema().schema_id == 0 and md1.spec().fields[0].field_id == 1000


# (path, value shown in the message, what the message names)
INTEGER_FIELDS = [
    ("last-column-id", "table metadata", "'last-column-id'"),
    ("last-updated-ms", "table metadata", "'last-updated-ms'"),
    ("last-sequence-number", "table metadata", "'last-sequence-number'"),
    ("current-schema-id", "table metadata", "'current-schema-id'"),
    ("default-spec-id", "table metadata", "'default-spec-id'"),
    ("last-partition-id", "table metadata", "'last-partition-id'"),
    ("default-sort-order-id", "table metadata", "'default-sort-order-id'"),
    ("current-snapshot-id", "table metadata", "'current-snapshot-id'"),
    ("schemas/0/schema-id", "schema", "'schema-id'"),
    ("schemas/0/fields/1/id", "schema field 'ts'", "'id'"),
    ("partition-specs/0/spec-id", "partition spec", "'spec-id'"),
    ("partition-specs/0/fields/1/source-id", "partition field 'region'", "'source-id'"),
    ("partition-specs/0/fields/0/field-id", "partition field 'ts_day'", "'field-id'"),
    ("sort-orders/0/order-id", "sort order", "'order-id'"),
    ("sort-orders/0/fields/0/source-id", "sort order 1 field", "'source-id'"),
    ("snapshots/1/snapshot-id", "snapshot", "'snapshot-id'"),
    ("snapshots/1/parent-snapshot-id", "snapshot 3051729675574597004", "'parent-snapshot-id'"),
    ("snapshots/1/sequence-number", "snapshot 3051729675574597004", "'sequence-number'"),
    ("snapshots/1/timestamp-ms", "snapshot 3051729675574597004", "'timestamp-ms'"),
    ("snapshots/0/schema-id", "snapshot 3055729675574597004", "'schema-id'"),
    ("refs/main/snapshot-id", "ref 'main'", "'snapshot-id'"),
    ("refs/dev/min-snapshots-to-keep", "ref 'dev'", "'min-snapshots-to-keep'"),
    ("refs/dev/max-snapshot-age-ms", "ref 'dev'", "'max-snapshot-age-ms'"),
    ("refs/audit/max-ref-age-ms", "ref 'audit'", "'max-ref-age-ms'"),
    ("statistics/0/snapshot-id", "statistics file", "'snapshot-id'"),
    ("statistics/0/file-size-in-bytes", "statistics file of snapshot 3051729675574597004", "'file-size-in-bytes'"),
    ("statistics/0/file-footer-size-in-bytes", "statistics file of snapshot 3051729675574597004", "'file-footer-size-in-bytes'"),
    ("statistics/0/blob-metadata/0/sequence-number", "statistics file of snapshot 3051729675574597004 blob", "'sequence-number'"),
    ("partition-statistics/0/file-size-in-bytes", "partition statistics file of snapshot 3051729675574597004", "'file-size-in-bytes'"),
    ("snapshot-log/1/snapshot-id", "snapshot-log entry", "'snapshot-id'"),
    ("snapshot-log/0/timestamp-ms", "snapshot-log entry", "'timestamp-ms'"),
    ("metadata-log/0/timestamp-ms", "metadata-log entry", "'timestamp-ms'"),
]  # fmt: skip
WRONG = [(1.5, "1.5"), (2.0, "2.0"), (True, "True"), ("7", "'7'")]


@pytest.mark.parametrize(("path", "what", "key"), INTEGER_FIELDS, ids=[p for p, _, _ in INTEGER_FIELDS])
@pytest.mark.parametrize(("value", "shown"), WRONG, ids=[s for _, s in WRONG])
def test_integer_fields_refuse_floats_bools_and_strings_naming_file_and_field(
    path: str, what: str, key: str, value: object, shown: str
) -> None:
    with pytest.raises(
        InvalidMetadata, match=rf"^{FILE}: {what}: {key} must be an integer, got {shown}$"
    ) as info:
        _read(_with(JAVA_SHAPED_V2, path, value))
    assert info.value.location == FILE


@pytest.mark.parametrize(
    "path", ["next-row-id", "snapshots/0/first-row-id", "snapshots/1/added-rows"], ids=lambda p: p
)
@pytest.mark.parametrize(("value", "shown"), WRONG, ids=[s for _, s in WRONG])
def test_v3_row_lineage_fields_are_integers(path: str, value: object, shown: str) -> None:
    key = path.rsplit("/", 1)[-1]
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: .*'{key}' must be an integer, got {shown}$"):
        _read(_with(_v3(), path, value))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "schemas/0/schema-id",
            2**31,
            r"schema: 'schema-id' must be an integer in \[-2147483648, 2147483647\]",
        ),
        (
            "last-column-id",
            -(2**31) - 1,
            r"'last-column-id' must be an integer in \[-2147483648, 2147483647\]",
        ),
        (
            "refs/dev/min-snapshots-to-keep",
            2**31,
            r"ref 'dev': 'min-snapshots-to-keep' must be an integer in",
        ),
        (
            "snapshots/0/snapshot-id",
            2**63,
            r"snapshot: 'snapshot-id' must be an integer in \[-9223372036854775808, ",
        ),
        (
            "snapshots/1/timestamp-ms",
            -(2**63) - 1,
            r"'timestamp-ms' must be an integer in \[-9223372036854775808",
        ),
        ("statistics/0/blob-metadata/0/fields", [1, 1.5], r"blob: 'fields' must be a list of integers"),
        (
            "schemas/0/identifier-field-ids",
            [True],
            r"schema 0: 'identifier-field-ids' must be a list of integers",
        ),
    ],
)
def test_integers_beyond_java_widths_and_lists_of_integers(path: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: .*{message}"):
        _read(_with(JAVA_SHAPED_V2, path, value))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "schemas/0/fields/0/required",
            "false",
            r"schema field 'id': 'required' must be true or false, got 'false'",
        ),
        ("schemas/0/fields/2/name", 3, r"schema field: 'name' must be a string, got 3"),
        (
            "partition-specs/0/fields/0/transform",
            7,
            r"partition field 'ts_day': 'transform' must be a string, got 7",
        ),
        (
            "sort-orders/0/fields/0/direction",
            "sideways",
            r"sort order 1 field: 'direction' must be one of 'asc', 'desc', got 'sideways'",
        ),
        ("refs/main/type", 1, r"ref 'main': 'type' must be a string, got 1"),
        ("refs/main/type", "twig", r"ref 'main': 'type' must be 'branch' or 'tag', got 'twig'"),
        (
            "snapshots/0/manifest-list",
            12,
            r"snapshot 3055729675574597004: 'manifest-list' must be a string or null",
        ),
        (
            "snapshots/0/summary",
            ["append"],
            r"snapshot 3055729675574597004 summary must be a JSON object, got list",
        ),
        ("snapshots/0", [1, 2], r"snapshot must be a JSON object, got list"),
        (
            "snapshots/0/summary/total-records",
            10,
            r"snapshot 3055729675574597004 summary: 'total-records' must be a string, got 10",
        ),
        (
            "snapshots/1/summary/operation",
            "upsert",
            r"snapshot 3051729675574597004 summary: 'operation' must be one of 'append', ",
        ),
        (
            "statistics/0/statistics-path",
            None,
            r"statistics file of snapshot 3051729675574597004: 'statistics-path' must be a string, got None",
        ),
        ("metadata-log/1/metadata-file", 5, r"metadata-log entry: 'metadata-file' must be a string, got 5"),
        ("table-uuid", 12, r"table metadata: 'table-uuid' must be a string or null, got 12"),
        ("location", ["s3://x"], r"table metadata: 'location' must be a string or null"),
        ("snapshots", {"a": 1}, r"table metadata: 'snapshots' must be a list, got dict"),
        ("refs", ["main"], r"table metadata 'refs' must be a JSON object, got list"),
    ],
)
def test_other_fields_are_not_coerced(path: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: {message}"):
        _read(_with(JAVA_SHAPED_V2, path, value))


def test_snapshot_cache_does_not_let_true_or_1_0_pass_as_1() -> None:
    """Parsed snapshots are reused across reads of one table; ``True == 1.0 == 1`` in Python,
    so the cache must not hand back a snapshot parsed from a valid file for a later file whose
    snapshot holds ``true`` or ``1.0`` where the valid one held ``1``."""
    doc = copy.deepcopy(JAVA_SHAPED_V2)
    doc["snapshots"] = [doc["snapshots"][0] | {"snapshot-id": 1}]
    doc["current-snapshot-id"] = 1
    doc["refs"] = {"main": {"snapshot-id": 1, "type": "branch"}}
    for key in ("statistics", "partition-statistics", "snapshot-log"):
        doc.pop(key)
    assert _read(doc).snapshots[0].snapshot_id == 1
    with pytest.raises(
        InvalidMetadata, match=rf"^{FILE}: snapshot: 'snapshot-id' must be an integer, got True$"
    ):
        _read(_with(doc, "snapshots/0/snapshot-id", True))
    # The same for the other fields: each bad read follows a valid read of the same table.
    for path, value in [("sequence-number", 1.0), ("sequence-number", True), ("schema-id", False)]:
        assert _read(doc).snapshots[0].sequence_number == 1
        with pytest.raises(InvalidMetadata, match=rf"^{FILE}: snapshot 1: '{path}' must be an integer"):
            _read(_with(doc, f"snapshots/0/{path}", value))


def test_gzip_metadata_errors_name_the_file_too() -> None:
    data = gzip.compress(json.dumps(_with(JAVA_SHAPED_V2, "schemas/0/schema-id", 0.5)).encode())
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: schema: 'schema-id' must be an integer, got 0.5$"):
        metadata_from_json(data, location=FILE)


@pytest.mark.interop
def test_pyiceberg_written_metadata_reads(tmp_path: Path) -> None:
    """A v2 table PyIceberg wrote (create, two appends, schema change) reads field for field."""
    import warnings

    import pyarrow as pa

    sql = pytest.importorskip("pyiceberg.catalog.sql")
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.types import LongType, NestedField, StringType

    py = sql.SqlCatalog("py", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    py.create_namespace("db")
    schema = PySchema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False)
    )
    table = py.create_table("db.t", schema=schema, properties={"format-version": "2"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array(["a", "b"])}))
        table.append(pa.table({"id": pa.array([3], pa.int64()), "s": pa.array(["c"])}))
        with table.update_schema() as update:
            update.add_column("x", LongType())
    table = py.load_table("db.t")
    location = table.metadata_location
    md = metadata_from_json(Path(location.removeprefix("file://")).read_bytes(), location=location)
    assert [s.snapshot_id for s in md.snapshots] == [s.snapshot_id for s in table.snapshots()]
    assert md.current_snapshot_id == table.metadata.current_snapshot_id
    assert md.current_schema_id == table.metadata.current_schema_id == 1
    assert [f.name for f in md.schema().fields] == ["id", "s", "x"]
    assert md.last_sequence_number == table.metadata.last_sequence_number == 2
    assert [e.timestamp_ms for e in md.snapshot_log] == [e.timestamp_ms for e in table.metadata.snapshot_log]
