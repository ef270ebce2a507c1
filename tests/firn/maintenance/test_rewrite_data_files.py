"""``rewrite_data_files``: compaction on every format version, with Iceberg's selection rules,
the sort strategy, partial progress and conflict handling against concurrent commits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.deletes.writers import write_equality_delete_files
from firn.errors import FirnError, StalePlan, ValidationError
from firn.maintenance import MaintenancePlan
from firn.maintenance.rewrite_data_files import RewriteDataFilesPlan, RewriteDataFilesResult
from firn.spec import values
from firn.spec.snapshots import Operation
from firn.spec.types import LongType
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rewrites import (
    MOR,
    ROW_LEVEL_VERSIONS,
    VERSIONS,
    HookRunner,
    data_files,
    delete_files,
    fill,
    ids,
    lineage,
    local_files,
    make_table,
    rows_of,
)
from tests.fixtures.tables import events


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_keeps_every_row_and_the_history(sqlite_catalog: SqlCatalog, version: str) -> None:
    t = make_table(sqlite_catalog, version, properties=MOR)
    fill(t, version, appends=8, rows=20)
    if version != "1":
        t.delete(f"id in ({', '.join(str(i) for i in range(3, 160, 7))})")  # DVs (v3+), position files (v2)
    before = rows_of(t)
    before_filtered = rows_of(t, filter="region = 'eu' and id > 50")
    before_snapshot = t.current_snapshot().snapshot_id
    before_lineage = lineage(t) if t.format_version >= 3 else None
    assert len(data_files(t)) == 32  # 8 appends x 4 regions (eu, us, ap, null)

    result = t.maintenance.rewrite_data_files(min_input_files=2).run()

    assert result.rewritten_data_files_count == 32 and result.added_data_files_count == 4
    assert result.groups_committed == 4 and result.failed_groups == () and len(result.snapshot_ids) == 1
    snap = t.current_snapshot()
    assert snap.summary.operation is Operation.REPLACE
    assert snap.summary.get("deleted-data-files") == "32" and snap.summary.get("added-data-files") == "4"
    assert rows_of(t) == before
    assert rows_of(t, filter="region = 'eu' and id > 50") == before_filtered
    assert rows_of(t, snapshot_id=before_snapshot) == before  # time travel still reads
    files = data_files(t)
    assert len(files) == 4 and {f.partition for f in files} == {("ap",), ("eu",), ("us",), (None,)}
    # File-scoped deletes (v3 DVs; v2 single-file position files) went with their data files.
    if version in ("3", "4"):
        assert delete_files(t) == set()
    if before_lineage is not None:
        # Rows keep their row ids and last-updated sequence numbers (rows of a table upgraded
        # from v2 had none, and get ids as the new files' rows).
        after = lineage(t)
        assert {i: v for i, v in after.items() if before_lineage[i] != (None, None)} == {
            i: v for i, v in before_lineage.items() if v != (None, None)
        }
    # Output files carry full column metrics for every column the table's metrics mode keeps.
    (changes,) = t.changes(before_snapshot)
    assert sorted(f.file_path for f in changes.added_data_files) == sorted(f.file_path for f in files)
    for f in changes.added_data_files:
        assert f.record_count == pq.ParquetFile(f.file_path).metadata.num_rows
        for field_id in (1, 2, 6, 7):  # id, region, amount, x
            assert field_id in f.value_counts and field_id in f.null_value_counts
            if t.format_version < 4:  # seed 004 removes data_file.column_sizes in V4
                assert f.column_sizes is not None and f.column_sizes[field_id] > 0
        lo = values.from_bytes(LongType(), f.lower_bounds[1])
        hi = values.from_bytes(LongType(), f.upper_bounds[1])
        got = pq.read_table(f.file_path, columns=["id"]).column("id").to_pylist()
        assert (lo, hi) == (min(got), max(got))


def test_defaults_are_iceberg_s_and_the_target_comes_from_the_table(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2", partition_spec=None)
    fill(t, "2", appends=2, rows=10)
    plan = t.maintenance.rewrite_data_files().plan()
    assert plan.target_file_size_bytes == 512 * 1024 * 1024  # write.target-file-size-bytes
    assert {k: v for k, v in plan.options.to_iceberg().items() if k not in ("branch", "output-spec-id")} == {
        "strategy": "binpack",
        "target-file-size-bytes": 536_870_912,
        "min-file-size-bytes": 402_653_184,  # 0.75x
        "max-file-size-bytes": 966_367_641,  # 1.8x
        "min-input-files": 5,
        "delete-file-threshold": 2**31 - 1,
        "delete-ratio-threshold": 0.3,
        "max-file-group-size-bytes": 100 * 1024**3,
        "rewrite-all": False,
        "partial-progress.enabled": False,
        "partial-progress.max-commits": 10,
        "partial-progress.max-failed-commits": 10,
        "max-concurrent-file-group-rewrites": 5,
        "use-starting-sequence-number": True,
        "remove-dangling-deletes": False,
        "rewrite-job-order": "none",
    }
    t.set_properties({"write.target-file-size-bytes": "1000"})
    sized = t.maintenance.rewrite_data_files().plan().options
    assert (sized.target_file_size_bytes, sized.min_file_size_bytes, sized.max_file_size_bytes) == (
        1000,
        750,
        1800,
    )


def test_min_input_files_and_size_criteria_are_honoured(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2", partition_spec=None)
    fill(t, "2", appends=4, rows=10)
    plan = t.maintenance.rewrite_data_files().plan()  # 4 small files < min-input-files 5
    assert plan.is_noop and "below min-input-files (5)" in str(plan)
    t.append(events(10, start=100))
    plan = t.maintenance.rewrite_data_files().plan()
    assert [len(g.files) for g in plan.groups] == [5]
    # Files at least min-file-size-bytes (0.75x target) are left alone.
    smallest = min(f.file_size_in_bytes for f in data_files(t))
    big_enough = t.maintenance.rewrite_data_files(target_file_size_bytes=int(smallest / 0.75) - 1).plan()
    assert big_enough.is_noop
    # rewrite_all takes everything, whatever the criteria.
    assert (
        t.maintenance.rewrite_data_files(rewrite_all=True, target_file_size_bytes=1 << 40)
        .plan()
        .rewritten_files
        == 5
    )
    # max_file_group_size_bytes splits a partition into several groups.
    largest = max(f.file_size_in_bytes for f in data_files(t))
    split = t.maintenance.rewrite_data_files(max_file_group_size_bytes=largest * 2, min_input_files=2).plan()
    assert [len(g.files) for g in split.groups] == [2, 2]  # the fifth file alone is below min-input-files


def test_delete_thresholds_select_single_files(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "3", partition_spec=None, properties=MOR)
    t.append(events(10))
    t.append(events(10, start=10))
    t.delete("id < 4")  # 40% of the first file
    first = next(f.file_path for f in data_files(t) if 0 in _ids_in(f.file_path))
    # Both files are small: one group, kept because a file's delete ratio is 0.4 >= 0.3.
    assert t.maintenance.rewrite_data_files().plan().rewritten_files == 2
    # With a target that makes both files "right-sized", only the delete criteria select.
    target = max(f.file_size_in_bytes for f in data_files(t))
    sized = {"target_file_size_bytes": target, "min_file_size_bytes": 1}
    assert t.maintenance.rewrite_data_files(delete_ratio_threshold=0.5, **sized).plan().is_noop
    by_ratio = t.maintenance.rewrite_data_files(**sized).plan()
    assert [gf.path for g in by_ratio.groups for gf in g.files] == [first]
    by_count = t.maintenance.rewrite_data_files(
        delete_ratio_threshold=0.9, delete_file_threshold=1, **sized
    ).plan()
    assert [gf.path for g in by_count.groups for gf in g.files] == [first]
    result = by_count.execute(t)
    assert result.removed_delete_files_count == 1 and delete_files(t) == set()
    assert ids(t) == list(range(4, 20))


def _ids_in(path: str) -> list[int]:
    return pq.read_table(path, columns=["id"]).column("id").to_pylist()


def test_sort_strategy_writes_sorted_files_with_tight_bounds(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2", partition_spec=None)
    for start in (60, 0, 120, 30, 90, 150):  # ids arrive out of order
        t.append(events(30, start=start))
    before = rows_of(t)
    total = sum(f.file_size_in_bytes for f in data_files(t))
    plan = t.maintenance.rewrite_data_files(
        sort_order="id DESC NULLS LAST", target_file_size_bytes=total // 3 + 1, min_input_files=2
    ).plan()
    assert plan.strategy == "sort" and plan.groups[0].output_files == 3
    plan.execute(t)
    assert rows_of(t) == before
    files = sorted(data_files(t), key=lambda f: -values.from_bytes(LongType(), f.upper_bounds[1]))
    assert len(files) == 3
    previous_low = None
    for f in files:
        got = _ids_in(f.file_path)
        assert got == sorted(got, reverse=True)  # each file is sorted by the order
        lo = values.from_bytes(LongType(), f.lower_bounds[1])
        hi = values.from_bytes(LongType(), f.upper_bounds[1])
        assert (lo, hi) == (min(got), max(got))
        if previous_low is not None:
            assert hi < previous_low  # files cover disjoint id ranges
        previous_low = lo
    # The order is not the table's, so files record no sort order id.
    assert all(f.sort_order_id is None for f in files)


def test_sort_strategy_uses_the_tables_order(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "3", partition_spec=None, sort_order=["name"])
    with pytest.raises(ValidationError, match="needs strategy 'sort'"):
        t.maintenance.rewrite_data_files(strategy="binpack", sort_order="id").plan()
    for start in (40, 0, 20):
        t.append(events(20, start=start))
    t.maintenance.rewrite_data_files(strategy="sort", min_input_files=2).run()
    (f,) = data_files(t)
    names = pq.read_table(f.file_path, columns=["name"]).column("name").to_pylist()
    assert names == sorted(names) and f.sort_order_id == t.sort_order().order_id
    unsorted = make_table(sqlite_catalog, "3", name="plain", partition_spec=None)
    with pytest.raises(ValidationError, match="has no sort order"):
        unsorted.maintenance.rewrite_data_files(strategy="sort").plan()


def test_partial_progress_commits_groups_separately(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "3", partition_spec=[("id", "bucket[6]")])
    fill(t, "3", appends=4, rows=30)
    before = rows_of(t)
    parts = {f.partition for f in data_files(t)}
    result = t.maintenance.rewrite_data_files(
        min_input_files=2, partial_progress_enabled=True, partial_progress_max_commits=3
    ).run()
    assert result.groups_committed == len(parts) and len(result.snapshot_ids) == 3
    ops = [t.metadata.snapshot(s).summary.operation for s in result.snapshot_ids]
    assert ops == [Operation.REPLACE] * 3
    assert rows_of(t) == before and len(data_files(t)) == len(parts)


def _equality_delete(table: object, ids_to_delete: list[int]) -> None:
    t = table  # a fresh Table object: the concurrent writer
    rows = pa.table(
        {"id": pa.array(ids_to_delete, pa.int64()), "region": pa.array(["eu"] * len(ids_to_delete))}
    )
    files = write_equality_delete_files(t.io, t.metadata, rows, ["id"])  # type: ignore[attr-defined]
    t.row_delta().add_deletes(files).commit()  # type: ignore[attr-defined]


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_starting_sequence_number_keeps_concurrent_equality_deletes(
    sqlite_catalog: SqlCatalog, tmp_path: Path, version: str
) -> None:
    t = make_table(sqlite_catalog, version)
    fill(t, version, appends=4, rows=20)
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    victim = 4  # region "eu" (ids % 4 == 0)
    runner = HookRunner(lambda: _equality_delete(writer, [victim]))
    result = t.maintenance.rewrite_data_files(min_input_files=2).plan().execute(t, runner)
    assert result.groups_committed == 4 and result.failed_groups == ()
    t.refresh()
    assert victim not in ids(t) and len(ids(t)) == 79
    assert all(f.record_count in (20,) for f in data_files(t))  # the victim is still in its file...
    assert delete_files(t)  # ...deleted by the equality delete, which applies to the new file


def test_without_starting_sequence_number_a_concurrent_equality_delete_fails_its_group(
    sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=4, rows=20)
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: _equality_delete(writer, [4]))
    plan = t.maintenance.rewrite_data_files(min_input_files=2, use_starting_sequence_number=False).plan()
    assert plan.data_sequence_number is None
    before_files = local_files(tmp_path / "warehouse")
    result = plan.execute(t, runner)
    assert [g.partition for g in result.failed_groups] == ["region=eu"]
    assert "added deletes" in result.failed_groups[0].reason and result.groups_committed == 3
    t.refresh()
    assert 4 not in ids(t) and len(ids(t)) == 79
    # The failed group's output files were deleted; the committed ones are referenced.
    leftovers = local_files(tmp_path / "warehouse") - before_files
    referenced = {f.file_path for f in data_files(t)} | {d for d in delete_files(t)}
    assert {p for p in leftovers if p.endswith(".parquet") and "/data/" in p} <= referenced


@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize("partial", [False, True])
def test_a_concurrent_delete_is_carried_over_to_the_new_files(
    sqlite_catalog: SqlCatalog, tmp_path: Path, version: str, partial: bool
) -> None:
    """Issue 23: a writer's merge-on-read delete of a row the compaction is rewriting (a DV on
    v3+, a position delete file on v2) is re-stated on the file the row moved to, in the
    compaction's own commit; no group is dropped."""
    t = make_table(sqlite_catalog, version, properties=MOR)
    fill(t, version, appends=4, rows=20)
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: writer.delete("id in (5, 41)"))  # region "us": rewritten files
    result = (
        t.maintenance.rewrite_data_files(min_input_files=2, partial_progress_enabled=partial)
        .plan()
        .execute(t, runner)
    )
    assert result.failed_groups == () and result.groups_committed == 4
    assert result.carried_delete_rows == 2
    t.refresh()
    assert ids(t) == [i for i in range(80) if i not in (5, 41)]
    us = [task for task in t.scan().plan_files() if task.file.partition == ("us",)]
    assert len(us) == 1  # compacted, with the carried delete attached to the new file
    assert us[0].file.record_count == 20
    if version == "2":
        # The writer's partition-scoped position delete file stays (it names only the old
        # files' paths; remove_dangling_deletes drops it later) beside the carried one.
        assert sorted(d.record_count for d in us[0].delete_files) == [2, 2]
    else:  # the writer's DV went with the file it named
        assert [d.record_count for d in us[0].delete_files] == [2]
        assert us[0].delete_files[0].referenced_data_file == us[0].file.file_path


