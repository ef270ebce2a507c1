"""Inheritance on read (spec "Sequence Number Inheritance", "First Row ID Inheritance") and
assignment when writing a manifest list ("First Row ID Assignment")."""

from __future__ import annotations

import pytest

from firn.errors import ValidationError
from firn.io.memory import InMemoryFileIO
from firn.manifests import assign_first_row_ids, assign_sequence_numbers, read_manifest, write_manifest
from firn.manifests.inheritance import EntryInheritance
from firn.spec.content import EntryStatus, FileContent, ManifestContent, ManifestFile
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema

from .factories import added, data_file, deleted, dv, existing

SNAP = 77


def _write(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema, version: int, entries: list
) -> ManifestFile:  # type: ignore[type-arg]
    return write_manifest(
        fio.new_output(f"m{version}.avro"),
        entries,
        spec=spec,
        schema=schema,
        format_version=version,
        snapshot_id=SNAP if version > 1 else None,
    )


def test_added_entries_inherit_sequence_numbers_and_snapshot(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = _write(fio, spec, schema, 2, [added(data_file(1)), added(data_file(2), SNAP, sequence_number=3)])
    got = read_manifest(fio.new_input(mf.manifest_path), mf.evolve(sequence_number=12, min_sequence_number=3))
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (SNAP, 12, 12),
        (SNAP, 3, 12),  # explicit data sequence number kept; file sequence number is the commit's
    ]


