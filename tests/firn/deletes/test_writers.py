"""Delete file writers: v2 position delete files, equality delete files, v3 DVs in Puffin."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap
from firn.deletes.dv import read_dv
from firn.deletes.puffin import DELETION_VECTOR_V1, read_puffin_footer
from firn.deletes.writers import (
    referenced_data_file_of,
    write_deletion_vectors,
    write_equality_delete_files,
    write_position_delete_file,
    write_position_delete_files,
)
from firn.errors import ValidationError
from firn.io.arrow_schema import FIELD_ID_KEY
from firn.spec import values
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.field_ids import DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID
from firn.spec.types import STRING
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.row_deletes import make_table, rows


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _data_files(table: Table) -> list[DataFile]:
    return sorted((t.file for t in table.scan().plan_files()), key=lambda f: f.file_path)


def _parquet_table(table: Table, path: str) -> pa.Table:
    with table.io.new_input(path).open_arrow() as f:
        return pq.read_table(f)


# -- position delete files ------------------------------------------------------------------------
def test_position_delete_file_layout_and_metrics(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows(range(10)))
    t.append(rows(range(10, 20)))
    a, b = _data_files(t)
    # Unsorted input with a duplicate: written sorted by path then position, deduplicated.
    [f] = write_position_delete_files(t.io, t.metadata, [(b, [7, 1]), (a, np.array([9, 3, 3]))])

    assert f.content is FileContent.POSITION_DELETES
    assert f.file_format is FileFormat.PARQUET
    assert f.record_count == 4
    assert f.referenced_data_file is None  # two data files: partition-scoped
    assert f.sort_order_id is None
    assert f.file_path.endswith("-deletes.parquet")
    written = _parquet_table(t, f.file_path)
    assert written.to_pylist() == [
        {"file_path": a.file_path, "pos": 3},
        {"file_path": a.file_path, "pos": 9},
        {"file_path": b.file_path, "pos": 1},
        {"file_path": b.file_path, "pos": 7},
    ]
    ids = {fld.name: int(fld.metadata[FIELD_ID_KEY]) for fld in written.schema}
    assert ids == {"file_path": DELETE_FILE_PATH_ID, "pos": DELETE_FILE_POS_ID}
    # Full (untruncated) bounds on file_path and pos (Java MetricsConfig.forPositionDelete).
    assert values.from_bytes(STRING, f.lower_bounds[DELETE_FILE_PATH_ID]) == a.file_path
    assert values.from_bytes(STRING, f.upper_bounds[DELETE_FILE_PATH_ID]) == b.file_path
    assert referenced_data_file_of(f) is None
    # The reader applies it per data file.
    assert load_positions(t.io, a, [f]) == PositionBitmap.from_positions([3, 9])
    assert load_positions(t.io, b, [f]) == PositionBitmap.from_positions([1, 7])


def test_single_file_position_deletes_are_file_scoped(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows(range(10)))
    [a] = _data_files(t)
    [f] = write_position_delete_files(t.io, t.metadata, [(a, [2, 4])])
    assert f.referenced_data_file == a.file_path
    # Equal file_path bounds identify the file even without referenced_data_file.
    assert f.lower_bounds[DELETE_FILE_PATH_ID] == f.upper_bounds[DELETE_FILE_PATH_ID]
    assert referenced_data_file_of(f.evolve(referenced_data_file=None)) == a.file_path


def test_position_delete_files_one_per_partition(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2, partitioned=True)
    t.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 10), "us")]))
    files = _data_files(t)
    written = write_position_delete_files(t.io, t.metadata, [(f, [0]) for f in files])
    assert sorted(f.partition for f in written) == [("eu",), ("us",)]
    for f in written:
        assert "region=" in f.file_path
        assert f.spec_id == t.spec().spec_id


@pytest.mark.parametrize("version", [1, 3])
def test_position_delete_files_only_on_v2(catalog: InMemoryCatalog, version: int) -> None:
    t = make_table(catalog, version)
    t.append(rows(range(3)))
    [a] = _data_files(t)
    with pytest.raises(ValidationError, match=r"position delete files|row-level deletes"):
        write_position_delete_files(t.io, t.metadata, [(a, [0])])


def test_position_beyond_the_file_is_rejected(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows(range(3)))
    [a] = _data_files(t)
    with pytest.raises(ValidationError, match="past the end"):
        write_position_delete_files(t.io, t.metadata, [(a, [3])])
    with pytest.raises(ValidationError, match="outside"):
        write_position_delete_files(t.io, t.metadata, [(a, [-1])])


def test_low_level_position_writer_rejects_empty(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    with pytest.raises(ValidationError):
        write_position_delete_file(
            t.io, "memory://x/empty.parquet", {}, t.metadata.table_properties, spec_id=0, partition=()
        )


# -- equality delete files -------------------------------------------------------------------------
def test_equality_delete_file(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    [f] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([3, None], pa.int64())}), ["id"]
    )
    assert f.content is FileContent.EQUALITY_DELETES
    assert f.equality_ids == (1,)
    assert f.record_count == 2
    assert f.partition == ()
    written = _parquet_table(t, f.file_path)
    assert written.column("id").to_pylist() == [3, None]
    assert int(written.schema.field("id").metadata[FIELD_ID_KEY]) == 1


def test_equality_deletes_split_by_partition(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2, partitioned=True)
    deletes = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]})
    files = write_equality_delete_files(t.io, t.metadata, deletes, ["id"])
    by_partition = {f.partition: f for f in files}
    assert set(by_partition) == {("eu",), ("us",)}
    assert by_partition[("eu",)].record_count == 2
    eu = _parquet_table(t, by_partition[("eu",)].file_path)
    assert sorted(eu.column("id").to_pylist()) == [1, 3]
    # Multi-column equality ids by name or id.
    [multi] = write_equality_delete_files(t.io, t.metadata, deletes.slice(0, 1), [2, "id"])
    assert multi.equality_ids == (2, 1)


def test_equality_deletes_validation(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2, partitioned=True)
    with pytest.raises(ValidationError, match="missing"):
        # The partition source column is needed to place the rows.
        write_equality_delete_files(t.io, t.metadata, pa.table({"id": pa.array([1], pa.int64())}), ["id"])
    with pytest.raises(ValidationError, match="not a table column"):
        write_equality_delete_files(
            t.io, t.metadata, pa.table({"id": [1], "region": ["eu"], "x": [1]}), ["id"]
        )
    with pytest.raises(ValidationError, match="at least one"):
        write_equality_delete_files(t.io, t.metadata, pa.table({"id": [1], "region": ["eu"]}), [])
    v1 = make_table(catalog, 1, name="v1")
    with pytest.raises(ValidationError, match="row-level deletes"):
        write_equality_delete_files(v1.io, v1.metadata, pa.table({"id": [1]}), ["id"])


# -- deletion vectors ---------------------------------------------------------------------------------
def test_dv_entries_match_the_puffin_footer(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, partitioned=True)
    t.append(pa.concat_tables([rows(range(100), "eu"), rows(range(100, 150), "us")]))
    eu, us = sorted(_data_files(t), key=lambda f: f.partition)
    dvs = write_deletion_vectors(t.io, t.metadata, [(eu, np.arange(0, 100, 2)), (us, [49])])
    assert len({d.file_path for d in dvs}) == 1  # one Puffin file for the commit
    footer = read_puffin_footer(t.io.new_input(dvs[0].file_path))
    blobs = {b.properties["referenced-data-file"]: b for b in footer.blobs}
    for dv, data in zip(dvs, (eu, us)):
        blob = blobs[data.file_path]
        assert blob.type == DELETION_VECTOR_V1
        assert dv.content is FileContent.POSITION_DELETES
        assert dv.file_format is FileFormat.PUFFIN and dv.is_dv
        assert dv.referenced_data_file == data.file_path
        assert (dv.content_offset, dv.content_size_in_bytes) == (blob.offset, blob.length)
        assert dv.record_count == int(blob.properties["cardinality"])
        assert (dv.spec_id, dv.partition) == (data.spec_id, data.partition)
        assert dv.file_size_in_bytes == t.io.new_input(dv.file_path).length()
        assert dv.sort_order_id is None
    assert dvs[0].record_count == 50 and dvs[1].record_count == 1
    bitmap = read_dv(t.io.new_input(dvs[0].file_path), dvs[0].content_offset, dvs[0].content_size_in_bytes)
    assert bitmap == PositionBitmap.from_positions(np.arange(0, 100, 2))


def test_dvs_need_v3(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows(range(3)))
    [a] = _data_files(t)
    with pytest.raises(ValidationError, match="format version 3"):
        write_deletion_vectors(t.io, t.metadata, [(a, [0])])


def test_dv_positions_are_checked_and_merged(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(5)))
    [a] = _data_files(t)
    with pytest.raises(ValidationError, match="past the end"):
        write_deletion_vectors(t.io, t.metadata, [(a, [5])])
    # The same file twice: one DV with the union.
    [dv] = write_deletion_vectors(t.io, t.metadata, [(a, [1]), (a, PositionBitmap.from_positions([3]))])
    assert dv.record_count == 2
    assert write_deletion_vectors(t.io, t.metadata, [(a, [])]) == []
