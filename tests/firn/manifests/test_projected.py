"""Projected manifest reads return exactly what a full decode does for the fields they keep."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.legacy.reader import snapshot_manifests
from firn.errors import InvalidMetadata
from firn.io.pyarrow_io import PyArrowFileIO
from firn.manifests import avro_schemas as ids
from firn.manifests.manifest import read_manifest
from firn.manifests.projected import read_entry_columns
from tests.fixtures.row_deletes import make_table, rows

FIELDS = (ids.CONTENT_ID, ids.FILE_PATH_ID, ids.FILE_FORMAT_ID, ids.RECORD_COUNT_ID, ids.FILE_SIZE_ID)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_projection_matches_the_full_decode(sqlite_catalog: SqlCatalog, version: int) -> None:
    t = make_table(
        sqlite_catalog, version, partitioned=True, properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(rows(range(5), region="eu"))
    t.append(rows(range(5, 9), region="us"))
    t.append(rows([20]))
    if version > 1:
        t.delete("id = 1")  # a position delete file or a DV
    t.delete("region = 'us'")  # a whole file: a DELETED entry in this snapshot's manifest
    checked = 0
    statuses: set[int] = set()
    for m in snapshot_manifests(t.io, t.current_snapshot()):
        cols = read_entry_columns(t.io.new_input(m.manifest_path), FIELDS)
        full = read_manifest(t.io.new_input(m.manifest_path), m, include_deleted=True)
        assert cols.status == [int(e.status) for e in full]
        if version == 1:
            assert cols.fields[ids.CONTENT_ID] is None  # v1 manifests have no content field
        else:
            assert cols.fields[ids.CONTENT_ID] == [int(e.data_file.content) for e in full]
        assert cols.fields[ids.FILE_PATH_ID] == [e.data_file.file_path for e in full]
        assert [f.lower() for f in cols.fields[ids.FILE_FORMAT_ID] or []] == [
            e.data_file.file_format.value for e in full
        ]
        assert cols.fields[ids.RECORD_COUNT_ID] == [e.data_file.record_count for e in full]
        assert cols.fields[ids.FILE_SIZE_ID] == [e.data_file.file_size_in_bytes for e in full]
        checked += len(full)
        statuses.update(cols.status)
    assert checked >= 3
    assert 2 in statuses  # a DELETED entry is decoded too (the delete in this snapshot)


def test_bad_input_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-manifest.avro"
    bad.write_bytes(b"Obj\x01garbage")
    with pytest.raises(InvalidMetadata, match=r"not-a-manifest\.avro"):
        read_entry_columns(PyArrowFileIO().new_input(str(bad)), FIELDS)
    with pytest.raises(ValueError, match="cannot project"):
        read_entry_columns(b"", (ids.LOWER_BOUNDS_ID,))


@pytest.mark.interop
def test_reads_pyiceberg_manifests(tmp_path: Path) -> None:
    sql = pytest.importorskip("pyiceberg.catalog.sql")
    py = sql.SqlCatalog("py", uri=f"sqlite:///{tmp_path / 'py.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    py.create_namespace("db")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    table = py.create_table("db.t", schema=data.schema)
    table.append(data)
    table.append(data.slice(0, 1))
    io = PyArrowFileIO()
    sizes = []
    for m in table.current_snapshot().manifests(table.io):
        cols = read_entry_columns(io.new_input(m.manifest_path), FIELDS)
        assert cols.status == [1]  # ADDED
        sizes += cols.fields[ids.FILE_SIZE_ID] or []
    expected = sorted(f.file.file_size_in_bytes for f in table.scan().plan_files())
    assert sorted(sizes) == expected and len(expected) == 2
