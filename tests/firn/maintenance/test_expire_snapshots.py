"""expire_snapshots on real tables (SQLite catalog, Parquet/Avro/Puffin files on disk): options,
every format version, refs, gc.enabled, clean_expired_metadata, statistics, metadata JSON,
stale plans. Each expiry is checked against an independent walk of the snapshots."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn
from firn.catalog.sql import SqlCatalog
from firn.core.commit import SimpleAction
from firn.core.metadata_io import new_metadata_location, write_metadata
from firn.core.transaction import Transaction
from firn.core.updates import SetStatistics
from firn.deletes.puffin import PuffinBlob, write_puffin
from firn.errors import StalePlan, ValidationError
from firn.maintenance import ExpireSnapshotsPlan, ExpireSnapshotsResult, LocalRunner, MaintenancePlan
from firn.maintenance.expire_files import REACHABLE, _incremental, _reachable, linear_history
from firn.maintenance.reachability import FILE_KINDS
from firn.spec.snapshots import BlobMetadata, PartitionStatisticsFile, StatisticsFile
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.maintenance import (
    assert_expiry_safe,
    files_by_snapshot,
    files_on_disk,
    rows,
    rows_by_snapshot,
    soon_ms,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def _batch(start: int, n: int = 10) -> pa.Table:
    return pa.table({"id": range(start, start + n), "g": ["a", "b"] * (n // 2)}, schema=SCHEMA)


def _table(catalog: SqlCatalog, version: int, name: str = "t", **props: str) -> Table:
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    mode = {"write.delete.mode": "merge-on-read"} if version >= 2 else {}
    return catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        partition_spec=[("g", "identity")],
        properties={"format-version": str(version), **mode, **props},
    )


def _history(t: Table, appends: int = 4) -> None:
    for i in range(appends):
        t.append(_batch(10 * i))
    t.delete("id < 5")  # position deletes / DVs (copy-on-write on v1)
    t.overwrite(_batch(1000, 4), filter=firn.col("id") >= 10 * appends - 5)
    t.append(_batch(5000, 2))


def _snapshot(t: Table) -> tuple[dict[int, set[str]], dict[int, list[dict[str, Any]]], set[str]]:
    return files_by_snapshot(t), rows_by_snapshot(t), files_on_disk(t.location)


def _no_leftovers(t: Table) -> None:
    """Nothing unreachable is left: a full orphan scan finds nothing (checks expiry is complete
    with the other strategy's code path: the full reachability walk)."""
    plan = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
    assert plan.orphans == (), [o.path for o in plan.orphans]


# -- options -----------------------------------------------------------------------------------------
def test_defaults_come_from_table_properties(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 2)
    plan = t.maintenance.expire_snapshots().plan()
    # Everything is younger than the default 5 days: nothing expires.
    assert plan.is_noop and plan.expire_snapshot_ids == ()
    assert plan.retain_last == 1 and abs(plan.older_than_ms - (plan.now_ms - 5 * 24 * 3600 * 1000)) < 5
    assert "nothing to do" in str(plan)
    t.set_properties({"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "3"})
    plan = t.maintenance.expire_snapshots().plan()
    assert plan.retain_last == 3 and plan.retained_snapshots == 3
    assert len(plan.expire_snapshot_ids) == len(t.snapshots()) - 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"older": 1}, "expire_snapshots has no option 'older'; valid options: clean-expired-metadata"),
        ({"retain_last": 0}, "retain_last must be at least 1"),
        ({"max_concurrent_deletes": 0}, "max_concurrent_deletes must be at least 1"),
        ({"older_than": dt.datetime(2024, 1, 1)}, "timezone-aware"),
        ({"snapshot_ids": "x"}, "must be an integer"),
    ],
)
def test_bad_options_are_clear_errors(
    sqlite_catalog: SqlCatalog, options: dict[str, Any], message: str
) -> None:
    t = _table(sqlite_catalog, 2)
    with pytest.raises(ValidationError, match=message):
        t.maintenance.expire_snapshots(**options)


