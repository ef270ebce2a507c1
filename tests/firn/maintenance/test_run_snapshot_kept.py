"""Issue 23: expiry never removes the starting snapshot of a run that holds the maintenance
lease. Another process or thread is refused the lease while the run holds it
(``test_commit_validation``); an expiry in the run's own thread re-enters the lease, and keeps
the snapshots the runs holding it started from (``MaintenanceLease.hold_snapshot``)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.rewrites import HookRunner, fill, ids, make_table
from tests.fixtures.tables import events


def test_an_expiry_under_a_run_s_lease_keeps_its_starting_snapshot(tmp_path: Path) -> None:
    catalog = make_sqlite_catalog(tmp_path)
    t = make_table(catalog, "3")
    fill(t, "3", appends=3, rows=20)
    plan = t.maintenance.rewrite_data_files(min_input_files=2).plan()
    start = plan.snapshot_id
    t.append(events(5, start=1000))  # the head moves on: the policy below would expire ``start``
    expiries = []

    def expire_meanwhile() -> None:  # in the run's thread, under its lease, before its commit
        t.refresh()
        expiries.append(t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run())

    result = plan.execute(t, HookRunner(expire_meanwhile))
    assert result.snapshot_id is not None and result.groups_committed == len(plan.groups)
    (expired,) = expiries
    assert start not in expired.expired_snapshot_ids and len(expired.expired_snapshot_ids) == 2
    assert any(s.item == f"snapshot {start}" and "holding the lease" in s.reason for s in expired.skipped)
    t.refresh()
    assert t.metadata.snapshot_by_id(start) is not None
    before = ids(t)
    # Once the run released the lease, the same policy expires it.
    after = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert start in after.expired_snapshot_ids and t.refresh().metadata.snapshot_by_id(start) is None
    assert ids(t) == before
