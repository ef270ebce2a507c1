"""``rewrite_deletion_vectors`` and ``rewrite_position_delete_files``: one DV per data file in
few Puffin files, v2 position deletes converted after an upgrade or compacted on v2, dangling
deletes dropped, files with many deletes handed to compaction."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.transaction import Transaction
from firn.errors import Unsupported
from firn.maintenance import MaintenancePlan
from firn.maintenance.rewrite_deletion_vectors import RewriteDeletionVectorsPlan, RewriteDeletionVectorsResult
from firn.maintenance.rewrite_planning import live_delete_entries
from firn.spec.content import FileContent
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rewrites import MOR, HookRunner, data_files, ids, make_table, rows_of
from tests.fixtures.tables import events


def _live_deletes(t: Table) -> list[object]:
    return [e.data_file for e in live_delete_entries(t.io, t.metadata, t.current_snapshot())]


def _v2_with_position_deletes(catalog: SqlCatalog) -> Table:
    t = make_table(catalog, "2", properties=MOR)
    for i in range(4):
        t.append(events(20, start=i * 20))
    # Partition "eu" is ids % 4 == 0, "us" ids % 4 == 1; each append writes one file per region.
    t.delete("id in (0, 20, 41)")  # eu: one position file for two data files; us: a file-scoped one
    t.delete("id in (4, 9)")  # eu and us again: two more file-scoped position files
    return t


@pytest.mark.parametrize("target", [3, 4])
def test_upgraded_tables_get_one_dv_per_data_file(sqlite_catalog: SqlCatalog, target: int) -> None:
    t = _v2_with_position_deletes(sqlite_catalog)
    before = rows_of(t)
    v2_files = [d for d in _live_deletes(t) if not d.is_dv]
    assert len(v2_files) == 4
    t.upgrade(format_version=target)
    op = "rewrite_position_delete_files" if target == 3 else "rewrite_deletion_vectors"
    plan = getattr(t.maintenance, op)().plan()
    assert not plan.is_noop
    result = plan.execute(t)
    # DVs for the four data files with deletes; the partition-scoped file also applied to the
    # other eu files, which hold none of its positions and get no DV.
    assert result.converted_data_files == 4 and result.rewritten_delete_files_count == 4
    assert rows_of(t) == before
    live = _live_deletes(t)
    assert live and all(d.is_dv for d in live)  # no v2 position file is left
    targets = [d.referenced_data_file for d in live]
    assert len(targets) == len(set(targets)) == 4  # one DV per data file
    assert len({d.file_path for d in live}) == 1  # in one Puffin file
    assert t.current_snapshot().summary.operation is Operation.REPLACE
    again = getattr(t.maintenance, op)().plan()
    assert again.is_noop


@pytest.mark.parametrize("version", ["3", "4"])
def test_small_puffin_files_are_packed(sqlite_catalog: SqlCatalog, tmp_path: Path, version: str) -> None:
    t = make_table(sqlite_catalog, version, partition_spec=None, properties=MOR)
    for i in range(6):
        t.append(events(20, start=i * 20))
    for i in range(6):
        t.delete(f"id = {i * 20 + 3}")  # one Puffin file per commit
    before = rows_of(t)
    assert len({d.file_path for d in _live_deletes(t)}) == 6
    plan = t.maintenance.rewrite_deletion_vectors(min_input_files=7).plan()
    assert plan.is_noop and "fewer than min-input-files (7)" in str(plan)
    plan = t.maintenance.rewrite_deletion_vectors().plan()
    text = plan.to_json()
    again = MaintenancePlan.from_json(text)
    assert isinstance(again, RewriteDeletionVectorsPlan) and again == plan
    result = again.execute(make_sqlite_catalog(tmp_path, name="test").load_table("db.events"))
    assert isinstance(result, RewriteDeletionVectorsResult) and result.packed_dvs == 6
    assert RewriteDeletionVectorsResult.from_dict(result.to_dict()) == result
    t.refresh()
    assert rows_of(t) == before
    live = _live_deletes(t)
    assert len(live) == 6 and len({d.file_path for d in live}) == 1


@pytest.mark.parametrize("version", ["3", "4"])
def test_dangling_dvs_are_removed(sqlite_catalog: SqlCatalog, version: str) -> None:
    t = make_table(sqlite_catalog, version, partition_spec=None, properties=MOR)
    t.append(events(10))
    t.append(events(10, start=10))
    t.delete("id in (1, 12)")
    gone = next(f for f in data_files(t) if f.record_count == 10 and 1 not in ids(t))
    # A writer that removes a data file but not its DV (Iceberg requires removing both).
    Transaction(t).add_action(
        OverwriteFiles(starting_snapshot_id=t.current_snapshot().snapshot_id, removed_data=[gone])
    ).commit()
    assert len(_live_deletes(t)) == 2
    result = t.maintenance.rewrite_deletion_vectors().run()
    assert result.removed_dangling_count == 1
    live = _live_deletes(t)
    assert [d.referenced_data_file for d in live] == [f.file_path for f in data_files(t)]


def test_files_with_many_deletes_are_handed_to_compaction(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "3", partition_spec=None, properties=MOR)
    for i in range(6):
        t.append(events(10, start=i * 10))
    t.delete("id in (0, 1, 2, 3)")  # 40% of the first file
    for i in range(1, 6):
        t.delete(f"id = {i * 10}")
    plan = t.maintenance.rewrite_deletion_vectors().plan()
    (high,) = plan.high_delete_ratio
    assert high.deleted_records == 4 and high.record_count == 10 and high.ratio == 0.4
    assert plan.count("pack") == 5  # its DV is left for compaction, the others are packed
    assert "run rewrite_data_files" in str(plan)
    result = plan.execute(t)
    assert result.high_delete_ratio == plan.high_delete_ratio
    # rewrite_data_files' ratio criterion picks exactly that file.
    target = max(f.file_size_in_bytes for f in data_files(t))
    compaction = t.maintenance.rewrite_data_files(target_file_size_bytes=target, min_file_size_bytes=1).plan()
    assert [gf.path for g in compaction.groups for gf in g.files] == [high.data_file]


def test_a_concurrent_dv_leaves_its_file_out_of_the_group(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    """Issue 23: the writer's new DV already holds every position of its file, so the DV
    rewrite packs the other five and leaves that one alone instead of dropping the group."""
    t = make_table(sqlite_catalog, "3", partition_spec=None, properties=MOR)
    for i in range(6):
        t.append(events(20, start=i * 20))
    for i in range(6):
        t.delete(f"id = {i * 20 + 3}")
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: writer.delete("id = 44"))  # a new DV for a file being packed
    result = t.maintenance.rewrite_deletion_vectors().plan().execute(t, runner)
    assert result.snapshot_id is not None and result.packed_dvs == 5
    assert result.skipped == ()
    t.refresh()
    assert ids(t) == [i for i in range(120) if i not in (3, 23, 43, 63, 83, 103, 44)]
    tasks = t.scan().plan_files()
    assert all(len(task.delete_files) == 1 for task in tasks)  # one DV per data file
    by_puffin: dict[str, list[int]] = {}
    for task in tasks:
        by_puffin.setdefault(task.delete_files[0].file_path, []).append(task.delete_files[0].record_count)
    # The packed Puffin file with five one-row DVs, and the writer's DV for rows 43 and 44.
    assert sorted(by_puffin.values()) == [[1, 1, 1, 1, 1], [2]]


def test_v2_position_delete_files_are_compacted_and_dangling_positions_dropped(
    sqlite_catalog: SqlCatalog,
) -> None:
    t = make_table(sqlite_catalog, "2", partition_spec=None, properties=MOR)
    for i in range(3):
        t.append(events(20, start=i * 20))
    t.delete("id in (1, 21)")  # one position file for two data files
    for i in range(5):
        t.delete(f"id = {i + 40}")
    before = ids(t)
    gone = next(
        f for f in data_files(t) if 1 in [int(x) for x in pq.read_table(f.file_path).column("id").to_pylist()]
    )
    Transaction(t).add_action(
        OverwriteFiles(starting_snapshot_id=t.current_snapshot().snapshot_id, removed_data=[gone])
    ).commit()
    expected = [i for i in before if i >= 20]
    assert ids(t) == expected
    assert len(_live_deletes(t)) == 6
    result = t.maintenance.rewrite_position_delete_files(min_input_files=2).run()
    assert result.rewritten_delete_files_count == 6 and result.added_delete_files_count == 1
    assert ids(t) == expected
    (merged,) = _live_deletes(t)
    assert merged.content is FileContent.POSITION_DELETES and not merged.is_dv
    positions = pq.read_table(merged.file_path)
    assert positions.num_rows == 6 and gone.file_path not in positions.column("file_path").to_pylist()


def test_dv_rewrite_needs_v3(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2")
    with pytest.raises(Unsupported, match="use rewrite_position_delete_files"):
        t.maintenance.rewrite_deletion_vectors()
    v1 = make_table(sqlite_catalog, "1", name="v1")
    with pytest.raises(Exception, match="no delete files"):
        v1.maintenance.rewrite_position_delete_files()