def test_snapshot_ids_cannot_name_a_ref_head(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 2)
    head = t.current_snapshot()
    assert head is not None
    with pytest.raises(ValidationError, match=r"refs \['main'\] point at it"):
        t.maintenance.expire_snapshots(snapshot_ids=[head.snapshot_id]).plan()
    first = t.snapshots()[0].snapshot_id
    plan = t.maintenance.expire_snapshots(snapshot_ids=[first, 42]).plan()
    assert plan.expire_snapshot_ids == (first,)
    assert plan.skipped[0].item == "snapshot 42"
    result = plan.execute(t)
    assert result.expired_snapshot_ids == (first,) and t.snapshot_by_id(first) is None


# -- every format version ------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_expiry_deletes_exactly_what_only_expired_snapshots_reach(
    sqlite_catalog: SqlCatalog, version: int
) -> None:
    t = _table(sqlite_catalog, version)
    _history(t)
    before = _snapshot(t)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).plan()
    assert plan.strategy == "incremental" and len(plan.expire_snapshot_ids) == len(t.snapshots()) - 2
    assert plan.paths_complete
    listed = {p for g in plan.files.values() for p in g.paths}
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
    deleted = assert_expiry_safe(t, *before)
    assert deleted == listed
    assert sum(result.deleted_files.values()) == len(deleted)
    assert result.deleted_bytes_total == sum(g.bytes for g in plan.files.values())
    assert result.deleted_data_files_count == plan.files["data_files"].count > 0
    assert set(result.expired_snapshot_ids) == set(plan.expire_snapshot_ids)
    assert len(t.snapshots()) == 2
    _no_leftovers(t)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_incremental_and_reachable_strategies_agree(sqlite_catalog: SqlCatalog, version: int) -> None:
    t = _table(sqlite_catalog, version)
    _history(t, 5)
    if version == 4:
        t.maintenance.flush_root(force=True).run()
        t.delete("g = 'a' and id < 20")  # removes whole files from leaves: manifest DVs
        t.append(_batch(2000))
    md = t.metadata
    for keep in (1, 3):
        chain = linear_history(
            md, frozenset(s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id)[keep:])
        )
        assert chain is not None
        expired = frozenset(s.snapshot_id for s in chain[keep:])
        incremental = _incremental(t.io, md, chain, keep).files
        reachable = _reachable(t.io, md, expired).files
        assert {k: set(v) for k, v in incremental.items()} == {k: set(v) for k, v in reachable.items()}


def test_v3_puffin_is_deleted_only_when_no_retained_dv_lives_in_it(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 3)
    t.append(_batch(0, 20))  # two data files (a, b)
    t.delete("id in (0, 1)")  # one Puffin with a DV for each data file
    shared = {d.file_path for task in t.scan().plan_files() for d in task.delete_files}
    assert len(shared) == 1
    t.delete("id = 2")  # a new DV for file a only; file b's DV still lives in the shared Puffin
    before = _snapshot(t)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    deleted = assert_expiry_safe(t, *before)
    assert not (deleted & shared) and result.deleted_files.get("puffin_files", 0) == 0
    t.delete("id = 3")  # now file b's DV moves too: nothing live is left in the shared Puffin
    before = _snapshot(t)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    deleted = assert_expiry_safe(t, *before)
    assert shared <= deleted and result.deleted_files["puffin_files"] >= 1
    _no_leftovers(t)


def test_v4_leaves_manifest_dvs_and_roots(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 4, **{"write.manifest-dv.inline-max-bytes": "0"})  # manifest DVs in Puffin
    for i in range(4):
        t.append(_batch(10 * i))
    t.maintenance.flush_root(force=True).run()
    t.delete("g = 'a' and id < 20")  # whole files in a leaf: a manifest DV
    t.delete("id = 31")  # a DV
    t.maintenance.flush_root(force=True).run()  # folds the manifest DV: the old leaf is dropped
    t.append(_batch(500))
    before = _snapshot(t)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.files["root_manifests"].count == len(t.snapshots()) - 1
    assert plan.files["leaf_manifests"].count >= 1 and plan.files["manifest_dv_files"].count >= 1
    result = plan.execute(t)
    deleted = assert_expiry_safe(t, *before)
    assert deleted == {p for g in plan.files.values() for p in g.paths}
    assert result.deleted_files["leaf_manifests"] >= 1
    _no_leftovers(t)


