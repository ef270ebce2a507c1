"""remove_orphan_files: dry run by default, the age cut-off and its one-day guard, what counts
as referenced, hidden files, prefix mismatches (in memory, unit level), deletion through the
runner, an orphan left by a writer killed before its commit, and projected manifest reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.maintenance import MaintenancePlan, RemoveOrphanFilesPlan, RemoveOrphanFilesResult
from firn.maintenance.manifest_paths import read_manifest_paths
from firn.maintenance.remove_orphan_files import split_location
from firn.manifests.manifest import read_manifest
from firn.manifests.manifest_list import read_manifest_list
from firn.table.table import Table
from tests.fixtures.maintenance import (
    backdate_orphan_record,
    files_on_disk,
    local,
    orphan_record,
    remove_orphans,
    rows,
    soon_ms,
)

DAY_MS = 24 * 3600 * 1000

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def _batch(start: int, n: int = 10) -> pa.Table:
    return pa.table({"id": range(start, start + n), "g": ["a", "b"] * (n // 2)}, schema=SCHEMA)


def _table(catalog: SqlCatalog | InMemoryCatalog, version: int = 2, name: str = "t") -> Table:
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    t = catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        partition_spec=[("g", "identity")],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    for i in range(3):
        t.append(_batch(10 * i))
    t.delete("id < 3")
    return t


def _plant(t: Table, relative: str, age_s: float = 0.0) -> str:
    path = f"{t.location}/{relative}"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * 100)
    if age_s:
        past = time.time() - age_s
        os.utime(path, (past, past))
    return path


@pytest.mark.parametrize("version", [2, 3, 4])
def test_dry_run_reports_orphans_and_deletes_nothing(sqlite_catalog: SqlCatalog, version: int) -> None:
    t = _table(sqlite_catalog, version)
    stray = _plant(t, "data/g=a/stray.parquet")
    old_meta = _plant(t, "metadata/00000-gone.metadata.json")
    disk = files_on_disk(t.location)
    result = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).run()
    assert isinstance(result, RemoveOrphanFilesResult) and result.dry_run
    assert set(result.orphan_file_locations) == {stray, old_meta}
    assert result.orphan_files_count == 2 and result.orphan_bytes == 200 and result.deleted_files == 0
    assert set(result.recorded_file_locations) == {stray, old_meta}  # would record: nothing written
    assert files_on_disk(t.location) == disk and orphan_record(t) == {}
    # delete=True, first run: records them (phase one), deletes nothing.
    before = rows(t)
    first = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).run()
    assert set(first.recorded_file_locations) == {stray, old_meta} and first.deleted_files == 0
    record = local(first.record_location)
    assert files_on_disk(t.location) == disk | {record} and set(orphan_record(t)) == {stray, old_meta}
    # Within the grace (1 day by default) a second run only waits.
    waiting = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).run()
    assert waiting.waiting_files == 2 and waiting.deleted_files == 0 and waiting.recorded_files == 0
    # Recorded a day ago: deleted now, and nothing else; the table still reads.
    backdate_orphan_record(t, DAY_MS)
    result = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).run()
    assert result.deleted_files == 2 and result.deleted_bytes == 200
    assert set(result.deleted_file_locations) == {stray, old_meta}
    assert files_on_disk(t.location) == (disk - {stray, old_meta}) | {record}
    assert orphan_record(t) == {} and rows(t) == before
    assert t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan().orphans == ()


def test_files_younger_than_older_than_are_kept(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog)
    old = _plant(t, "data/old.parquet", age_s=5 * 24 * 3600)
    young = _plant(t, "data/young.parquet", age_s=3600)
    plan = t.maintenance.remove_orphan_files().plan()  # default: 3 days
    assert [o.path for o in plan.orphans] == [old] and plan.too_young >= 1
    assert young not in {o.path for o in plan.orphans}
    assert "dry run: nothing is recorded or deleted" in str(plan)


def test_less_than_a_day_needs_force(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog)
    with pytest.raises(ValidationError, match=r"less than a day ago.*force=True"):
        t.maintenance.remove_orphan_files(older_than=soon_ms(-3600))
    t.maintenance.remove_orphan_files(older_than=soon_ms(-3600), force=True).plan()
    with pytest.raises(ValidationError, match="valid options: dry-run, equal-authorities"):
        t.maintenance.remove_orphan_files(dryrun=True)
    with pytest.raises(ValidationError, match="prefix_mismatch_mode must be one of"):
        t.maintenance.remove_orphan_files(prefix_mismatch_mode="maybe")


def test_referenced_files_hidden_files_and_the_location_option(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog)
    hidden = _plant(t, "data/.tmp/partial.parquet")
    crc = _plant(t, "data/g=a/._SUCCESS.crc")
    meta_stray = _plant(t, "metadata/snap-123.avro")
    data_stray = _plant(t, "data/g=b/stray.parquet")
    plan = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
    orphans = {o.path for o in plan.orphans}
    assert orphans == {meta_stray, data_stray} and plan.hidden == 2
    assert hidden not in orphans and crc not in orphans
    # Everything the table references is known: its metadata files, manifests, data and DVs.
    assert plan.referenced >= len(files_on_disk(t.location)) - 4
    only_data = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, location=f"{t.location}/data"
    )
    assert {o.path for o in only_data.plan().orphans} == {data_stray}


def test_plan_round_trips_and_a_commit_after_planning_protects_its_files(sqlite_catalog: SqlCatalog) -> None:
    t = _table(sqlite_catalog)
    old = _plant(t, "data/g=a/registered-later.parquet")
    t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).run()
    backdate_orphan_record(t, DAY_MS)
    plan = t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, delete=True).plan()
    again = MaintenancePlan.from_json(plan.to_json())
    assert isinstance(again, RemoveOrphanFilesPlan) and again == plan
    assert [o.path for o in plan.to_delete] == [old]
    # Another writer registers the file after the plan was made (add_files of an old file).
    os.remove(old)
    pa.parquet.write_table(pa.table({"id": [7777], "g": ["a"]}, schema=SCHEMA), old)  # type: ignore[attr-defined]
    other = sqlite_catalog.load_table("db.t")
    other.add_files([old])
    result = again.execute(t)
    assert old not in result.orphan_file_locations and os.path.exists(old) and result.deleted_files == 0
    assert any(s.item == old for s in result.skipped) and result.unrecorded_files == 1
    assert old not in orphan_record(t)  # referenced again: dropped from the record
    assert 7777 in {r["id"] for r in rows(t)}


def test_orphan_of_a_writer_killed_before_its_commit(sqlite_catalog: SqlCatalog, tmp_path: Path) -> None:
    t = _table(sqlite_catalog)
    before = files_on_disk(t.location)
    script = textwrap.dedent(
        f"""
        import os, signal
        import pyarrow as pa
        from tests.fixtures.catalogs import make_sqlite_catalog
        from pathlib import Path
        t = make_sqlite_catalog(Path({str(tmp_path)!r})).load_table("db.t")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])
        tx = t.transaction()
        tx.append(pa.table({{"id": [900, 901], "g": ["a", "b"]}}, schema=schema))  # data files written
        os.kill(os.getpid(), signal.SIGKILL)  # killed before the commit
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[3], check=False
    )
    assert done.returncode == -signal.SIGKILL
    leftovers = files_on_disk(t.location) - before
    assert leftovers and all(p.endswith(".parquet") for p in leftovers)
    t.refresh()
    assert 900 not in {r["id"] for r in rows(t)}
    result = remove_orphans(t, older_than=soon_ms(), force=True)
    assert set(result.orphan_file_locations) == set(result.deleted_file_locations) == leftovers
    assert files_on_disk(t.location) == before | {local(result.record_location)}


