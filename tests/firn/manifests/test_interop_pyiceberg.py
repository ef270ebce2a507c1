"""Interop with PyIceberg 0.12: it reads what Firn writes, and Firn reads what it writes.

PyIceberg is used here only as an independent reader/writer of the same format.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyiceberg.manifest as pyiceberg_manifest
import pytest
from pyiceberg.avro.file import AvroFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DATA_FILE_TYPE, MANIFEST_ENTRY_SCHEMAS, DataFileContent, ManifestEntryStatus
from pyiceberg.manifest import DataFile as PyDataFile
from pyiceberg.manifest import FileFormat as PyFileFormat
from pyiceberg.manifest import ManifestEntry as PyManifestEntry
from pyiceberg.typedef import Record

from firn.io.pyarrow_io import PyArrowFileIO as FirnFileIO
from firn.manifests import read_manifest, read_manifest_list, write_manifest, write_manifest_list
from firn.spec.content import (
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema

from .factories import added, data_file, deleted, dv, equality_delete_file, existing, position_delete_file

pytestmark = pytest.mark.interop

SNAP = 31337


def _py_partition(record: Any) -> tuple[Any, ...]:
    return tuple(record[i] for i in range(len(record)))


def _assert_same_entry(py: Any, firn: ManifestEntry) -> None:
    """A PyIceberg entry equals Firn's: status, inheritance, path, partition and metrics."""
    df = py.data_file
    f = firn.data_file
    assert int(py.status) == int(firn.status)
    assert (py.snapshot_id, py.sequence_number, py.file_sequence_number) == (
        firn.snapshot_id,
        firn.sequence_number,
        firn.file_sequence_number,
    )
    assert df.file_path == f.file_path
    assert str(df.file_format.value).lower() == f.file_format.value
    assert int(df.content) == int(f.content)
    assert _py_partition(df.partition) == f.partition
    assert (df.record_count, df.file_size_in_bytes) == (f.record_count, f.file_size_in_bytes)
    for name in (
        "column_sizes",
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
    ):
        # PyIceberg reads a null map as {}; compare "no entries" alike.
        assert (getattr(df, name) or None) == (getattr(f, name) or None), name
    assert (tuple(df.split_offsets) if df.split_offsets is not None else None) == f.split_offsets
    assert (tuple(df.equality_ids) if df.equality_ids is not None else None) == f.equality_ids
    assert df.sort_order_id == f.sort_order_id
    assert df.spec_id == f.spec_id


