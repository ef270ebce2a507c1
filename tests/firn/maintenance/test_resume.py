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

from firn.maintenance.base import MaintenancePlan
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
