"""What protects writers from maintenance: commit validation, never the lease.

* Expiry's commit asserts the table UUID and every ref it read. Through a REST server, which
  applies a commit's updates to the table as it is *then* (spec ``updateTable``), a ref moved
  by a writer after the expiry read the table makes the server refuse the commit; the expiry
  re-evaluates on the new metadata and never removes a snapshot a ref now points at.
* Writers never take the maintenance lease and never wait for it: they commit while a
  maintenance run holds it, and the run's own commit is validated against theirs.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.commit import CommitContext
from firn.core.updates import AssertRefSnapshotId, AssertTableUUID, RemoveSnapshots
from firn.errors import LeaseHeld
from firn.maintenance.expire_snapshots import _ExpireAction
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import rows, soon_ms
from tests.fixtures.rest import running_server
from tests.fixtures.rewrites import MOR, HookRunner, events, fill, ids, make_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _history(t: Table, n: int = 4) -> list[int]:
    for i in range(n):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return [s.snapshot_id for s in t.snapshots()]


def test_the_expiry_commit_asserts_every_ref_it_read(sqlite_catalog: SqlCatalog) -> None:
    sqlite_catalog.create_namespace("db")
    t = sqlite_catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": "2"})
    snaps = _history(t)
    with t.manage_snapshots() as refs:
        refs.create_tag("v1", snaps[1])
        refs.create_branch("audit", snaps[2])
    plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
    assert plan.expire_snapshot_ids == (snaps[0],)
    updates, requirements = _ExpireAction(plan).apply(t.metadata, CommitContext(io=t.io, start=t.metadata))
    assert updates == [RemoveSnapshots((snaps[0],))]
    asserted = {r.ref: r.snapshot_id for r in requirements if isinstance(r, AssertRefSnapshotId)}
    assert asserted == {"main": snaps[3], "v1": snaps[1], "audit": snaps[2]}
    assert AssertTableUUID(t.metadata.table_uuid) in requirements


def test_a_ref_moved_after_the_expiry_read_the_table_is_kept_through_rest(tmp_path: Path) -> None:
    served = SqlCatalog(
        "served", f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse")
    )
    with running_server(served) as server:
        client: RestCatalog = server.client(
            **{"maintenance.lease.uri": f"sqlite:///{tmp_path / 'leases.db'}"}
        )
        client.create_namespace("db")
        t = client.create_table("db.t", schema=SCHEMA, properties={"format-version": "2"})
        snaps = _history(t)
        first_rows = rows(t, snaps[0])
        plan = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).plan()
        assert plan.expire_snapshot_ids == tuple(sorted(snaps[:3]))

        # A writer rolls main back to the oldest snapshot after the expiry read the table and
        # before its commit reaches the server.
        original = client.commit_table
        attempts: list[Any] = []

        def commit_after_a_writer(identifier: Any, commit: Any) -> Any:
            if not attempts:
                with served.load_table("db.t").manage_snapshots() as refs:
                    refs.rollback_to(snaps[0])
            attempts.append(commit)
            return original(identifier, commit)

        client.commit_table = commit_after_a_writer  # type: ignore[method-assign]
        result = plan.execute(t)
        assert len(attempts) == 2  # refused once (main moved), re-evaluated, committed
        assert snaps[0] not in result.expired_snapshot_ids
        assert set(result.expired_snapshot_ids) == {snaps[1], snaps[2]}
        t.refresh()
        assert t.current_snapshot().snapshot_id == snaps[0]  # type: ignore[union-attr]
        assert rows(t) == first_rows
        client.close()
    served.close()


def test_writers_commit_while_a_maintenance_run_holds_the_lease(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, "3", properties=MOR)
    fill(t, "3", appends=4, rows=20)
    before = ids(t)
    writer = sqlite_catalog.load_table("db.events")  # another handle, as another process has
    seen: dict[str, Any] = {}

    def a_writer_commits() -> None:
        # Runs between the compaction's work units and its commit, in another thread.
        seen["holder"] = sqlite_catalog.maintenance_lease_holder("db.events")
        started = time.monotonic()
        writer.append(events(4, start=1000))
        writer.delete("id in (1000, 3)")  # one row of a file the compaction is rewriting
        seen["seconds"] = time.monotonic() - started
        seen["holder_after"] = sqlite_catalog.maintenance_lease_holder("db.events")

    def in_thread() -> None:
        th = threading.Thread(target=a_writer_commits)
        th.start()
        th.join(60)
        assert not th.is_alive()

    result = t.maintenance.rewrite_data_files(min_input_files=2).run(HookRunner(in_thread))
    assert seen["holder"] is not None and seen["holder"].operation == "rewrite_data_files"
    assert seen["holder_after"] == seen["holder"]  # the writer committed while it was held
    assert seen["seconds"] < 30  # and never waited for it (a lease lasts 5 minutes)
    # Commit validation, not the lease, protected the writer: its delete of a row the
    # compaction rewrote was carried over to the new file (issue 23), every group committed,
    # and no row was lost or came back.
    assert result.failed_groups == () and result.groups_committed == 4
    assert ids(t.refresh()) == sorted([i for i in before if i != 3] + [1001, 1002, 1003])
    assert sqlite_catalog.maintenance_lease_holder("db.events") is None


def test_writers_are_not_refused_by_a_held_lease(sqlite_catalog: SqlCatalog) -> None:
    sqlite_catalog.create_namespace("db")
    t = sqlite_catalog.create_table("db.t", schema=SCHEMA)
    with sqlite_catalog.maintenance_lease("db.t", "expire_snapshots", owner="airflow:1:expire"):
        other = sqlite_catalog.load_table("db.t")
        started = time.monotonic()
        other.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
        other.delete("id = 1")
        with other.manage_snapshots() as refs:
            refs.create_tag("t", other.current_snapshot().snapshot_id)  # type: ignore[union-attr]
        assert time.monotonic() - started < 30
        assert ids(t.refresh()) == [2]
        # Another maintenance run (here: another thread; the lease re-enters within one) is refused.
        outcome: list[BaseException] = []

        def flush() -> None:
            try:
                t.maintenance.flush_root(force=True).run()
            except BaseException as e:
                outcome.append(e)

        th = threading.Thread(target=flush)
        th.start()
        th.join(60)
        assert (
            len(outcome) == 1 and isinstance(outcome[0], LeaseHeld) and "airflow:1:expire" in str(outcome[0])
        )


def test_a_run_longer_than_the_lease_keeps_it_by_renewing(tmp_path: Path) -> None:
    # 1.5 s renewed every 100 ms: a heartbeat stalled for a second on a loaded machine still
    # renews in time. The wait below is on the catalog's clock, past the lease's first expiry.
    duration_ms = 1500
    short = {
        "maintenance.lease.duration-ms": str(duration_ms),
        "maintenance.lease.heartbeat-interval-ms": "100",
    }
    catalog = make_sqlite_catalog(tmp_path, **short)
    t = make_table(catalog, "3", properties=MOR)
    fill(t, "3", appends=2, rows=20)
    refused: list[BaseException] = []
    holders: list[Any] = []

    def meanwhile() -> None:
        # Past the lease's first expiry, by the catalog's clock: only renewal keeps it.
        first = catalog.maintenance_lease_holder("db.events")
        assert first is not None
        deadline = time.monotonic() + 60
        while catalog._lease_get("db", "events")[1] < first.acquired_at_ms + duration_ms + 300:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        holders.append(catalog.maintenance_lease_holder("db.events"))
        try:
            t.maintenance.expire_snapshots().run()
        except BaseException as e:  # asserted below: it must be LeaseHeld
            refused.append(e)

    def slow_units() -> None:
        th = threading.Thread(target=meanwhile)
        th.start()
        th.join(60)

    result = t.maintenance.rewrite_data_files(min_input_files=2).run(HookRunner(slow_units))
    assert result.snapshot_id is not None
    assert len(refused) == 1 and isinstance(refused[0], LeaseHeld), refused
    assert "running rewrite_data_files" in str(refused[0])
    assert holders[0] is not None and holders[0].operation == "rewrite_data_files"
    assert holders[0].expires_at_ms > holders[0].acquired_at_ms + duration_ms  # renewed
    assert catalog.maintenance_lease_holder("db.events") is None
    catalog.close()
