"""DataFile and ManifestFile JSON (what maintenance work units carry) round-trips exactly."""

from __future__ import annotations

import json
import math
import uuid
from decimal import Decimal

import pytest

from firn.errors import InvalidMetadata
from firn.spec.content import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
)
from firn.spec.content_json import (
    data_file_from_json,
    data_file_to_json,
    manifest_file_from_json,
    manifest_file_to_json,
    partition_value_from_json,
    partition_value_to_json,
)

# One value of every partition value kind (spec Appendix D internal forms): bool, int/long,
# date/time/timestamp (ints), float/double, decimal, string, uuid, fixed/binary, null.
PARTITION = (
    True,
    -7,
    19_723,
    1_700_000_000_123_456,
    1.5,
    -0.0,
    Decimal("12.30"),
    "eu-west",
    uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    b"\x00\xff\x10",
    None,
)


def _through_json(f: DataFile) -> DataFile:
    return data_file_from_json(json.loads(json.dumps(data_file_to_json(f))))


def test_data_file_with_every_field_round_trips() -> None:
    f = DataFile(
        content=FileContent.DATA,
        file_path="s3://b/t/data/region=eu/f.parquet",
        file_format=FileFormat.PARQUET,
        partition=PARTITION,
        record_count=500,
        file_size_in_bytes=12_345,
        spec_id=3,
        column_sizes={1: 100, 2: 200},
        value_counts={1: 500, 2: 500},
        null_value_counts={1: 0, 2: 7},
        nan_value_counts={4: 1},
        lower_bounds={1: b"\x01\x00\x00\x00\x00\x00\x00\x00", 2: b"abc", 9: b""},
        upper_bounds={1: b"\xf4\x01\x00\x00\x00\x00\x00\x00", 2: b"zz\xff"},
        key_metadata=b"\x01\x02",
        split_offsets=(4, 1_000),
        sort_order_id=1,
        first_row_id=42,
    )
    again = _through_json(f)
    assert again == f
    assert again.partition[6] == Decimal("12.30") and str(again.partition[6]) == "12.30"
    assert math.copysign(1.0, again.partition[5]) == -1.0  # -0.0 stays negative
    assert isinstance(again.partition[9], bytes) and isinstance(again.partition[8], uuid.UUID)


def test_deletion_vector_and_equality_delete_round_trip() -> None:
    dv = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path="/w/t/data/x-dv.puffin",
        file_format=FileFormat.PUFFIN,
        partition=("eu",),
        record_count=3,
        file_size_in_bytes=900,
        spec_id=1,
        referenced_data_file="/w/t/data/region=eu/a.parquet",
        content_offset=4,
        content_size_in_bytes=44,
    )
    eq = DataFile(
        content=FileContent.EQUALITY_DELETES,
        file_path="/w/t/data/eq.parquet",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=2,
        file_size_in_bytes=600,
        equality_ids=(1, 3),
    )
    assert _through_json(dv) == dv and dv.is_dv
    assert _through_json(eq) == eq
    text = data_file_to_json(dv)
    assert text["content"] == "position-deletes" and "lower-bounds" not in text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 1e-300])
def test_special_floats_survive_strict_json(value: float) -> None:
    encoded = json.dumps(partition_value_to_json(value), allow_nan=False)
    back = partition_value_from_json(json.loads(encoded))
    assert (math.isnan(back) and math.isnan(value)) or back == value


@pytest.mark.parametrize(
    "data, message",
    [
        ({"content": "data"}, "file-format"),
        ({"content": "bogus"}, "unknown content"),
        (
            {
                "content": "data",
                "file-path": "p",
                "file-format": "parquet",
                "spec-id": 0,
                "record-count": "1",
            },
            "record-count",
        ),
        (
            {
                "content": "data",
                "file-path": "p",
                "file-format": "parquet",
                "spec-id": 0,
                "record-count": 1,
                "file-size-in-bytes": 1,
                "lower-bounds": {"keys": [1], "values": ["zz"]},
            },
            "must be hex strings",
        ),
        (
            {
                "content": "data",
                "file-path": "p",
                "file-format": "parquet",
                "spec-id": 0,
                "record-count": 1,
                "file-size-in-bytes": 1,
                "partition": [{"date": "x"}],
            },
            "unknown partition value",
        ),
    ],
)
def test_malformed_content_files_name_the_problem(data: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidMetadata, match=message):
        data_file_from_json(data)


def test_manifest_file_round_trips() -> None:
    m = ManifestFile(
        manifest_path="/w/t/metadata/m1.avro",
        manifest_length=4_096,
        partition_spec_id=2,
        content=ManifestContent.DELETES,
        sequence_number=7,
        min_sequence_number=3,
        added_snapshot_id=99,
        added_files_count=1,
        existing_files_count=4,
        deleted_files_count=0,
        added_rows_count=10,
        existing_rows_count=40,
        deleted_rows_count=0,
        partitions=(
            PartitionFieldSummary(True, False, b"a", b"z"),
            PartitionFieldSummary(False, None, None, None),
        ),
        first_row_id=None,
    )
    assert manifest_file_from_json(json.loads(json.dumps(manifest_file_to_json(m)))) == m
    bare = ManifestFile(manifest_path="m.avro", manifest_length=1, partition_spec_id=0)
    assert manifest_file_from_json(manifest_file_to_json(bare)) == bare


_DATA: dict[str, object] = {
    "content": "data",
    "file-path": "p",
    "file-format": "parquet",
    "spec-id": 0,
    "record-count": 1,
    "file-size-in-bytes": 1,
}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("record-count", 1.5, r"^content file JSON: 'record-count' must be an integer, got 1.5$"),
        ("record-count", 1.0, r"'record-count' must be an integer, got 1.0"),
        ("spec-id", True, r"'spec-id' must be an integer, got True"),
        ("spec-id", 2**31, r"'spec-id' must be an integer in \[-2147483648, 2147483647\]"),
        ("file-size-in-bytes", 2**63, r"'file-size-in-bytes' must be an integer in \[-9223372036854775808, "),
        ("sort-order-id", 0.0, r"'sort-order-id' must be an integer, got 0.0"),
        ("content-offset", "4", r"'content-offset' must be an integer, got '4'"),
        ("equality-ids", [1, 2.0], r"'equality-ids' must be a list of integers"),
        ("split-offsets", [4, False], r"'split-offsets' must be a list of integers"),
        ("file-path", 5, r"'file-path' must be a string, got 5"),
    ],
)
def test_content_file_numbers_are_not_coerced(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=message):
        data_file_from_json({**_DATA, field: value})
    assert data_file_from_json({**_DATA, "split-offsets": [4, 2**40]}).split_offsets == (4, 2**40)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"manifest-length": 4096.0}, r"'manifest-length' must be an integer, got 4096.0"),
        ({"partition-spec-id": False}, r"'partition-spec-id' must be an integer, got False"),
        ({"added-snapshot-id": 1.5}, r"'added-snapshot-id' must be an integer, got 1.5"),
        ({"partitions": [{"contains-null": "false"}]}, r"'contains-null' must be true or false, got 'false'"),
        (
            {"partitions": [{"contains-null": False, "contains-nan": 0}]},
            r"'contains-nan' must be true or false",
        ),
    ],
)
def test_manifest_file_fields_are_not_coerced(change: dict[str, object], message: str) -> None:
    bare = manifest_file_to_json(ManifestFile(manifest_path="m.avro", manifest_length=1, partition_spec_id=0))
    with pytest.raises(InvalidMetadata, match=message):
        manifest_file_from_json({**bare, **change})
