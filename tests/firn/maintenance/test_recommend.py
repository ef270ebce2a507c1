"""``recommend()``: each rule fires at its threshold and not below it, in nightly order, with
runnable options; end to end, a recommended operation runs by name and is then satisfied."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.maintenance import Estimate, Recommendation, TableHealth
from firn.maintenance.operations import NIGHTLY_ORDER
from firn.maintenance.recommend import ORPHAN_MIN_AGE_MS, recommend
from tests.fixtures.row_deletes import ROWS_SCHEMA, make_table, rows

DAY = 86_400_000
MB = 1024 * 1024
BRIEFING_OPERATIONS = {
    "rewrite_deletion_vectors",
    "rewrite_data_files",
    "flush_root",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
}

HEALTHY = TableHealth(
    table="db.t",
    format_version=3,
    snapshot_id=1,
    measured_at_ms=100 * DAY,
    snapshots=10,
    oldest_snapshot_age_ms=DAY,
    last_commit_ms=100 * DAY,
    records=1_000_000,
    data_files=100,
    data_bytes=100 * 500 * MB,
    small_files=5,
    target_file_size_bytes=512 * MB,
    delete_files=0,
    deletion_vectors=0,
    position_delete_files=0,
    equality_delete_files=0,
    position_deletes=0,
    equality_deletes=0,
    delete_ratio=0.0,
    manifests=10,
    small_manifests=10,
)


def ops(h: TableHealth, props: dict[str, str] | None = None) -> list[str]:
    return [r.operation for r in recommend(h, props or {})]


def one(h: TableHealth, operation: str, props: dict[str, str] | None = None) -> Recommendation:
    [r] = [r for r in recommend(h, props or {}) if r.operation == operation]
    return r


def test_a_healthy_table_needs_nothing() -> None:
    assert ops(HEALTHY) == []
    assert ops(dataclasses.replace(HEALTHY, snapshot_id=None, snapshots=0)) == []


def test_compaction_at_the_small_file_thresholds() -> None:
    h = dataclasses.replace(HEALTHY, data_files=400, small_files=100, data_bytes=300 * 500 * MB + 100 * MB)
    r = one(h, "rewrite_data_files")
    assert "100 of 400 data files" in r.reason and "maintenance.compact.min-small-files = 100" in r.reason
    assert r.options == {"min-input-files": 2}
    # Some files are large, so the small files' bytes are bounded, not known: at most what
    # the large files (each at least 384 MB) leave, 150,100 - 300 x 384 MB, which fits in 69
    # output files. The true figure (100 MB, one output file) is below the bound.
    assert r.estimate.bytes == 150_100 * MB - 300 * 384 * MB >= 100 * MB
    assert r.estimate.files_removed == 100 - 69 and r.estimate.planning_entries_saved == 31
    # Every file small: the estimate is exact.
    tiny = dataclasses.replace(HEALTHY, data_files=100, small_files=100, data_bytes=100 * MB)
    assert one(tiny, "rewrite_data_files").estimate == Estimate(
        files_removed=99, bytes=100 * MB, planning_entries_saved=99
    )
    assert ops(dataclasses.replace(h, small_files=99)) == []  # below the count
    assert ops(dataclasses.replace(h, data_files=1001)) == []  # below the ratio (0.1)
    assert ops(h, {"maintenance.compact.min-small-files": "101"}) == []
    assert ops(dataclasses.replace(h, small_files=20), {"maintenance.compact.min-small-files": "20"}) == []
    assert ops(
        dataclasses.replace(h, small_files=20),
        {"maintenance.compact.min-small-files": "20", "maintenance.compact.min-small-file-ratio": "0.05"},
    ) == ["rewrite_data_files"]


def test_a_high_delete_ratio_recommends_compaction_of_the_files_over_it() -> None:
    deletes = dataclasses.replace(
        HEALTHY, delete_files=40, deletion_vectors=40, position_deletes=100_000, delete_ratio=0.1
    )
    # Not the DV rewrite, which never lowers the ratio (issue 20): compaction of the files
    # whose deleted share reaches the table's own threshold, then the dangling deletes.
    assert ops(deletes) == ["rewrite_data_files"]
    r = one(deletes, "rewrite_data_files")
    assert "10.0% of rows are deleted" in r.reason and "deleted share is at least 0.1" in r.reason
    assert r.options == {"delete-ratio-threshold": 0.1, "remove-dangling-deletes": True}
    assert r.estimate.bytes == deletes.data_bytes and r.estimate.files_removed == 1
    assert ops(dataclasses.replace(deletes, delete_ratio=0.099)) == []
    lower = one(deletes, "rewrite_data_files", {"maintenance.rewrite-dvs.min-delete-ratio": "0.05"})
    assert lower.options["delete-ratio-threshold"] == 0.05
    # v2 position delete files (partition-scoped ones name no single file): every file they
    # apply to is rewritten, and the merge is not recommended beside it.
    v2 = dataclasses.replace(deletes, format_version=2, deletion_vectors=0, position_delete_files=40)
    assert ops(v2) == ["rewrite_data_files"]
    assert one(v2, "rewrite_data_files").options["delete-file-threshold"] == 1
    assert one(v2, "rewrite_data_files").estimate.files_removed == 40


def test_position_delete_files_are_merged_or_converted() -> None:
    # v2: position delete files, from 10 on; v3+: any, to convert into DVs.
    v2 = dataclasses.replace(HEALTHY, format_version=2, delete_files=10, position_delete_files=10)
    r = one(v2, "rewrite_deletion_vectors")
    assert "10 position delete files" in r.reason and r.estimate.files_removed == 9
    assert r.options == {"min-input-files": 2}
    assert ops(dataclasses.replace(v2, delete_files=9, position_delete_files=9)) == []
    v3 = dataclasses.replace(HEALTHY, delete_files=1, position_delete_files=1)
    assert "convert into deletion vectors" in one(v3, "rewrite_deletion_vectors").reason
    # DVs alone, below the ratio: nothing to merge, convert or compact.
    assert ops(dataclasses.replace(HEALTHY, delete_files=40, deletion_vectors=40, position_deletes=10)) == []


def test_equality_deletes_are_resolved_by_compaction() -> None:
    h = dataclasses.replace(HEALTHY, format_version=2, delete_files=10, equality_delete_files=10)
    r = one(h, "rewrite_data_files")
    assert r.options == {"delete-file-threshold": 1, "remove-dangling-deletes": True}
    assert "10 equality delete files" in r.reason
    assert r.estimate.files_removed == 10 and r.estimate.bytes == h.data_bytes


def test_flush_follows_the_root_thresholds() -> None:
    v4 = dataclasses.replace(
        HEALTHY,
        format_version=4,
        root_entries=250,
        root_bytes=20_000,
        root_data_files=201,
        root_delete_files=0,
        root_manifest_dvs=0,
    )
    r = one(v4, "flush_root")
    assert "201 data files (commit.root.max-data-files = 200)" in r.reason
    assert r.estimate.planning_entries_saved == 200 and r.estimate.bytes == 20_000  # 201 entries -> 1 leaf
    assert ops(dataclasses.replace(v4, root_data_files=200)) == []
    assert ops(dataclasses.replace(v4, root_data_files=5), {"commit.root.max-data-files": "4"}) == [
        "flush_root"
    ]
    folded = dataclasses.replace(v4, root_data_files=5, root_manifest_dvs=101)
    assert one(folded, "flush_root").estimate.planning_entries_saved == 101
    too_big = dataclasses.replace(v4, root_data_files=5, root_bytes=9 * MB)
    assert "commit.root.max-bytes" in one(too_big, "flush_root").reason
    assert "flush_root" not in ops(HEALTHY)  # not V4


def test_manifest_rewrite() -> None:
    h = dataclasses.replace(HEALTHY, manifests=150, small_manifests=100)
    r = one(h, "rewrite_manifests")
    assert "100 of 150 manifests are small" in r.reason and r.estimate.files_removed == 99
    assert ops(dataclasses.replace(h, small_manifests=99)) == []


def test_expiry_by_count_cap_and_by_age() -> None:
    many = dataclasses.replace(HEALTHY, snapshots=1500)
    r = one(many, "expire_snapshots")
    assert r.options == {"retain-last": 1000, "older-than": many.measured_at_ms}
    assert r.estimate.files_removed == 500 and r.estimate.planning_entries_saved == 500
    assert ops(many, {"maintenance.expire.max-snapshots": "0"}) == []  # cap off; all young
    old = dataclasses.replace(HEALTHY, oldest_snapshot_age_ms=6 * DAY)
    r = one(old, "expire_snapshots")
    assert r.options == {} and "6.0 days old" in r.reason and r.estimate.files_removed is None
    assert ops(old, {"history.expire.max-snapshot-age-ms": str(7 * DAY)}) == []
    assert ops(dataclasses.replace(old, snapshots=1)) == []  # min-snapshots-to-keep 1


def test_orphans_only_with_churn_an_old_enough_table_and_gc() -> None:
    churn = dataclasses.replace(HEALTHY, manifests=150, small_manifests=150, oldest_snapshot_age_ms=4 * DAY)
    assert ops(churn) == ["rewrite_manifests", "remove_orphan_files"]
    r = one(churn, "remove_orphan_files")
    assert r.options == {} and "rewrite_manifests recommended" in r.reason
    assert ops(dataclasses.replace(churn, oldest_snapshot_age_ms=ORPHAN_MIN_AGE_MS - 1)) == [
        "rewrite_manifests"
    ]
    assert ops(churn, {"gc.enabled": "false"}) == ["rewrite_manifests"]
    quiet = dataclasses.replace(HEALTHY, oldest_snapshot_age_ms=4 * DAY, snapshots=1)
    assert ops(quiet) == []


def test_everything_at_once_comes_in_nightly_order_and_serializes() -> None:
    h = dataclasses.replace(
        HEALTHY,
        format_version=4,
        snapshots=2000,
        oldest_snapshot_age_ms=30 * DAY,
        small_files=100,
        delete_files=30,
        position_delete_files=3,
        deletion_vectors=27,
        position_deletes=200_000,
        delete_ratio=0.2,
        small_manifests=200,
        manifests=200,
        root_entries=500,
        root_bytes=30_000,
        root_data_files=300,
        root_delete_files=0,
        root_manifest_dvs=0,
    )
    recs = recommend(h, {})
    # v3+ position delete files are converted by the DV rewrite; with a high ratio compaction
    # rewrites what they apply to instead, so the DV rewrite would be wasted work.
    assert [r.operation for r in recs] == [op for op in NIGHTLY_ORDER if op != "rewrite_deletion_vectors"]
    assert [r.operation for r in recommend(dataclasses.replace(h, delete_ratio=0.05), {})] == list(
        NIGHTLY_ORDER
    )
    assert {r.operation for r in recs} <= BRIEFING_OPERATIONS
    data = json.loads(json.dumps([r.to_dict() for r in recs]))
    assert [Recommendation.from_dict(d) for d in data] == recs
    assert set(data[0]) == {"operation", "reason", "options", "estimate"}
    assert set(data[0]["estimate"]) == {"files_removed", "bytes", "planning_entries_saved"}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("maintenance.compact.min-small-files", "many", "must be an integer"),
        ("maintenance.compact.min-small-file-ratio", "1.5", "between 0 and 1"),
        ("maintenance.rewrite-dvs.min-delete-ratio", "x", "must be a number"),
        ("maintenance.expire.max-snapshots", "-1", "must be >= 0"),
    ],
)
def test_malformed_thresholds_are_named(key: str, value: str, message: str) -> None:
    with pytest.raises(ValidationError, match=f"{key}.*{message}"):
        recommend(HEALTHY, {key: value})


# -- end to end on real tables ---------------------------------------------------------------------------
def _run_recommended(table: Any, operation: str) -> Any:
    [r] = [r for r in table.maintenance.recommend() if r.operation == operation]
    return table.maintenance.operation(r.operation, r.options).run()


def test_recommended_flush_runs_by_name_and_is_then_satisfied(sqlite_catalog: SqlCatalog) -> None:
    sqlite_catalog.create_namespace("db")
    t = sqlite_catalog.create_table(
        "db.v4", ROWS_SCHEMA, properties={"format-version": "4", "commit.root.max-data-files": "3"}
    )
    for i in range(5):
        t.append(rows([i]))
    assert [r.operation for r in t.maintenance.recommend()] == ["flush_root"]
    result = _run_recommended(t, "flush_root")
    assert result.data_files_moved == 5
    t.refresh()
    assert t.maintenance.recommend() == []
    assert t.health().root_data_files == 0


def test_real_table_small_files_and_snapshot_cap(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(
        sqlite_catalog,
        2,
        properties={"maintenance.compact.min-small-files": "5", "maintenance.expire.max-snapshots": "4"},
    )
    for i in range(6):
        t.append(rows([i]))
    recs = t.maintenance.recommend()
    assert [r.operation for r in recs] == ["rewrite_data_files", "expire_snapshots"]
    compact, expire = recs
    assert compact.estimate.files_removed == 5 and compact.estimate.bytes == t.health().data_bytes
    assert expire.options["retain-last"] == 4 and expire.estimate.files_removed == 2


def test_recommend_reads_pa_tables_only_through_health(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 3)
    t.append(pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"], "name": ["x"]}))
    assert t.maintenance.recommend() == recommend(t.health(), t.properties)
