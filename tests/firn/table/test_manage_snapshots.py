"""``table.manage_snapshots()``: every branch/tag operation, rollback, set-current, cherry-pick
and fast-forward, validated as Iceberg Java validates them (spec "Snapshot References")."""

from __future__ import annotations

import time

import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.core.actions.manage_snapshots import ManageSnapshotsResult
from firn.errors import AlreadyExists, FirnError, NotFound, ValidationConflict, ValidationError
from firn.spec.snapshots import MAIN_BRANCH, Operation, RefType, SnapshotRef
from firn.spec.summary import PUBLISHED_WAP_ID, SOURCE_SNAPSHOT_ID
from firn.table.table import Table
from tests.firn.table.ref_factories import ids, make_table, rows


@pytest.fixture
def table(memory_catalog: InMemoryCatalog) -> Table:
    return make_table(memory_catalog)


def _tick() -> None:
    # Snapshot timestamps are milliseconds; keep consecutive commits apart.
    time.sleep(0.003)


def _history(table: Table, n: int) -> list[int]:
    """Append ``n`` snapshots of one row each to main; their ids, oldest first."""
    out = []
    for i in range(n):
        _tick()
        snap = table.append(rows([i]))
        assert snap is not None
        out.append(snap.snapshot_id)
    return out


# -- branches ----------------------------------------------------------------------------------
def test_create_branch_defaults_to_current_snapshot(table: Table) -> None:
    (s1,) = _history(table, 1)
    result = table.manage_snapshots().create_branch("dev").commit()
    assert isinstance(result, ManageSnapshotsResult)
    assert table.refs()["dev"] == SnapshotRef(s1, RefType.BRANCH)
    assert result.refs["dev"].snapshot_id == s1
    assert result.previous_snapshot_id == result.current_snapshot_id == s1


def test_create_branch_at_snapshot_with_retention(table: Table) -> None:
    s1, s2 = _history(table, 2)
    table.manage_snapshots().create_branch(
        "audit", s1, min_snapshots_to_keep=3, max_snapshot_age_ms=60_000, max_ref_age_ms=86_400_000
    ).commit()
    assert table.refs()["audit"] == SnapshotRef(s1, RefType.BRANCH, 3, 60_000, 86_400_000)
    assert ids(table, ref="audit") == [0]
    assert ids(table) == [0, 1]
    assert table.current_snapshot().snapshot_id == s2  # type: ignore[union-attr]


def test_create_branch_on_empty_table_starts_at_an_empty_snapshot(table: Table) -> None:
    # Iceberg Java: a branch of a table without snapshots gets a new empty snapshot.
    table.manage_snapshots().create_branch("dev", min_snapshots_to_keep=2).commit()
    ref = table.refs()["dev"]
    assert ref.min_snapshots_to_keep == 2
    snap = table.snapshot_by_id(ref.snapshot_id)
    assert snap is not None and snap.operation is Operation.APPEND and snap.parent_snapshot_id is None
    assert table.current_snapshot() is None  # main did not move
    assert ids(table, ref="dev") == []
    table.append(rows([7]), branch="dev")
    assert ids(table, ref="dev") == [7]
    assert ids(table) == []


def test_create_branch_errors(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("dev").create_tag("t", s1).commit()
    ms = table.manage_snapshots()
    with pytest.raises(AlreadyExists, match="'dev'"):
        ms.create_branch("dev")
    with pytest.raises(AlreadyExists, match="tag"):
        ms.create_branch("t")
    with pytest.raises(NotFound, match="no snapshot 42"):
        ms.create_branch("x", 42)
    for bad in ("", "  ", None, 5):
        with pytest.raises(ValidationError, match="name"):
            ms.create_branch(bad)  # type: ignore[arg-type]
    for value in (0, -1, True, 1.5):
        with pytest.raises(ValidationError, match="positive"):
            ms.create_branch("x", min_snapshots_to_keep=value)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="snapshot id"):
        ms.create_branch("x", "123")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="main branch never expires"):
        table.manage_snapshots().create_branch("main", s1, max_ref_age_ms=5)


