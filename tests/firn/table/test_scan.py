"""table.scan: filters (objects and strings), pruning of manifests and files, residuals,
projection (nested, metadata columns), time travel, limit, count, streaming, empty tables."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from firn import col
from firn.catalog.memory import InMemoryCatalog
from firn.core.legacy.reader import snapshot_manifests
from firn.errors import NotFound, ValidationError
from firn.expressions import AlwaysTrue, And, BooleanExpression
from firn.io.memory import InMemoryFileIO, InMemoryInputFile
from firn.manifests.cache import clear_caches
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, events, make_events_table, sorted_rows


class RecordingIO(InMemoryFileIO):
    """The in-memory FileIO, remembering every location opened for reading."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def new_input(self, location: str) -> InMemoryInputFile:
        self.opened.append(location)
        return super().new_input(location)


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _filtered(data: pa.Table, mask: Callable[[pa.Table], pa.ChunkedArray]) -> list[dict[str, Any]]:
    """The oracle: rows of ``data`` where ``mask`` is true (a null mask value counts as false)."""
    return sorted_rows(data.filter(pc.fill_null(mask(data), False)))


EVENTS = events(60)
UTC = dt.UTC
# (string filter, equivalent expression object, pyarrow oracle)
FILTERS: list[tuple[str, BooleanExpression, Callable[[pa.Table], Any]]] = [
    ("id > 42", col("id") > 42, lambda t: pc.greater(t["id"], 42)),
    (
        "id >= 10 and region = 'eu'",
        (col("id") >= 10) & (col("region") == "eu"),
        lambda t: pc.and_kleene(pc.greater_equal(t["id"], 10), pc.equal(t["region"], "eu")),
    ),
    (
        "region = 'us' or x is null",
        (col("region") == "us") | col("x").is_null(),
        lambda t: pc.or_kleene(pc.equal(t["region"], "us"), pc.is_null(t["x"])),
    ),
    ("region is null", col("region").is_null(), lambda t: pc.is_null(t["region"])),
    # Firn's two-valued semantics: "!=" holds for null, "not e" is the exact complement of e.
    ("x != 3", col("x") != 3, lambda t: pc.fill_null(pc.not_equal(t["x"], 3), True)),
    ("not (x = 3)", ~(col("x") == 3), lambda t: pc.invert(pc.fill_null(pc.equal(t["x"], 3), False))),
    (
        "id in (1, 5, 59, 1000)",
        col("id").isin([1, 5, 59, 1000]),
        lambda t: pc.is_in(t["id"], pa.array([1, 5, 59])),
    ),
    (
        "ts < '2024-01-03T00:00:00+00:00'",
        col("ts") < dt.datetime(2024, 1, 3, tzinfo=UTC),
        lambda t: pc.less(t["ts"], pa.scalar(dt.datetime(2024, 1, 3, tzinfo=UTC), pa.timestamp("us", "UTC"))),
    ),
    (
        "day >= '2024-06-01'",
        col("day") >= dt.date(2024, 6, 1),
        lambda t: pc.greater_equal(t["day"], pa.scalar(dt.date(2024, 6, 1), pa.date32())),
    ),
    (
        "name like 'name-01%'",
        col("name").starts_with("name-01"),
        lambda t: pc.starts_with(t["name"], "name-01"),
    ),
    ("amount > 10.5", col("amount") > 10.5, lambda t: pc.greater(t["amount"], pa.scalar(10.5))),
    (
        "info.src = 'app'",
        col("info.src") == "app",
        lambda t: pc.equal(pc.struct_field(t["info"], "src"), "app"),
    ),
]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
@pytest.mark.parametrize("spec", [[("region", "identity"), ("ts", "day")], [("id", "bucket[3]")], []])
def test_filters_as_strings_and_objects_match_the_oracle(
    catalog: InMemoryCatalog, version: int, spec: list[tuple[str, str]]
) -> None:
    table = make_events_table(catalog, version, partition_spec=spec)
    table.append(EVENTS.slice(0, 30))
    table.append(EVENTS.slice(30))
    for text, expr, oracle in FILTERS:
        want = _filtered(EVENTS, oracle)
        assert sorted_rows(table.scan(filter=text).to_arrow()) == want, text
        assert sorted_rows(table.scan(filter=expr).to_arrow()) == want, text
        assert table.scan(filter=text).count() == len(want), text


def test_identity_partition_pruning_skips_files(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, partition_spec=[("region", "identity")])
    table.append(EVENTS)
    all_files = table.scan().plan_files()
    assert len(all_files) == 4
    tasks = table.scan(filter="region = 'eu'").plan_files()
    assert [t.file.partition for t in tasks] == [("eu",)]
    # The partition predicate is fully answered by the partition: nothing left to filter.
    assert isinstance(tasks[0].residual, AlwaysTrue)
    nulls = table.scan(filter="region is null").plan_files()
    assert [t.file.partition for t in nulls] == [(None,)]
    assert table.scan(filter="region in ('eu', 'us')").count() == 30


