"""table.append: partitioned writes with every transform, snapshots and summaries, row lineage,
branches, manifest merging, and input validation (format versions 1-3)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.core.legacy.reader import snapshot_manifests
from firn.errors import ValidationError
from firn.io.arrow_schema import arrow_scalar_to_internal
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, events, make_events_table, sorted_rows

SPECS: dict[str, list[tuple[str, str]]] = {
    "identity": [("region", "identity")],
    "bucket": [("id", "bucket[4]")],
    "truncate": [("name", "truncate[6]"), ("id", "truncate[10]")],
    "year": [("ts", "year")],
    "month": [("day", "month")],
    "day": [("ts", "day")],
    "hour": [("ts", "hour")],
    "void": [("region", "void")],
    "several": [("region", "identity"), ("ts", "day"), ("id", "bucket[4]")],
}


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _expected_partitions(table: Table, data: pa.Table) -> Counter[tuple[Any, ...]]:
    """Rows per partition tuple, computed row by row with the spec's transforms."""
    spec, schema = table.spec(), table.schema()
    out: Counter[tuple[Any, ...]] = Counter()
    for i in range(data.num_rows):
        key = []
        for pf in spec.fields:
            src = schema.find_field(pf.source_id)
            value = arrow_scalar_to_internal(src.field_type, data.column(src.name)[i])
            key.append(pf.transform.apply(src.field_type, value))
        out[tuple(key)] += 1
    return out


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
@pytest.mark.parametrize("spec", sorted(SPECS))
def test_append_partitions_rows_and_reads_them_back(
    catalog: InMemoryCatalog, version: int, spec: str
) -> None:
    table = make_events_table(catalog, version, partition_spec=SPECS[spec])
    data = events(40)
    snap = table.append(data)
    assert snap is not None and snap.summary.operation is Operation.APPEND
    assert sorted_rows(table.scan().to_arrow()) == sorted_rows(data)

    # One file per partition, each holding exactly the rows that map to its tuple.
    tasks = table.scan().plan_files()
    wanted = _expected_partitions(table, data)
    assert Counter({t.file.partition: t.file.record_count for t in tasks}) == wanted
    assert len(tasks) == len(wanted)
    rows = table.scan(columns=["_file", *data.schema.names]).to_arrow()
    for task in tasks:
        mine = rows.filter(pc.equal(rows.column("_file"), task.file.file_path)).drop_columns(["_file"])
        assert _expected_partitions(table, mine) == Counter({task.file.partition: task.file.record_count})


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_void_partition_is_null_and_single_file(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "void")])
    table.append(events(12))
    (task,) = table.scan().plan_files()
    assert task.file.partition == (None,)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_snapshots_chain_with_summaries_and_sequence_numbers(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    s1 = table.append(events(8))
    s2 = table.append(events(4, start=100))
    s3 = table.append(events(1, start=200))
    assert s1 is not None and s2 is not None and s3 is not None
    assert [s.snapshot_id for s in table.snapshots()] == [s1.snapshot_id, s2.snapshot_id, s3.snapshot_id]
    assert (s1.parent_snapshot_id, s2.parent_snapshot_id, s3.parent_snapshot_id) == (
        None,
        s1.snapshot_id,
        s2.snapshot_id,
    )
    assert table.current_snapshot() == s3
    if version == 1:
        assert [s.sequence_number for s in (s1, s2, s3)] == [0, 0, 0]
    else:
        assert [s.sequence_number for s in (s1, s2, s3)] == [1, 2, 3]
        assert table.metadata.last_sequence_number == 3
    # Appendix F summary metrics: added-* per snapshot, total-* running.
    assert s1.summary.get("added-records") == "8" and s1.summary.get("total-records") == "8"
    assert s1.summary.get("added-data-files") == "4" and s1.summary.get("total-data-files") == "4"
    assert s2.summary.get("added-records") == "4" and s2.summary.get("total-records") == "12"
    assert s2.summary.get("total-data-files") == "8"
    assert s3.summary.get("total-records") == "13" and s3.summary.get("total-data-files") == "9"
    assert s3.summary.get("changed-partition-count") == "1"
    sizes = sum(t.file.file_size_in_bytes for t in table.scan().plan_files())
    assert s3.summary.get("total-files-size") == str(sizes)
    assert s3.summary.get("total-delete-files") == "0"


def test_snapshot_properties_land_in_the_summary(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    snap = table.append(events(3), snapshot_properties={"writer": "etl-42"})
    assert snap is not None and snap.summary.get("writer") == "etl-42"


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_empty_append_commits_nothing(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    location = table.metadata_location
    assert table.append(events(0)) is None
    assert table.snapshots() == [] and table.metadata_location == location


def test_v3_assigns_row_ids_and_next_row_id(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 3, partition_spec=[("region", "identity")])
    s1 = table.append(events(10))
    s2 = table.append(events(5, start=10))
    assert s1 is not None and s2 is not None
    assert (s1.first_row_id, s1.added_rows) == (0, 10)
    assert (s2.first_row_id, s2.added_rows) == (10, 5)
    assert table.metadata.next_row_id == 15
    got = table.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow().to_pylist()
    by_snapshot = {r["id"]: r for r in got}
    assert sorted(r["_row_id"] for r in got) == list(range(15))
    assert {by_snapshot[i]["_row_id"] for i in range(10)} == set(range(10))
    assert {by_snapshot[i]["_last_updated_sequence_number"] for i in range(10)} == {1}
    assert {by_snapshot[i]["_last_updated_sequence_number"] for i in range(10, 15)} == {2}


@pytest.mark.parametrize("version", [1, 2])
def test_pre_v3_snapshots_have_no_row_lineage(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    snap = table.append(events(3))
    assert snap is not None and snap.first_row_id is None and snap.added_rows is None
    assert table.metadata.next_row_id is None
    with pytest.raises(ValidationError, match="format version 3"):
        table.scan(columns=["_row_id"])


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_append_to_a_branch_leaves_main_alone(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    main = table.append(events(3))
    dev = table.append(events(2, start=50), branch="dev")
    assert main is not None and dev is not None
    assert table.current_snapshot() == main
    assert dev.parent_snapshot_id == main.snapshot_id  # a new branch starts at main
    assert sorted(table.scan(ref="dev").to_arrow().column("id").to_pylist()) == [0, 1, 2, 50, 51]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert table.refs()["dev"].snapshot_id == dev.snapshot_id


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_manifests_merge_after_min_count(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, properties={"commit.manifest.min-count-to-merge": "4"})
    counts, summaries = [], []
    for i in range(9):
        snap = table.append(events(2, start=10 * i))
        assert snap is not None
        counts.append(len(snapshot_manifests(table.io, snap)))
        summaries.append(snap.summary)
    # Java's merge append: once the new manifest and the small ones reach the minimum count
    # (all fit one 8 MiB bin), they are merged into a single manifest.
    assert counts == [1, 2, 3, 1, 2, 3, 1, 2, 3]
    assert summaries[3].get("manifests-replaced") == "4" and summaries[3].get("manifests-created") == "1"
    assert summaries[4].get("manifests-replaced") == "0" and summaries[4].get("manifests-kept") == "1"
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == sorted(
        10 * i + k for i in range(9) for k in range(2)
    )


def test_v3_row_ids_survive_manifest_merges(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 3, properties={"commit.manifest.min-count-to-merge": "3"})

    def row_ids() -> dict[int, int]:
        got = table.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()
        return {r["id"]: r["_row_id"] for r in got}

    table.append(events(2))
    table.append(events(2, start=10))
    before = row_ids()
    table.append(events(2, start=20))  # merges all three manifests
    assert len(snapshot_manifests(table.io, table.current_snapshot())) == 1
    after = row_ids()
    assert {k: after[k] for k in before} == before
    assert len(set(after.values())) == 6
    assert table.metadata.next_row_id is not None and table.metadata.next_row_id > max(after.values())


def test_merged_manifest_keeps_entries_existing_with_their_snapshot(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, properties={"commit.manifest.min-count-to-merge": "2"})
    s1 = table.append(events(2))
    s2 = table.append(events(2, start=10))
    assert s1 is not None and s2 is not None
    (merged,) = snapshot_manifests(table.io, s2)
    assert merged.added_files_count == 1 and merged.existing_files_count == 1
    seqs = sorted(t.data_sequence_number for t in table.scan().plan_files())
    assert seqs == [1, 2]  # the old file keeps its data sequence number through the merge


def test_merging_disabled_keeps_one_manifest_per_append(catalog: InMemoryCatalog) -> None:
    table = make_events_table(
        catalog,
        2,
        properties={"commit.manifest-merge.enabled": "false", "commit.manifest.min-count-to-merge": "2"},
    )
    for i in range(5):
        table.append(events(1, start=i))
    assert len(snapshot_manifests(table.io, table.current_snapshot())) == 5


def test_target_file_size_splits_a_partition(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, properties={"write.target-file-size-bytes": "2000"})
    data = events(3000)
    table.append(data)
    tasks = table.scan().plan_files()
    assert len(tasks) > 1
    assert sum(t.file.record_count for t in tasks) == 3000
    assert sorted_rows(table.scan().to_arrow()) == sorted_rows(data)


def test_append_rejects_wrong_input(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    with pytest.raises(ValidationError, match="pyarrow Table"):
        table.append([{"id": 1}])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        table.append(pa.table({"id": pa.array(["not a number"])}))
    with pytest.raises(ValidationError):
        table.append(pa.table({"nope": pa.array([1])}))
    nulls = events(2).set_column(0, "id", pa.array([None, 1], pa.int64()))
    with pytest.raises(ValidationError, match="id"):
        table.append(nulls)  # id is required
    assert table.snapshots() == []


def test_append_accepts_a_subset_of_optional_columns(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(pa.table({"id": pa.array([7], pa.int64()), "name": ["only"]}))
    (row,) = table.scan().to_arrow().to_pylist()
    assert row["id"] == 7 and row["name"] == "only" and row["region"] is None and row["tags"] is None