# -- prefix mismatches: unit level, in memory (any scheme is a plain key there) -------------------------
def _memory_table_with_copy(scheme: str) -> tuple[Table, str, str]:
    """A table at memory://..., and a copy of one of its data files under ``scheme``://..."""
    catalog = InMemoryCatalog("m")
    t = _table(catalog)
    data = t.scan().plan_files()[0].file.file_path
    assert data.startswith("memory://")
    copy = scheme + data[len("memory") :]
    t.io.new_output(copy).write(t.io.new_input(data).read())
    # Listed files must be old enough: the fake stamps files with their write time.
    return t, copy, scheme + t.location[len("memory") :]


def test_prefix_mismatch_modes() -> None:
    t, copy, location = _memory_table_with_copy("mem2")
    with pytest.raises(
        ValidationError,
        match=r"scheme/authority \(memory://warehouse \(referenced\) vs mem2://warehouse \(listed\)\)",
    ):
        t.maintenance.remove_orphan_files(older_than=soon_ms(), force=True, location=location).plan()
    ignore = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, location=location, prefix_mismatch_mode="ignore"
    ).plan()
    assert (
        ignore.orphans == ()
        and ignore.mismatched == 1
        and "kept for a scheme/authority mismatch" in str(ignore)
    )
    # DELETE makes the copy an orphan, but it lies outside the table's own location (another
    # scheme): it is kept and reported, never recorded or deleted (issue 18).
    delete = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, location=location, prefix_mismatch_mode="DELETE", delete=True
    ).run()
    assert copy not in delete.orphan_file_locations and delete.deleted_files == 0
    assert delete.kept_outside_location == 1 and delete.recorded_files == 0
    assert [s.item for s in delete.skipped] == [copy] and "outside-location" in delete.skipped[0].reason
    assert t.io.new_input(copy).exists()