def test_day_partition_pruning_and_residual(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, partition_spec=[("ts", "day")])
    data = events(20)  # ts every 13 hours from 2023-12-30T22:00Z
    table.append(data)
    cutoff = dt.datetime(2024, 1, 2, 12, tzinfo=UTC)
    scan = table.scan(filter=col("ts") < cutoff)
    tasks = scan.plan_files()
    days = sorted(t.file.partition[0] for t in tasks)
    first_day = (dt.date(2023, 12, 30) - dt.date(1970, 1, 1)).days
    assert days == list(range(first_day, first_day + 4))  # Dec 30 .. Jan 2: later days pruned
    by_day = {t.file.partition[0]: t for t in tasks}
    assert isinstance(by_day[first_day].residual, AlwaysTrue)  # wholly before the cutoff
    assert not isinstance(by_day[first_day + 3].residual, AlwaysTrue)  # Jan 2 straddles it
    want = [r for r in sorted_rows(data) if r["ts"] < cutoff]
    assert sorted_rows(scan.to_arrow()) == want and len(want) == 5


def test_metrics_prune_files_of_an_unpartitioned_table(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    for i in range(5):
        table.append(events(10, start=100 * i))  # ids i*100 .. i*100+9, one file each
    assert len(table.scan().plan_files()) == 5
    tasks = table.scan(filter="id >= 205 and id < 310").plan_files()
    assert sorted(t.file.lower_bounds[1] for t in tasks) == sorted(
        (i * 100).to_bytes(8, "little") for i in (2, 3)
    )
    assert table.scan(filter="id >= 205 and id < 310").count() == 15
    assert table.scan(filter="id = 150").plan_files() == []
    assert table.scan(filter="name = 'name-999'").plan_files() == []


def test_manifest_pruning_by_partition_summaries_skips_reading_manifests() -> None:
    io = RecordingIO()
    catalog = make_memory_catalog(io=io)
    table = make_events_table(
        catalog,
        2,
        partition_spec=[("region", "identity")],
        properties={"commit.manifest-merge.enabled": "false"},
    )
    data = events(40)
    for region in ("eu", "us", "ap"):
        table.append(data.filter(pc.equal(data["region"], region)))
    all_manifests = snapshot_manifests(io, table.current_snapshot())
    assert len(all_manifests) == 3
    clear_caches()
    io.opened.clear()
    tasks = table.scan(filter="region = 'us'").plan_files()
    assert [t.file.partition for t in tasks] == [("us",)]
    read = {m.manifest_path for m in all_manifests} & set(io.opened)
    (us_manifest,) = [m for m in all_manifests if m.added_snapshot_id == table.snapshots()[1].snapshot_id]
    assert read == {us_manifest.manifest_path}


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_projection_of_nested_list_and_reordered_columns(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(6))
    got = table.scan(columns=["tags", "info.src", "id"], filter="id < 3").to_arrow()
    assert got.schema.names == ["tags", "info", "id"]
    assert got.schema.field("info").type == pa.struct([pa.field("src", pa.string())])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"tags": [], "info": {"src": "web"}, "id": 0},
        {"tags": ["t1"], "info": {"src": "app"}, "id": 1},
        {"tags": ["t2", "t2"], "info": {"src": "web"}, "id": 2},
    ]
    # Filtering on a column that is not projected still filters.
    assert table.scan(columns=["id"], filter="region = 'us'").to_arrow().column("id").to_pylist() == [1, 5]
    # Projected schemas carry Iceberg field ids.
    assert got.schema.field("id").metadata == {b"PARQUET:field_id": b"1"}


