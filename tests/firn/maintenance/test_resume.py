"""A partial-progress compaction killed between its commits resumes where it stopped (issue 23).

Each commit of a run records the run (a digest of its plan) and the file groups it landed in
its snapshot summary. The process is killed (SIGKILL) right after the first of three
commits; the same plan, executed again from its JSON (an Airflow task retry does exactly
this), rewrites and commits the other two groups only, and reports the first as done.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from firn.maintenance.base import MaintenancePlan
from firn.maintenance.run_record import GroupsFailed
from firn.maintenance.runner import LocalRunner
from firn.spec import summary as S
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import rows
from tests.fixtures.rewrites import MOR, fill, make_table

SHORT_LEASE = {"maintenance.lease.duration-ms": "1500", "maintenance.lease.heartbeat-interval-ms": "500"}
OPTIONS = {
    "min_input_files": 2,
    "where": "region in ('eu', 'us', 'ap')",  # three partitions: three groups
    "partial_progress_enabled": True,
    "partial_progress_max_commits": 3,
}


def _killed_after_first_commit(directory: str, plan_json: str) -> None:
    """Child process: execute the plan and die right after its first commit landed."""
    from firn.catalog.sql import SqlCatalog

    swap = SqlCatalog.swap_metadata_location

    def die_after_swap(self: SqlCatalog, *args: Any, **kwargs: Any) -> None:
        swap(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    SqlCatalog.swap_metadata_location = die_after_swap  # type: ignore[method-assign]
    table = make_sqlite_catalog(Path(directory), **SHORT_LEASE).load_table("db.events")
    MaintenancePlan.from_dict(json.loads(plan_json)).execute(table, LocalRunner(1))
    raise SystemExit("expected to be killed after the first commit")


def _run_commits(t: Any, run_id: str) -> list[set[int]]:
    out = []
    for snap in t.snapshots():
        if snap.summary.get(S.MAINTENANCE_RUN_ID) == run_id:
            out.append({int(g) for g in (snap.summary.get(S.MAINTENANCE_RUN_GROUPS) or "").split(",")})
    return out


def test_a_re_run_after_a_kill_commits_the_other_groups_only(tmp_path: Path) -> None:
    catalog = make_sqlite_catalog(tmp_path, **SHORT_LEASE)
    t = make_table(catalog, "3", properties=MOR)
    fill(t, "3", appends=4, rows=20)
    t.delete("id = 4")
    before = rows(t)
    plan = t.maintenance.rewrite_data_files(**OPTIONS).plan()
    assert len(plan.groups) == 3
    plan_json = plan.to_json()

    child = mp.get_context("spawn").Process(
        target=_killed_after_first_commit, args=(str(tmp_path), plan_json)
    )
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL
    t.refresh()
    first = _run_commits(t, plan.run_id)
    assert len(first) == 1 and len(first[0]) == 1  # one group landed before the kill
    assert rows(t) == before
    deadline = time.monotonic() + 30
    while catalog.maintenance_lease_holder("db.events") is not None:  # the killed run's lease
        assert time.monotonic() < deadline
        time.sleep(0.1)

    again = MaintenancePlan.from_dict(json.loads(plan_json))
    assert len(again.units(t, "ref")) == 2  # the committed group is not rewritten again
    result = again.execute(t)
    assert result.groups_committed == 2 and result.groups_skipped_as_done == 1  # type: ignore[attr-defined]
    assert result.failed_groups == ()  # type: ignore[attr-defined]
    t.refresh()
    commits = _run_commits(t, plan.run_id)
    assert len(commits) == 3
    assert set().union(*commits) == {g.group_id for g in plan.groups}  # each group once
    assert sum(len(c) for c in commits) == 3
    assert rows(t) == before
    compacted = {task.file.partition for task in t.scan().plan_files()}
    assert all(
        sum(1 for task in t.scan().plan_files() if task.file.partition == p) == 1
        for p in compacted
        if p != (None,)
    )


# -- every unit-based rewrite keeps the same run record ----------------------------------------------
def _corrupt(path: str) -> bytes:
    data = Path(path).read_bytes()
    Path(path).write_bytes(b"not a delete file")
    return data


def _resumes_after_a_failed_group(t: Any, op: str, plan: Any, broken: str) -> None:
    """Execute ``plan`` with ``broken`` corrupted: the other groups commit and the run fails
    naming the group; repaired, the same plan (from its JSON, as a task retry runs it) redoes
    only that group."""
    before = rows(t)
    groups = len(plan.dv_plan.groups if getattr(plan, "dv_plan", None) is not None else plan.groups)
    assert groups >= 2
    data = _corrupt(broken)
    with pytest.raises(GroupsFailed, match=rf"{op} on db.events: 1 group\(s\) failed: group \d+") as e:
        plan.execute(t)
    first = e.value.result
    assert first.groups_committed == groups - 1 and first.groups_skipped_as_done == 0
    (failed,) = first.failed_groups
    assert not failed.conflicted and failed.reason
    assert first.snapshot_id is not None
    Path(broken).write_bytes(data)
    assert rows(t) == before
    again = MaintenancePlan.from_dict(json.loads(plan.to_json()))
    assert len(again.units(t, "ref")) == 1  # only the failed group is rewritten
    result = again.execute(t)
    assert result.groups_committed == 1 and result.groups_skipped_as_done == groups - 1  # type: ignore[attr-defined]
    assert result.failed_groups == ()  # type: ignore[attr-defined]
    t.refresh()
    recorded = plan.dv_plan if getattr(plan, "dv_plan", None) is not None else plan
    commits = _run_commits(t, recorded.run_id)
    assert {failed.group_id} in commits  # the retry's commit lands the failed group alone
    assert sum(len(c) for c in commits) == groups == len(set().union(*commits))  # each group once
    assert rows(t) == before


def _deletes_in_two_partitions(catalog: Any, version: str) -> Any:
    t = make_table(catalog, version, properties=MOR)
    fill(t, version, appends=2, rows=80)
    # Partition "eu" holds ids % 4 == 0 and "us" ids % 4 == 1: a delete in each of their two
    # files, one commit each (so two delete files per partition, each 1 of 20 rows).
    for i in (0, 80, 1, 81):
        t.delete(f"id = {i}")
    return t


def _delete_file_of(t: Any, row_id: int) -> str:
    for task in t.scan().plan_files():
        if task.file.partition == ("eu",):
            for d in task.delete_files:
                return str(d.file_path)
    raise AssertionError(f"no delete file for row {row_id}")


def test_rewrite_position_delete_files_resumes_after_a_failed_group(tmp_path: Path) -> None:
    t = _deletes_in_two_partitions(make_sqlite_catalog(tmp_path), "2")
    plan = t.maintenance.rewrite_position_delete_files(
        min_input_files=2, partial_progress_enabled=True, partial_progress_max_commits=2
    ).plan()
    _resumes_after_a_failed_group(t, "rewrite_position_delete_files", plan, _delete_file_of(t, 0))


def test_rewrite_deletion_vectors_resumes_after_a_failed_group(tmp_path: Path) -> None:
    t = _deletes_in_two_partitions(make_sqlite_catalog(tmp_path), "3")
    # A target below two DVs' size: one group per DV (rewrite-all: pack even these Puffin files).
    plan = t.maintenance.rewrite_deletion_vectors(
        rewrite_all=True,
        target_file_size_bytes=50,
        partial_progress_enabled=True,
        partial_progress_max_commits=2,
    ).plan()
    _resumes_after_a_failed_group(t, "rewrite_deletion_vectors", plan, _delete_file_of(t, 0))


def test_the_run_id_is_computed_once_and_changes_nothing_else(tmp_path: Path) -> None:
    t = make_table(make_sqlite_catalog(tmp_path), "3", properties=MOR)
    fill(t, "3", appends=4, rows=20)
    plan = t.maintenance.rewrite_data_files(**OPTIONS).plan()
    before = plan.to_json()
    run_id = plan.run_id
    assert plan.run_id is run_id  # cached on the plan object
    assert plan.to_json() == before  # the cache is not a field: the plan serialises the same
    again = MaintenancePlan.from_dict(json.loads(before))
    assert again == plan and again.run_id == run_id  # equal plans, equal identity