def test_existing_and_deleted_keep_their_own_numbers(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = _write(fio, spec, schema, 2, [existing(data_file(1), 5, 2, 3), deleted(data_file(2), SNAP, 4, 6)])
    got = read_manifest(fio.new_input(mf.manifest_path), mf.evolve(sequence_number=12), include_deleted=True)
    assert [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (EntryStatus.EXISTING, 5, 2, 3),
        (EntryStatus.DELETED, SNAP, 4, 6),
    ]


def test_uncommitted_manifest_reads_with_null_sequence_numbers(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = _write(fio, spec, schema, 2, [added(data_file(1))])
    (entry,) = read_manifest(fio.new_input(mf.manifest_path), mf)
    assert (entry.snapshot_id, entry.sequence_number, entry.file_sequence_number) == (SNAP, None, None)


def test_v1_manifests_read_sequence_numbers_zero(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = _write(fio, spec, schema, 1, [added(data_file(1), 3), existing(data_file(2), 2, 0)])
    # A v1 manifest-list entry reads with sequence number 0 (Appendix E).
    got = read_manifest(fio.new_input(mf.manifest_path), mf.evolve(sequence_number=0, min_sequence_number=0))
    assert [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (EntryStatus.ADDED, 3, 0, 0),
        (EntryStatus.EXISTING, 2, 0, 0),
    ]


def test_first_row_id_inheritance_spec_example(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    """Spec "Row lineage example": manifest added1 with first_row_id 1000 holds data1 (EXISTING,
    first_row_id 800, 25 rows), data2 and data3 (ADDED, 50 rows each) -> 800, 1000, 1050."""
    data1 = data_file(1, record_count=25, first_row_id=800)
    data2 = data_file(2, record_count=50)
    data3 = data_file(3, record_count=50)
    mf = _write(fio, spec, schema, 3, [existing(data1, 1, 1), added(data2), added(data3)])
    got = read_manifest(fio.new_input(mf.manifest_path), mf.evolve(sequence_number=5, first_row_id=1000))
    assert [e.data_file.first_row_id for e in got] == [800, 1000, 1050]


def test_first_row_id_skips_deleted_entries_and_delete_files() -> None:
    inherit = EntryInheritance(snapshot_id=1, sequence_number=2, next_row_id=100)
    assert inherit.first_row_id(EntryStatus.DELETED, FileContent.DATA, None, 10) is None
    assert inherit.first_row_id(EntryStatus.ADDED, FileContent.POSITION_DELETES, None, 10) is None
    assert inherit.first_row_id(EntryStatus.EXISTING, FileContent.DATA, None, 10) == 100  # upgraded table
    assert inherit.first_row_id(EntryStatus.ADDED, FileContent.DATA, 5, 10) == 5
    assert inherit.first_row_id(EntryStatus.ADDED, FileContent.DATA, None, 7) == 110
    assert inherit.next_row_id == 117


def test_no_first_row_id_without_manifest_first_row_id(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = _write(fio, spec, schema, 3, [added(data_file(1))])
    (entry,) = read_manifest(fio.new_input(mf.manifest_path), mf.evolve(sequence_number=1))
    assert entry.data_file.first_row_id is None


def test_v3_existing_entries_materialize_first_row_id(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    first = _write(
        fio, spec, schema, 3, [added(data_file(1, record_count=10)), added(data_file(2, record_count=5))]
    )
    read = read_manifest(fio.new_input(first.manifest_path), first.evolve(sequence_number=1, first_row_id=40))
    # Rewriting them as EXISTING (e.g. manifest compaction) writes the inherited ids into the file.
    second = write_manifest(
        fio.new_output("m-rewrite.avro"),
        [e.evolve(status=EntryStatus.EXISTING) for e in read],
        spec=spec,
        schema=schema,
        format_version=3,
        snapshot_id=SNAP + 1,
    )
    got = read_manifest(
        fio.new_input(second.manifest_path), second.evolve(sequence_number=2, first_row_id=9999)
    )
    assert [e.data_file.first_row_id for e in got] == [40, 50]


# -- manifest-list assignment -------------------------------------------------------------------------
def _mf(
    path: str,
    *,
    added: int,
    existing: int,
    first_row_id: int | None = None,
    content: ManifestContent = ManifestContent.DATA,
) -> ManifestFile:
    return ManifestFile(
        path,
        100,
        0,
        content=content,
        added_snapshot_id=SNAP,
        added_files_count=1,
        existing_files_count=1,
        deleted_files_count=0,
        added_rows_count=added,
        existing_rows_count=existing,
        deleted_rows_count=0,
        first_row_id=first_row_id,
    )


def test_first_row_id_assignment_spec_example() -> None:
    manifests = [
        _mf("existing", added=75, existing=0, first_row_id=925),
        _mf("added1", added=100, existing=25),
        _mf("deletes", added=10, existing=0, content=ManifestContent.DELETES),
        _mf("added2", added=0, existing=100),
        _mf("added3", added=125, existing=25),
    ]
    out, next_row_id = assign_first_row_ids(manifests, 1000)
    assert [m.first_row_id for m in out] == [925, 1000, None, 1125, 1225]
    assert next_row_id == 1375


def test_first_row_id_assignment_rejects_delete_manifest_with_id() -> None:
    with pytest.raises(ValidationError, match="delete manifest"):
        assign_first_row_ids(
            [_mf("d", added=1, existing=0, first_row_id=3, content=ManifestContent.DELETES)], 0
        )


def test_sequence_number_assignment() -> None:
    new = ManifestFile("new", 1, 0, added_snapshot_id=None)
    mine = ManifestFile("mine", 1, 0, added_snapshot_id=SNAP, min_sequence_number=4)
    old = ManifestFile("old", 1, 0, sequence_number=3, min_sequence_number=2, added_snapshot_id=5)
    out = assign_sequence_numbers([new, mine, old], snapshot_id=SNAP, sequence_number=9)
    assert [(m.sequence_number, m.min_sequence_number, m.added_snapshot_id) for m in out] == [
        (9, 9, SNAP),
        (9, 4, SNAP),
        (3, 2, 5),
    ]
    assert out[2] is old


def test_sequence_number_assignment_rejects_foreign_unassigned_manifest() -> None:
    foreign = ManifestFile("foreign", 1, 0, added_snapshot_id=SNAP - 1)
    with pytest.raises(ValidationError, match="not by the snapshot being committed"):
        assign_sequence_numbers([foreign], snapshot_id=SNAP, sequence_number=9)


def test_dv_entries_in_v3_never_inherit_first_row_id(
    fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema
) -> None:
    mf = write_manifest(
        fio.new_output("dv.avro"),
        [added(dv(1))],
        spec=spec,
        schema=schema,
        format_version=3,
        content=ManifestContent.DELETES,
        snapshot_id=SNAP,
    )
    (entry,) = read_manifest(fio.new_input("dv.avro"), mf.evolve(sequence_number=2, first_row_id=0))
    assert entry.data_file.first_row_id is None and entry.sequence_number == 2
