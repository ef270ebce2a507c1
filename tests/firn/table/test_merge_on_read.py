"""Merge-on-read deletes: DVs on v3, position delete files on v2, and the spec's read rules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.actions.overwrite import OverwriteFiles
from firn.deletes.apply import load_positions
from firn.deletes.writers import (
    write_deletion_vectors,
    write_equality_delete_files,
    write_position_delete_files,
)
from firn.errors import ValidationConflict, ValidationError
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.row_deletes import data_file, ids, live_deletes, make_table, rows

MOR = {"write.delete.mode": "merge-on-read"}


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _dv_positions(table: Table, dv: DataFile) -> list[int]:
    bitmap = load_positions(table.io, data_file_for(table, dv), [dv])
    assert bitmap is not None
    return bitmap.to_array().tolist()


def data_file_for(table: Table, delete: DataFile) -> DataFile:
    return next(t.file for t in table.scan().plan_files() if t.file.file_path == delete.referenced_data_file)


# -- basic reads -----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("partitioned", [False, True])
def test_mor_delete_reads_back(catalog: InMemoryCatalog, version: int, partitioned: bool) -> None:
    t = make_table(catalog, version, partitioned=partitioned, properties=MOR)
    t.append(pa.concat_tables([rows(range(10), "eu"), rows(range(10, 20), "us")]))
    t.append(rows(range(20, 30), "eu"))
    snap = t.delete("id in (1, 2, 15, 25) or id > 28")
    assert snap is not None and snap.summary.operation is Operation.DELETE
    assert ids(t) == [i for i in range(30) if i not in (1, 2, 15, 25, 29)]
    assert t.scan().count() == 25
    deletes = live_deletes(t)
    assert deletes, "merge-on-read must not rewrite data files"
    assert int(snap.summary.properties["added-position-deletes"]) == 5
    if version == 3:
        assert all(d.is_dv for d in deletes)
        # One DV per touched data file.
        assert len({d.referenced_data_file for d in deletes}) == len(deletes)
        assert int(snap.summary.properties["added-dvs"]) == len(deletes)
    else:
        assert all(d.file_format is FileFormat.PARQUET for d in deletes)
        assert all(d.content is FileContent.POSITION_DELETES for d in deletes)
        # One position delete file per partition.
        assert len(deletes) == (2 if partitioned else 1)
    # Data files are untouched.
    assert int(snap.summary.properties["total-data-files"]) == len(t.scan().plan_files())


def test_copy_on_write_is_the_default(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows(range(10)))
    before = {task.file.file_path for task in t.scan().plan_files()}
    t.delete("id = 3")
    assert ids(t) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert live_deletes(t) == []
    assert {task.file.file_path for task in t.scan().plan_files()}.isdisjoint(before)


def test_v1_falls_back_to_copy_on_write(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 1, properties=MOR)
    t.append(rows(range(5)))
    t.delete("id = 3")
    assert ids(t) == [0, 1, 2, 4]
    assert live_deletes(t) == []


# -- one DV per data file ---------------------------------------------------------------------------
def test_repeated_deletes_keep_one_live_dv_with_every_position(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, properties=MOR)
    t.append(rows(range(100)))
    expected: set[int] = set()
    for batch in ([3, 4], [50], [97, 98, 3]):
        snap = t.delete(f"id in ({', '.join(map(str, batch))})")
        expected |= set(batch)
        [dv] = live_deletes(t)
        assert dv.is_dv
        assert _dv_positions(t, dv) == sorted(expected)  # ids equal positions here
        assert dv.record_count == len(expected)
    assert snap is not None
    assert snap.summary.properties["removed-dvs"] == "1" and snap.summary.properties["added-dvs"] == "1"
    assert ids(t) == [i for i in range(100) if i not in expected]
    # Exactly one live DV entry for the file in the whole snapshot (not just the scan's choice).
    from firn.core.legacy.reader import read_manifests_parallel, snapshot_manifests

    manifests = [m for m in snapshot_manifests(t.io, t.current_snapshot()) if m.content.name == "DELETES"]
    entries = [e for es in read_manifests_parallel(t.io, manifests, t.metadata, t.schema()) for e in es]
    assert len([e for e in entries if e.is_live and e.data_file.is_dv]) == 1


def test_dvs_sharing_a_puffin_file_are_replaced_one_at_a_time(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, properties=MOR)
    t.append(rows(range(10)))
    t.append(rows(range(10, 20)))
    t.delete("id in (1, 11)")  # one commit, one Puffin file, two DVs
    first = live_deletes(t)
    assert len(first) == 2 and len({d.file_path for d in first}) == 1
    t.delete("id = 2")  # replaces only the DV of the first file
    assert ids(t) == [0, *range(3, 10), *range(10, 11), *range(12, 20)]
    after = {d.referenced_data_file: d for d in live_deletes(t)}
    second_file = data_file(t, 15).file_path
    assert after[second_file].file_path == first[0].file_path  # still the shared Puffin
    assert after[data_file(t, 5).file_path].file_path != first[0].file_path


def test_deleting_a_whole_file_drops_its_dv(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, properties=MOR)
    t.append(rows(range(5)))
    t.append(rows(range(5, 10)))
    t.delete("id = 1")
    snap = t.delete("id < 5")
    assert snap is not None
    assert (
        snap.summary.properties["removed-dvs"] == "1" and snap.summary.properties["deleted-data-files"] == "1"
    )
    assert live_deletes(t) == []
    assert ids(t) == list(range(5, 10))


def test_dv_supersedes_position_delete_files_after_upgrade(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2, properties=MOR)
    t.append(rows(range(10)))
    t.append(rows(range(10, 20)))
    a, b = data_file(t, 0), data_file(t, 10)
    t.delete("id = 1")  # a file-scoped position delete file for a
    # A partition-scoped file covering both data files.
    shared = write_position_delete_files(t.io, t.metadata, [(a, [2]), (b, [12 - 10])])
    t.row_delta().add_deletes(shared).commit()
    assert ids(t) == [0, *range(3, 12), *range(13, 20)]
    t.upgrade(format_version=3)

    snap = t.delete("id = 5")
    assert snap is not None
    assert ids(t) == [0, 3, 4, *range(6, 12), *range(13, 20)]
    tasks = {task.file.file_path: task for task in t.scan().plan_files()}
    [dv] = tasks[a.file_path].delete_files
    assert dv.is_dv
    # The DV merged the file-scoped file (1) and a's share of the partition-scoped file (2).
    assert _dv_positions(t, dv) == [1, 2, 5]
    # The file-scoped position file was removed; the partition-scoped one stays for b.
    assert snap.summary.properties["removed-position-delete-files"] == "1"
    assert [d.file_path for d in tasks[b.file_path].delete_files] == [shared[0].file_path]


# -- spec read rules ----------------------------------------------------------------------------------
def test_position_deletes_apply_to_data_in_the_same_commit(catalog: InMemoryCatalog) -> None:
    from firn.core.writer import write_data_files

    for version in (2, 3):
        t = make_table(catalog, version, name=f"same{version}")
        [f] = write_data_files(t.io, t.metadata, rows(range(5)))
        write = write_deletion_vectors if version == 3 else write_position_delete_files
        deletes = write(t.io, t.metadata, [(f, [0, 4])])
        t.row_delta().add_data_files([f]).add_deletes(deletes).commit()
        # Spec "Scan Planning": equal sequence numbers still apply for position deletes.
        assert ids(t) == [1, 2, 3]


def test_equality_deletes_apply_only_to_strictly_older_data(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    t.append(rows([1, 2, 3]))
    [eq] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([2, 7], pa.int64())}), ["id"]
    )
    # Same commit as a new data file holding id 7: the delete (same sequence number) skips it.
    t.row_delta().add_rows(rows([7, 8])).add_deletes([eq]).commit()
    assert ids(t) == [1, 3, 7, 8]
    # Later data with a deleted key is not affected either.
    t.append(rows([2]))
    assert ids(t) == [1, 2, 3, 7, 8]


def test_equality_delete_null_matches_null(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3)
    t.append(rows([1, None, 3]))
    [eq] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([None], pa.int64())}), ["id"]
    )
    t.row_delta().add_deletes([eq]).commit()
    assert ids(t) == [1, 3]


def test_global_equality_deletes_from_an_unpartitioned_spec(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 2)
    unpartitioned = t.spec()
    t.update_spec().add_field("region").commit()
    t.append(pa.concat_tables([rows([1, 2], "eu"), rows([1, 2], "us")]))
    # Written with the unpartitioned spec: a global delete across partitions.
    [g] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([1], pa.int64())}), ["id"], spec=unpartitioned
    )
    assert g.spec_id == unpartitioned.spec_id
    # Written with the partitioned spec: only its partition.
    [p] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([2], pa.int64()), "region": ["eu"]}), ["id"]
    )
    assert p.partition == ("eu",)
    t.row_delta().add_deletes([g, p]).commit()
    got = sorted((r["region"], r["id"]) for r in t.to_arrow().to_pylist())
    assert got == [("us", 2)]


# -- metadata columns and row lineage ---------------------------------------------------------------
def test_metadata_columns_through_dvs(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, properties=MOR)
    t.append(rows(range(6)))
    t.delete("id in (0, 3)")
    cols = ["id", "_file", "_pos", "_row_id", "_last_updated_sequence_number"]
    got = t.scan(columns=cols).to_arrow().to_pylist()
    path = data_file(t, 1).file_path
    assert [(r["id"], r["_pos"], r["_row_id"], r["_last_updated_sequence_number"]) for r in got] == [
        (1, 1, 1, 1),
        (2, 2, 2, 1),
        (4, 4, 4, 1),
        (5, 5, 5, 1),
    ]
    assert {r["_file"] for r in got} == {path}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_lineage_survives_deletes(catalog: InMemoryCatalog, mode: str) -> None:
    t = make_table(catalog, 3, properties={"write.delete.mode": mode})
    t.append(rows(range(10)))
    t.append(rows(range(10, 20)))
    cols = ["id", "_row_id", "_last_updated_sequence_number"]

    def lineage() -> dict[int, tuple[int, int]]:
        return {
            r["id"]: (r["_row_id"], r["_last_updated_sequence_number"])
            for r in t.scan(columns=cols).to_arrow().to_pylist()
        }

    before = lineage()
    assert len({v[0] for v in before.values()}) == 20
    t.delete("id in (3, 12)")
    t.delete("id = 4")
    after = lineage()
    assert set(after) == set(before) - {3, 4, 12}
    # Spec "Row Lineage": moved rows keep _row_id, and unmodified rows their sequence number.
    assert after == {k: before[k] for k in after}
    if mode == "copy-on-write":
        assert live_deletes(t) == []


# -- version rules -------------------------------------------------------------------------------------
def test_no_dvs_on_v2_and_no_position_files_on_v3(catalog: InMemoryCatalog) -> None:
    v3 = make_table(catalog, 3, name="v3")
    v3.append(rows(range(3)))
    f3 = data_file(v3, 0)
    [dv] = write_deletion_vectors(v3.io, v3.metadata, [(f3, [0])])
    v2 = make_table(catalog, 2, name="v2")
    v2.append(rows(range(3)))
    f2 = data_file(v2, 0)
    [pos] = write_position_delete_files(v2.io, v2.metadata, [(f2, [0])])

    with pytest.raises(ValidationError, match="format version 3"):
        v2.row_delta().add_deletes([dv.evolve(referenced_data_file=f2.file_path)]).commit()
    with pytest.raises(ValidationError, match="does not allow new position delete files"):
        v3.row_delta().add_deletes([pos.evolve(referenced_data_file=f3.file_path)]).commit()
    # The manifest writer enforces the rule too, whatever builds the commit.
    action = OverwriteFiles(
        starting_snapshot_id=v2.current_snapshot().snapshot_id,  # type: ignore[union-attr]
        added_deletes=[dv.evolve(referenced_data_file=f2.file_path)],
    )
    with pytest.raises(ValidationError, match="deletion vectors"):
        v2.transaction().add_action(action).commit()
    assert ids(v2) == [0, 1, 2] and ids(v3) == [0, 1, 2]


# -- concurrency: two real writers on one SQLite catalog ---------------------------------------------
@pytest.fixture
def racers(sqlite_catalog: SqlCatalog) -> tuple[Table, Table]:
    t = make_table(sqlite_catalog, 3, properties=MOR)
    t.append(rows(range(20)))
    t.append(rows(range(20, 40)))
    return t, sqlite_catalog.load_table("db.t")


def test_concurrent_dvs_for_one_file_conflict(racers: tuple[Table, Table]) -> None:
    first, second = racers
    first.delete("id = 1")
    with pytest.raises(ValidationConflict, match=r"concurrently added DV|added deletes"):
        second.delete("id = 2")  # planned on the old snapshot: would drop the first DV
    second.refresh()
    second.delete("id = 2")
    assert ids(second) == [0, *range(3, 40)]
    [dv] = [d for d in live_deletes(second) if d.referenced_data_file == data_file(second, 0).file_path]
    assert dv.record_count == 2


def test_delete_conflicts_with_a_concurrent_rewrite_of_its_file(racers: tuple[Table, Table]) -> None:
    first, second = racers
    first.set_properties({"write.delete.mode": "copy-on-write"})
    first.delete("id = 1")  # rewrites the file of ids 0..19
    with pytest.raises(ValidationConflict, match="position deletes refer to"):
        second.delete("id = 2")  # its DV would point at the removed file: id 2 would come back
    second.refresh()
    assert ids(second) == [0, *range(2, 40)]


def test_unrelated_concurrent_commit_is_retried_and_revalidated(racers: tuple[Table, Table]) -> None:
    first, second = racers
    first.append(rows(range(100, 105)))  # no rows matching the delete filter
    second.delete("id = 25")  # stale: the swap fails once, then validation passes
    second.refresh()
    assert ids(second) == [*range(25), *range(26, 40), *range(100, 105)]
    assert len(second.snapshots()) == 4


def test_no_row_is_lost_or_resurrected_by_racing_deleters(racers: tuple[Table, Table]) -> None:
    first, second = racers
    deleted: set[int] = set()
    rng = np.random.default_rng(7)
    for i, value in enumerate(rng.permutation(40)[:12].tolist()):
        writer = first if i % 2 else second
        try:
            writer.delete(f"id = {value}")
            deleted.add(value)
        except ValidationConflict:
            writer.refresh()
    first.refresh()
    assert ids(first) == [i for i in range(40) if i not in deleted]
    per_file = [d.referenced_data_file for d in live_deletes(first)]
    assert len(per_file) == len(set(per_file))  # still at most one DV per data file


@pytest.mark.parametrize("version", [2, 3])
def test_row_filters_and_deletes_together(catalog: InMemoryCatalog, version: int) -> None:
    t = make_table(catalog, version, properties=MOR)
    t.append(rows(range(10)))
    t.delete("id in (5, 6)")
    # The residual filter leaves gaps in _pos before the deletes are applied.
    assert ids(t, filter="id in (1, 3, 5, 7)") == [1, 3, 7]
    assert t.scan(filter="id > 2").count() == 5
    assert len(t.scan(filter="id > 2", limit=2).to_arrow()) == 2
