"""Format-version upgrades v1 -> v2 -> v3: metadata only, reads identical at every step,
writes keep working, row lineage starts at the first v3 commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.metadata_io import read_metadata
from firn.errors import Unsupported, ValidationError
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.tables import events, make_events_table, sorted_rows


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def test_upgrade_v1_to_v2_to_v3_keeps_reads_identical(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 1, partition_spec=[("region", "identity"), ("ts", "month")])
    table.append(events(20))
    table.delete("id = 3")
    v1_rows = sorted_rows(table.scan().to_arrow())
    v1_files = sorted(t.file.file_path for t in table.scan().plan_files())
    v1_snapshots = table.snapshots()

    table.upgrade(format_version=2)
    reloaded = catalog.load_table("db.events")
    assert (
        reloaded.format_version == 2
        and read_metadata(catalog.io, reloaded.metadata_location).format_version == 2
    )
    assert sorted_rows(reloaded.scan().to_arrow()) == v1_rows
    assert sorted(t.file.file_path for t in reloaded.scan().plan_files()) == v1_files  # nothing rewritten
    assert reloaded.snapshots() == v1_snapshots
    assert reloaded.scan(filter="region = 'eu'").count() == sum(1 for r in v1_rows if r["region"] == "eu")

    s2 = reloaded.append(events(5, start=100))
    assert s2 is not None and s2.sequence_number == 1  # the first v2 commit starts sequence numbers
    v2_rows = sorted_rows(reloaded.scan().to_arrow())
    reloaded.delete("id = 101")
    v2_rows = [r for r in v2_rows if r["id"] != 101]

    reloaded.upgrade(format_version=3)
    v3 = catalog.load_table("db.events")
    assert v3.format_version == 3 and v3.metadata.next_row_id == 0
    assert sorted_rows(v3.scan().to_arrow()) == v2_rows
    # Spec "Row Lineage for Upgraded Tables": existing snapshots have no row ids.
    assert all(s.first_row_id is None for s in v3.snapshots())
    assert set(v3.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()) == {None}
    # Time travel to a v1 snapshot still works.
    assert v1_snapshots[0].snapshot_id in {s.snapshot_id for s in v3.snapshots()}
    assert v3.scan(snapshot_id=v1_snapshots[0].snapshot_id).count() == 20


def test_first_v3_commit_assigns_row_ids_to_existing_files(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(4))
    table.append(events(3, start=10))
    table.upgrade(format_version=3)
    snap = table.append(events(2, start=20))
    assert snap is not None and snap.first_row_id == 0
    rows = table.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()
    row_ids = [r["_row_id"] for r in rows]
    assert None not in row_ids and sorted(row_ids) == list(range(9))
    assert table.metadata.next_row_id == 9


def test_upgrade_is_idempotent_and_never_downgrades(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2)
    location = table.metadata_location
    table.upgrade(format_version=2)
    assert table.metadata_location == location  # no-op: no new metadata file
    with pytest.raises(ValidationError, match="downgrade"):
        table.upgrade(format_version=1)
    with pytest.raises(Unsupported, match="5"):
        table.upgrade(format_version=5)
    with pytest.raises(Unsupported, match="abc"):
        table.upgrade(format_version="abc")  # type: ignore[arg-type]
    assert table.format_version == 2


def test_upgrade_to_v3_reads_identically_for_a_v2_table_with_schema_evolution(catalog: SqlCatalog) -> None:
    from firn.spec.types import StringType

    table = make_events_table(catalog, 2, partition_spec=[("id", "bucket[3]")])
    table.append(events(6))
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("name", "label")
    table.append(
        events(2, start=10).rename_columns(
            [*events(0).schema.names[:4], "label", *events(0).schema.names[5:]]
        )
    )
    before = sorted_rows(table.scan().to_arrow())
    table.upgrade(format_version=3)
    assert sorted_rows(catalog.load_table("db.events").scan().to_arrow()) == before