def _assert_same_manifest_file(py: Any, firn: ManifestFile) -> None:
    assert py.manifest_path == firn.manifest_path
    assert py.manifest_length == firn.manifest_length
    assert py.partition_spec_id == firn.partition_spec_id
    assert int(py.content) == int(firn.content)
    assert (py.sequence_number, py.min_sequence_number) == (firn.sequence_number, firn.min_sequence_number)
    assert py.added_snapshot_id == firn.added_snapshot_id
    assert (py.added_files_count, py.existing_files_count, py.deleted_files_count) == (
        firn.added_files_count,
        firn.existing_files_count,
        firn.deleted_files_count,
    )
    assert (py.added_rows_count, py.existing_rows_count, py.deleted_rows_count) == (
        firn.added_rows_count,
        firn.existing_rows_count,
        firn.deleted_rows_count,
    )
    assert firn.partitions is not None and py.partitions is not None
    assert [(p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in py.partitions] == [
        (p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in firn.partitions
    ]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_reads_firn_data_manifests_and_lists(
    tmp_path: Path, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    fio = FirnFileIO()
    new_snapshot = SNAP if version == 1 else None  # v2+: let the entries inherit
    entries = [added(data_file(i), new_snapshot) for i in range(6)]
    entries += [existing(data_file(10), 17, 2), deleted(data_file(11), SNAP, 1)]
    mf = write_manifest(
        fio.new_output(str(tmp_path / "data.avro")),
        entries,
        spec=spec,
        schema=schema,
        format_version=version,
        snapshot_id=SNAP,
    )
    result = write_manifest_list(
        fio.new_output(str(tmp_path / "snap.avro")),
        [mf],
        format_version=version,
        snapshot_id=SNAP,
        parent_snapshot_id=SNAP - 1,
        sequence_number=9,
        first_row_id=100,
    )
    py_io = PyArrowFileIO()
    (py_mf,) = list(pyiceberg_manifest.read_manifest_list(py_io.new_input(str(tmp_path / "snap.avro"))))
    (firn_mf,) = result.manifests
    _assert_same_manifest_file(py_mf, firn_mf)

    py_entries = py_mf.fetch_manifest_entry(py_io, discard_deleted=False)
    firn_entries = read_manifest(fio.new_input(firn_mf.manifest_path), firn_mf, include_deleted=True)
    assert len(py_entries) == len(firn_entries) == 8
    for py, firn in zip(py_entries, firn_entries):
        _assert_same_entry(py, firn)
    if version > 1:
        assert [e.sequence_number for e in py_entries[:6]] == [9] * 6  # inherited by PyIceberg too
        assert py_entries[0].snapshot_id == SNAP


@pytest.mark.parametrize("version", [2, 3])
def test_pyiceberg_reads_firn_delete_manifests(
    tmp_path: Path, spec: PartitionSpec, schema: Schema, version: int
) -> None:
    fio = FirnFileIO()
    deletes = [equality_delete_file(1), equality_delete_file(2, equality_ids=(1,))]
    deletes += [dv(3), dv(4)] if version == 3 else [position_delete_file(3)]
    mf = write_manifest(
        fio.new_output(str(tmp_path / "deletes.avro")),
        [added(d) for d in deletes],
        spec=spec,
        schema=schema,
        format_version=version,
        content=ManifestContent.DELETES,
        snapshot_id=SNAP,
    )
    result = write_manifest_list(
        fio.new_output(str(tmp_path / "snap.avro")),
        [mf],
        format_version=version,
        snapshot_id=SNAP,
        parent_snapshot_id=None,
        sequence_number=4,
        first_row_id=0,
    )
    py_io = PyArrowFileIO()
    (py_mf,) = list(pyiceberg_manifest.read_manifest_list(py_io.new_input(str(tmp_path / "snap.avro"))))
    _assert_same_manifest_file(py_mf, result.manifests[0])
    py_entries = py_mf.fetch_manifest_entry(py_io)
    firn_entries = read_manifest(fio.new_input(mf.manifest_path), result.manifests[0])
    for py, firn in zip(py_entries, firn_entries, strict=True):
        _assert_same_entry(py, firn)
    assert [int(e.data_file.content) for e in py_entries] == [2, 2, 1, 1][: len(py_entries)]

    # The v3-only DV fields, read with PyIceberg's v3 projection and matched by field id.
    positions = {f.field_id: i for i, f in enumerate(DATA_FILE_TYPE[3].fields)}
    with AvroFile[PyManifestEntry](
        py_io.new_input(mf.manifest_path),
        MANIFEST_ENTRY_SCHEMAS[3],
        read_types={-1: PyManifestEntry, 2: PyDataFile},
        read_enums={0: ManifestEntryStatus, 101: PyFileFormat, 134: DataFileContent},
    ) as reader:
        raw = list(reader)
    for py, expected in zip(raw, deletes, strict=True):
        df = py.data_file
        assert df[positions[143]] == expected.referenced_data_file
        if version == 3:
            assert (df[positions[144]], df[positions[145]]) == (
                expected.content_offset,
                expected.content_size_in_bytes,
            )


def _py_schema_and_spec() -> tuple[Any, Any]:
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
    from pyiceberg.types import (
        DecimalType,
        DoubleType,
        LongType,
        NestedField,
        StringType,
        TimestamptzType,
        UUIDType,
    )

    schema = PySchema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "amount", DecimalType(9, 2)),
        NestedField(4, "uid", UUIDType()),
        NestedField(5, "score", DoubleType()),
        NestedField(6, "region", StringType()),
        schema_id=1,
    )
    spec = PySpec(
        PartitionField(2, 1000, DayTransform(), "ts_day"),
        PartitionField(3, 1001, IdentityTransform(), "amount"),
        PartitionField(4, 1002, IdentityTransform(), "uid"),
        PartitionField(5, 1003, IdentityTransform(), "score"),
        PartitionField(1, 1004, BucketTransform(4), "id_bucket"),
        PartitionField(6, 1005, IdentityTransform(), "region"),
        spec_id=1,
    )
    return schema, spec


def _py_data_file(i: int, content: DataFileContent = DataFileContent.DATA) -> Any:
    return PyDataFile.from_args(
        content=content,
        file_path=f"s3://bucket/py/{content.name.lower()}-{i}.parquet",
        file_format=PyFileFormat.PARQUET,
        partition=Record(
            19_000 + i, Decimal(f"{i}.25"), uuid.UUID(int=i + 1), i * 0.5, i % 4, None if i == 2 else f"r{i}"
        ),
        record_count=10 + i,
        file_size_in_bytes=1000 + i,
        column_sizes={1: 5 + i, 2: 7},
        value_counts={1: 10 + i, 2: 10 + i},
        null_value_counts={1: 0, 2: i},
        nan_value_counts={},
        lower_bounds={1: b"\x01\x00\x00\x00\x00\x00\x00\x00"},
        upper_bounds={1: b"\x09\x00\x00\x00\x00\x00\x00\x00"},
        split_offsets=[4],
        equality_ids=[1] if content == DataFileContent.EQUALITY_DELETES else None,
        sort_order_id=0,
    )


@pytest.mark.parametrize("version", [1, 2])
def test_firn_reads_pyiceberg_manifests_and_lists(tmp_path: Path, version: int) -> None:
    """PyIceberg writes v1 files with block_size_in_bytes and required counts that differ from v2."""
    schema, spec = _py_schema_and_spec()
    py_io = PyArrowFileIO()
    manifests = []
    with pyiceberg_manifest.write_manifest(
        version,
        spec,
        schema,
        py_io.new_output(str(tmp_path / "d.avro")),
        snapshot_id=SNAP,
        avro_compression="deflate",
    ) as w:
        for i in range(4):
            w.add(
                PyManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=SNAP, data_file=_py_data_file(i)
                )
            )
    manifests.append(w.to_manifest_file())
    if version == 2:
        with pyiceberg_manifest.ManifestWriterV2(
            spec, schema, py_io.new_output(str(tmp_path / "x.avro")), SNAP, "deflate"
        ) as w2:
            w2.existing(
                PyManifestEntry.from_args(
                    status=ManifestEntryStatus.EXISTING,
                    snapshot_id=5,
                    sequence_number=2,
                    file_sequence_number=3,
                    data_file=_py_data_file(7),
                )
            )
        manifests.append(w2.to_manifest_file())
    with pyiceberg_manifest.write_manifest_list(
        version, py_io.new_output(str(tmp_path / "l.avro")), SNAP, None, 6, "deflate"
    ) as lw:
        lw.add_manifests(manifests)

    fio = FirnFileIO()
    firn_list = read_manifest_list(fio.new_input(str(tmp_path / "l.avro")))
    py_list = list(pyiceberg_manifest.read_manifest_list(py_io.new_input(str(tmp_path / "l.avro"))))
    assert len(firn_list) == len(py_list) == len(manifests)
    for py_mf, firn_mf in zip(py_list, firn_list):
        _assert_same_manifest_file(py_mf, firn_mf)
        firn_entries = read_manifest(fio.new_input(firn_mf.manifest_path), firn_mf)
        py_entries = py_mf.fetch_manifest_entry(py_io)
        assert len(firn_entries) == len(py_entries) > 0
        for py, firn in zip(py_entries, firn_entries):
            _assert_same_entry(py, firn)

    first = read_manifest(fio.new_input(firn_list[0].manifest_path), firn_list[0])
    assert first[2].data_file.partition == (19_002, Decimal("2.25"), uuid.UUID(int=3), 1.0, 2, None)
    assert all(e.status is EntryStatus.ADDED and e.snapshot_id == SNAP for e in first)
    assert all(
        e.data_file.file_format is FileFormat.PARQUET and e.data_file.content is FileContent.DATA
        for e in first
    )
    expected_seq = 0 if version == 1 else 6
    assert {e.sequence_number for e in first} == {expected_seq}
    if version == 2:
        (carried,) = read_manifest(fio.new_input(firn_list[1].manifest_path), firn_list[1])
        assert (
            carried.status,
            carried.snapshot_id,
            carried.sequence_number,
            carried.file_sequence_number,
        ) == (
            EntryStatus.EXISTING,
            5,
            2,
            3,
        )