def test_unknown_columns_are_rejected_before_any_io(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    with pytest.raises(ValidationError, match="nope"):
        table.scan(columns=["id", "nope"])
    with pytest.raises(ValidationError, match=r"info\.nope"):
        table.scan(columns=["info.nope"])


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_file_and_pos_metadata_columns(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(12))
    got = table.scan(columns=["id", "_file", "_pos", "_spec_id"]).to_arrow()
    assert got.schema.names == ["id", "_file", "_pos", "_spec_id"]
    files = {t.file.file_path: t.file for t in table.scan().plan_files()}
    assert set(got.column("_file").to_pylist()) == set(files)
    for path in files:
        mine = got.filter(pc.equal(got["_file"], path))
        assert mine.column("_pos").to_pylist() == list(range(files[path].record_count))
    assert set(got.column("_spec_id").to_pylist()) == {0}
    # Metadata columns alone.
    assert table.scan(columns=["_pos"], filter="region = 'eu'").to_arrow().column("_pos").to_pylist() == [
        0,
        1,
        2,
    ]


def test_v3_row_lineage_columns(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 3)
    table.append(events(4))
    table.append(events(3, start=10))
    got = table.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow().to_pylist()
    assert sorted((r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in got) == [
        (0, 0, 1),
        (1, 1, 1),
        (2, 2, 1),
        (3, 3, 1),
        (10, 4, 2),
        (11, 5, 2),
        (12, 6, 2),
    ]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_time_travel_by_snapshot_id_timestamp_and_ref(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version)
    s1 = table.append(events(3))
    time.sleep(0.005)
    s2 = table.append(events(2, start=10))
    time.sleep(0.005)
    table.append(events(1, start=20))
    assert s1 is not None and s2 is not None

    def ids(**scan: Any) -> list[int]:
        return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())

    assert ids(snapshot_id=s1.snapshot_id) == [0, 1, 2]
    assert ids(snapshot_id=s2.snapshot_id) == [0, 1, 2, 10, 11]
    assert ids() == [0, 1, 2, 10, 11, 20]
    assert ids(as_of=s1.timestamp_ms) == [0, 1, 2]
    assert ids(as_of=s2.timestamp_ms - 1) == [0, 1, 2]
    assert ids(as_of=dt.datetime.fromtimestamp((s2.timestamp_ms + 1) / 1000, tz=UTC)) == [0, 1, 2, 10, 11]
    assert ids(ref="main") == [0, 1, 2, 10, 11, 20]
    assert table.scan(snapshot_id=s1.snapshot_id).count() == 3
    assert table.snapshot_as_of(s2.timestamp_ms) == s2


def test_time_travel_errors(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    s1 = table.append(events(3))
    assert s1 is not None
    with pytest.raises(NotFound, match="12345"):
        table.scan(snapshot_id=12345).to_arrow()
    with pytest.raises(NotFound, match="no snapshot at or before"):
        table.scan(as_of=s1.timestamp_ms - 60_000).to_arrow()
    with pytest.raises(NotFound, match="nope"):
        table.scan(ref="nope").to_arrow()
    with pytest.raises(ValidationError, match="at most one"):
        table.scan(snapshot_id=s1.snapshot_id, ref="main")
    with pytest.raises(ValidationError, match="timestamp"):
        table.scan(as_of="yesterday-ish").to_arrow()


def test_time_travel_reads_with_the_snapshot_schema(catalog: InMemoryCatalog) -> None:
    from firn.spec.types import StringType

    table = make_events_table(catalog, 2)
    s1 = table.append(events(2))
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.delete_column("tags")
    assert s1 is not None
    old = table.scan(snapshot_id=s1.snapshot_id).to_arrow()
    assert "tags" in old.schema.names and "note" not in old.schema.names
    current = table.scan().to_arrow()
    assert "note" in current.schema.names and "tags" not in current.schema.names
    assert current.column("note").to_pylist() == [None, None]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_limit_and_count(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    table.append(events(40))
    assert table.scan(limit=7).to_arrow().num_rows == 7
    assert sum(b.num_rows for b in table.scan(limit=7).to_batches()) == 7
    assert table.scan(limit=0).to_arrow().num_rows == 0
    assert table.scan(limit=1000).to_arrow().num_rows == 40
    limited = table.scan(filter="region = 'us'", limit=3).to_arrow()
    assert limited.num_rows == 3 and set(limited.column("region").to_pylist()) == {"us"}
    assert table.scan().count() == 40
    assert table.scan(limit=5).count() == 5
    assert table.scan(filter="region = 'eu'").count() == 10  # metadata-only (no residual)
    assert table.scan(filter="x = 3").count() == len(_filtered(events(40), lambda t: pc.equal(t["x"], 3)))
    with pytest.raises(ValidationError, match="limit"):
        table.scan(limit=-1)


def test_to_batches_streams_the_same_rows(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2, partition_spec=[("region", "identity")])
    table.append(events(30))
    batches = list(table.scan(filter="id > 3").to_batches())
    assert len(batches) >= 3 and all(isinstance(b, pa.RecordBatch) for b in batches)
    assert sorted_rows(pa.Table.from_batches(batches)) == sorted_rows(table.scan(filter="id > 3").to_arrow())


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_empty_table_scans(catalog: InMemoryCatalog, version: int) -> None:
    table = make_events_table(catalog, version, partition_spec=[("region", "identity")])
    assert table.current_snapshot() is None
    assert table.scan().plan_files() == []
    empty = table.scan(columns=["id", "_file"]).to_arrow()
    assert empty.num_rows == 0 and empty.schema.names == ["id", "_file"]
    assert table.scan().to_arrow().schema.names == events(0).schema.names
    assert table.scan(filter="id > 1").count() == 0
    assert list(table.scan().to_batches()) == []


def test_case_insensitive_filters_and_columns(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(10))
    with pytest.raises(ValidationError):
        table.scan(filter="ID > 5")
    got = table.scan(filter="ID > 5", columns=["Id"], case_sensitive=False).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [6, 7, 8, 9]


def test_filter_objects_compose_with_and(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(10))
    expr = And(col("id") > 2, col("id") < 6)
    assert sorted(table.scan(filter=expr).to_arrow().column("id").to_pylist()) == [3, 4, 5]


def test_scan_of_a_stale_table_object_sees_its_own_snapshot(catalog: InMemoryCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(3))
    other: Table = catalog.load_table("db.events")
    other.append(events(2, start=10))
    assert table.scan().count() == 3  # not refreshed yet
    assert table.refresh().scan().count() == 5
