"""Two-phase orphan removal (issue 18 item 4): a run records what it finds, a later one deletes
what was recorded at least ``orphans.grace`` ago and is still unreferenced and unchanged."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import InvalidMetadata, ValidationError
from firn.maintenance import MaintenancePlan, RemoveOrphanFilesPlan
from firn.maintenance.orphan_record import RECORD_FORMAT, read_record, record_location
from firn.maintenance.remove_orphan_files import RemoveOrphanFiles
from firn.table.table import Table
from tests.fixtures.maintenance import (
    backdate_orphan_record,
    files_on_disk,
    local,
    orphan_record,
    rows,
    soon_ms,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
HOUR_MS = 3600 * 1000


@pytest.fixture
def t(sqlite_catalog: SqlCatalog) -> Table:
    sqlite_catalog.create_namespace("db")
    table = sqlite_catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    return table


def _plant(t: Table, name: str) -> str:
    path = f"{t.location}/data/{name}"
    Path(path).write_bytes(b"orphan " + name.encode())
    return path


def _run(t: Table, **options: object) -> RemoveOrphanFiles:
    return t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, **options)


def test_first_run_records_second_waits_then_deletes_after_the_grace(t: Table) -> None:
    stray = _plant(t, "stray.parquet")
    first = _run(t, delete=True).run()
    assert first.recorded_file_locations == (stray,) and first.deleted_files == 0 and os.path.exists(stray)
    entry = orphan_record(t)[stray]
    assert entry["size"] == len(b"orphan stray.parquet") and entry["modified-ms"] is not None
    assert abs(entry["first-seen-ms"] - time.time() * 1000) < 60_000
    # The record is JSON in the documented shape, under metadata/orphans/.
    record = json.loads(Path(local(first.record_location)).read_text())
    assert record["format"] == RECORD_FORMAT and record["table-uuid"] == str(t.metadata.table_uuid)
    assert first.record_location == f"{t.location}/metadata/orphans/orphan-record.json"

    t.set_properties({"orphans.grace": "2h"})
    backdate_orphan_record(t, HOUR_MS)  # recorded an hour ago: still within 2h
    plan = _run(t, delete=True).plan()
    assert [o.path for o in plan.waiting] == [stray] and plan.to_delete == () and plan.grace_ms == 2 * HOUR_MS
    backdate_orphan_record(t, HOUR_MS)  # now two hours ago
    result = _run(t, delete=True).run()
    assert result.deleted_file_locations == (stray,) and not os.path.exists(stray)
    assert orphan_record(t) == {}


def test_a_single_run_never_deletes_even_with_no_grace(t: Table) -> None:
    t.set_properties({"orphans.grace": "0"})
    stray = _plant(t, "stray.parquet")
    first = _run(t, delete=True).run()
    assert first.deleted_files == 0 and os.path.exists(stray) and first.recorded_files == 1
    second = _run(t, delete=True).run()
    assert second.deleted_file_locations == (stray,) and not os.path.exists(stray)


def test_dry_run_plans_both_lists_and_writes_nothing(t: Table) -> None:
    old, new = _plant(t, "old.parquet"), _plant(t, "new.parquet")
    os.remove(new)
    _run(t, delete=True).run()
    backdate_orphan_record(t, 2 * 24 * HOUR_MS)
    Path(new).write_bytes(b"orphan new.parquet")
    record_before = orphan_record(t)
    disk = files_on_disk(t.location)
    plan = _run(t).plan()
    assert plan.dry_run and plan.is_noop
    assert [o.path for o in plan.to_delete] == [old] and [o.path for o in plan.to_record] == [new]
    text = str(plan)
    assert "to record (first seen now" in text and "to delete (recorded at least 1d ago): 1" in text
    assert old in text and new in text
    result = _run(t).run()
    assert result.dry_run and result.deleted_files == 0 and result.recorded_file_locations == (new,)
    assert files_on_disk(t.location) == disk and orphan_record(t) == record_before
    again = MaintenancePlan.from_json(plan.to_json())
    assert isinstance(again, RemoveOrphanFilesPlan) and again == plan


def test_a_file_referenced_again_is_dropped_from_the_record(t: Table) -> None:
    path = f"{t.location}/data/late.parquet"
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), path)
    _run(t, delete=True).run()
    assert path in orphan_record(t)
    backdate_orphan_record(t, 2 * 24 * HOUR_MS)
    t.add_files([path])  # a late commit references it after all
    plan = _run(t, delete=True).plan()
    assert plan.to_delete == () and [(u.item, u.reason) for u in plan.unrecorded] == [
        (path, "referenced by the table again")
    ]
    result = plan.execute(t)
    assert result.unrecorded_files == 1 and result.deleted_files == 0 and os.path.exists(path)
    assert orphan_record(t) == {} and 7 in {r["id"] for r in rows(t)}


def test_gone_and_changed_files_leave_the_record(t: Table) -> None:
    gone, changed = _plant(t, "gone.parquet"), _plant(t, "changed.parquet")
    _run(t, delete=True).run()
    backdate_orphan_record(t, 2 * 24 * HOUR_MS)
    os.remove(gone)
    Path(changed).write_bytes(b"rewritten with other content")
    past = time.time() - 3600
    os.utime(changed, (past, past))  # a different modification time than recorded
    result = _run(t, delete=True).run()
    assert result.deleted_files == 0 and os.path.exists(changed)
    assert result.recorded_file_locations == (changed,)  # recorded afresh: its clock restarts
    assert set(orphan_record(t)) == {changed}
    assert abs(orphan_record(t)[changed]["first-seen-ms"] - time.time() * 1000) < 60_000


def test_the_record_is_never_an_orphan_and_a_narrow_listing_keeps_other_entries(t: Table) -> None:
    data, meta = _plant(t, "stray.parquet"), f"{t.location}/metadata/stray.avro"
    Path(meta).write_bytes(b"not referenced")
    _run(t, delete=True).run()
    assert set(orphan_record(t)) == {data, meta}
    plan = _run(t).plan()
    assert not any("/orphans/" in o.path for o in plan.orphans)
    as_uri = _run(t, location=f"file://{t.location}").plan()  # the same place, another spelling
    assert len(as_uri.orphans) == 2 and not any("/orphans/" in o.path for o in as_uri.orphans)
    # A run over data/ only leaves the record's metadata/ entries as they are.
    backdate_orphan_record(t, 2 * 24 * HOUR_MS)
    result = _run(t, delete=True, location=f"{t.location}/data").run()
    assert result.deleted_file_locations == (data,)
    assert set(orphan_record(t)) == {meta} and os.path.exists(meta)


def test_a_damaged_record_stops_the_run_and_another_table_s_is_ignored(t: Table) -> None:
    _plant(t, "stray.parquet")
    _run(t, delete=True).run()
    where = Path(local(record_location(t.location)))
    data = json.loads(where.read_text())
    data["table-uuid"] = "00000000-0000-0000-0000-000000000000"  # the table was re-created here
    where.write_text(json.dumps(data))
    assert read_record(t.io, str(where), str(t.metadata.table_uuid)) == {}
    plan = _run(t, delete=True).plan()
    assert plan.to_delete == () and len(plan.to_record) == 1
    where.write_text("{not json")
    with pytest.raises(InvalidMetadata, match=r"orphan record is unreadable.*delete it"):
        _run(t, delete=True).plan()


def test_grace_must_be_a_duration(t: Table) -> None:
    with pytest.raises(ValidationError, match=r"orphans\.grace.*duration such as 1d"):
        t.set_properties({"orphans.grace": "86400"})