def test_rows_without_row_lineage_are_followed_by_value(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    """A V4 table upgraded from v2 holds rows written before row lineage (no _row_id): the
    rows a writer's DV names are followed to the new files by their values. That DV repeats
    the file's earlier delete of a row that has a live twin: only the new position is
    carried, so the twin stays."""
    t = make_table(sqlite_catalog, "4u", properties=MOR)
    fill(t, "4u", appends=4, rows=20)  # appends 0 and 1 before the upgrade: no _row_id
    t.append(t.scan(filter="id = 1").to_arrow().select(t.schema().column_names))  # the twin
    where = t.scan(filter="id = 1", columns=["_file", "_pos", "_row_id"]).to_arrow().to_pylist()
    original = next(r for r in where if r["_row_id"] is None)
    t.row_delta().delete_rows_at(original["_file"], [original["_pos"]]).commit()  # the twin lives
    assert ids(t).count(1) == 1
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: writer.delete("id = 5"))  # position 1 of that file
    result = t.maintenance.rewrite_data_files(min_input_files=2).plan().execute(t, runner)
    assert result.failed_groups == () and result.carried_delete_rows == 1
    t.refresh()
    assert ids(t) == sorted([*(i for i in range(80) if i != 5)])  # id 1 once: the twin


def test_a_concurrent_removal_of_a_rewritten_file_fails_that_group(
    sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=4, rows=20)
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: writer.delete("id < 4"))  # copy-on-write: removes/rewrites files
    result = t.maintenance.rewrite_data_files(min_input_files=2).plan().execute(t, runner)
    assert len(result.failed_groups) == 4 - result.groups_committed >= 1
    assert all("concurrently" in g.reason for g in result.failed_groups)
    t.refresh()
    assert ids(t) == list(range(4, 80))


