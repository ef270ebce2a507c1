"""Manifest-list writer and reader: round trips, assignment, metadata, version rules, corruption."""

from __future__ import annotations

import io

import fastavro
import pytest

from firn.errors import InvalidMetadata, ValidationError
from firn.io.memory import InMemoryFileIO
from firn.manifests import read_manifest, read_manifest_list, write_manifest, write_manifest_list
from firn.spec.content import ManifestContent, ManifestFile, PartitionFieldSummary
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema

from .factories import added, data_file, dv, equality_delete_file, existing

SNAP = 1001
PARENT = 1000


def _metadata(fio: InMemoryFileIO, location: str) -> dict[str, str]:
    reader = fastavro.reader(io.BytesIO(fio.new_input(location).read()))
    return {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}


def _manifests(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int) -> list[ManifestFile]:
    # v1 entries always carry their snapshot id; v2+ ADDED entries may leave it to inheritance.
    added_snapshot = SNAP if version == 1 else None
    data = write_manifest(
        fio.new_output("s3://t/metadata/data.avro"),
        [added(data_file(i), added_snapshot) for i in range(3)]
        + [existing(data_file(9, record_count=40), 900, 2)],
        spec=spec,
        schema=schema,
        format_version=version,
        snapshot_id=SNAP,
    )
    out = [data]
    if version >= 2:
        deletes = write_manifest(
            fio.new_output("s3://t/metadata/deletes.avro"),
            [added(dv(1) if version == 3 else equality_delete_file(1))],
            spec=spec,
            schema=schema,
            format_version=version,
            content=ManifestContent.DELETES,
            snapshot_id=SNAP,
        )
        out.append(deletes)
    # A manifest committed by an earlier snapshot keeps everything it had.
    out.append(
        ManifestFile(
            "s3://t/metadata/old.avro",
            4000,
            2,
            ManifestContent.DATA,
            3,
            1,
            900,
            1,
            0,
            0,
            10,
            0,
            0,
            (PartitionFieldSummary(False, False, b"\x01\x00\x00\x00", b"\x02\x00\x00\x00"),),
            None,
            500 if version == 3 else None,
        )
    )
    return out


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_list_round_trip(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    manifests = _manifests(fio, spec, schema, version)
    result = write_manifest_list(
        fio.new_output("s3://t/metadata/snap-1001.avro"),
        manifests,
        format_version=version,
        snapshot_id=SNAP,
        parent_snapshot_id=PARENT,
        sequence_number=7 if version > 1 else None,
        first_row_id=2000 if version == 3 else None,
    )
    assert result.location == "s3://t/metadata/snap-1001.avro"
    assert result.length == len(fio.new_input(result.location).read())
    read = read_manifest_list(fio.new_input(result.location), use_cache=False)
    assert read == list(result.manifests)
    assert [m.manifest_path for m in read] == [m.manifest_path for m in manifests]
    new = read[0]
    assert new.partitions == manifests[0].partitions
    assert (new.added_files_count, new.existing_files_count, new.deleted_files_count) == (3, 1, 0)
    assert new.added_rows_count == sum(data_file(i).record_count for i in range(3))
    assert new.added_snapshot_id == SNAP
    if version == 1:
        assert all(m.sequence_number == 0 and m.min_sequence_number == 0 for m in read)
        assert all(m.content is ManifestContent.DATA and m.first_row_id is None for m in read)
        assert result.next_row_id is None
    else:
        assert (new.sequence_number, new.min_sequence_number) == (7, 2)  # existing entry has seq 2
        assert read[1].content is ManifestContent.DELETES
        assert (read[1].sequence_number, read[1].min_sequence_number) == (7, 7)
        assert (read[-1].sequence_number, read[-1].min_sequence_number) == (3, 1)
    if version == 3:
        assert new.first_row_id == 2000
        assert read[1].first_row_id is None  # delete manifest
        assert read[-1].first_row_id == 500  # kept
        assert result.next_row_id == 2000 + new.added_rows_count + new.existing_rows_count  # type: ignore[operator]
        assert result.added_rows == result.next_row_id - 2000  # type: ignore[operator]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_list_metadata(fio: InMemoryFileIO, version: int) -> None:
    write_manifest_list(
        fio.new_output("l.avro"),
        [],
        format_version=version,
        snapshot_id=SNAP,
        parent_snapshot_id=None,
        sequence_number=4,
        first_row_id=12,
    )
    meta = _metadata(fio, "l.avro")
    expected = {"snapshot-id": "1001", "parent-snapshot-id": "null", "format-version": str(version)}
    if version >= 2:
        expected["sequence-number"] = "4"
    if version == 3:
        expected["first-row-id"] = "12"
    assert meta == expected
    write_manifest_list(
        fio.new_output("l2.avro"),
        [],
        format_version=version,
        snapshot_id=SNAP,
        parent_snapshot_id=PARENT,
        sequence_number=4,
        first_row_id=12,
    )
    assert _metadata(fio, "l2.avro")["parent-snapshot-id"] == "1000"
    assert read_manifest_list(fio.new_input("l2.avro")) == []


def test_entries_read_through_the_list_inherit(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    manifests = _manifests(fio, spec, schema, 3)
    result = write_manifest_list(
        fio.new_output("l.avro"),
        manifests[:1],
        format_version=3,
        snapshot_id=SNAP,
        parent_snapshot_id=None,
        sequence_number=7,
        first_row_id=2000,
    )
    (m,) = read_manifest_list(fio.new_input("l.avro"))
    assert result.manifests == (m,)
    entries = read_manifest(fio.new_input(m.manifest_path), m, partition_type=spec.partition_type(schema))
    assert [e.sequence_number for e in entries] == [7, 7, 7, 2]
    assert [e.snapshot_id for e in entries] == [SNAP, SNAP, SNAP, 900]
    counts = [data_file(i).record_count for i in range(4)]
    assert [e.data_file.first_row_id for e in entries] == [
        2000,
        2000 + counts[0],
        2000 + counts[0] + counts[1],
        2000 + sum(counts[:3]),
    ]


def test_version_rules(fio: InMemoryFileIO) -> None:
    deletes = ManifestFile("d.avro", 1, 0, ManifestContent.DELETES, added_snapshot_id=SNAP)
    with pytest.raises(ValidationError, match="v1 tables have no delete manifests"):
        write_manifest_list(
            fio.new_output("l.avro"),
            [deletes],
            format_version=1,
            snapshot_id=SNAP,
            parent_snapshot_id=None,
            sequence_number=None,
        )
    with pytest.raises(ValidationError, match="sequence number"):
        write_manifest_list(
            fio.new_output("l.avro"),
            [],
            format_version=2,
            snapshot_id=SNAP,
            parent_snapshot_id=None,
            sequence_number=None,
        )
    with pytest.raises(ValidationError, match="first-row-id"):
        write_manifest_list(
            fio.new_output("l.avro"),
            [],
            format_version=3,
            snapshot_id=SNAP,
            parent_snapshot_id=None,
            sequence_number=1,
        )
    with pytest.raises(ValidationError, match="1-3"):
        write_manifest_list(
            fio.new_output("l.avro"),
            [],
            format_version=4,
            snapshot_id=SNAP,
            parent_snapshot_id=None,
            sequence_number=1,
        )
    v1_style = ManifestFile("m.avro", 1, 0, sequence_number=0, min_sequence_number=0, added_snapshot_id=3)
    with pytest.raises(ValidationError, match="added_files_count"):
        write_manifest_list(
            fio.new_output("l.avro"),
            [v1_style],
            format_version=2,
            snapshot_id=SNAP,
            parent_snapshot_id=None,
            sequence_number=1,
        )
    assert "l.avro" not in fio


def test_v1_list_allows_missing_counts(fio: InMemoryFileIO) -> None:
    m = ManifestFile("m.avro", 10, 0, added_snapshot_id=3)
    write_manifest_list(
        fio.new_output("l.avro"),
        [m],
        format_version=1,
        snapshot_id=SNAP,
        parent_snapshot_id=None,
        sequence_number=None,
    )
    (read,) = read_manifest_list(fio.new_input("l.avro"), use_cache=False)
    assert read == ManifestFile("m.avro", 10, 0, ManifestContent.DATA, 0, 0, 3)
    assert read.has_added_files() and read.has_existing_files()  # null counts mean "assume some"


@pytest.mark.parametrize("cut", [0, 10, 100, -30, -1])
def test_truncated_list_raises_invalid_metadata(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, cut: int
) -> None:
    manifests = _manifests(fio, spec, schema, 2)
    write_manifest_list(
        fio.new_output("s3://t/l.avro"),
        manifests,
        format_version=2,
        snapshot_id=SNAP,
        parent_snapshot_id=None,
        sequence_number=1,
    )
    data = fio.new_input("s3://t/l.avro").read()
    fio.new_output("s3://t/cut.avro").write(data[:cut])
    with pytest.raises(InvalidMetadata) as info:
        read_manifest_list(fio.new_input("s3://t/cut.avro"))
    assert info.value.location == "s3://t/cut.avro"
    with pytest.raises(InvalidMetadata, match="given-name"):
        read_manifest_list(data[:cut], location="given-name")
