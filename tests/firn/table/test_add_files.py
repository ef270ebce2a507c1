"""table.add_files: registering existing Parquet files (with or without Iceberg field ids),
partition inference from column bounds, duplicate detection, and bad input."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import AlreadyExists, InvalidMetadata, NotFound, ValidationError
from firn.spec.properties import DEFAULT_NAME_MAPPING
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, make_events_table, sorted_rows

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
T0 = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def _rows(ids: list[int], region: str | None, hours: list[int] | None = None) -> pa.Table:
    hours = hours if hours is not None else [0] * len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([region] * len(ids), pa.string()),
            "ts": pa.array([T0 + dt.timedelta(hours=h) for h in hours], pa.timestamp("us", tz="UTC")),
        },
        schema=SCHEMA,
    )


def _write(path: Path, data: pa.Table) -> str:
    pq.write_table(data, path)  # plain Parquet: no Iceberg field ids
    return str(path)


def _table(catalog: SqlCatalog, version: int, spec: list[tuple[str, str]] | None = None) -> Table:
    return make_events_table(catalog, version, name="imported", partition_spec=spec, schema=SCHEMA)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_add_plain_parquet_files_sets_a_name_mapping(
    catalog: SqlCatalog, tmp_path: Path, version: int
) -> None:
    table = _table(catalog, version)
    a = _write(tmp_path / "a.parquet", _rows([1, 2], "eu"))
    b = _write(tmp_path / "b.parquet", _rows([3], None))
    snap = table.add_files([a, b])
    assert snap is not None and snap.summary.get("added-data-files") == "2"
    assert snap.summary.get("added-records") == "3" and snap.summary.get("total-records") == "3"
    assert DEFAULT_NAME_MAPPING in table.properties
    fresh = catalog.load_table("db.imported")
    got = fresh.scan().to_arrow()
    assert sorted_rows(got) == sorted_rows(pa.concat_tables([_rows([1, 2], "eu"), _rows([3], None)]))
    assert sorted(t.file.file_path for t in fresh.scan().plan_files()) == sorted([a, b])
    # Metrics come from the footers: pruning works on registered files.
    assert [t.file.file_path for t in fresh.scan(filter="id = 3").plan_files()] == [b]
    # Appends after the import read back together with it.
    fresh.append(_rows([4], "us"))
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_partition_inference_from_bounds(catalog: SqlCatalog, tmp_path: Path, version: int) -> None:
    table = _table(catalog, version, [("region", "identity"), ("ts", "day")])
    eu = _write(tmp_path / "eu.parquet", _rows([1, 2], "eu", [0, 5]))
    long_name = "a-region-name-longer-than-sixteen-characters"
    long = _write(tmp_path / "long.parquet", _rows([3], long_name, [1]))
    nulls = _write(tmp_path / "nulls.parquet", _rows([4], None, [2]))
    table.add_files([eu, long, nulls])
    day = (T0.date() - dt.date(1970, 1, 1)).days
    partitions = {t.file.file_path: t.file.partition for t in table.scan().plan_files()}
    assert partitions == {eu: ("eu", day), long: (long_name, day), nulls: (None, day)}
    assert [t.file.file_path for t in table.scan(filter=f"region = '{long_name}'").plan_files()] == [long]
    assert table.scan(filter="region is null").to_arrow().column("id").to_pylist() == [4]


def test_partition_inference_rejects_files_spanning_partitions(catalog: SqlCatalog, tmp_path: Path) -> None:
    table = _table(catalog, 2, [("ts", "day")])
    two_days = _write(tmp_path / "two-days.parquet", _rows([1, 2], "eu", [0, 24]))
    with pytest.raises(ValidationError, match=r"two-days\.parquet.*spans several partitions"):
        table.add_files([two_days])
    mixed = _write(tmp_path / "mixed.parquet", _rows([1, 2], "eu").set_column(2, "ts", pa.array([T0, None])))
    with pytest.raises(ValidationError, match="mixes nulls and values"):
        table.add_files([mixed])
    assert table.snapshots() == []


def test_bucket_partition_needs_a_single_value(catalog: SqlCatalog, tmp_path: Path) -> None:
    table = _table(catalog, 2, [("id", "bucket[4]")])
    single = _write(tmp_path / "single.parquet", _rows([7, 7], "eu"))
    table.add_files([single])
    (task,) = table.scan().plan_files()
    from firn.spec.transforms import parse_transform
    from firn.spec.types import LongType

    assert task.file.partition == (parse_transform("bucket[4]").apply(LongType(), 7),)
    # Bounds 1..3 cannot prove every value in between hashes to one bucket.
    spread = _write(tmp_path / "spread.parquet", _rows([1, 3], "eu"))
    with pytest.raises(ValidationError, match="does not preserve order"):
        table.add_files([spread])


def test_duplicate_files_are_rejected(catalog: SqlCatalog, tmp_path: Path) -> None:
    table = _table(catalog, 2)
    a = _write(tmp_path / "a.parquet", _rows([1], "eu"))
    table.add_files([a])
    with pytest.raises(AlreadyExists, match=r"a\.parquet"):
        table.add_files([a])
    with pytest.raises(ValidationError, match="twice"):
        table.add_files([a, a])
    assert len(table.snapshots()) == 1
    # Opting out registers it again (the rows then appear twice).
    table.add_files([a], check_duplicate_files=False)
    assert table.scan().to_arrow().column("id").to_pylist() == [1, 1]


def test_files_written_by_firn_with_field_ids_need_no_mapping(catalog: SqlCatalog, tmp_path: Path) -> None:
    source = _table(catalog, 2)
    source.append(_rows([10, 11], "us"))
    paths = [t.file.file_path for t in source.scan().plan_files()]
    target = make_events_table(catalog, 2, name="copy", schema=SCHEMA)
    target.add_files(paths)
    assert sorted(target.scan().to_arrow().column("id").to_pylist()) == [10, 11]


def test_missing_and_corrupt_files_raise_clear_errors(catalog: SqlCatalog, tmp_path: Path) -> None:
    table = _table(catalog, 2)
    missing = str(tmp_path / "missing.parquet")
    with pytest.raises(NotFound, match=r"missing\.parquet"):
        table.add_files([missing])
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"this is not parquet at all")
    with pytest.raises(InvalidMetadata, match=r"junk\.parquet"):
        table.add_files([str(junk)])
    truncated = tmp_path / "truncated.parquet"
    _write(truncated, _rows([1, 2, 3], "eu"))
    truncated.write_bytes(truncated.read_bytes()[:-20])
    with pytest.raises(InvalidMetadata, match=r"truncated\.parquet"):
        table.add_files([str(truncated)])
    assert table.snapshots() == []


def test_files_whose_columns_cannot_be_read_as_the_table_types_are_refused(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    table = _table(catalog, 2)
    wrong = _write(tmp_path / "wrong.parquet", pa.table({"id": pa.array([1], pa.int64()), "region": [5]}))
    with pytest.raises(InvalidMetadata, match=r"wrong\.parquet: column 'region' is long in the file"):
        table.add_files([wrong])
    narrower = _write(
        tmp_path / "narrow.parquet", pa.table({"id": pa.array([1], pa.int32()), "region": ["eu"]})
    )
    table.add_files([narrower])  # int is promoted to the table's long on read
    assert table.scan().to_arrow().column("id").to_pylist() == [1]
    assert table.scan().to_arrow().schema.field("id").type == pa.int64()