def test_plans_round_trip_json_and_run_from_another_connection(
    sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = make_table(sqlite_catalog, "3", properties=MOR)
    fill(t, "3", appends=3, rows=20)
    t.delete("id = 7")
    before = rows_of(t)
    plan = t.maintenance.rewrite_data_files(min_input_files=2, where="region = 'eu' or region = 'us'").plan()
    text = plan.to_json()
    again = MaintenancePlan.from_json(text)
    assert (
        isinstance(again, RewriteDataFilesPlan)
        and again == plan
        and json.loads(text)["operation"] == "rewrite_data_files"
    )
    assert {g.partition for g in again.groups} == {"region=eu", "region=us"}  # the where filter
    other = make_sqlite_catalog(tmp_path, name="test")
    result = again.execute(other.load_table("db.events"))
    assert RewriteDataFilesResult.from_dict(json.loads(result.to_json())) == result
    assert result.rewritten_data_files_count == 6
    t.refresh()
    assert rows_of(t) == before


def test_stale_plans_are_refused(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=3, rows=20)
    first = t.current_snapshot().snapshot_id
    t.append(events(20, start=500))
    plan = t.maintenance.rewrite_data_files(min_input_files=2).plan()
    with t.manage_snapshots() as ms:
        ms.rollback_to(first)
    with pytest.raises(StalePlan, match="no longer an ancestor"):
        plan.execute(t)
    sqlite_catalog.drop_table("db.events")
    fresh = make_table(sqlite_catalog, "2")
    fresh.append(events(5))
    with pytest.raises(StalePlan, match="table UUID"):
        t.maintenance.rewrite_data_files().plan().execute(fresh)


def test_dry_run_writes_nothing(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    t = make_table(sqlite_catalog, "3", properties=MOR)
    fill(t, "3", appends=3, rows=20)
    t.delete("id = 1")
    files = {p: os.path.getmtime(p) for p in local_files(tmp_path)}
    location = t.metadata_location
    plan = t.maintenance.rewrite_data_files(min_input_files=2).plan()
    assert not plan.is_noop and "would" not in str(plan) and "group 0" in str(plan)
    assert {p: os.path.getmtime(p) for p in local_files(tmp_path)} == files
    t.refresh()
    assert t.metadata_location == location


@pytest.mark.parametrize("version", ["2", "3"])
@pytest.mark.parametrize("starting", [True, False])
def test_remove_dangling_deletes_runs_a_second_commit(
    sqlite_catalog: SqlCatalog, version: str, starting: bool
) -> None:
    t = make_table(sqlite_catalog, version, partition_spec=None, properties=MOR)
    fill(t, version, appends=3, rows=20)
    t.delete("id = 1 or id = 25 or id = 59")  # one position file for 3 data files (v2); 3 DVs (v3)
    result = t.maintenance.rewrite_data_files(
        min_input_files=2, remove_dangling_deletes=True, use_starting_sequence_number=starting
    ).run()
    assert ids(t) == [i for i in range(60) if i not in (1, 25, 59)]
    if version == "3":  # the DVs went with their data files
        assert len(result.snapshot_ids) == 1 and result.removed_dangling_deletes_count == 0
    else:
        # v2: the position file was committed in the starting snapshot. With
        # use-starting-sequence-number the new file keeps that data sequence number, so by
        # numbers alone (Java's rule) the file still applies; it is read, names only the
        # rewritten files, and goes (maintenance/dangling_deletes.py).
        assert len(result.snapshot_ids) == 2 and result.removed_dangling_deletes_count == 1
        assert t.current_snapshot().summary.get("removed-position-delete-files") == "1"
    assert delete_files(t) == set() and _live_deletes(t) == []


def _live_deletes(t: object) -> list[object]:
    """Every live delete file, attached to a data file or not."""
    from firn.maintenance.rewrite_planning import live_delete_entries

    return live_delete_entries(t.io, t.metadata, t.current_snapshot())  # type: ignore[attr-defined]


def test_output_spec_id_repartitions(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=3, rows=20)
    before = rows_of(t)
    with t.update_spec() as u:
        u.add_field("id", "bucket[2]")
    new_spec = t.spec().spec_id
    result = t.maintenance.rewrite_data_files(rewrite_all=True, output_spec_id=new_spec).run()
    assert result.rewritten_data_files_count == 12
    files = data_files(t)
    assert {f.spec_id for f in files} == {new_spec} and len({f.partition for f in files}) == len(files)
    assert rows_of(t) == before
    with pytest.raises(ValidationError, match="has no partition spec 9"):
        t.maintenance.rewrite_data_files(output_spec_id=9).plan()


def test_a_failing_group_fails_the_run_unless_partial_progress(
    sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=3, rows=20)
    before = rows_of(t)
    plan = t.maintenance.rewrite_data_files(min_input_files=2).plan()
    broken = plan.groups[0].files[0].path
    data = Path(broken).read_bytes()
    Path(broken).write_bytes(b"not parquet")
    files_before = local_files(tmp_path / "warehouse")
    with pytest.raises(FirnError, match="nothing was committed"):
        plan.execute(t)
    assert local_files(tmp_path / "warehouse") == files_before  # every output deleted
    partial = t.maintenance.rewrite_data_files(min_input_files=2, partial_progress_enabled=True).plan()
    result = partial.execute(t)
    assert len(result.failed_groups) == 1 and result.groups_committed == 3
    Path(broken).write_bytes(data)
    assert rows_of(t) == before


def test_options_are_checked(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2")
    with pytest.raises(ValidationError, match="has no option 'min_inputs'"):
        t.maintenance.rewrite_data_files(min_inputs=2)
    with pytest.raises(ValidationError, match="must be one of"):
        t.maintenance.rewrite_data_files(strategy="zorder")
    with pytest.raises(ValidationError, match="min-input-files must be at least 1"):
        t.maintenance.rewrite_data_files(min_input_files=0).plan()
    # Iceberg's hyphenated (and dotted) names work too.
    op = t.maintenance.rewrite_data_files(**{"partial-progress.enabled": "true", "min-input-files": "2"})
    assert op.options.given() == {"partial_progress_enabled": True, "min_input_files": 2}
    assert t.maintenance.rewrite_data_files().plan().is_noop  # an empty table


@pytest.mark.parametrize("version", ROW_LEVEL_VERSIONS)
def test_equality_deletes_are_applied_while_rewriting(sqlite_catalog: SqlCatalog, version: str) -> None:
    t = make_table(sqlite_catalog, version)
    fill(t, version, appends=3, rows=20)
    _equality_delete(t, [0, 8, 12])
    assert ids(t) == [i for i in range(60) if i not in (0, 8, 12)]
    t.maintenance.rewrite_data_files(min_input_files=2).run()
    assert ids(t) == [i for i in range(60) if i not in (0, 8, 12)]
    eu = [f for f in data_files(t) if f.partition == ("eu",)]
    assert sum(f.record_count for f in eu) == 12  # 15 eu rows minus the 3 deleted ones


def test_batch_reads_are_used_only_where_they_read_the_same_rows(sqlite_catalog: SqlCatalog) -> None:
    from firn.maintenance.data_file_rewriter import _batch_read

    t = make_table(sqlite_catalog, "2", properties=MOR)
    fill(t, "2", appends=3, rows=20)
    tasks = list(t.scan().plan_files())
    fast = _batch_read(t.io, t.metadata, tasks)
    assert fast is not None and fast.num_rows == 60
    # Files written before a rename hold the old column name: the reader (by field id) it is.
    with t.update_schema() as u:
        u.rename_column("name", "label")
    assert _batch_read(t.io, t.metadata, list(t.scan().plan_files())) is None
    t.delete("id = 3")
    before = rows_of(t)
    t.maintenance.rewrite_data_files(min_input_files=2).run()
    assert rows_of(t) == before and all("label" in r for r in before)
    v3 = make_table(sqlite_catalog, "3", name="v3")
    fill(v3, "3", appends=2, rows=10)
    assert _batch_read(v3.io, v3.metadata, list(v3.scan().plan_files())) is None  # lineage by position


def test_a_dv_rewrite_between_units_and_commit_keeps_the_compaction(
    sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    """A DV rewrite that replaced the DVs of files being compacted (same positions, new Puffin
    file) is no conflict: the compaction removes the new DVs instead of the old ones. (The
    maintenance lease keeps two runs apart; the DV rewrite commits here without it.)"""
    from firn.maintenance.runner import LocalRunner, local_io

    t = make_table(sqlite_catalog, "3", properties=MOR)
    fill(t, "3", appends=4, rows=20)
    for victim in (5, 9, 41):  # region "us"
        t.delete(f"id = {victim}")

    def rewrite_dvs() -> None:
        other = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
        plan = other.maintenance.rewrite_deletion_vectors(rewrite_all=True, min_input_files=1).plan()
        with local_io(other.io) as ref:
            results = LocalRunner(1).map(plan.unit_function(), plan.units(other, ref))  # type: ignore[arg-type]
        assert plan.commit(other, results).snapshot_id is not None

    result = t.maintenance.rewrite_data_files(min_input_files=2).plan().execute(t, HookRunner(rewrite_dvs))
    assert result.failed_groups == () and result.groups_committed == 4
    assert result.carried_delete_rows == 0  # nothing new was deleted
    t.refresh()
    assert ids(t) == [i for i in range(80) if i not in (5, 9, 41)]
    assert delete_files(t) == set()  # the rewritten DVs went with their data files