def test_equal_schemes_and_authorities() -> None:
    t, copy, location = _memory_table_with_copy("mem2")
    plan = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, location=location, equal_schemes={"mem2,mem3": "memory"}
    ).plan()
    assert copy not in {o.path for o in plan.orphans} and plan.mismatched == 0
    # JSON text works too (the CLI and Spark job pass options as text).
    plan = t.maintenance.remove_orphan_files(
        older_than=soon_ms(), force=True, location=location, equal_schemes='{"mem2": "memory"}'
    ).plan()
    assert plan.orphans == ()
    with pytest.raises(ValidationError, match="equal-schemes"):
        t.maintenance.remove_orphan_files(equal_schemes="s3a=s3")


def test_split_location() -> None:
    assert split_location("s3a://bucket/a//b/") == ("s3a", "bucket", "/a/b")
    assert split_location("file:///tmp/x") == ("file", "", "/tmp/x")
    assert split_location("file:/tmp/x") == ("file", "", "/tmp/x")
    assert split_location("/tmp/x") == ("", "", "/tmp/x")
    assert split_location("warehouse/db/t") == ("", "", "warehouse/db/t")


# -- projected manifest reads --------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2, 3])
def test_projected_manifest_read_matches_the_full_decode(sqlite_catalog: SqlCatalog, version: int) -> None:
    t = _table(sqlite_catalog, version)
    t.overwrite(_batch(100, 4), filter="id >= 20")  # DELETED entries too
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    for m in read_manifest_list(t.io.new_input(snap.manifest_list)):
        full = read_manifest(t.io.new_input(m.manifest_path), m, include_deleted=True, use_cache=False)
        fast = read_manifest_paths(t.io, m)
        assert list(fast.path) == [e.data_file.file_path for e in full]
        assert list(fast.status) == [int(e.status) for e in full]
        assert list(fast.snapshot_id) == [e.snapshot_id for e in full]
        assert list(fast.size) == [e.data_file.file_size_in_bytes for e in full]
        assert list(fast.content) == [int(e.data_file.content) for e in full]


def _memory_table_with_authority_copy(authority: str) -> tuple[Table, str, str]:
    """A table at memory://<authority>/..., and a copy of one of its data files that differs
    only in the authority."""
    catalog = InMemoryCatalog("m")
    t = _table(catalog)
    data = t.scan().plan_files()[0].file.file_path
    scheme, own, _ = split_location(data)
    assert scheme == "memory" and own
    copy = data.replace(f"memory://{own}/", f"memory://{authority}/", 1)
    t.io.new_output(copy).write(t.io.new_input(data).read())
    return t, copy, t.location.replace(f"memory://{own}/", f"memory://{authority}/", 1)


def test_equal_authorities() -> None:
    t, copy, location = _memory_table_with_authority_copy("replica")
    own = split_location(t.location)[1]
    options: dict[str, object] = {"older_than": soon_ms(), "force": True, "location": location}
    with pytest.raises(
        ValidationError, match=rf"memory://{own} \(referenced\) vs memory://replica \(listed\)"
    ):
        t.maintenance.remove_orphan_files(**options).plan()
    same = t.maintenance.remove_orphan_files(**options, equal_authorities={"replica,mirror": own}).plan()
    assert same.orphans == () and same.mismatched == 0 and same.listed >= 1
    other = t.maintenance.remove_orphan_files(**options, equal_authorities={"mirror": own}).plan
    with pytest.raises(ValidationError, match="prefix_mismatch_mode"):
        other()
    deleted = t.maintenance.remove_orphan_files(**options, prefix_mismatch_mode="delete").plan()
    # An orphan now, but under another authority: outside the table's location, so kept.
    assert deleted.orphans == () and [k.item for k in deleted.kept] == [copy]
    assert deleted.kept_outside_location == 1 and copy in str(deleted)


def test_s3_schemes_are_equal_by_default() -> None:
    """Iceberg's default ``equal_schemes`` ({"s3n,s3a": "s3"}): a file listed as s3a:// that the
    table references as s3:// is the same file."""
    from firn.maintenance.remove_orphan_files import DEFAULT_EQUAL_SCHEMES, _Matcher

    assert DEFAULT_EQUAL_SCHEMES == {"s3n,s3a": "s3"}
    matcher = _Matcher(DEFAULT_EQUAL_SCHEMES, {})
    matcher.add_all(["s3://bucket/t/data/a.parquet", "/t/data/b.parquet"])
    assert matcher.match("s3a://bucket/t/data/a.parquet", "ERROR") == (False, None)
    assert matcher.match("s3n://bucket//t/data/a.parquet", "ERROR") == (False, None)
    # A referenced path without scheme or authority matches any (Java's FileURI).
    assert matcher.match("hdfs://nn:8020/t/data/b.parquet", "ERROR") == (False, None)
    assert matcher.match("gs://bucket/t/data/a.parquet", "ERROR")[1] is not None  # a mismatch
    assert matcher.match("gs://bucket/t/data/a.parquet", "DELETE") == (True, None)
    assert matcher.match("s3://bucket/t/data/c.parquet", "ERROR") == (True, None)  # unreferenced