def test_v2_table_upgraded_to_v4(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 3)
    t.upgrade(format_version=4)
    t.delete("g = 'b' and id < 20")  # removes files that live in legacy Avro manifests: manifest DVs
    t.append(_batch(700))
    t.delete("id = 701")
    before = _snapshot(t)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    deleted = assert_expiry_safe(t, *before)
    assert result.strategy == "incremental"
    assert result.deleted_files["manifest_lists"] >= 1 and result.deleted_files["root_manifests"] >= 1
    assert result.deleted_files["manifests"] >= 1 and deleted
    _no_leftovers(t)


# -- refs ------------------------------------------------------------------------------------------------
def test_tags_and_branches_keep_their_snapshots(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    t.append(_batch(0))
    tagged = t.current_snapshot()
    assert tagged is not None
    t.append(_batch(10))
    with t.manage_snapshots() as refs:
        refs.create_tag("v1", tagged.snapshot_id)
        refs.create_branch("dev", t.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    t.append(_batch(100), branch="dev")
    t.append(_batch(200), branch="dev")
    t.delete("id < 5")
    t.append(_batch(20))
    before = _snapshot(t)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.strategy == REACHABLE  # a branch off main: the full walk
    result = plan.execute(t)
    assert_expiry_safe(t, *before)
    kept = {s.snapshot_id for s in t.snapshots()}
    assert tagged.snapshot_id in kept
    assert t.refs()["dev"].snapshot_id in kept and len(kept) == 3  # main head, dev head, the tag
    assert result.deleted_files
    assert rows(t, tagged.snapshot_id) == before[1][tagged.snapshot_id]
    _no_leftovers(t)


def test_ref_retention_settings_are_honoured(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    t.append(_batch(0))
    old = t.current_snapshot()
    assert old is not None
    with t.manage_snapshots() as refs:
        refs.create_tag("short", old.snapshot_id, max_ref_age_ms=1)
        refs.create_branch("keep3", old.snapshot_id, min_snapshots_to_keep=3)
    for i in range(4):
        t.append(_batch(100 + 10 * i), branch="keep3")
        t.append(_batch(1000 + 10 * i))
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.expire_refs == ("short",)
    before = _snapshot(t)
    result = plan.execute(t)
    assert_expiry_safe(t, *before)
    assert "short" not in t.refs() and result.expired_refs == ("short",)
    keep3 = t.refs()["keep3"].snapshot_id
    assert len(t.metadata.ancestors_of(keep3)) == 3  # min-snapshots-to-keep of the branch
    assert len(t.metadata.ancestors_of(t.current_snapshot().snapshot_id)) == 1  # type: ignore[union-attr]
    _no_leftovers(t)


def test_a_branch_s_max_snapshot_age_ms_overrides_older_than(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    t.append(_batch(0))
    base = t.current_snapshot()
    assert base is not None
    with t.manage_snapshots() as refs:
        refs.create_branch("recent", base.snapshot_id, max_snapshot_age_ms=3_600_000)  # one hour
        refs.create_branch("plain", base.snapshot_id)
    for i in range(3):
        t.append(_batch(100 + 10 * i), branch="recent")
        t.append(_batch(200 + 10 * i), branch="plain")
        t.append(_batch(1000 + 10 * i))
    before = _snapshot(t)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert_expiry_safe(t, *before)
    # Every ancestor of "recent" is younger than its own hour: all kept, whatever older_than.
    assert len(t.metadata.ancestors_of(t.refs()["recent"].snapshot_id)) == 4
    # "plain" and main fall back to older_than / retain_last.
    assert len(t.metadata.ancestors_of(t.refs()["plain"].snapshot_id)) == 1
    assert len(t.metadata.ancestors_of(t.current_snapshot().snapshot_id)) == 1  # type: ignore[union-attr]
    assert base.snapshot_id not in result.expired_snapshot_ids  # an ancestor of "recent"
    # The table default applies to refs without their own setting.
    t.set_properties({"history.expire.max-ref-age-ms": "1"})
    again = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert set(again.expire_refs) == {"plain", "recent"}
    _no_leftovers(t)


# -- gc, metadata, statistics -----------------------------------------------------------------------
def test_gc_disabled_is_metadata_only(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2, **{"gc.enabled": "false"})
    _history(t)
    disk = files_on_disk(t.location)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert not plan.gc_enabled and plan.files == {} and "gc.enabled=false: metadata only" in str(plan)
    result = plan.execute(t)
    assert len(t.snapshots()) == 1 and result.expired_snapshot_ids
    assert result.deleted_files == {} and any("gc.enabled=false" in s.reason for s in result.skipped)
    assert disk <= files_on_disk(t.location)  # nothing deleted (one metadata JSON added)


def _evolved(catalog: SqlCatalog, version: int, name: str) -> Table:
    t = _table(catalog, version, name=name)
    t.append(_batch(0))
    with t.update_schema() as u:
        u.add_column("note", StringType())
    with t.update_spec() as u:
        u.remove_field("g")
    t.append(pa.table({"id": [500], "g": ["z"], "note": ["n"]}))
    t.overwrite(pa.table({"id": [501], "g": ["z"], "note": ["n"]}), filter=firn.col("id") < 100)
    t.append(pa.table({"id": [502], "g": ["z"], "note": ["n"]}))
    return t


def test_clean_expired_metadata_removes_unused_specs_and_schemas(sqlite_catalog: SqlCatalog) -> None:
    t = _evolved(sqlite_catalog, 4, "t")
    old_schema = t.metadata.schemas[0].schema_id
    old_spec = t.metadata.partition_specs[0].spec_id
    plan = t.maintenance.expire_snapshots(
        older_than=soon_ms(), retain_last=1, clean_expired_metadata=True
    ).plan()
    assert plan.remove_spec_ids == (old_spec,) and plan.remove_schema_ids == (old_schema,)
    result = plan.execute(t)
    assert result.removed_spec_ids == (old_spec,) and result.removed_schema_ids == (old_schema,)
    assert [s.spec_id for s in t.metadata.partition_specs] == [t.metadata.default_spec_id]
    assert [s.schema_id for s in t.metadata.schemas] == [t.metadata.current_schema_id]
    assert rows(t) == [{"id": i, "g": "z", "note": "n"} for i in (500, 501, 502)]
    # Without the option they stay.
    t2 = _evolved(sqlite_catalog, 4, "t2")
    assert t2.maintenance.expire_snapshots(older_than=soon_ms()).plan().remove_spec_ids == ()


def test_clean_expired_metadata_keeps_a_spec_a_retained_manifest_uses(sqlite_catalog: SqlCatalog) -> None:
    # The v2 writer carries the manifest holding the old spec's DELETED entries forward, so
    # the retained snapshot still lists a manifest of spec 0 (Java keeps such a spec too).
    t = _evolved(sqlite_catalog, 2, "t")
    plan = t.maintenance.expire_snapshots(
        older_than=soon_ms(), retain_last=1, clean_expired_metadata=True
    ).plan()
    assert plan.remove_spec_ids == () and plan.remove_schema_ids == (t.metadata.schemas[0].schema_id,)
    plan.execute(t)
    assert len(t.metadata.partition_specs) == 2 and len(t.metadata.schemas) == 1


def _stats_file(t: Table, name: str, snapshot_id: int) -> StatisticsFile:
    path = f"{t.location}/metadata/{name}.stats"
    blob = PuffinBlob("apache-datasketches-theta-v1", b"\x00" * 16, fields=(1,), snapshot_id=snapshot_id)
    footer = write_puffin(t.io.new_output(path), [blob])
    size = t.io.new_input(path).length()
    meta = BlobMetadata("apache-datasketches-theta-v1", snapshot_id, 1, (1,))
    return StatisticsFile(snapshot_id, path, size, footer.footer_size_in_bytes, (meta,))


def test_statistics_files_of_expired_snapshots_go(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    t.append(_batch(0))
    first = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    t.append(_batch(10))
    second = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    old_stats, new_stats = _stats_file(t, "old", first), _stats_file(t, "new", second)
    Transaction(t).add_action(
        SimpleAction(lambda base: ([SetStatistics(old_stats), SetStatistics(new_stats)], []))
    ).commit()
    # Partition statistics have no Firn writer: register them as another engine would, with a
    # metadata file of its own swapped in through the catalog.
    pstats = f"{t.location}/metadata/partition-stats-{first}.parquet"
    t.io.new_output(pstats).write(b"partition statistics of the first snapshot")
    md = dataclasses.replace(t.metadata, partition_statistics=(PartitionStatisticsFile(first, pstats, 42),))
    location = new_metadata_location(md, t.metadata_location)
    write_metadata(t.io, md, location)
    sqlite_catalog.swap_metadata_location("db.t", t.metadata_location, location, md)
    t.refresh()
    # Orphan removal knows them as referenced (they hang off the metadata, not a snapshot).
    orphans = {
        o.path for o in t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan().orphans
    }
    assert not orphans & {old_stats.statistics_path, new_stats.statistics_path, pstats}
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.files["statistics_files"].paths == (old_stats.statistics_path,)
    assert plan.files["partition_statistics_files"].paths == (pstats,)
    result = plan.execute(t)
    assert result.deleted_statistics_files_count == 2
    assert not t.io.new_input(old_stats.statistics_path).exists() and not t.io.new_input(pstats).exists()
    assert t.io.new_input(new_stats.statistics_path).exists()
    assert [s.snapshot_id for s in t.metadata.statistics] == [
        second
    ] and t.metadata.partition_statistics == ()


def test_metadata_json_beyond_previous_versions_max(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 3)
    logged = [e.metadata_file for e in t.metadata.metadata_log]
    t.set_properties(
        {
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": str(len(logged)),
        }
    )
    logged = [e.metadata_file for e in t.metadata.metadata_log]  # the property commit trimmed one
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.files["metadata_files"].paths == (logged[0],)
    result = plan.execute(t)
    assert result.deleted_files["metadata_files"] == 1
    assert not t.io.new_input(logged[0]).exists() and t.io.new_input(logged[1]).exists()
    assert len(t.metadata.metadata_log) == len(logged)


# -- plans -----------------------------------------------------------------------------------------------
def test_plan_json_round_trip_and_execution_elsewhere(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    t = _table(sqlite_catalog, 3)
    _history(t)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).plan()
    again = MaintenancePlan.from_json(plan.to_json())
    assert isinstance(again, ExpireSnapshotsPlan) and again == plan
    other = SqlCatalog("test", f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    result = again.execute(other.load_table("db.t"), LocalRunner(max_workers=2))
    assert isinstance(result, ExpireSnapshotsResult)
    assert ExpireSnapshotsResult.from_dict(result.to_dict()) == result
    assert (
        set(result.deleted_files) <= set(FILE_KINDS) and result.to_dict()["operation"] == "expire_snapshots"
    )


def test_a_plan_made_before_other_commits_is_re_evaluated(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 3)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    doomed = plan.expire_snapshot_ids[0]
    other = sqlite_catalog.load_table("db.t")
    other.append(_batch(300))  # main moves: the plan's base is stale
    with other.manage_snapshots() as refs:
        refs.create_tag("hold", doomed)  # and one planned snapshot is now tagged
    before = _snapshot(other)
    result = plan.execute(t)
    assert doomed not in result.expired_snapshot_ids
    assert any(s.item == f"snapshot {doomed}" for s in result.skipped)
    assert len(result.expired_snapshot_ids) == len(plan.expire_snapshot_ids) - 1
    assert_expiry_safe(other, *before)
    assert other.refresh().current_snapshot().snapshot_id in {s.snapshot_id for s in other.snapshots()}  # type: ignore[union-attr]
    assert rows(other) == before[1][other.current_snapshot().snapshot_id]  # type: ignore[union-attr]
    _no_leftovers(other)


def test_a_plan_for_a_replaced_table_is_stale(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t, 2)
    plan = t.maintenance.expire_snapshots(older_than=soon_ms()).plan()
    sqlite_catalog.drop_table("db.t")
    again = _table(sqlite_catalog, 2)
    again.append(_batch(0))
    with pytest.raises(StalePlan, match="was made for table UUID"):
        plan.execute(again)


def test_max_concurrent_deletes_splits_the_work(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog, 2)
    _history(t)
    op = t.maintenance.expire_snapshots(older_than=soon_ms(), max_concurrent_deletes=3)
    plan = op.plan()
    runner = plan.default_runner()
    assert isinstance(runner, LocalRunner) and runner.max_workers == 3
    seen: list[int] = []

    class Counting(LocalRunner):
        def map(self, fn, units):  # type: ignore[no-untyped-def]
            seen.append(len(units))
            return super().map(fn, units)

    result = plan.execute(t, Counting(max_workers=3))
    assert seen and seen[-1] >= 3 and result.deleted_files_count > 0
