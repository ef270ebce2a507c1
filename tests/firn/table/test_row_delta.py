"""table.row_delta(): data and delete files in one commit, with RowDelta's validation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.writer import write_data_files
from firn.deletes.apply import load_positions
from firn.deletes.writers import (
    write_deletion_vectors,
    write_equality_delete_files,
    write_position_delete_files,
)
from firn.errors import FirnError, NotFound, ValidationConflict, ValidationError
from firn.spec.content import DataFile
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.row_deletes import data_file, ids, live_deletes, make_table, rows


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _positions(table: Table, data_path: str) -> list[int]:
    task = next(t for t in table.scan().plan_files() if t.file.file_path == data_path)
    bitmap = load_positions(table.io, task.file, task.delete_files)
    return [] if bitmap is None else bitmap.to_array().tolist()


@pytest.mark.parametrize("version", [2, 3])
def test_rows_and_positional_deletes_in_one_commit(catalog: InMemoryCatalog, version: int) -> None:
    t = make_table(catalog, version)
    t.append(rows(range(10)))
    path = data_file(t, 0).file_path
    snap = t.row_delta().add_rows(rows([100, 101])).delete_rows_at(path, [0, 9]).commit().snapshot
    assert snap is not None and snap.summary.operation is Operation.OVERWRITE
    assert ids(t) == [*range(1, 9), 100, 101]
    [d] = live_deletes(t)
    assert d.is_dv is (version == 3)
    assert d.referenced_data_file == path


def test_operations_follow_java(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    appended = t.row_delta().add_rows(rows([1, 2, 3])).commit().snapshot
    assert appended is not None and appended.summary.operation is Operation.APPEND
    deleted = t.row_delta().delete_rows_at(data_file(t, 1).file_path, [1]).commit().snapshot
    assert deleted is not None and deleted.summary.operation is Operation.DELETE
    assert ids(t) == [1, 3]
    assert t.row_delta().commit().snapshot is None  # nothing to do: no snapshot


def test_delete_rows_at_merges_with_the_live_dv(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(10)))
    path = data_file(t, 0).file_path
    t.row_delta().delete_rows_at(path, [1]).commit()
    [old] = live_deletes(t)
    snap = t.row_delta().delete_rows_at(path, np.array([2, 3])).delete_rows_at(path, [3, 4]).commit().snapshot
    [new] = live_deletes(t)
    assert new.file_path != old.file_path
    assert _positions(t, path) == [1, 2, 3, 4]
    assert snap is not None and snap.summary.properties["removed-dvs"] == "1"
    assert ids(t) == [0, *range(5, 10)]


def test_added_dvs_for_one_file_are_merged(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(10)))
    f = data_file(t, 0)
    [dv1] = write_deletion_vectors(t.io, t.metadata, [(f, [1])])
    [dv2] = write_deletion_vectors(t.io, t.metadata, [(f, [2])])
    t.row_delta().add_deletes([dv1, dv2]).commit()
    [merged] = live_deletes(t)
    assert merged.file_path not in (dv1.file_path, dv2.file_path)
    assert merged.record_count == 2
    # An added DV for a file that already has one is merged with it as well.
    [dv3] = write_deletion_vectors(t.io, t.metadata, [(f, [7])])
    t.row_delta().add_deletes([dv3]).commit()
    assert _positions(t, f.file_path) == [1, 2, 7]
    assert len(live_deletes(t)) == 1


def test_a_lone_added_dv_is_committed_as_is(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(4)))
    f = data_file(t, 0)
    [dv] = write_deletion_vectors(t.io, t.metadata, [(f, [3])])
    t.row_delta().add_deletes([dv]).commit()
    assert live_deletes(t) == [dv]
    assert ids(t) == [0, 1, 2]


def test_data_files_and_their_deletes_in_one_commit(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    [f] = write_data_files(t.io, t.metadata, rows(range(6)))
    t.row_delta().add_data_files([f]).delete_rows_at(f.file_path, [5]).commit()
    assert ids(t) == [0, 1, 2, 3, 4]


def test_equality_deletes_and_data(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows([1, 2, 3]))
    [eq] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([1, 3], pa.int64())}), ["id"]
    )
    snap = t.row_delta().add_deletes([eq]).add_rows(rows([3])).commit().snapshot
    assert snap is not None and snap.summary.properties["added-equality-deletes"] == "2"
    # The new row 3 is in the same commit as the delete: not deleted (seq must be strictly lower).
    assert ids(t) == [2, 3]


def test_remove_data_files_drops_their_dvs(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(5)))
    t.append(rows(range(5, 10)))
    f = data_file(t, 0)
    t.row_delta().delete_rows_at(f.file_path, [0]).commit()
    snap = t.row_delta().remove_data_files([f]).add_rows(rows([42])).commit().snapshot
    assert snap is not None and snap.summary.properties["removed-dvs"] == "1"
    assert live_deletes(t) == []
    assert ids(t) == [*range(5, 10), 42]


def test_remove_deletes(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows([1, 2]))
    [eq] = write_equality_delete_files(t.io, t.metadata, pa.table({"id": pa.array([1], pa.int64())}), ["id"])
    t.row_delta().add_deletes([eq]).commit()
    assert ids(t) == [2]
    t.row_delta().remove_deletes([eq]).commit()
    assert ids(t) == [1, 2]


def test_invalid_requests(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(3)))
    with pytest.raises(ValidationError, match="not a live data file"):
        t.row_delta().delete_rows_at("memory://nowhere.parquet", [0]).commit()
    with pytest.raises(ValidationError, match="past the end"):
        t.row_delta().delete_rows_at(data_file(t, 0).file_path, [3]).commit()
    with pytest.raises(ValidationError, match="delete file"):
        t.row_delta().add_data_files([_a_dv(t)])
    with pytest.raises(ValidationError, match="isolation level"):
        t.row_delta().isolation_level("linearizable")
    with pytest.raises(NotFound):
        t.row_delta().validate_from_snapshot(123)
    v1 = make_table(catalog, 1, name="v1")
    v1.append(rows([1]))
    with pytest.raises(ValidationError, match="row-level deletes"):
        v1.row_delta().delete_rows_at(data_file(v1, 1).file_path, [0]).commit()
    delta = t.row_delta().add_rows(rows([9]))
    delta.commit()
    with pytest.raises(FirnError, match="already been committed"):
        delta.commit()


def _a_dv(table: Table) -> DataFile:
    [dv] = write_deletion_vectors(table.io, table.metadata, [(data_file(table, 0), [0])])
    return dv


# -- validation against concurrent commits -------------------------------------------------------------
@pytest.fixture
def racers(sqlite_catalog: SqlCatalog) -> tuple[Table, Table]:
    t = make_table(sqlite_catalog, 3)
    t.append(rows(range(10)))
    t.append(rows(range(10, 20), "us"))
    return t, sqlite_catalog.load_table("db.t")


def test_referenced_data_file_removed_concurrently(racers: tuple[Table, Table]) -> None:
    first, second = racers
    path = data_file(second, 0).file_path
    delta = second.row_delta().delete_rows_at(path, [3])
    first.overwrite(rows(range(5)), "id < 10")  # replaces the file the delta points into
    with pytest.raises(ValidationConflict, match="refer to"):
        delta.commit()
    second.refresh()
    assert ids(second) == [*range(5), *range(10, 20)]


def test_concurrent_dv_for_the_same_file(racers: tuple[Table, Table]) -> None:
    first, second = racers
    path = data_file(second, 0).file_path
    delta = second.row_delta().delete_rows_at(path, [3])
    first.row_delta().delete_rows_at(path, [4]).commit()
    with pytest.raises(ValidationConflict):
        delta.commit()
    second.refresh()
    assert ids(second) == [*range(4), *range(5, 20)]


def test_validate_from_an_older_snapshot(racers: tuple[Table, Table]) -> None:
    first, second = racers
    start = first.current_snapshot()
    assert start is not None
    first.row_delta().delete_rows_at(data_file(first, 0).file_path, [1]).commit()
    second.refresh()
    # Planned on `start`: the DV added since then for the same file is a conflict.
    with pytest.raises(ValidationConflict):
        second.row_delta().validate_from_snapshot(start.snapshot_id).delete_rows_at(
            data_file(second, 0).file_path, [2]
        ).commit()


@pytest.mark.parametrize(
    ("level", "conflict_filter", "fails"),
    [
        ("serializable", None, True),
        ("serializable", "id >= 100", True),
        ("serializable", "id < 50", False),
        ("snapshot", None, False),
    ],
)
def test_isolation_levels_against_concurrent_appends(
    racers: tuple[Table, Table], level: str, conflict_filter: str | None, fails: bool
) -> None:
    first, second = racers
    delta = second.row_delta().delete_rows_at(data_file(second, 15).file_path, [0]).isolation_level(level)
    if conflict_filter is not None:
        delta.conflict_detection_filter(conflict_filter)
    first.append(rows(range(100, 110)))
    if fails:
        with pytest.raises(ValidationConflict, match="serializable"):
            delta.commit()
    else:
        delta.commit()  # the stale swap fails, the retry re-validates and succeeds
        second.refresh()
        assert ids(second) == [*range(10), *range(11, 20), *range(100, 110)]


def test_v2_position_deletes_through_row_delta(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 2, name="v2", partitioned=True)
    t.append(pa.concat_tables([rows(range(5), "eu"), rows(range(5, 10), "us")]))
    eu, us = data_file(t, 0), data_file(t, 5)
    files = write_position_delete_files(t.io, t.metadata, [(eu, [0]), (us, [0, 1])])
    t.row_delta().add_deletes(files).delete_rows_at(eu.file_path, [4]).commit()
    assert ids(t) == [1, 2, 3, 7, 8, 9]


def test_position_delete_file_with_row_column_is_read(catalog: InMemoryCatalog) -> None:
    """Spec "Position Delete Files": writers may add the deleted ``row`` (id 2147483544);
    readers apply the file by ``file_path``/``pos`` and ignore it. Written here the way
    another engine would, with the field ids in the Parquet schema."""
    import pyarrow.parquet as pq

    from firn.spec.content import FileContent, FileFormat

    t = make_table(catalog, 2)
    t.append(rows(range(6)))
    target = data_file(t, 0)

    def fid(name: str, typ: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
        return pa.field(name, typ, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})

    row_type = pa.struct(
        [fid("id", pa.int64(), 1), fid("region", pa.string(), 2), fid("name", pa.string(), 3)]
    )
    schema = pa.schema(
        [
            fid("file_path", pa.string(), 2147483546, nullable=False),
            fid("pos", pa.int64(), 2147483545, nullable=False),
            fid("row", row_type, 2147483544),
        ]
    )
    deleted = pa.table(
        {
            "file_path": [target.file_path] * 2,
            "pos": [1, 4],
            "row": [{"id": 1, "region": "eu", "name": "n1"}, {"id": 4, "region": "eu", "name": "n4"}],
        },
        schema=schema,
    )
    location = t.location + "/data/foreign-pos-deletes.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(deleted, sink)
    payload = sink.getvalue().to_pybytes()
    t.io.new_output(location).write(payload)
    delete = DataFile(FileContent.POSITION_DELETES, location, FileFormat.PARQUET, (), 2, len(payload), 0)
    t.row_delta().add_deletes([delete]).commit()
    assert ids(t) == [0, 2, 3, 5]
    assert _positions(t, target.file_path) == [1, 4]


@pytest.mark.parametrize("pos", [[1, None], [1, -4]])
def test_position_delete_file_with_bad_positions_names_the_file(
    catalog: InMemoryCatalog, pos: list[int | None]
) -> None:
    """``pos`` is required and non-negative; a file that breaks that (damage, a faulty writer)
    is reported as InvalidMetadata naming it, not as an Arrow or NumPy error mid-scan."""
    import pyarrow.parquet as pq

    from firn.errors import InvalidMetadata
    from firn.spec.content import FileContent, FileFormat

    t = make_table(catalog, 2)
    t.append(rows(range(6)))
    target = data_file(t, 0)
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), metadata={b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), metadata={b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"file_path": [target.file_path] * 2, "pos": pos}, schema=schema), sink)
    payload = sink.getvalue().to_pybytes()
    location = t.location + "/data/bad-pos-deletes.parquet"
    t.io.new_output(location).write(payload)
    delete = DataFile(FileContent.POSITION_DELETES, location, FileFormat.PARQUET, (), 2, len(payload), 0)
    t.row_delta().add_deletes([delete]).commit()
    with pytest.raises(InvalidMetadata, match=r"bad-pos-deletes\.parquet"):
        t.scan().to_arrow()
