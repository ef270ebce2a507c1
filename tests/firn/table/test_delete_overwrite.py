"""Copy-on-write table.delete and table.overwrite (format versions 1-3): whole-file drops
versus rewrites, null-safe matching, summaries, time travel to before the change."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from firn import col
from firn.catalog.memory import InMemoryCatalog
from firn.errors import ValidationError
from firn.spec.snapshots import Operation
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, events, file_paths, make_events_table, sorted_rows


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_delete_of_whole_partitions_drops_files_without_rewriting(
    catalog: InMemoryCatalog, version: int
) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(20))
    before = file_paths(table)
    eu_files = file_paths(table, filter="region = 'eu'")
    snap = table.delete("region = 'eu'")
    assert snap is not None and snap.summary.operation is Operation.DELETE
    assert file_paths(table) == sorted(set(before) - set(eu_files))  # nothing new written
    assert snap.summary.get("deleted-data-files") == "1" and snap.summary.get("deleted-records") == "5"
    assert snap.summary.get("added-data-files") is None
    assert snap.summary.get("total-records") == "15" and snap.summary.get("total-data-files") == "3"
    assert "eu" not in table.scan().to_arrow().column("region").to_pylist()


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_delete_by_metrics_drops_whole_files(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    table.append(events(10))
    table.append(events(10, start=100))
    (old,) = file_paths(table, filter="id < 50")
    snap = table.delete("id < 50")  # the strict metrics evaluator proves the whole file matches
    assert snap is not None and snap.summary.operation is Operation.DELETE
    assert old not in file_paths(table) and len(file_paths(table)) == 1
    assert _ids(table.scan().to_arrow()) == list(range(100, 110))


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_partial_delete_rewrites_the_file(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    data = events(20)
    table.append(data)
    us_before = file_paths(table, filter="region = 'us'")
    snap = table.delete(col("id") == 5)  # one row of the 'us' file
    assert snap is not None and snap.summary.operation is Operation.OVERWRITE
    assert snap.summary.get("deleted-data-files") == "1" and snap.summary.get("added-data-files") == "1"
    assert snap.summary.get("deleted-records") == "5" and snap.summary.get("added-records") == "4"
    assert snap.summary.get("total-records") == "19"
    us_after = file_paths(table, filter="region = 'us'")
    assert us_after != us_before and len(us_after) == 1
    (task,) = table.scan(filter="region = 'us'").plan_files()
    assert task.file.partition == ("us",)  # rewritten into the same partition
    want = [r for r in sorted_rows(data) if r["id"] != 5]
    assert sorted_rows(table.scan().to_arrow()) == want


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_delete_never_drops_rows_where_the_column_is_null(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    data = events(30)  # x is null when id % 5 == 0
    table.append(data)
    nulls = data.filter(pc.is_null(data["x"])).num_rows
    assert nulls == 6
    table.delete("x = 5")
    after = table.scan().to_arrow()
    assert after.column("x").null_count == nulls
    assert 5 not in after.column("x").to_pylist()
    want = [r for r in sorted_rows(data) if r["x"] != 5]
    assert sorted_rows(after) == want
    # Comparisons never match null: deleting x < 3 keeps the nulls too.
    table.delete("x < 3")
    assert table.scan().to_arrow().column("x").null_count == nulls
    # ...and the nulls go only when asked for.
    table.delete("x is null")
    assert table.scan().to_arrow().column("x").null_count == 0


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_delete_matching_nothing_commits_nothing(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(10))
    location, snapshots = table.metadata_location, table.snapshots()
    assert table.delete("id > 1000") is None
    assert table.delete("region = 'nowhere'") is None
    assert table.metadata_location == location and table.snapshots() == snapshots
    empty = make_events_table(catalog, version, name="empty")
    assert empty.delete("id = 1") is None and empty.snapshots() == []


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_delete_everything_then_time_travel_back(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("id", "bucket[2]")])
    data = events(10)
    before = table.append(data)
    snap = table.delete("true")
    assert snap is not None and snap.summary.get("total-records") == "0"
    assert table.scan().to_arrow().num_rows == 0 and table.scan().plan_files() == []
    assert before is not None
    assert sorted_rows(table.scan(snapshot_id=before.snapshot_id).to_arrow()) == sorted_rows(data)


def test_delete_rejects_bad_filters(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(5))
    with pytest.raises(ValidationError, match="parse"):
        table.delete("id = ")
    with pytest.raises(ValidationError, match="nope"):
        table.delete("nope = 1")
    assert len(table.snapshots()) == 1


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_overwrite_without_filter_replaces_everything(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    first = table.append(events(20))
    replacement = events(3, start=500)
    snap = table.overwrite(replacement)
    assert snap is not None and snap.summary.operation is Operation.OVERWRITE
    assert snap.summary.get("deleted-records") == "20" and snap.summary.get("added-records") == "3"
    assert snap.summary.get("total-records") == "3"
    assert sorted_rows(table.scan().to_arrow()) == sorted_rows(replacement)
    assert first is not None and table.scan(snapshot_id=first.snapshot_id).count() == 20


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_overwrite_with_filter_replaces_only_matching_rows(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    data = events(20)
    table.append(data)
    untouched = file_paths(table, filter="region = 'us'")  # new_rows add a second 'us' file
    new_rows = events(2, start=900)
    snap = table.overwrite(new_rows, filter="region = 'eu' or id = 6")  # 'eu' file dropped, 'ap' rewritten
    assert snap is not None
    want = [r for r in sorted_rows(data) if r["region"] != "eu" and r["id"] != 6] + sorted_rows(new_rows)
    assert sorted_rows(table.scan().to_arrow()) == want
    assert file_paths(table, filter="region = 'us' and id < 100") == untouched
    assert snap.summary.get("total-records") == str(len(want))


def test_overwrite_with_empty_data_deletes_and_with_nothing_to_do_commits_nothing(
    catalog: InMemoryCatalog,
) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(10))
    snap = table.overwrite(events(0), filter="id >= 5")
    assert snap is not None and _ids(table.scan().to_arrow()) == [0, 1, 2, 3, 4]
    count = len(table.snapshots())
    assert table.overwrite(events(0), filter="id > 100") is None
    assert len(table.snapshots()) == count


def test_overwrite_rejects_non_arrow_data(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    with pytest.raises(ValidationError, match="pyarrow Table"):
        table.overwrite({"id": [1]})  # type: ignore[arg-type]


def test_v3_copy_on_write_keeps_row_ids_of_surviving_rows(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 3)
    table.append(events(6))

    def lineage() -> dict[int, tuple[int, int]]:
        got = table.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow().to_pylist()
        return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}

    before = lineage()
    table.delete("id = 2")  # rewrites the only file
    after = lineage()
    assert set(after) == {0, 1, 3, 4, 5}
    # Spec "Row Lineage": moved, unmodified rows keep _row_id and _last_updated_sequence_number.
    assert after == {k: v for k, v in before.items() if k != 2}