def test_replace_branch_keeps_retention(table: Table) -> None:
    s1, s2 = _history(table, 2)
    table.manage_snapshots().create_branch("dev", s2, min_snapshots_to_keep=4).commit()
    table.manage_snapshots().replace_branch("dev", s1).commit()
    assert table.refs()["dev"] == SnapshotRef(s1, RefType.BRANCH, 4)
    assert ids(table, ref="dev") == [0]
    with pytest.raises(NotFound, match="no branch 'nope'"):
        table.manage_snapshots().replace_branch("nope", s1)
    with pytest.raises(NotFound, match="no snapshot"):
        table.manage_snapshots().replace_branch("dev", 99)


def test_replace_branch_main_moves_current_snapshot(table: Table) -> None:
    s1, _s2 = _history(table, 2)
    table.manage_snapshots().replace_branch(MAIN_BRANCH, s1).commit()
    assert table.current_snapshot().snapshot_id == s1  # type: ignore[union-attr]
    assert table.metadata.snapshot_log[-1].snapshot_id == s1
    assert ids(table) == [0]


def test_rename_branch(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("dev", max_snapshot_age_ms=1000).commit()
    table.manage_snapshots().rename_branch("dev", "feature").commit()
    assert "dev" not in table.refs()
    assert table.refs()["feature"] == SnapshotRef(s1, RefType.BRANCH, None, 1000)
    table.manage_snapshots().create_tag("t", s1).commit()
    with pytest.raises(ValidationError, match="main branch cannot be renamed"):
        table.manage_snapshots().rename_branch(MAIN_BRANCH, "x")
    with pytest.raises(AlreadyExists):
        table.manage_snapshots().rename_branch("feature", "t")
    with pytest.raises(ValidationError, match="is a tag, not a branch"):
        table.manage_snapshots().rename_branch("t", "x")
    with pytest.raises(NotFound):
        table.manage_snapshots().rename_branch("dev", "x")


def test_remove_branch_and_tag(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("dev").create_tag("t", s1).commit()
    with pytest.raises(ValidationError, match="is a tag, not a branch"):
        table.manage_snapshots().remove_branch("t")
    with pytest.raises(ValidationError, match="is a branch, not a tag"):
        table.manage_snapshots().remove_tag("dev")
    with pytest.raises(ValidationError, match="main branch cannot be removed"):
        table.manage_snapshots().remove_branch(MAIN_BRANCH)
    table.manage_snapshots().remove_branch("dev").remove_tag("t").commit()
    assert set(table.refs()) == {MAIN_BRANCH}
    assert table.snapshot_by_id(s1) is not None  # snapshots stay until expiry
    with pytest.raises(NotFound):
        table.manage_snapshots().remove_tag("t")


# -- tags ----------------------------------------------------------------------------------------
def test_create_and_replace_tag(table: Table) -> None:
    s1, s2 = _history(table, 2)
    table.manage_snapshots().create_tag("v1", s1, max_ref_age_ms=10_000).commit()
    assert table.refs()["v1"] == SnapshotRef(s1, RefType.TAG, max_ref_age_ms=10_000)
    assert ids(table, ref="v1") == [0]
    table.manage_snapshots().replace_tag("v1", s2).commit()
    assert table.refs()["v1"] == SnapshotRef(s2, RefType.TAG, max_ref_age_ms=10_000)
    with pytest.raises(AlreadyExists):
        table.manage_snapshots().create_tag("v1", s1)
    with pytest.raises(ValidationError, match="is a branch, not a tag"):
        table.manage_snapshots().replace_tag(MAIN_BRANCH, s1)
    with pytest.raises(TypeError):
        table.manage_snapshots().create_tag("x", s1, min_snapshots_to_keep=1)  # type: ignore[call-arg]


# -- retention settings ------------------------------------------------------------------------
def test_retention_setters(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("dev").create_tag("t", s1).commit()
    with table.manage_snapshots() as ms:
        ms.set_min_snapshots_to_keep("dev", 5)
        ms.set_max_snapshot_age_ms("dev", 3_600_000)
        ms.set_max_ref_age_ms("dev", 7_200_000)
        ms.set_max_ref_age_ms("t", 1000)
        ms.set_min_snapshots_to_keep(MAIN_BRANCH, 2)
    refs = table.refs()
    assert refs["dev"] == SnapshotRef(s1, RefType.BRANCH, 5, 3_600_000, 7_200_000)
    assert refs["t"] == SnapshotRef(s1, RefType.TAG, None, None, 1000)
    assert refs[MAIN_BRANCH].min_snapshots_to_keep == 2
    # None resets a setting to the table default.
    table.manage_snapshots().set_max_snapshot_age_ms("dev", None).commit()
    assert table.refs()["dev"] == SnapshotRef(s1, RefType.BRANCH, 5, None, 7_200_000)
    # Main keeps its retention when a commit moves it.
    table.append(rows([1]))
    assert table.refs()[MAIN_BRANCH].min_snapshots_to_keep == 2


def test_retention_setter_errors(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_tag("t", s1).commit()
    ms = table.manage_snapshots()
    with pytest.raises(ValidationError, match="branches only"):
        ms.set_min_snapshots_to_keep("t", 1)
    with pytest.raises(ValidationError, match="branches only"):
        ms.set_max_snapshot_age_ms("t", 1)
    with pytest.raises(ValidationError, match="never expires"):
        ms.set_max_ref_age_ms(MAIN_BRANCH, 1)
    with pytest.raises(NotFound):
        ms.set_min_snapshots_to_keep("nope", 1)
    with pytest.raises(ValidationError, match="positive"):
        ms.set_max_ref_age_ms("t", 0)


# -- one commit, many operations --------------------------------------------------------------------
def test_several_operations_commit_as_one_metadata_version(table: Table) -> None:
    s1, s2 = _history(table, 2)
    log_before = len(table.metadata.metadata_log)
    with table.manage_snapshots() as ms:
        ms.create_branch("a", s1)
        ms.replace_branch("a", s2)  # validated against the builder's view, which has "a"
        ms.rename_branch("a", "b")
        ms.create_tag("t", s1)
        ms.remove_tag("t")
        ms.create_tag("keep", s2)
    assert len(table.metadata.metadata_log) == log_before + 1
    assert set(table.refs()) == {MAIN_BRANCH, "b", "keep"}
    assert table.refs()["b"].snapshot_id == s2


def test_builder_is_single_use_and_exceptions_commit_nothing(table: Table) -> None:
    (s1,) = _history(table, 1)
    ms = table.manage_snapshots().create_tag("t", s1)
    ms.commit()
    with pytest.raises(FirnError, match="already been committed"):
        ms.commit()
    with pytest.raises(FirnError, match="already been committed"):
        ms.create_tag("u", s1)
    location = table.metadata_location
    with pytest.raises(RuntimeError), table.manage_snapshots() as ms2:
        ms2.create_tag("u", s1)
        raise RuntimeError("boom")
    assert table.metadata_location == location
    assert "u" not in table.refs()


def test_no_op_commit_writes_nothing(table: Table) -> None:
    (s1,) = _history(table, 1)
    location = table.metadata_location
    table.manage_snapshots().rollback_to(s1).commit()  # already current
    assert table.metadata_location == location


def test_builder_is_a_transaction_action(table: Table) -> None:
    (s1,) = _history(table, 1)
    with table.transaction() as tx:
        tx.append(rows([5]))
        tx.manage_snapshots().create_tag("before", s1)
    assert table.refs()["before"].snapshot_id == s1
    assert ids(table) == [0, 5]


def test_builder_of_a_transaction_commits_with_it(table: Table) -> None:
    (s1,) = _history(table, 1)
    location = table.metadata_location
    tx = table.transaction()
    ms = tx.manage_snapshots().create_tag("t", s1)
    with pytest.raises(FirnError, match="part of a transaction"):
        ms.commit()
    assert table.metadata_location == location  # nothing committed yet
    result = tx.commit()
    assert result.metadata_location == table.metadata_location != location
    assert table.refs()["t"].snapshot_id == s1


# -- rollback and set-current -----------------------------------------------------------------------
def test_rollback_then_append(table: Table) -> None:
    s1, s2, s3 = _history(table, 3)
    result = table.manage_snapshots().rollback_to(s1).commit()
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (s3, s1)
    assert ids(table) == [0]
    new = table.append(rows([10]))
    assert new is not None and new.parent_snapshot_id == s1
    assert ids(table) == [0, 10]
    history = {e.snapshot_id: e.is_current_ancestor for e in table.history()}
    assert history[s1] and not history[s2] and not history[s3]
    # s3 is no longer an ancestor: rolling "back" to it is refused, set-current is not.
    with pytest.raises(ValidationError, match="not an ancestor"):
        table.manage_snapshots().rollback_to(s3)
    table.manage_snapshots().set_current_snapshot(s3).commit()
    assert ids(table) == [0, 1, 2]


def test_rollback_to_time(table: Table) -> None:
    s1, s2, s3 = _history(table, 3)
    snap2 = table.snapshot_by_id(s2)
    assert snap2 is not None
    # Iceberg Java rollbackToTime: newest ancestor strictly older than the timestamp.
    table.manage_snapshots().rollback_to_time(snap2.timestamp_ms).commit()
    assert table.current_snapshot().snapshot_id == s1  # type: ignore[union-attr]
    table.manage_snapshots().set_current_snapshot(s3).commit()
    table.manage_snapshots().rollback_to_time(snap2.timestamp_ms + 1).commit()
    assert table.current_snapshot().snapshot_id == s2  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="no snapshot older than"):
        table.manage_snapshots().rollback_to_time(0)


def test_set_current_snapshot_by_ref(table: Table) -> None:
    (s1,) = _history(table, 1)
    dev = table.append(rows([100]), branch="dev")
    assert dev is not None
    table.append(rows([1]))
    table.manage_snapshots().set_current_snapshot(ref="dev").commit()
    assert table.current_snapshot().snapshot_id == dev.snapshot_id  # type: ignore[union-attr]
    assert ids(table) == [0, 100]
    with pytest.raises(ValidationError, match="exactly one"):
        table.manage_snapshots().set_current_snapshot()
    with pytest.raises(ValidationError, match="exactly one"):
        table.manage_snapshots().set_current_snapshot(s1, ref="dev")
    with pytest.raises(NotFound):
        table.manage_snapshots().set_current_snapshot(ref="nope")
    with pytest.raises(NotFound):
        table.manage_snapshots().set_current_snapshot(12345)


# -- fast-forward ------------------------------------------------------------------------------------
def test_fast_forward_main_to_branch(table: Table) -> None:
    (_s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("audit").commit()
    a1 = table.append(rows([50]), branch="audit")
    a2 = table.append(rows([51]), branch="audit")
    assert a1 is not None and a2 is not None
    result = table.manage_snapshots().fast_forward(MAIN_BRANCH, "audit").commit()
    assert result.current_snapshot_id == a2.snapshot_id
    assert ids(table) == [0, 50, 51]
    assert table.refs()["audit"].snapshot_id == a2.snapshot_id  # the source stays


def test_fast_forward_targets(table: Table) -> None:
    s1, s2 = _history(table, 2)
    table.manage_snapshots().create_branch("old", s1).create_tag("t", s2).commit()
    table.manage_snapshots().fast_forward("old", "t").commit()
    assert table.refs()["old"].snapshot_id == s2
    table.manage_snapshots().replace_branch("old", s1).commit()
    table.manage_snapshots().fast_forward("old", s2).commit()
    assert table.refs()["old"].snapshot_id == s2
    # A missing branch is created at the target (Iceberg Java).
    table.manage_snapshots().fast_forward("new", s1).commit()
    assert table.refs()["new"] == SnapshotRef(s1, RefType.BRANCH)


def test_fast_forward_errors(table: Table) -> None:
    s1, s2 = _history(table, 2)
    table.manage_snapshots().create_branch("side", s1).create_tag("t", s1).commit()
    side = table.append(rows([9]), branch="side")
    assert side is not None
    with pytest.raises(ValidationError, match="not an ancestor"):
        table.manage_snapshots().fast_forward(MAIN_BRANCH, "side")
    with pytest.raises(ValidationError, match="is a tag"):
        table.manage_snapshots().fast_forward("t", s2)
    with pytest.raises(NotFound, match="no branch or tag 'nope'"):
        table.manage_snapshots().fast_forward(MAIN_BRANCH, "nope")
    with pytest.raises(NotFound):
        table.manage_snapshots().fast_forward(MAIN_BRANCH, 77)


# -- cherry-pick ---------------------------------------------------------------------------------------
def test_cherry_pick_append_from_branch(table: Table) -> None:
    (s1,) = _history(table, 1)
    table.manage_snapshots().create_branch("dev").commit()
    d1 = table.append(rows([100, 101]), branch="dev")
    assert d1 is not None
    main2 = table.append(rows([1]))  # main moved: no fast-forward possible
    assert main2 is not None
    result = table.manage_snapshots().cherry_pick(d1.snapshot_id).commit()
    new_id = result.cherry_picked[d1.snapshot_id]
    assert new_id != d1.snapshot_id
    snap = table.current_snapshot()
    assert snap is not None and snap.snapshot_id == new_id
    assert snap.parent_snapshot_id == main2.snapshot_id
    assert snap.operation is Operation.APPEND
    assert snap.summary.get(SOURCE_SNAPSHOT_ID) == str(d1.snapshot_id)
    assert snap.summary.get("added-data-files") == "1"
    assert ids(table) == [0, 1, 100, 101]
    assert ids(table, ref="dev") == [0, 100, 101]
    # Picking it again, or picking an ancestor of main, is refused (Java's ancestor checks).
    with pytest.raises(ValidationError, match="already cherry-picked"):
        table.manage_snapshots().cherry_pick(d1.snapshot_id)
    with pytest.raises(ValidationError, match="already an ancestor"):
        table.manage_snapshots().cherry_pick(s1)
    with pytest.raises(NotFound):
        table.manage_snapshots().cherry_pick(4242)


def test_cherry_pick_fast_forwards_when_parent_is_current(table: Table) -> None:
    _history(table, 1)
    staged = table.append(rows([5]), stage_only=True)
    assert staged is not None
    assert ids(table) == [0]  # staged: main did not move
    result = table.manage_snapshots().cherry_pick(staged.snapshot_id).commit()
    assert result.cherry_picked == {staged.snapshot_id: staged.snapshot_id}
    assert table.current_snapshot().snapshot_id == staged.snapshot_id  # type: ignore[union-attr]
    assert ids(table) == [0, 5]


def test_cherry_pick_staged_wap_snapshot(table: Table) -> None:
    _history(table, 1)
    staged = table.append(rows([7, 8]), stage_only=True, snapshot_properties={"wap.id": "job-1"})
    assert staged is not None
    assert set(table.refs()) == {MAIN_BRANCH}
    table.append(rows([1]))
    result = table.manage_snapshots().cherry_pick(staged.snapshot_id).commit()
    snap = table.current_snapshot()
    assert snap is not None and snap.snapshot_id == result.cherry_picked[staged.snapshot_id]
    assert snap.summary.get(PUBLISHED_WAP_ID) == "job-1"
    assert ids(table) == [0, 1, 7, 8]
    # A second staged snapshot with the same WAP id cannot be published again.
    again = table.append(rows([9]), stage_only=True, snapshot_properties={"wap.id": "job-1"})
    assert again is not None
    table.append(rows([2]))
    with pytest.raises(ValidationError, match="already published"):
        table.manage_snapshots().cherry_pick(again.snapshot_id)


def test_cherry_pick_copy_on_write_delete(table: Table) -> None:
    table.append(rows(range(10)))
    table.manage_snapshots().create_branch("fix").commit()
    fix = table.delete("id >= 8", branch="fix")
    assert fix is not None
    table.append(rows([20]))  # main moved on, unrelated data
    table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get(SOURCE_SNAPSHOT_ID) == str(fix.snapshot_id)
    assert snap.operation is fix.operation
    assert ids(table) == [*range(8), 20]


def test_cherry_pick_delete_of_files_gone_from_main_conflicts(table: Table) -> None:
    table.append(rows(range(10)))
    table.manage_snapshots().create_branch("fix").commit()
    fix = table.delete("id = 3", branch="fix")
    assert fix is not None
    table.delete("id = 5")  # main rewrote the same file: the fix's removed file is gone
    with pytest.raises(ValidationConflict, match="cannot cherry-pick"):
        table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    assert ids(table) == [0, 1, 2, 3, 4, 6, 7, 8, 9]


def test_cherry_pick_of_dev_only_history_conflicts(table: Table) -> None:
    table.append(rows([1]))
    table.manage_snapshots().create_branch("dev").commit()
    table.append(rows([2, 3]), branch="dev")
    fix = table.delete("id = 2", branch="dev")  # rewrites a file main never had
    assert fix is not None
    table.append(rows([4]))
    with pytest.raises(ValidationConflict, match="no longer in the table"):
        table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    assert ids(table) == [1, 4]


def test_operations_on_main_after_a_cherry_pick_need_a_new_commit(table: Table) -> None:
    (s1,) = _history(table, 1)
    dev = table.append(rows([100]), branch="dev")
    assert dev is not None
    table.append(rows([1]))
    ms = table.manage_snapshots().cherry_pick(dev.snapshot_id)
    with pytest.raises(ValidationError, match="cherry-pick"):
        ms.rollback_to(s1)
    with pytest.raises(ValidationError, match="cherry-pick"):
        ms.create_branch("x")
    ms.create_tag("x", s1).commit()  # unrelated refs are fine
    assert ids(table) == [0, 1, 100]


def test_empty_branch_cannot_be_changed_in_the_same_commit(table: Table) -> None:
    ms = table.manage_snapshots().create_branch("dev")
    with pytest.raises(ValidationError, match="same commit"):
        ms.set_min_snapshots_to_keep("dev", 3)


# -- cherry-pick of merge-on-read deletes (v3 deletion vectors) ------------------------------------------
@pytest.fixture
def mor_table(memory_catalog: InMemoryCatalog) -> Table:
    pytest.importorskip("firn.core.actions.merge_on_read", reason="merge-on-read deletes not available")
    t = make_table(memory_catalog, format_version=3, properties={"write.delete.mode": "merge-on-read"})
    t.append(rows(range(10)))
    t.manage_snapshots().create_branch("fix").commit()
    return t


def test_cherry_pick_deletion_vector(mor_table: Table) -> None:
    fix = mor_table.delete("id in (2, 3)", branch="fix")
    assert fix is not None and fix.summary.get("added-dvs") == "1"
    mor_table.append(rows([20]))
    mor_table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    snap = mor_table.current_snapshot()
    assert snap is not None and snap.summary.get("added-dvs") == "1"
    assert ids(mor_table) == [0, 1, *range(4, 10), 20]


def test_cherry_pick_deletion_vector_conflicts_with_dv_added_on_main(mor_table: Table) -> None:
    fix = mor_table.delete("id = 2", branch="fix")
    assert fix is not None
    mor_table.delete("id = 7")  # main's own DV for the same file, added after the fork
    with pytest.raises(ValidationConflict):
        mor_table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    assert ids(mor_table) == [0, 1, 2, 3, 4, 5, 6, 8, 9]


def test_cherry_pick_dv_for_a_file_main_does_not_have(mor_table: Table) -> None:
    mor_table.append(rows([30, 31]), branch="fix")
    fix = mor_table.delete("id = 30", branch="fix")  # a DV for a file only "fix" has
    assert fix is not None
    mor_table.append(rows([40]))
    with pytest.raises(ValidationConflict, match="not live on main"):
        mor_table.manage_snapshots().cherry_pick(fix.snapshot_id).commit()
    assert ids(mor_table) == [*range(10), 40]
