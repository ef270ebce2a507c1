"""Manifest writer and reader: round trips per version and content, the returned ManifestFile,
partition summaries, key-value metadata, version rules, corrupt files."""

from __future__ import annotations

import io
import json
import math
import struct
import uuid
from decimal import Decimal

import fastavro
import pytest

from firn.errors import InvalidMetadata, ValidationError
from firn.io.memory import InMemoryFileIO
from firn.manifests import ManifestWriter, read_manifest, read_manifest_metadata, write_manifest
from firn.spec import values
from firn.spec.content import (
    EntryStatus,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from firn.spec.partitioning import PartitionSpec, build_partition_spec
from firn.spec.schema import Schema
from firn.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
)

from .factories import (
    added,
    data_file,
    deleted,
    dv,
    equality_delete_file,
    existing,
    partition,
    position_delete_file,
)

SNAP = 4242


def _committed(mf: ManifestFile, sequence_number: int, first_row_id: int | None = None) -> ManifestFile:
    """What the manifest-list writer would record for this manifest."""
    return mf.evolve(
        sequence_number=sequence_number,
        min_sequence_number=mf.min_sequence_number if mf.min_sequence_number is not None else sequence_number,
        first_row_id=first_row_id,
    )


@pytest.mark.parametrize("version", [1, 2, 3])
def test_data_manifest_round_trip(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    files = [data_file(i) for i in range(20)]
    entries = [added(f, SNAP) for f in files[:10]]
    entries += [existing(f, 17, 3) for f in files[10:15]]
    entries += [deleted(f, SNAP, 2) for f in files[15:]]
    mf = write_manifest(
        fio.new_output("s3://b/m.avro"),
        entries,
        spec=spec,
        schema=schema,
        format_version=version,
        snapshot_id=SNAP,
    )
    assert mf.manifest_path == "s3://b/m.avro"
    assert mf.manifest_length == len(fio.new_input("s3://b/m.avro").read())
    assert mf.partition_spec_id == 2 and mf.content is ManifestContent.DATA and mf.added_snapshot_id == SNAP
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (10, 5, 5)
    assert mf.added_rows_count == sum(f.record_count for f in files[:10])
    assert mf.existing_rows_count == sum(f.record_count for f in files[10:15])
    assert mf.deleted_rows_count == sum(f.record_count for f in files[15:])
    assert mf.sequence_number is None  # assigned by the manifest-list writer
    assert mf.min_sequence_number == 3  # existing entries only; deleted ones are not live

    committed = _committed(mf, 5 if version > 1 else 0)
    got = read_manifest(
        fio.new_input(mf.manifest_path),
        committed,
        partition_type=spec.partition_type(schema),
        include_deleted=True,
    )
    assert [e.data_file.file_path for e in got] == [f.file_path for f in files]
    for entry, f in zip(got, files):
        # Every field of the data file survives, with the manifest's spec id attached.
        assert entry.data_file == f.evolve(spec_id=2)
    live = read_manifest(
        fio.new_input(mf.manifest_path), committed, partition_type=spec.partition_type(schema)
    )
    assert len(live) == 15 and all(e.status is not EntryStatus.DELETED for e in live)


def test_empty_and_missing_metric_maps_stay_distinct(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    df = data_file(1, nan_value_counts={}, column_sizes=None, split_offsets=None, sort_order_id=None)
    mf = write_manifest(fio.new_output("m.avro"), [added(df)], spec=spec, schema=schema, format_version=2)
    (got,) = read_manifest(fio.new_input("m.avro"), _committed(mf, 1))
    assert got.data_file.nan_value_counts == {} and got.data_file.column_sizes is None
    assert got.data_file.split_offsets is None and got.data_file.sort_order_id is None


def test_partition_values_round_trip_as_internal_values(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    tuples = [
        partition(3),
        (None, None, None, None, None, None, None, None),
        (
            -1,
            Decimal("-0.01"),
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            -0.0,
            0,
            "",
            b"\x00\x00\x00",
            -1,
        ),
    ]
    entries = [added(data_file(i, t), SNAP) for i, t in enumerate(tuples)]
    mf = write_manifest(fio.new_output("m.avro"), entries, spec=spec, schema=schema, format_version=2)
    got = read_manifest(
        fio.new_input("m.avro"), _committed(mf, 1), partition_type=spec.partition_type(schema)
    )
    assert [e.data_file.partition for e in got] == tuples
    day, amount, uid, score, *_ = got[0].data_file.partition
    assert (
        type(day) is int
        and isinstance(amount, Decimal)
        and isinstance(uid, uuid.UUID)
        and type(score) is float
    )
    assert math.copysign(1.0, got[2].data_file.partition[3]) == -1.0
    # Without a partition type the file's own partition struct decides order and types.
    assert [
        e.data_file.partition for e in read_manifest(fio.new_input("m.avro"), _committed(mf, 1))
    ] == tuples


def test_identity_partitions_of_every_primitive_round_trip(fio: InMemoryFileIO) -> None:
    """fastavro turns date/time/timestamp logical types into datetime objects; Firn must get
    its internal ints back exactly, including before the epoch and for nanoseconds."""
    types = [
        BOOLEAN,
        INT,
        LONG,
        FLOAT,
        DOUBLE,
        DATE,
        TIME,
        TIMESTAMP,
        TIMESTAMPTZ,
        TIMESTAMP_NS,
        TIMESTAMPTZ_NS,
        STRING,
        UUID,
        BINARY,
        FixedType(2),
        DecimalType(38, 10),
        DecimalType(1, 0),
    ]
    schema = Schema(*(NestedField(i + 1, f"c{i}", t) for i, t in enumerate(types)))
    spec = build_partition_spec(schema, [(f"c{i}", "identity") for i in range(len(types))])
    rows = [
        (
            True,
            -5,
            2**40,
            1.5,
            -2.25,
            -1,
            0,
            -1,
            1_700_000_000_123_456,
            -1_000_000_000_123_456_789,
            1_700_000_000_123_456_789,
            "žluť",
            uuid.UUID(int=2**127 + 5),
            b"\x00\xff",
            b"ab",
            Decimal("-1234567890123456789012345678.0123456789"),
            Decimal("7"),
        ),
        (
            False,
            0,
            0,
            0.0,
            0.0,
            0,
            86_399_999_999,
            0,
            0,
            0,
            0,
            "",
            uuid.UUID(int=0),
            b"",
            b"\x00\x00",
            Decimal("0E-10"),
            Decimal("-9"),
        ),
        tuple([None] * len(types)),
    ]
    entries = [added(data_file(i, row)) for i, row in enumerate(rows)]
    mf = write_manifest(fio.new_output("m.avro"), entries, spec=spec, schema=schema, format_version=3)
    for pt in (spec.partition_type(schema), None):
        got = read_manifest(fio.new_input("m.avro"), _committed(mf, 1), partition_type=pt)
        assert [e.data_file.partition for e in got] == rows
    assert mf.partitions is not None
    ts_summary = mf.partitions[7]
    assert ts_summary.lower_bound == struct.pack("<q", -1) and ts_summary.upper_bound == struct.pack("<q", 0)


def test_partition_type_orders_by_field_id_and_fills_missing(fio: InMemoryFileIO, schema: Schema) -> None:
    spec = build_partition_spec(schema, [("region", "identity"), ("id", "bucket[8]")])
    mf = write_manifest(
        fio.new_output("m.avro"),
        [added(data_file(1, ("eu", 3)), SNAP)],
        spec=spec,
        schema=schema,
        format_version=2,
    )
    # A later spec view: fields reordered plus one the file does not have.
    from firn.spec.types import StructType

    pt = spec.partition_type(schema)
    reordered = StructType(pt.fields[1], NestedField(1005, "extra", INT), pt.fields[0])
    got = read_manifest(fio.new_input("m.avro"), _committed(mf, 1), partition_type=reordered)
    assert got[0].data_file.partition == (3, None, "eu")


@pytest.mark.parametrize("version", [2, 3])
def test_position_and_equality_delete_manifest_round_trip(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    pos = position_delete_file(1)
    eq = equality_delete_file(2)
    entries = [added(eq, SNAP)]
    if version == 2:
        entries.append(added(pos, SNAP))
    else:
        entries.append(existing(pos, 10, 4))  # v2 files carried over after an upgrade stay legal
    mf = write_manifest(
        fio.new_output("d.avro"),
        entries,
        spec=spec,
        schema=schema,
        format_version=version,
        content=ManifestContent.DELETES,
        snapshot_id=SNAP,
    )
    assert mf.content is ManifestContent.DELETES
    got = read_manifest(
        fio.new_input("d.avro"), _committed(mf, 6), partition_type=spec.partition_type(schema)
    )
    assert got[0].data_file == eq.evolve(spec_id=2)
    assert got[0].data_file.equality_ids == (1, 6)
    assert got[1].data_file == pos.evolve(spec_id=2)
    assert got[1].data_file.referenced_data_file == data_file(1).file_path
    assert read_manifest_metadata(fio.new_input("d.avro"))["content"] == "deletes"


def test_dv_manifest_round_trip(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    dvs = [dv(i) for i in range(3)]
    mf = write_manifest(
        fio.new_output("dv.avro"),
        [added(d) for d in dvs],
        spec=spec,
        schema=schema,
        format_version=3,
        content=ManifestContent.DELETES,
        snapshot_id=SNAP,
    )
    got = read_manifest(
        fio.new_input("dv.avro"), _committed(mf, 8), partition_type=spec.partition_type(schema)
    )
    assert [e.data_file for e in got] == [d.evolve(spec_id=2) for d in dvs]
    first = got[0].data_file
    assert first.is_dv and first.file_format is FileFormat.PUFFIN
    assert (first.content_offset, first.content_size_in_bytes) == (4, 60)
    assert first.first_row_id is None  # delete files never get row ids, even in a v3 manifest with one
    assert (
        read_manifest(fio.new_input("dv.avro"), _committed(mf, 8, first_row_id=None))[
            0
        ].data_file.first_row_id
        is None
    )


def test_written_entries_leave_inherited_values_null(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    entries = [
        added(data_file(1)),  # unknown snapshot id and sequence numbers: inherit all
        added(data_file(2), SNAP, sequence_number=2),  # compaction: explicit older data sequence number
        existing(data_file(3), 11, 3, 4),
        deleted(data_file(4), SNAP, 2),
    ]
    mf = write_manifest(fio.new_output("m.avro"), entries, spec=spec, schema=schema, format_version=3)
    raw = list(fastavro.reader(io.BytesIO(fio.new_input("m.avro").read())))
    assert [
        (r["status"], r["snapshot_id"], r["sequence_number"], r["file_sequence_number"]) for r in raw
    ] == [
        (1, None, None, None),
        (1, SNAP, 2, None),
        (0, 11, 3, 4),
        (2, SNAP, 2, 2),
    ]
    assert raw[0]["data_file"]["first_row_id"] is None
    assert raw[0]["data_file"]["file_format"] == "PARQUET"
    assert mf.min_sequence_number == 2


def test_key_value_metadata(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    write_manifest(
        fio.new_output("m.avro"), [added(data_file(1))], spec=spec, schema=schema, format_version=2
    )
    meta = read_manifest_metadata(fio.new_input("m.avro"))
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["partition-spec-id"] == "2"
    assert meta["schema-id"] == "3"
    schema_json = json.loads(meta["schema"])
    assert schema_json["schema-id"] == 3 and [f["id"] for f in schema_json["fields"]] == list(range(1, 11))
    fields = json.loads(meta["partition-spec"])
    assert isinstance(fields, list)  # only the fields array (PR #13895)
    assert fields[0] == {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}
    v1 = write_manifest(
        fio.new_output("v1.avro"), [added(data_file(1), 1)], spec=spec, schema=schema, format_version=1
    )
    assert "content" not in read_manifest_metadata(fio.new_input(v1.manifest_path))
    assert read_manifest_metadata(fio.new_input(v1.manifest_path))["format-version"] == "1"


def test_partition_summaries_nulls_nan_and_bounds(fio: InMemoryFileIO, schema: Schema) -> None:
    spec = build_partition_spec(schema, [("score", "identity"), ("region", "identity"), ("id", "bucket[16]")])
    parts = [
        (1.5, "b", 3),
        (float("nan"), None, 7),
        (-0.0, "a", 1),
        (0.0, "c", None),
        (-2.5, "b", 12),
    ]
    entries = [added(data_file(i, p)) for i, p in enumerate(parts[:-1])]
    entries.append(deleted(data_file(9, parts[-1]), SNAP, 1))  # deleted entries count too (like Java)
    mf = write_manifest(fio.new_output("m.avro"), entries, spec=spec, schema=schema, format_version=2)
    assert mf.partitions is not None
    score, region, bucket = mf.partitions
    assert score.contains_nan is True and score.contains_null is False
    assert score.lower_bound == values.to_bytes(DOUBLE, -2.5)
    assert score.upper_bound == values.to_bytes(DOUBLE, 1.5)
    assert region.contains_null is True and region.contains_nan is False
    assert (region.lower_bound, region.upper_bound) == (b"a", b"c")
    assert bucket.contains_null is True
    assert (bucket.lower_bound, bucket.upper_bound) == (struct.pack("<i", 1), struct.pack("<i", 12))


def test_partition_summary_zero_signs_and_all_null(fio: InMemoryFileIO, schema: Schema) -> None:
    spec = build_partition_spec(schema, [("score", "identity"), ("region", "identity")])
    entries = [
        added(data_file(i, p)) for i, p in enumerate([(0.0, None), (-0.0, None), (float("nan"), None)])
    ]
    mf = write_manifest(fio.new_output("m.avro"), entries, spec=spec, schema=schema, format_version=2)
    assert mf.partitions is not None
    score, region = mf.partitions
    # Spec note [2]: lower must not be +0.0 when -0.0 is present, upper not -0.0 when +0.0 is.
    assert score.lower_bound == struct.pack("<d", -0.0)
    assert score.upper_bound == struct.pack("<d", 0.0)
    assert region.contains_null and region.lower_bound is None and region.upper_bound is None


def test_unpartitioned_and_empty_manifests(
    fio: InMemoryFileIO, unpartitioned: PartitionSpec, schema: Schema
) -> None:
    mf = write_manifest(
        fio.new_output("u.avro"),
        [added(data_file(1, ()))],
        spec=unpartitioned,
        schema=schema,
        format_version=2,
    )
    assert mf.partitions == ()
    assert read_manifest(fio.new_input("u.avro"), _committed(mf, 1))[0].data_file.partition == ()
    empty = write_manifest(fio.new_output("e.avro"), [], spec=unpartitioned, schema=schema, format_version=2)
    assert (empty.added_files_count, empty.min_sequence_number) == (0, None)
    assert read_manifest(fio.new_input("e.avro"), _committed(empty, 1)) == []


def test_writer_api_add_existing_delete(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with ManifestWriter(
        fio.new_output("m.avro"), spec=spec, schema=schema, format_version=2, snapshot_id=SNAP
    ) as w:
        w.add(data_file(1))
        w.existing(added(data_file(2), 7, 2).evolve(file_sequence_number=2))
        w.delete(existing(data_file(3), 7, 1))
    mf = w.manifest_file
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (1, 1, 1)
    got = read_manifest(fio.new_input("m.avro"), _committed(mf, 9), include_deleted=True)
    assert [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (EntryStatus.ADDED, SNAP, 9, 9),
        (EntryStatus.EXISTING, 7, 2, 2),
        (EntryStatus.DELETED, SNAP, 1, 1),
    ]
    with pytest.raises(ValidationError, match="closed"):
        w.add(data_file(4))


def test_writer_writes_nothing_when_the_block_fails(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    with (
        pytest.raises(RuntimeError),
        ManifestWriter(fio.new_output("m.avro"), spec=spec, schema=schema, format_version=2) as w,
    ):
        w.add(data_file(1))
        raise RuntimeError("boom")
    assert "m.avro" not in fio


# -- version rules --------------------------------------------------------------------------------
def _write(
    fio: InMemoryFileIO,
    spec: PartitionSpec,
    schema: Schema,
    version: int,
    entry: ManifestEntry,
    content: ManifestContent = ManifestContent.DELETES,
) -> ManifestFile:
    return write_manifest(
        fio.new_output("x.avro"),
        [entry],
        spec=spec,
        schema=schema,
        format_version=version,
        content=content,
        snapshot_id=SNAP,
    )


def test_v1_has_no_delete_files(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="delete manifests"):
        _write(fio, spec, schema, 1, added(position_delete_file(1), SNAP))
    with pytest.raises(ValidationError, match="format version 1 has no delete files"):
        _write(fio, spec, schema, 1, added(equality_delete_file(1), SNAP), ManifestContent.DATA)


def test_dvs_need_v3(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="deletion vectors need format version 3"):
        _write(fio, spec, schema, 2, added(dv(1)))


def test_v3_forbids_new_v2_position_delete_files(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    with pytest.raises(ValidationError, match="deletion vector"):
        _write(fio, spec, schema, 3, added(position_delete_file(1)))


def test_dv_needs_blob_reference(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="content_offset"):
        _write(fio, spec, schema, 3, added(dv(1, content_offset=None)))
    with pytest.raises(ValidationError, match="referenced_data_file"):
        _write(fio, spec, schema, 3, added(dv(1, referenced_data_file=None)))


def test_content_must_match_manifest(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="data manifest"):
        _write(fio, spec, schema, 2, added(position_delete_file(1)), ManifestContent.DATA)
    with pytest.raises(ValidationError, match="delete manifest"):
        _write(fio, spec, schema, 2, added(data_file(1)), ManifestContent.DELETES)
    with pytest.raises(ValidationError, match="equality_ids"):
        _write(fio, spec, schema, 2, added(equality_delete_file(1, equality_ids=None)))


def test_sequence_number_rules(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    no_seq = ManifestEntry(EntryStatus.EXISTING, 1, None, None, data_file(1))
    with pytest.raises(ValidationError, match="explicit sequence numbers"):
        _write(fio, spec, schema, 2, no_seq, ManifestContent.DATA)
    with pytest.raises(ValidationError, match="explicit sequence numbers"):
        _write(fio, spec, schema, 2, no_seq.evolve(status=EntryStatus.DELETED), ManifestContent.DATA)
    with pytest.raises(ValidationError, match="cannot inherit"):
        _write(fio, spec, schema, 2, added(data_file(1), snapshot_id=SNAP - 1), ManifestContent.DATA)
    with pytest.raises(ValidationError, match="v1 manifest entries need a snapshot id"):
        write_manifest(
            fio.new_output("v1.avro"), [added(data_file(1))], spec=spec, schema=schema, format_version=1
        )


def test_bad_partition_tuples(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="8 fields"):
        _write(fio, spec, schema, 2, added(data_file(1, (1, 2))), ManifestContent.DATA)
    bad_decimal = list(partition(1))
    bad_decimal[1] = Decimal("1.234")
    with pytest.raises(ValidationError, match="fractional digits"):
        _write(fio, spec, schema, 2, added(data_file(1, tuple(bad_decimal))), ManifestContent.DATA)
    too_big = list(partition(1))
    too_big[1] = Decimal("12345678.00")  # decimal(9, 2) holds 7 integer digits
    with pytest.raises(ValidationError, match="does not fit"):
        _write(fio, spec, schema, 2, added(data_file(1, tuple(too_big))), ManifestContent.DATA)
    bad_type = list(partition(1))
    bad_type[4] = "not an int"
    with pytest.raises(ValidationError):
        _write(fio, spec, schema, 2, added(data_file(1, tuple(bad_type))), ManifestContent.DATA)


def test_writer_is_unusable_after_a_failed_entry(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    w = ManifestWriter(fio.new_output("m.avro"), spec=spec, schema=schema, format_version=2)
    w.add(data_file(1))
    bad = list(partition(2))
    bad[5] = 12345  # an int where the region string goes: fails mid-record in the encoder
    with pytest.raises(ValidationError):
        w.add(data_file(2, tuple(bad)))
    with pytest.raises(ValidationError, match="unusable"):
        w.add(data_file(3))
    with pytest.raises(ValidationError, match="not written"):
        w.close()
    assert "m.avro" not in fio


def test_unsupported_versions(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> None:
    with pytest.raises(ValidationError, match="1-3"):
        ManifestWriter(fio.new_output("m.avro"), spec=spec, schema=schema, format_version=4)
    with pytest.raises(ValidationError, match="delete manifests need format version 2"):
        ManifestWriter(
            fio.new_output("m.avro"),
            spec=spec,
            schema=schema,
            format_version=1,
            content=ManifestContent.DELETES,
        )


# -- corrupt input --------------------------------------------------------------------------------
@pytest.fixture
def written(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> tuple[bytes, ManifestFile]:
    entries = [added(data_file(i)) for i in range(400)]  # several Avro blocks
    mf = write_manifest(
        fio.new_output("s3://b/m.avro"), entries, spec=spec, schema=schema, format_version=2, snapshot_id=SNAP
    )
    return fio.new_input("s3://b/m.avro").read(), _committed(mf, 1)


@pytest.mark.parametrize("cut", [0, 3, 20, 200, 5000, -40, -17, -1])
def test_truncated_manifest_raises_invalid_metadata(
    fio: InMemoryFileIO, written: tuple[bytes, ManifestFile], cut: int
) -> None:
    data, mf = written
    fio.new_output("s3://b/cut.avro").write(data[:cut])
    with pytest.raises(InvalidMetadata) as info:
        read_manifest(fio.new_input("s3://b/cut.avro"), mf.evolve(manifest_path="s3://b/cut.avro"))
    assert info.value.location == "s3://b/cut.avro"
    assert "s3://b/cut.avro" in str(info.value)


def test_corrupt_bytes_raise_invalid_metadata(written: tuple[bytes, ManifestFile]) -> None:
    data, mf = written
    garbled = bytearray(data)
    for i in range(len(garbled) // 2, len(garbled) // 2 + 64):
        garbled[i] ^= 0x5A
    with pytest.raises(InvalidMetadata, match=r"s3://b/m\.avro"):
        read_manifest(bytes(garbled), mf)
    with pytest.raises(InvalidMetadata, match=r"s3://b/m\.avro"):
        read_manifest(b"not avro at all", mf)


def test_entry_count_mismatch_detects_block_boundary_truncation(written: tuple[bytes, ManifestFile]) -> None:
    data, mf = written
    with pytest.raises(InvalidMetadata, match="truncated"):
        read_manifest(data, mf.evolve(added_files_count=401))


def test_wrong_schema_raises_invalid_metadata(fio: InMemoryFileIO) -> None:
    buf = io.BytesIO()
    fastavro.writer(
        buf, {"type": "record", "name": "x", "fields": [{"name": "a", "type": "int"}]}, [{"a": 1}]
    )
    mf = ManifestFile("s3://b/x.avro", 10, 0, sequence_number=1)
    with pytest.raises(InvalidMetadata, match=r"s3://b/x\.avro.*status"):
        read_manifest(buf.getvalue(), mf)


def test_avro_schema_with_zero_byte_array_items_is_refused() -> None:
    """A damaged header can leave an array whose items encode in zero bytes; a count read from
    the data would then make the decoder build records until memory runs out. Such files are
    refused before any record is decoded."""
    from firn.manifests._avro_io import open_avro

    schema = {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "status", "type": "int"},
            {
                "name": "items",
                "type": {"type": "array", "items": {"type": "record", "name": "e", "fields": []}},
            },
        ],
    }
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"status": 1, "items": [{}, {}, {}]}])
    with pytest.raises(InvalidMetadata, match="zero-byte items") as info:
        open_avro(buf.getvalue(), "s3://b/m.avro")
    assert "s3://b/m.avro" in str(info.value)


def test_manifest_with_a_retyped_field_is_invalid_metadata(fio: InMemoryFileIO) -> None:
    """A well-formed Avro file whose schema gives file_path another type (what a damaged header
    can leave) is refused when read, instead of handing a number to code that wants a path."""
    import copy

    from firn.manifests.avro_schemas import manifest_entry_schema
    from firn.manifests.cache import clear_caches
    from firn.spec.content import ManifestFile
    from firn.spec.types import StructType

    schema = copy.deepcopy(manifest_entry_schema(StructType(), 2))
    data_file_type = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
    path_field = next(f for f in data_file_type["fields"] if f["name"] == "file_path")
    path_field["type"] = "long"
    record = {
        "status": 1,
        "snapshot_id": 1,
        "sequence_number": None,
        "file_sequence_number": None,
        "data_file": {
            "content": 0,
            "file_path": 42,
            "file_format": "PARQUET",
            "partition": {},
            "record_count": 1,
            "file_size_in_bytes": 10,
        },
    }
    buf = io.BytesIO()
    fastavro.writer(
        buf, fastavro.parse_schema(schema), [record], metadata={"format-version": "2", "content": "data"}
    )
    fio.new_output("s3://b/retyped.avro").write(buf.getvalue())
    mf = ManifestFile("s3://b/retyped.avro", len(buf.getvalue()), 0, added_snapshot_id=1)
    clear_caches()
    with pytest.raises(InvalidMetadata, match="file_path") as info:
        read_manifest(fio.new_input("s3://b/retyped.avro"), mf)
    assert "retyped.avro" in str(info.value)
