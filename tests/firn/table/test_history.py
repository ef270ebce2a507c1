"""Snapshots and history: table.snapshots/current_snapshot/history/snapshot_as_of, refresh and
metadata_location, the metadata log (write.metadata.previous-versions-max), deleting old
metadata files (write.metadata.delete-after-commit.enabled), and running summary totals."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.metadata_io import parse_metadata_version, read_metadata
from firn.errors import NotFound
from tests.fixtures.catalogs import make_memory_catalog, make_sqlite_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, events, make_events_table


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def _metadata_files(catalog: InMemoryCatalog | SqlCatalog, location: str) -> list[str]:
    return sorted(
        f.location
        for f in catalog.io.list_prefix(f"{location}/metadata")
        if f.location.endswith(".metadata.json")
    )


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_history_lists_every_commit_with_its_operation(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    assert table.history() == [] and table.current_snapshot() is None
    s1 = table.append(events(8))
    s2 = table.delete("region = 'eu'")
    s3 = table.overwrite(events(2, start=50), filter="id = 1")
    assert s1 is not None and s2 is not None and s3 is not None
    history = table.history()
    assert [h.snapshot_id for h in history] == [s1.snapshot_id, s2.snapshot_id, s3.snapshot_id]
    assert [h.operation for h in history] == ["append", "delete", "overwrite"]
    assert [h.parent_snapshot_id for h in history] == [None, s1.snapshot_id, s2.snapshot_id]
    assert all(h.is_current_ancestor for h in history)
    assert [h.timestamp_ms for h in history] == [s.timestamp_ms for s in (s1, s2, s3)]
    assert history[0].timestamp.tzinfo is not None
    assert table.current_snapshot() == s3 and table.snapshot_by_id(s2.snapshot_id) == s2
    assert table.snapshots() == [s1, s2, s3]


def test_snapshot_as_of_picks_the_snapshot_current_at_a_time(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    s1 = table.append(events(1))
    time.sleep(0.005)
    s2 = table.append(events(1, start=1))
    assert s1 is not None and s2 is not None
    assert table.snapshot_as_of(s1.timestamp_ms) == s1
    assert table.snapshot_as_of(s2.timestamp_ms - 1) == s1
    assert table.snapshot_as_of(s2.timestamp_ms + 10_000) == s2
    with pytest.raises(NotFound, match="history starts at"):
        table.snapshot_as_of(s1.timestamp_ms - 1)
    empty = make_events_table(catalog, 2, name="empty")
    with pytest.raises(NotFound, match="no history"):
        empty.snapshot_as_of(s1.timestamp_ms)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_summary_totals_follow_appends_and_deletes(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(20))
    table.append(events(4, start=100))
    table.delete("region = 'us'")
    table.delete("id = 2")  # rewrites the 'ap' file of the first append
    snap = table.current_snapshot()
    assert snap is not None
    tasks = table.scan().plan_files()
    assert snap.summary.get("total-records") == str(sum(t.file.record_count for t in tasks))
    assert snap.summary.get("total-records") == str(table.scan().count()) == "17"
    assert snap.summary.get("total-data-files") == str(len(tasks))
    assert snap.summary.get("total-files-size") == str(sum(t.file.file_size_in_bytes for t in tasks))


def test_refresh_sees_another_writer_and_metadata_location_advances(sqlite: SqlCatalog) -> None:
    table = make_events_table(sqlite, 2)
    first_location = table.metadata_location
    assert parse_metadata_version(first_location) == 0
    other = sqlite.load_table("db.events")
    other.append(events(3))
    assert table.current_snapshot() is None  # stale until refreshed
    assert table.refresh() is table
    assert table.metadata_location == other.metadata_location != first_location
    assert parse_metadata_version(table.metadata_location) == 1
    assert table.current_snapshot() == other.current_snapshot()
    table.append(events(1, start=10))
    assert parse_metadata_version(table.metadata_location) == 2
    assert sqlite.load_metadata_location("db.events") == table.metadata_location
    # The metadata log points back at the previous files, oldest first.
    assert [e.metadata_file for e in table.metadata.metadata_log] == [first_location, other.metadata_location]


def test_metadata_log_is_trimmed_to_previous_versions_max(sqlite: SqlCatalog) -> None:
    table = make_events_table(sqlite, 2, properties={"write.metadata.previous-versions-max": "3"})
    locations = [table.metadata_location]
    for i in range(6):
        table.append(events(1, start=i))
        locations.append(table.metadata_location)
    log = [e.metadata_file for e in table.metadata.metadata_log]
    assert log == locations[-4:-1]
    # Without delete-after-commit the old files stay on storage.
    assert _metadata_files(sqlite, table.location) == sorted(locations)
    # The log round-trips through the metadata file.
    assert [e.metadata_file for e in read_metadata(sqlite.io, table.metadata_location).metadata_log] == log


def test_delete_after_commit_removes_files_that_fall_off_the_log(sqlite: SqlCatalog) -> None:
    table = make_events_table(
        sqlite,
        2,
        properties={
            "write.metadata.previous-versions-max": "2",
            "write.metadata.delete-after-commit.enabled": "true",
        },
    )
    locations = [table.metadata_location]
    for i in range(5):
        table.append(events(1, start=i))
        locations.append(table.metadata_location)
    kept = sorted([*(e.metadata_file for e in table.metadata.metadata_log), table.metadata_location])
    assert kept == sorted(locations[-3:])
    assert _metadata_files(sqlite, table.location) == kept
    # Time travel still works: snapshots are not expired by metadata cleanup.
    assert table.scan(snapshot_id=table.snapshots()[0].snapshot_id).count() == 1


def test_gzip_metadata_compression(sqlite: SqlCatalog) -> None:
    table = make_events_table(sqlite, 2, properties={"write.metadata.compression-codec": "gzip"})
    table.append(events(2))
    assert table.metadata_location.endswith(".gz.metadata.json")
    assert sqlite.load_table("db.events").scan().count() == 2


def test_set_and_remove_properties(catalog: InMemoryCatalog) -> None:
    from firn.errors import ValidationError

    table = make_events_table(catalog, 2)
    table.set_properties({"owner": "data-eng"}, comment="events")
    assert table.properties["owner"] == "data-eng" and table.properties["comment"] == "events"
    table.remove_properties("owner", "not-there")
    assert "owner" not in table.properties
    with pytest.raises(ValidationError, match=r"commit\.retry\.num-retries"):
        table.set_properties({"commit.retry.num-retries": "many"})
    with pytest.raises(ValidationError, match="upgrade"):
        table.set_properties({"format-version": "3"})
    assert catalog.load_table("db.events").properties.get("comment") == "events"


def test_refresh_reuses_parsed_snapshots_and_still_reads_what_the_file_says(
    sqlite: SqlCatalog, tmp_path: Path
) -> None:
    writer = make_events_table(sqlite, 2)
    writer.append(events(1))
    reader_catalog = make_sqlite_catalog(tmp_path)  # parses the files the writer wrote
    reader = reader_catalog.load_table("db.events")
    (first,) = reader.snapshots()
    writer.append(events(1, start=1))
    reader.refresh()
    # Snapshots are immutable: a refresh builds only the new one (O(change), not O(history)).
    assert reader.snapshots()[0] is first and len(reader.snapshots()) == 2
    # A reused snapshot is exactly what the file holds: a different one under the same id is
    # parsed afresh.
    path = Path(writer.metadata_location)
    doc = json.loads(path.read_text())
    doc["snapshots"][0]["summary"]["edited"] = "yes"
    # A table of its own: a second entry at the writer's location would be refused.
    doc["location"] = f"{doc['location']}-edited"
    edited = Path(doc["location"], "metadata", "edited.metadata.json")
    edited.parent.mkdir(parents=True)
    edited.write_text(json.dumps(doc))
    again = reader_catalog.register_table("db.edited", str(edited))
    assert again.snapshots()[0].summary.get("edited") == "yes"
    assert again.snapshots()[1] is reader.snapshots()[1]
    reader_catalog.close()


def test_metadata_codec_defaults_gzip_for_v4_only(sqlite: SqlCatalog) -> None:
    """V4 tables write gzip metadata unless told otherwise; v1-v3 keep Iceberg's default."""
    v4 = make_events_table(sqlite, 4, name="v4")
    v2 = make_events_table(sqlite, 2, name="v2")
    plain = make_events_table(
        sqlite, 4, name="plain", properties={"write.metadata.compression-codec": "none"}
    )
    for t in (v4, v2, plain):
        t.append(events(3))
    assert v4.metadata_location.endswith(".gz.metadata.json")
    assert not v2.metadata_location.endswith(".gz.metadata.json")
    assert not plain.metadata_location.endswith(".gz.metadata.json")
    assert v4.io.new_input(v4.metadata_location).read()[:2] == b"\x1f\x8b"
    for name in ("v4", "v2", "plain"):
        assert sqlite.load_table(f"db.{name}").scan().count() == 3
