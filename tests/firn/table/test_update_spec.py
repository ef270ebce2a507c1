"""Partition evolution through table.update_spec(): new data uses the new spec, old files keep
theirs, scans prune across specs, v1 keeps removed fields as void, and invalid changes fail."""

from __future__ import annotations

from collections import Counter

import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.errors import ValidationConflict, ValidationError
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, events, make_events_table, sorted_rows


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _specs_of_files(table: Table, **scan: object) -> Counter[int]:
    return Counter(t.file.spec_id for t in table.scan(**scan).plan_files())  # type: ignore[arg-type]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_add_field_applies_to_new_data_only(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    old = events(20)
    table.append(old)
    with table.update_spec() as update:
        update.add_field("ts", "day")
    spec = table.spec()
    assert spec.spec_id == 1 and [str(f.transform) for f in spec.fields] == ["identity", "day"]
    assert [f.field_id for f in spec.fields] == [1000, 1001] and table.metadata.last_partition_id == 1001
    new = events(20, start=100)
    table.append(new)
    assert _specs_of_files(table) == Counter(
        {0: 4, 1: len({(r["region"], r["ts"].date()) for r in new.to_pylist()})}
    )
    assert sorted_rows(table.scan().to_arrow()) == sorted_rows(old) + sorted_rows(new)
    # _spec_id tells the two apart; filters prune in both specs.
    spec_ids = table.scan(columns=["id", "_spec_id"]).to_arrow().to_pylist()
    assert {r["id"]: r["_spec_id"] for r in spec_ids} == {
        **{i: 0 for i in range(20)},
        **{i: 1 for i in range(100, 120)},
    }
    eu = table.scan(filter="region = 'eu'")
    assert {t.file.partition[0] for t in eu.plan_files()} == {"eu"}
    assert sorted(eu.to_arrow().column("id").to_pylist()) == [
        i for i in [*range(20), *range(100, 120)] if i % 4 == 0
    ]


def test_v1_remove_field_becomes_void(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 1, partition_spec=[("region", "identity"), ("id", "bucket[2]")])
    table.append(events(8))
    with table.update_spec() as update:
        update.remove_field("region")
    spec = table.spec()
    assert [(f.name, str(f.transform)) for f in spec.fields] == [
        ("region", "void"),
        ("id_bucket_2", "bucket[2]"),
    ]
    table.append(events(8, start=50))
    new_files = [t.file for t in table.scan().plan_files() if t.file.spec_id == spec.spec_id]
    assert new_files and all(f.partition[0] is None for f in new_files)
    assert table.scan().count() == 16 and table.scan(filter="region = 'us'").count() == 4


@pytest.mark.parametrize("version", [2, 3])
def test_v2_remove_field_drops_it(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity"), ("id", "bucket[2]")])
    table.append(events(8))
    with table.update_spec() as update:
        update.remove_field("region")
    assert [f.name for f in table.spec().fields] == ["id_bucket_2"]
    table.append(events(8, start=50))
    assert table.scan(filter="region = 'us'").count() == 4


def test_re_adding_a_field_reuses_its_id_and_rename(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, partition_spec=[("region", "identity")])
    with table.update_spec() as update:
        update.remove_field("region")
    with table.update_spec() as update:
        update.add_field("region", "identity")
        update.add_field("ts", "hour", "ts_hr")
    fields = {f.name: f.field_id for f in table.spec().fields}
    assert fields == {"region": 1000, "ts_hr": 1001}
    with table.update_spec() as update:
        update.rename_field("ts_hr", "hour_of_ts")
    assert [f.name for f in table.spec().fields] == ["region", "hour_of_ts"]


def test_partitioning_an_unpartitioned_table(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(10))
    with table.update_spec() as update:
        update.add_field("id", "truncate[5]")
    table.append(events(10, start=10))
    assert _specs_of_files(table) == Counter({0: 1, 1: 2})
    tasks = table.scan(filter="id >= 15").plan_files()
    # The unpartitioned file cannot be pruned by partition, but its metrics can.
    assert sorted(t.file.partition for t in tasks) == [(15,)]


INVALID = [
    ("unknown column", lambda u: u.add_field("nope", "identity"), "nope"),
    ("bad transform for type", lambda u: u.add_field("name", "day"), "cannot apply"),
    ("unknown transform", lambda u: u.add_field("id", "squash[3]"), "unknown partition transform .squash"),
    ("duplicate", lambda u: u.add_field("region", "identity"), "already has"),
    ("name clash", lambda u: u.add_field("id", "bucket[8]", "region"), "already used"),
    ("remove unknown", lambda u: u.remove_field("nope"), "nope"),
]


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_spec_changes(catalog: InMemoryCatalog, case: tuple) -> None:  # type: ignore[type-arg]
    _, change, message = case
    table = make_events_table(catalog, 2, partition_spec=[("region", "identity")])
    with pytest.raises(ValidationError, match=message):
        change(table.update_spec())
    assert len(table.specs()) == 1


def test_concurrent_spec_change_fails_the_stale_update(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    stale = table.update_spec().add_field("region", "identity")
    with catalog.load_table("db.events").update_spec() as update:
        update.add_field("id", "bucket[4]")
    with pytest.raises(ValidationConflict, match="changed concurrently"):
        stale.commit()
