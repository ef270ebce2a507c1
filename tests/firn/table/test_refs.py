"""Branches and tags end to end: commits to branches, scans by ref, immutable tags, metadata
JSON round-trips, concurrent ref changes (two writers on one SQLite catalog), the requirements
ref changes send, and PyIceberg reading a Firn table with refs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.commit import CommitContext
from firn.core.updates import AssertRefSnapshotId, AssertTableUUID
from firn.errors import CommitConflict, ValidationConflict, ValidationError
from firn.spec.snapshots import MAIN_BRANCH, RefType, SnapshotRef
from firn.table.table import Table
from tests.firn.table.ref_factories import ids, make_table, rows
from tests.fixtures.catalogs import make_sqlite_catalog


@pytest.fixture
def table(memory_catalog: InMemoryCatalog) -> Table:
    t = make_table(memory_catalog)
    t.append(rows(range(5)))
    return t


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


# -- commits to branches ------------------------------------------------------------------------------
def test_commits_to_a_branch_leave_main_alone(table: Table) -> None:
    main_before = table.current_snapshot()
    assert main_before is not None
    table.manage_snapshots().create_branch("dev").commit()
    s1 = table.append(rows([10, 11]), branch="dev")
    s2 = table.delete("id = 1", branch="dev")
    s3 = table.overwrite(rows([20]), "id = 10", branch="dev")
    assert s1 is not None and s2 is not None and s3 is not None
    # Each call returns its own snapshot, chained on the branch.
    assert (s1.parent_snapshot_id, s2.parent_snapshot_id, s3.parent_snapshot_id) == (
        main_before.snapshot_id,
        s1.snapshot_id,
        s2.snapshot_id,
    )
    assert table.refs()["dev"].snapshot_id == s3.snapshot_id
    assert ids(table, ref="dev") == [0, 2, 3, 4, 11, 20]
    assert ids(table) == [0, 1, 2, 3, 4]
    assert table.current_snapshot() == main_before
    # The snapshot log records main only (spec "snapshot-log").
    assert [e.snapshot_id for e in table.metadata.snapshot_log] == [main_before.snapshot_id]


def test_commit_to_a_new_branch_starts_from_main(table: Table) -> None:
    head = table.current_snapshot()
    assert head is not None
    snap = table.append(rows([9]), branch="feature")
    assert snap is not None and snap.parent_snapshot_id == head.snapshot_id
    assert table.refs()["feature"] == SnapshotRef(snap.snapshot_id, RefType.BRANCH)
    assert ids(table, ref="feature") == [0, 1, 2, 3, 4, 9]


def test_branch_retention_survives_commits(table: Table) -> None:
    table.manage_snapshots().create_branch("dev", min_snapshots_to_keep=7, max_ref_age_ms=99).commit()
    snap = table.append(rows([1]), branch="dev")
    assert snap is not None
    assert table.refs()["dev"] == SnapshotRef(snap.snapshot_id, RefType.BRANCH, 7, None, 99)


def _data_file_count(table: Table) -> int:
    root = table.location.removeprefix("file://")
    return sum(len(files) for _, _, files in os.walk(os.path.join(root, "data")))


def test_tags_are_immutable(catalog: SqlCatalog) -> None:
    table = make_table(catalog)
    snap = table.append(rows(range(3)))
    assert snap is not None
    table.manage_snapshots().create_tag("release", snap.snapshot_id).commit()
    before = (table.metadata_location, _data_file_count(table))
    assert before[1] == 1
    with pytest.raises(ValidationError, match="'release': it is a tag"):
        table.append(rows([5]), branch="release")
    with pytest.raises(ValidationError, match="tag"):
        table.delete("id = 1", branch="release")
    with pytest.raises(ValidationError, match="tag"):
        table.overwrite(rows([6]), branch="release")
    # Nothing was committed, and the data files written for the refused commits are gone.
    assert (table.metadata_location, _data_file_count(table)) == before
    assert table.refs()["release"] == SnapshotRef(snap.snapshot_id, RefType.TAG)
    assert ids(table, ref="release") == [0, 1, 2]


def test_scan_by_tag_after_main_moves(table: Table) -> None:
    head = table.current_snapshot()
    assert head is not None
    table.manage_snapshots().create_tag("v1", head.snapshot_id).commit()
    table.delete("id < 3")
    table.append(rows([50]))
    assert ids(table, ref="v1") == [0, 1, 2, 3, 4]
    assert ids(table) == [3, 4, 50]
    assert table.snapshot_by_name("v1") == head


# -- metadata JSON ----------------------------------------------------------------------------------------
def test_refs_round_trip_through_metadata_json(catalog: SqlCatalog) -> None:
    table = make_table(catalog)
    s1 = table.append(rows([1]))
    assert s1 is not None
    with table.manage_snapshots() as ms:
        ms.create_branch("dev", min_snapshots_to_keep=3, max_snapshot_age_ms=3_600_000, max_ref_age_ms=7)
        ms.create_tag("v1", s1.snapshot_id, max_ref_age_ms=86_400_000)
        ms.set_min_snapshots_to_keep(MAIN_BRANCH, 2)
    loaded = catalog.load_table("db.t")
    assert loaded.refs() == table.refs()
    assert loaded.refs()["dev"] == SnapshotRef(s1.snapshot_id, RefType.BRANCH, 3, 3_600_000, 7)
    path = loaded.metadata_location.removeprefix("file://")
    with open(path) as f:
        raw = json.load(f)["refs"]
    # Appendix C key names; unset settings are omitted.
    assert raw["dev"] == {
        "snapshot-id": s1.snapshot_id,
        "type": "branch",
        "min-snapshots-to-keep": 3,
        "max-snapshot-age-ms": 3_600_000,
        "max-ref-age-ms": 7,
    }
    assert raw["v1"] == {"snapshot-id": s1.snapshot_id, "type": "tag", "max-ref-age-ms": 86_400_000}
    assert raw["main"] == {"snapshot-id": s1.snapshot_id, "type": "branch", "min-snapshots-to-keep": 2}


# -- requirements (STYLE 6) ---------------------------------------------------------------------------------
def test_ref_changes_send_ref_requirements(table: Table) -> None:
    head = table.current_snapshot()
    assert head is not None
    table.manage_snapshots().create_branch("dev").create_tag("t", head.snapshot_id).commit()
    ms = (
        table.manage_snapshots()
        .remove_branch("dev")
        .create_tag("new", head.snapshot_id)
        .set_max_ref_age_ms("t", 10)
    )
    base = table.metadata
    updates, requirements = ms.apply(base, CommitContext(io=table.io, start=base))
    assert len(updates) == 3
    assert AssertTableUUID(base.table_uuid) in requirements
    assert set(r for r in requirements if isinstance(r, AssertRefSnapshotId)) == {
        AssertRefSnapshotId("dev", head.snapshot_id),
        AssertRefSnapshotId("new", None),
        AssertRefSnapshotId("t", head.snapshot_id),
    }
    # A catalog checking them against metadata where "dev" moved rejects the commit.
    moved = table.append(rows([8]), branch="dev")
    assert moved is not None
    stale = [r for r in requirements if isinstance(r, AssertRefSnapshotId) and r.ref == "dev"]
    with pytest.raises(CommitConflict, match="'dev'"):
        stale[0].validate(table.metadata)


def test_transaction_requirements_hold_for_chained_actions(table: Table) -> None:
    # Two appends in one transaction: the second asserts main at the first one's snapshot,
    # which only holds inside the transaction; the commit must still succeed.
    table.transaction().append(rows([7])).append(rows([8])).commit()
    assert ids(table) == [0, 1, 2, 3, 4, 7, 8]


# -- concurrent ref changes (two writers) ---------------------------------------------------------------------
def _two(catalog: SqlCatalog) -> tuple[Table, Table, int]:
    t = make_table(catalog)
    snap = t.append(rows(range(3)))
    assert snap is not None
    t.manage_snapshots().create_branch("dev").commit()
    return catalog.load_table("db.t"), catalog.load_table("db.t"), snap.snapshot_id


def test_replace_branch_conflicts_with_concurrent_commit_to_it(catalog: SqlCatalog) -> None:
    t1, t2, _s1 = _two(catalog)
    other = t1.append(rows([99]))  # a snapshot to point dev at
    assert other is not None
    ms = t1.manage_snapshots().replace_branch("dev", other.snapshot_id)
    concurrent = t2.append(rows([5]), branch="dev")
    assert concurrent is not None
    with pytest.raises(ValidationConflict, match="'dev' was changed concurrently"):
        ms.commit()
    # The concurrent commit was not discarded.
    assert catalog.load_table("db.t").refs()["dev"].snapshot_id == concurrent.snapshot_id


def test_remove_branch_conflicts_with_concurrent_commit_to_it(catalog: SqlCatalog) -> None:
    t1, t2, _ = _two(catalog)
    ms = t1.manage_snapshots().remove_branch("dev")
    t2.append(rows([5]), branch="dev")
    with pytest.raises(ValidationConflict):
        ms.commit()
    assert ids(catalog.load_table("db.t"), ref="dev") == [0, 1, 2, 5]


def test_rollback_conflicts_with_concurrent_append(catalog: SqlCatalog) -> None:
    t1, t2, s1 = _two(catalog)
    t1.append(rows([3]))
    t2.refresh()
    ms = t1.manage_snapshots().rollback_to(s1)
    t2.append(rows([4]))
    with pytest.raises(ValidationConflict, match="'main' was changed concurrently"):
        ms.commit()
    assert ids(catalog.load_table("db.t")) == [0, 1, 2, 3, 4]


def test_concurrent_creation_of_the_same_tag_conflicts(catalog: SqlCatalog) -> None:
    t1, t2, s1 = _two(catalog)
    ms = t1.manage_snapshots().create_tag("v1", s1)
    t2.manage_snapshots().create_tag("v1", s1).commit()
    with pytest.raises(ValidationConflict, match="already exists"):
        ms.commit()


def test_additive_ref_changes_retry_past_unrelated_commits(catalog: SqlCatalog) -> None:
    t1, t2, s1 = _two(catalog)
    ms = t1.manage_snapshots().create_tag("v1", s1).set_min_snapshots_to_keep("dev", 4)
    head = t2.append(rows([5]), branch="dev")
    t2.append(rows([6]))
    assert head is not None
    result = ms.commit()
    assert result.attempts == 2
    refs = catalog.load_table("db.t").refs()
    assert refs["v1"] == SnapshotRef(s1, RefType.TAG)
    # The retention change kept dev where the other writer moved it.
    assert refs["dev"] == SnapshotRef(head.snapshot_id, RefType.BRANCH, 4)


def test_fast_forward_lands_on_the_snapshot_that_was_looked_at(catalog: SqlCatalog) -> None:
    t1, t2, _ = _two(catalog)
    audited = t1.append(rows([10]), branch="dev")
    assert audited is not None
    t2.refresh()
    ms = t1.manage_snapshots().fast_forward(MAIN_BRANCH, "dev")
    t2.append(rows([11]), branch="dev")  # not audited: must not be published
    ms.commit()
    table = catalog.load_table("db.t")
    assert table.current_snapshot().snapshot_id == audited.snapshot_id  # type: ignore[union-attr]
    assert ids(table) == [0, 1, 2, 10]


def test_fast_forward_conflicts_when_main_diverged(catalog: SqlCatalog) -> None:
    t1, t2, _ = _two(catalog)
    t1.append(rows([10]), branch="dev")
    ms = t1.manage_snapshots().fast_forward(MAIN_BRANCH, "dev")
    t2.append(rows([7]))  # main moved off dev's history
    with pytest.raises(ValidationConflict, match="not an ancestor"):
        ms.commit()
    assert ids(catalog.load_table("db.t")) == [0, 1, 2, 7]


def test_cherry_pick_reapplies_on_concurrent_main(catalog: SqlCatalog) -> None:
    t1, t2, _ = _two(catalog)
    t1.append(rows([1000]))  # main moves on, so the pick is not a fast-forward
    staged = t1.append(rows([40, 41]), stage_only=True, snapshot_properties={"wap.id": "w"})
    assert staged is not None
    ms = t1.manage_snapshots().cherry_pick(staged.snapshot_id)
    t2.refresh().append(rows([42]))
    result = ms.commit()
    assert result.attempts == 2
    assert ids(catalog.load_table("db.t")) == [0, 1, 2, 40, 41, 42, 1000]


def test_cherry_pick_turns_into_pick_when_fast_forward_no_longer_applies(catalog: SqlCatalog) -> None:
    t1, t2, _ = _two(catalog)
    staged = t1.append(rows([40]), stage_only=True)
    assert staged is not None
    ms = t1.manage_snapshots().cherry_pick(staged.snapshot_id)  # a fast-forward right now
    t2.refresh().append(rows([42]))  # ... but no longer at commit time
    result = ms.commit()
    new_id = result.cherry_picked[staged.snapshot_id]
    assert new_id != staged.snapshot_id
    assert ids(catalog.load_table("db.t")) == [0, 1, 2, 40, 42]


# -- PyIceberg reads a Firn table with refs --------------------------------------------------------------------
@pytest.mark.interop
def test_pyiceberg_sees_refs_and_scans_main_identically(catalog: SqlCatalog, tmp_path: Path) -> None:
    sql = pytest.importorskip("pyiceberg.catalog.sql")
    table = make_table(catalog, partitioned=True)
    s1 = table.append(rows(range(5)))
    assert s1 is not None
    table.append(rows(range(100, 103), grp="b"), branch="dev")
    table.delete("id = 3")
    with table.manage_snapshots() as ms:
        ms.create_tag("v1", s1.snapshot_id, max_ref_age_ms=86_400_000)
        ms.set_min_snapshots_to_keep("dev", 3)

    py = sql.SqlCatalog(
        "test", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )
    py_table = py.load_table("db.t")
    py_refs = py_table.metadata.refs
    firn_refs = table.refs()
    assert set(py_refs) == set(firn_refs) == {"main", "dev", "v1"}
    for name, ref in firn_refs.items():
        assert py_refs[name].snapshot_id == ref.snapshot_id
        assert py_refs[name].snapshot_ref_type.value == ref.ref_type.value
        assert py_refs[name].min_snapshots_to_keep == ref.min_snapshots_to_keep
        assert py_refs[name].max_ref_age_ms == ref.max_ref_age_ms

    def sorted_rows(t: pa.Table) -> list[tuple[int, str]]:
        return sorted(zip(t.column("id").to_pylist(), t.column("grp").to_pylist(), strict=True))

    assert sorted_rows(py_table.scan().to_arrow()) == sorted_rows(table.scan().to_arrow())
    for name in ("dev", "v1"):
        snap = py_table.snapshot_by_name(name)
        assert snap is not None
        assert sorted_rows(py_table.scan(snapshot_id=snap.snapshot_id).to_arrow()) == sorted_rows(
            table.scan(ref=name).to_arrow()
        )
