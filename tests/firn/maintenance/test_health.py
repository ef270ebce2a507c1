"""``table.health()``: every metric agrees with a full scan plan of the same table, it reads only
metadata, and a poll reads only the manifests it has not seen."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.deletes.writers import write_equality_delete_files
from firn.io.base import FileIO, InputFile
from firn.maintenance import TableHealth
from firn.maintenance.health import SMALL_FILE_RATIO, clear_health_cache, health_cache_stats
from firn.spec.content import FileContent, FileFormat
from firn.table.table import Table
from tests.fixtures.row_deletes import make_table, rows

MOR = {"write.delete.mode": "merge-on-read"}
# Small enough that one append of a few rows is "small" and a larger one is split into files
# of about this size, some above 0.75x of it.
TARGET = {"write.target-file-size-bytes": "2200"}

# The interface fixed in the briefing (other parts code against these names, in this order).
BRIEFING_FIELDS = [
    "table",
    "format_version",
    "snapshot_id",
    "measured_at_ms",
    "snapshots",
    "oldest_snapshot_age_ms",
    "last_commit_ms",
    "records",
    "data_files",
    "data_bytes",
    "small_files",
    "target_file_size_bytes",
    "delete_files",
    "deletion_vectors",
    "position_delete_files",
    "equality_delete_files",
    "position_deletes",
    "equality_deletes",
    "delete_ratio",
    "manifests",
    "small_manifests",
    "root_entries",
    "root_bytes",
    "root_data_files",
    "root_delete_files",
    "root_manifest_dvs",
]


def expected(table: Table) -> dict[str, Any]:
    """The metrics health() reports, computed independently from a full scan plan."""
    tasks = table.scan().plan_files()
    data = [t.file for t in tasks]
    deletes = {(d.file_path, d.content_offset): d for t in tasks for d in t.delete_files}.values()
    dvs = [d for d in deletes if d.file_format is FileFormat.PUFFIN]
    pos = [
        d
        for d in deletes
        if d.content is FileContent.POSITION_DELETES and d.file_format is not FileFormat.PUFFIN
    ]
    eq = [d for d in deletes if d.content is FileContent.EQUALITY_DELETES]
    target = table.metadata.table_properties.write_target_file_size_bytes
    records = sum(f.record_count for f in data)
    deleted = sum(d.record_count for d in (*dvs, *pos, *eq))
    return {
        "data_files": len(data),
        "records": records,
        "data_bytes": sum(f.file_size_in_bytes for f in data),
        "small_files": sum(1 for f in data if f.file_size_in_bytes < int(SMALL_FILE_RATIO * target)),
        "deletion_vectors": len(dvs),
        "position_delete_files": len(pos),
        "equality_delete_files": len(eq),
        "delete_files": len(dvs) + len(pos) + len(eq),
        "position_deletes": sum(d.record_count for d in (*dvs, *pos)),
        "equality_deletes": sum(d.record_count for d in eq),
        "delete_ratio": min(1.0, deleted / records) if records else 0.0,
    }


def assert_agrees(table: Table) -> TableHealth:
    clear_health_cache()
    h = table.health()
    got = {k: getattr(h, k) for k in expected(table)}
    assert got == pytest.approx(expected(table))
    assert h.snapshot_id == table.metadata.current_snapshot_id
    assert h.snapshots == len(table.metadata.snapshots)
    assert h.format_version == table.format_version and h.table == table.name
    return h


def test_fields_are_the_briefing_interface() -> None:
    assert [f.name for f in dataclasses.fields(TableHealth)] == BRIEFING_FIELDS


def test_empty_table(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 2)
    h = t.health()
    assert h.snapshot_id is None and h.snapshots == 0 and h.oldest_snapshot_age_ms is None
    assert (h.data_files, h.records, h.manifests, h.delete_ratio) == (0, 0, 0, 0.0)
    assert h.root_entries is None
    assert h.last_commit_ms == t.metadata.last_updated_ms


@pytest.mark.parametrize("version", [1, 2, 3])
def test_legacy_tables_agree_with_the_scan(sqlite_catalog: SqlCatalog, version: int) -> None:
    props = {**TARGET, **(MOR if version > 1 else {})}
    t = make_table(sqlite_catalog, version, properties=props)
    t.append(rows(range(3)))
    t.append(rows(range(3, 300), name="a-longer-name-so-the-file-is-bigger-"))
    t.append(rows(range(300, 305)))
    if version > 1:
        t.delete("id < 2")  # position deletes (v2) or a DV (v3)
        t.delete("id = 301")
    h = assert_agrees(t)
    assert 0 < h.small_files < h.data_files  # both kinds present, so the threshold is exercised
    if version == 2:
        assert h.position_delete_files >= 2 and h.deletion_vectors == 0
    if version == 3:
        assert h.deletion_vectors >= 2 and h.position_delete_files == 0
    if version > 1:
        assert h.position_deletes == 3 and h.delete_ratio == pytest.approx(3 / 305)
    assert h.manifests == len(_manifest_paths(t))
    assert h.small_manifests == h.manifests  # a few KB each, far below 0.75 x 8 MB
    assert h.oldest_snapshot_age_ms is not None and h.oldest_snapshot_age_ms >= 0


def _manifest_paths(t: Table) -> list[str]:
    from firn.core.legacy.reader import snapshot_manifests

    return [m.manifest_path for m in snapshot_manifests(t.io, t.current_snapshot())]


def test_equality_deletes(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 2)
    t.append(rows([1, 2, 3, 4]))
    [eq] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([1, 3], pa.int64())}), ["id"]
    )
    t.row_delta().add_deletes([eq]).commit()
    h = assert_agrees(t)
    assert (h.equality_delete_files, h.equality_deletes, h.delete_files) == (1, 2, 1)
    assert h.delete_ratio == pytest.approx(0.5)


def _v4(catalog: SqlCatalog, **props: str) -> Table:
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    from tests.fixtures.row_deletes import ROWS_SCHEMA

    return catalog.create_table("db.v4", ROWS_SCHEMA, properties={"format-version": "4", **MOR, **props})


def test_v4_root_leaves_dvs_and_manifest_dvs(sqlite_catalog: SqlCatalog) -> None:
    t = _v4(sqlite_catalog, **TARGET)
    for i in range(4):
        t.append(rows(range(10 * i, 10 * i + 10)))
    h = assert_agrees(t)
    assert (h.root_data_files, h.manifests, h.root_entries) == (4, 0, 4)
    assert h.root_bytes == t.io.new_input(t.current_snapshot().root_manifest).length()  # type: ignore[union-attr]

    t.maintenance.flush_root(force=True).run()
    t.append(rows(range(100, 105)))
    h = assert_agrees(t)
    assert (h.root_data_files, h.manifests, h.small_manifests) == (1, 1, 1)

    t.delete("id = 3")  # a DV in the root for a file in a leaf
    h = assert_agrees(t)
    assert (h.root_delete_files, h.deletion_vectors, h.position_deletes) == (1, 1, 1)

    # Removing a whole file that lives in a leaf adds a manifest DV instead of rewriting it.
    t.delete("id >= 10 and id < 20")
    h = assert_agrees(t)
    assert h.root_manifest_dvs == 1
    assert h.data_files == 4 and h.records == 35


def test_v4_root_entries_count_live_entries_only(sqlite_catalog: SqlCatalog) -> None:
    import pyarrow.compute as pc

    from firn.manifests.v4_io import read_v4_manifest

    t = _v4(sqlite_catalog, **TARGET)
    for i in range(6):
        t.append(rows(range(10 * i, 10 * i + 10)))
    t.maintenance.rewrite_data_files(rewrite_all=True).run()
    t.refresh()
    # The compaction's root records its removals as DELETED entries (for changes()); the next
    # commit drops them, so they are not rows every commit rewrites.
    root = read_v4_manifest(t.io, t.current_snapshot().root_manifest)  # type: ignore[union-attr,arg-type]
    status = pc.struct_field(root.column("version_info"), "status").to_pylist()
    deleted = status.count(2)
    assert deleted >= 6
    h = assert_agrees(t)
    assert h.root_entries == len(status) - deleted == h.root_data_files
    t.append(rows(range(100, 102)))
    assert assert_agrees(t).root_entries == h.root_entries + 1


@pytest.mark.parametrize("commit_after_upgrade", [False, True])
def test_v4_upgraded_from_v2_reads_the_legacy_manifests(
    sqlite_catalog: SqlCatalog, commit_after_upgrade: bool
) -> None:
    t = make_table(sqlite_catalog, 2, properties=MOR)
    t.append(rows(range(5)))
    t.append(rows(range(5, 10)))
    t.delete("id = 1")  # a v2 position delete file
    t.upgrade(format_version=4)
    if commit_after_upgrade:
        t.append(rows([42]))
        t.delete("id >= 5 and id < 10")  # a whole legacy-manifest file: a manifest DV on an Avro leaf
    h = assert_agrees(t)
    assert h.position_delete_files == 1 and h.format_version == 4
    assert h.manifests >= 2 and h.root_entries is not None
    if commit_after_upgrade:
        assert h.root_manifest_dvs == 1 and h.data_files == 2
    else:
        assert h.root_bytes == 0  # no root manifest written yet: the manifest list stands in


class RecordingIO:
    """Delegates to a real FileIO and records every location opened for reading."""

    def __init__(self, io: FileIO) -> None:
        self._io = io
        self.opened: list[str] = []

    def new_input(self, location: str) -> InputFile:
        self.opened.append(location)
        return self._io.new_input(location)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._io, name)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_reads_metadata_only(sqlite_catalog: SqlCatalog, version: int) -> None:
    t = make_table(sqlite_catalog, version, properties=MOR) if version < 4 else _v4(sqlite_catalog)
    t.append(rows(range(10)))
    t.append(rows(range(10, 20)))
    t.delete("id = 4")
    if version == 4:
        t.maintenance.flush_root(force=True).run()
    content = {
        p
        for task in t.scan().plan_files()
        for p in (task.file_path, *(d.file_path for d in task.delete_files))
    }
    io = RecordingIO(t.io)
    clear_health_cache()
    from firn.manifests.v4_io import clear_v4_cache

    clear_v4_cache()
    h = Table(t.identifier, t.metadata, t.metadata_location, io, t.catalog).health()  # type: ignore[arg-type]
    assert h.data_files == 2
    assert io.opened, "health read nothing at all"
    assert not set(io.opened) & content


def test_a_poll_reads_only_new_manifests(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 2, properties={"commit.manifest-merge.enabled": "false"})
    for i in range(5):
        t.append(rows([i]))
    clear_health_cache()
    first = t.health()
    stats = health_cache_stats()
    assert (stats.misses, stats.values) == (5, 5)
    again = t.health()
    assert health_cache_stats().misses == 5 and again.data_files == first.data_files == 5
    t.append(rows([99]))
    polled = t.health()
    assert health_cache_stats().misses == 6 and polled.data_files == 6


def test_json_round_trip_and_small_file_threshold(sqlite_catalog: SqlCatalog) -> None:
    t = make_table(sqlite_catalog, 2)
    t.append(rows(range(10)))
    h = t.health()
    assert h.target_file_size_bytes == 512 * 1024 * 1024 and h.small_files == h.data_files == 1
    data = json.loads(h.to_json())
    assert list(data) == sorted(BRIEFING_FIELDS)
    assert TableHealth.from_dict(data) == h
    assert TableHealth.from_dict({**data, "added_later": 1}) == h
    # A new target is a new threshold: cached summaries of the old one are not reused.
    t.set_properties({"write.target-file-size-bytes": "100"})
    assert t.health().small_files == 0


def test_a_corrupt_root_is_named(sqlite_catalog: SqlCatalog) -> None:
    from firn.errors import InvalidMetadata
    from firn.manifests.v4_io import clear_v4_cache

    t = _v4(sqlite_catalog)
    t.append(rows([1]))
    root = t.current_snapshot().root_manifest  # type: ignore[union-attr]
    assert root is not None
    with open(root, "r+b") as f:  # the warehouse is local: damage the footer
        f.seek(-12, 2)
        f.write(b"\x00" * 12)
    clear_health_cache()
    clear_v4_cache()
    with pytest.raises(InvalidMetadata, match=root.split("/")[-1]):
        t.health()
