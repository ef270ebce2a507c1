"""``rewrite_manifests``: v1-v3 manifests clustered by partition (Java's rules), V4 leaves
merged with their manifest DVs folded and data/delete affinity kept; EXISTING entries only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.legacy.reader import snapshot_manifests
from firn.core.v4.reader import live_mdvs, live_np, manifest_refs, read_leaf, root_table
from firn.errors import ValidationError
from firn.maintenance import MaintenancePlan
from firn.maintenance.rewrite_manifests import RewriteManifestsPlan
from firn.manifests.manifest import read_manifest
from firn.spec.content import EntryStatus, FileContent, ManifestContent
from firn.spec.snapshots import Operation
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.rewrites import MOR, HookRunner, fill, ids, lineage, make_table, rows_of

LEAVES = {"commit.root.max-added-files": "0"}  # V4 appends write one leaf each


def _entries(t: Table, content: ManifestContent = ManifestContent.DATA) -> list[tuple[Any, list[Any]]]:
    out = []
    for m in snapshot_manifests(t.io, t.current_snapshot()):
        if m.content is content:
            out.append((m, read_manifest(t.io.new_input(m.manifest_path), m, include_deleted=True)))
    return out


@pytest.mark.parametrize("version", ["1", "2", "3"])
def test_legacy_manifests_are_clustered_by_partition(sqlite_catalog: SqlCatalog, version: str) -> None:
    t = make_table(sqlite_catalog, version, properties=MOR if version != "1" else None)
    fill(t, version, appends=12, rows=20)
    if version != "1":
        t.delete("id in (3, 50, 101)")
    before = rows_of(t)
    before_lineage = lineage(t) if version == "3" else None
    total = sum(m.manifest_length for m, _ in _entries(t))
    t.set_properties({"commit.manifest.target-size-bytes": str(total // 3 + 1)})
    plan = t.maintenance.rewrite_manifests().plan()
    assert [g.output_manifests for g in plan.groups if g.content == "data"] == [3]
    result = plan.execute(t)
    assert result.rewritten_manifests_count >= 12 and result.entries_rewritten >= 48
    assert t.current_snapshot().summary.operation is Operation.REPLACE
    assert rows_of(t) == before
    if before_lineage is not None:
        assert lineage(t) == before_lineage
    data = _entries(t)
    assert len(data) == 3
    regions: list[set[Any]] = []
    for m, entries in data:
        assert all(e.status is EntryStatus.EXISTING for e in entries)
        assert m.added_snapshot_id == t.current_snapshot().snapshot_id
        regions.append({e.data_file.partition for e in entries})
    # Clustered: each partition lives in one manifest (4 regions over 3 manifests).
    assert sum(len(r) for r in regions) == 4 and set().union(*regions) == {("eu",), ("us",), ("ap",), (None,)}
    # Java rewrites whenever more than one manifest would result or be read: 3 small ones -> 1.
    (again,) = t.maintenance.rewrite_manifests().plan().groups
    assert len(again.manifests) == 3 and again.output_manifests == 1


def test_sort_by_clusters_by_the_chosen_fields(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2", partition_spec=[("region", "identity"), ("id", "bucket[2]")])
    fill(t, "2", appends=6, rows=20)
    total = sum(m.manifest_length for m, _ in _entries(t))
    t.set_properties({"commit.manifest.target-size-bytes": str(total // 2 + 1)})
    with pytest.raises(ValidationError, match=r"sort_by \['nope'\] are not partition fields"):
        t.maintenance.rewrite_manifests(sort_by=["nope"]).plan()
    t.maintenance.rewrite_manifests(sort_by="id_bucket_2").run()
    buckets = [{e.data_file.partition[1] for e in entries} for _, entries in _entries(t)]
    assert sorted(map(sorted, buckets)) == [[0], [1]]
    with pytest.raises(ValidationError, match="has no partition spec 5"):
        t.maintenance.rewrite_manifests(spec_id=5).plan()


def test_one_manifest_is_left_alone(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "2")
    fill(t, "2", appends=1, rows=20)
    plan = t.maintenance.rewrite_manifests(use_caching=True).plan()
    assert plan.is_noop and "one manifest" in str(plan)
    assert plan.execute(t).snapshot_id is None


def _v4_tree(t: Table) -> tuple[Any, list[Any], dict[str, Any]]:
    root = root_table(t.io, t.metadata, t.current_snapshot())
    return root, manifest_refs(root), live_mdvs(t.io, root)


@pytest.mark.parametrize("version", ["4", "4u"])
def test_v4_leaves_are_merged_with_manifest_dvs_folded_and_affinity_kept(
    sqlite_catalog: SqlCatalog, version: str
) -> None:
    t = make_table(sqlite_catalog, version, properties={**MOR, **LEAVES})
    fill(t, version, appends=6, rows=20)
    t.set_properties({"commit.root.max-added-files": "100"})
    t.delete("id in (5, 66, 97)")  # DVs (root entries) ...
    t.maintenance.flush_root(force=True, affiliate=True).run()  # ... into affiliated delete leaves
    t.delete("region = 'ap' and id < 40")  # whole files in leaves: manifest DVs
    _, refs, mdvs = _v4_tree(t)
    assert mdvs and any(r.content is FileContent.DELETE_MANIFEST and r.referenced_file for r in refs)
    before = rows_of(t)
    before_lineage = {k: v for k, v in lineage(t).items() if v != (None, None)}
    plan = t.maintenance.rewrite_manifests().plan()
    assert plan.leaf_groups and sum(1 for g in plan.leaf_groups for x in g.inputs if x.mdv is not None) >= 1
    result = plan.execute(t)
    assert result.manifest_dvs_folded >= 1 and result.rewritten_manifests_count > result.added_manifests_count
    assert rows_of(t) == before
    assert {k: v for k, v in lineage(t).items() if k in before_lineage} == before_lineage
    root, refs, mdvs = _v4_tree(t)
    assert mdvs == {}  # folded
    data_leaves = [r for r in refs if r.content is FileContent.DATA_MANIFEST]
    assert len(data_leaves) == 1 and data_leaves[0].file_format.value == "parquet"
    files_in = {p for p in read_leaf(t.io, t.metadata, data_leaves[0]).column("location").to_pylist()}
    for r in refs:
        leaf = read_leaf(t.io, t.metadata, r)
        assert set(leaf.column("version_info").combine_chunks().field("status").to_pylist()) == {
            int(EntryStatus.EXISTING)
        }
        if r.content is FileContent.DELETE_MANIFEST and r.referenced_file is not None:
            # An affiliated delete leaf points at the data leaf holding its DVs' files.
            assert r.referenced_file == data_leaves[0].location
            assert set(leaf.column("referenced_file").to_pylist()) <= files_in
    assert live_np(root).all()


def test_v4_plan_reads_only_the_root(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "4", properties=LEAVES)
    fill(t, "4", appends=5, rows=20)
    opened: list[str] = []
    io = t.io
    original = io.new_input

    def counting(location: str) -> Any:
        opened.append(location)
        return original(location)

    io.new_input = counting  # type: ignore[method-assign]
    try:
        plan = t.maintenance.rewrite_manifests().plan()
    finally:
        io.new_input = original  # type: ignore[method-assign]
    assert len(plan.leaf_groups) == 1 and len(plan.leaf_groups[0].data_leaves) == 5
    assert not [p for p in opened if p.endswith(".parquet") and "-m-" in p]  # no leaf was read


@pytest.mark.parametrize("version", ["2", "4"])
def test_a_concurrent_change_to_an_input_drops_the_group(
    sqlite_catalog: SqlCatalog, tmp_path: Path, version: str
) -> None:
    t = make_table(sqlite_catalog, version, properties=LEAVES)
    fill(t, version, appends=6, rows=20)
    writer = make_sqlite_catalog(tmp_path, name="test").load_table("db.events")
    runner = HookRunner(lambda: writer.delete("region = 'eu' and id < 20"))  # removes a file
    plan = t.maintenance.rewrite_manifests().plan()
    result = plan.execute(t, runner)
    assert result.snapshot_id is None and any("concurrently" in s.reason for s in result.skipped)
    t.refresh()
    assert ids(t) == [i for i in range(120) if not (i % 4 == 0 and i < 20)]
    # Planned again on the new state, it applies.
    assert t.maintenance.rewrite_manifests().run().snapshot_id is not None
    assert ids(t) == [i for i in range(120) if not (i % 4 == 0 and i < 20)]


def test_plans_round_trip_and_run_elsewhere(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    for version, name in (("2", "legacy"), ("4", "v4")):
        t = make_table(sqlite_catalog, version, name=name, properties=LEAVES)
        fill(t, version, appends=4, rows=10)
        plan = t.maintenance.rewrite_manifests().plan()
        again = MaintenancePlan.from_json(plan.to_json())
        assert isinstance(again, RewriteManifestsPlan) and again == plan
        before = rows_of(t)
        result = again.execute(make_sqlite_catalog(tmp_path, name="test").load_table(f"db.{name}"))
        assert result.rewritten_manifests_count == 4 and result.added_manifests_count == 1
        t.refresh()
        assert rows_of(t) == before
