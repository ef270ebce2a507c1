"""Writers that plan again when the only conflicts are concurrent rewrites (issue 23, item 1).

A delete, overwrite or upsert is planned on a table object, a compaction (or a DV / position
delete rewrite) commits from another table object, then the write commits: it re-plans on the
files the compaction wrote and lands, and the rows are exactly those of running the write
after the compaction. A genuine conflict is still refused, and explicit positions
(``delete_rows_at``) are refused with the reason. Also Java's validation history for an
expired starting snapshot (item 3) and the v2 rule that only overwrite/delete snapshots'
added deletes count (Java ``validateNoNewDeletesForDataFiles``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.trees import snapshots_between
from firn.errors import RewrittenConcurrently, ValidationConflict, ValidationError
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.rewrites import MOR, fill, ids, make_table
from tests.fixtures.tables import events

VERSIONS = ("2", "3", "4")
COW = {"write.delete.mode": "copy-on-write"}


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def _two_writers(catalog: SqlCatalog, version: str, props: dict[str, str]) -> tuple[Table, Table]:
    t = make_table(catalog, version, properties=props)
    fill(t, version, appends=6, rows=10)
    return catalog.load_table("db.events"), catalog.load_table("db.events")


def _compact(t: Table) -> None:
    t.refresh()
    before = len(t.scan().plan_files())
    result = t.maintenance.rewrite_data_files(min_input_files=2).run()
    assert result.rewritten_data_files_count > 0
    assert len(t.refresh().scan().plan_files()) < before  # the files really moved


@pytest.mark.parametrize("props", [MOR, COW], ids=["mor", "cow"])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_delete_planned_before_a_compaction_re_plans_and_commits(
    catalog: SqlCatalog, version: str, props: dict[str, str]
) -> None:
    writer, maint = _two_writers(catalog, version, props)
    planned = writer.transaction().delete("id in (3, 17, 42)")  # DVs / rewrites of the old files
    _compact(maint)
    result = planned.commit()
    assert result.snapshot is not None
    assert ids(catalog.load_table("db.events")) == [i for i in range(60) if i not in (3, 17, 42)]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_delete_on_a_stale_table_object_re_plans(catalog: SqlCatalog, version: str) -> None:
    writer, maint = _two_writers(catalog, version, MOR)
    _compact(maint)  # the writer's table object still lists the pre-compaction files
    writer.delete("id = 7")
    assert ids(catalog.load_table("db.events")) == [i for i in range(60) if i != 7]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_delete_on_a_stale_table_object_survives_compaction_then_expiry(
    catalog: SqlCatalog, version: str
) -> None:
    """The writer's metadata lists snapshots whose manifests expiry deleted: planning on it
    hits NotFound, so the writer refreshes and plans again (the workaround the racing-writer
    test kept is gone)."""
    writer, maint = _two_writers(catalog, version, MOR)
    _compact(maint)
    maint.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    writer.delete("id = 8")
    assert ids(catalog.load_table("db.events")) == [i for i in range(60) if i != 8]


@pytest.mark.parametrize("version", VERSIONS)
def test_overwrite_and_upsert_re_plan_after_a_compaction(catalog: SqlCatalog, version: str) -> None:
    writer, maint = _two_writers(catalog, version, MOR)
    tx = writer.transaction()
    tx.overwrite(events(2, start=100), "id < 5")
    _compact(maint)
    tx.commit()
    t = catalog.load_table("db.events")
    assert ids(t) == [*range(5, 60), 100, 101]

    writer.refresh()
    tx = writer.transaction()
    counts = tx.upsert(events(3, start=58), join_cols=["id"])  # 58, 59 update; 60 inserts
    assert (counts.rows_updated, counts.rows_inserted) == (0, 1)  # 58/59 unchanged: skipped
    _compact(maint)
    tx.commit()
    assert ids(catalog.load_table("db.events")) == [*range(5, 61), 100, 101]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_genuine_conflict_behind_a_compaction_is_still_refused(catalog: SqlCatalog, version: str) -> None:
    writer, other = _two_writers(catalog, version, COW)
    planned = writer.transaction().delete("id = 11")  # rewrites the file holding 11
    other.delete("id = 15")  # the same file (ids 10..19, region of 11), rewritten: a real conflict
    _compact(other)
    with pytest.raises(ValidationConflict) as e:
        planned.commit()
    assert not isinstance(e.value, RewrittenConcurrently)
    assert "already removed" in str(e.value)
    assert ids(catalog.load_table("db.events")) == [i for i in range(60) if i != 15]


@pytest.mark.parametrize("version", VERSIONS)
def test_explicit_positions_follow_their_rows_through_a_compaction(catalog: SqlCatalog, version: str) -> None:
    """v3/V4: positions are followed by _row_id to the compacted file; v2 keeps no row
    identity, so the row delta is refused, saying why."""
    writer, maint = _two_writers(catalog, version, MOR)
    where = writer.scan(filter="id in (21, 25)", columns=["id", "_file", "_pos"]).to_arrow().to_pylist()
    assert len({r["_file"] for r in where}) == 1  # same file (region "us" of the second append)
    rd = writer.row_delta().delete_rows_at(where[0]["_file"], [r["_pos"] for r in where])
    _compact(maint)
    if version == "2":
        with pytest.raises(RewrittenConcurrently, match=r"delete_rows_at.*keeps no row lineage"):
            rd.commit()
        assert ids(catalog.load_table("db.events")) == list(range(60))
        return
    rd.commit()
    t = catalog.load_table("db.events")
    assert ids(t) == [i for i in range(60) if i not in (21, 25)]
    head = t.current_snapshot()
    assert head is not None and head.summary.operation.value == "delete"


def test_v2_delete_is_not_refused_for_a_position_delete_rewrite(catalog: SqlCatalog) -> None:
    """A replace that only merged position delete files added deletes for the file a
    copy-on-write delete rewrites: not a conflict (Java validates overwrite/delete only)."""
    t = make_table(catalog, "2", partition_spec=None, properties=MOR)
    t.append(events(20))
    t.delete("id = 1")
    t.delete("id = 2")  # two partition-scoped position delete files for the one data file
    writer = catalog.load_table("db.events")
    writer.set_properties({"write.delete.mode": "copy-on-write"})
    writer.refresh()
    planned = writer.transaction().delete("id = 3")
    maint = catalog.load_table("db.events")
    result = maint.maintenance.rewrite_position_delete_files(min_input_files=2).run()
    assert result.rewritten_delete_files_count == 2
    planned.commit()
    assert ids(catalog.load_table("db.events")) == [i for i in range(20) if i not in (1, 2, 3)]


# -- item 3: validation history for an expired starting snapshot ------------------------------------
def test_a_delete_whose_starting_snapshot_expired_commits(catalog: SqlCatalog) -> None:
    writer, other = _two_writers(catalog, "3", MOR)
    start = writer.current_snapshot()
    assert start is not None
    planned = writer.transaction().delete("id = 4")
    other.append(events(1, start=500))  # its parent is the delete's starting snapshot
    other.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    assert catalog.load_table("db.events").metadata.snapshot_by_id(start.snapshot_id) is None
    planned.commit()
    assert ids(catalog.load_table("db.events")) == [*(i for i in range(60) if i != 4), 500]


def test_an_expired_gap_is_refused_naming_the_expiry(catalog: SqlCatalog) -> None:
    writer, other = _two_writers(catalog, "3", MOR)
    planned = writer.transaction().delete("id = 4")
    other.append(events(1, start=500))
    other.append(events(1, start=501))  # the oldest retained ancestor's parent is not the start
    other.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run()
    with pytest.raises(ValidationConflict, match="was expired together with the history after it"):
        planned.commit()
    assert 4 in ids(catalog.load_table("db.events"))


def test_validation_history_names_a_rollback(catalog: SqlCatalog) -> None:
    t = make_table(catalog, "3")
    for i in range(3):
        t.append(events(1, start=i))
    s0, s1, s2 = (s.snapshot_id for s in t.snapshots())
    assert [s.snapshot_id for s in snapshots_between(t.metadata, s0, s2)] == [s1, s2]
    with t.manage_snapshots() as refs:
        refs.rollback_to(s0)
    t.append(events(1, start=9))
    head = t.current_snapshot()
    assert head is not None
    with pytest.raises(ValidationError, match="rolled back"):
        snapshots_between(t.metadata, s2, head.snapshot_id)
