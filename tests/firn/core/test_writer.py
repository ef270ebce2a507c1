"""write_data_files: partitioning, file naming, splitting, sorting, and PyIceberg interop."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from firn.core.create import new_table_metadata
from firn.core.writer import write_data_files
from firn.errors import ValidationError
from firn.io.arrow_schema import cast_to_schema
from firn.io.memory import InMemoryFileIO
from firn.io.parquet import read_parquet_table
from firn.io.pyarrow_io import PyArrowFileIO
from firn.spec import values
from firn.spec.content import DataFile, FileContent, FileFormat
from firn.spec.locations import DefaultLocationProvider
from firn.spec.schema import Schema
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    NestedField,
    StructType,
)

LOCATION = "memory://warehouse/db/events"


def events_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "region", STRING),
        NestedField(3, "ts", TIMESTAMPTZ),
        NestedField(4, "name", STRING),
        NestedField(5, "score", DOUBLE),
        NestedField(6, "meta", StructType(NestedField(7, "source", STRING), NestedField(8, "day", DATE))),
    )


def events(n: int = 200, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    regions = ["eu", "us", "ap", None]
    base = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "region": [regions[k] for k in rng.integers(0, 4, n)],
            "ts": pa.array([base + dt.timedelta(hours=int(h)) for h in rng.integers(-48, 96, n)]),
            "name": [f"user-{k:03d}" for k in rng.integers(0, 50, n)],
            "score": rng.random(n),
            "meta": [{"source": ["web", "app"][i % 2], "day": dt.date(2024, 1, 1 + i % 3)} for i in range(n)],
        }
    )


def metadata(partition: list[Any] | None = None, **kwargs: Any) -> TableMetadata:
    return new_table_metadata(
        events_schema(), location=LOCATION, partition_spec=partition, format_version=2, **kwargs
    )


def read_rows(io: Any, files: list[DataFile], schema: Schema) -> list[dict[str, Any]]:
    rows = []
    for f in files:
        rows.extend(read_parquet_table(io, f.file_path, projected=schema).to_pylist())
    return sorted(rows, key=lambda r: r["id"])


FILE_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d{5}\.parquet$")


def test_unpartitioned_write_is_one_file_with_metrics() -> None:
    io = InMemoryFileIO()
    md = metadata()
    data = events()
    files = write_data_files(io, md, data)
    assert len(files) == 1
    f = files[0]
    assert f.content is FileContent.DATA and f.file_format is FileFormat.PARQUET
    assert f.partition == () and f.spec_id == 0 and f.sort_order_id is None
    assert f.record_count == 200 and f.file_size_in_bytes == io.new_input(f.file_path).length()
    assert f.file_path.startswith(f"{LOCATION}/data/")
    assert FILE_NAME.match(f.file_path.rsplit("/", 1)[1])
    assert f.value_counts is not None and f.value_counts[1] == 200
    assert f.lower_bounds is not None and f.lower_bounds[1] == (0).to_bytes(8, "little")
    assert f.split_offsets == (4,)
    expected = cast_to_schema(data, md.schema()).to_pylist()
    assert read_rows(io, files, md.schema()) == expected


def brute_force_partition(md: TableMetadata, row: dict[str, Any]) -> tuple[Any, ...]:
    schema, spec = md.schema(), md.spec()
    out = []
    for pf in spec.fields:
        t = schema.find_type(pf.source_id)
        name = schema.find_column_name(pf.source_id)
        assert name is not None
        value: Any = row
        for part in name.split("."):
            value = None if value is None else value[part]
        out.append(pf.transform.apply(t, values.to_internal(t, value)))
    return tuple(out)


@pytest.mark.parametrize(
    "partition",
    [
        [("region", "identity")],
        [("id", "bucket[4]")],
        [("ts", "day")],
        [("name", "truncate[6]")],
        [("region", "identity"), ("ts", "day"), ("id", "bucket[3]"), ("name", "truncate[6]")],
        [("ts", "hour"), ("ts", "month")],
        [("meta.day", "identity"), ("meta.source", "identity")],
    ],
    ids=lambda p: "+".join(f"{c}:{t}" for c, t in p),
)
def test_partitioned_write_groups_rows_by_transformed_values(partition: list[Any]) -> None:
    io = InMemoryFileIO()
    md = metadata(partition)
    data = events()
    files = write_data_files(io, md, data)
    spec, schema = md.spec(), md.schema()
    assert len({f.partition for f in files}) == len(files)
    expected_rows = cast_to_schema(data, schema).to_pylist()
    expected_parts: dict[tuple[Any, ...], int] = {}
    for row in expected_rows:
        key = brute_force_partition(md, row)
        expected_parts[key] = expected_parts.get(key, 0) + 1
    assert {f.partition: f.record_count for f in files} == expected_parts
    for f in files:
        assert f.spec_id == spec.spec_id
        path = spec.partition_path(f.partition, schema)
        assert f.file_path.startswith(f"{LOCATION}/data/{path}/")
        rows = read_parquet_table(io, f.file_path, projected=schema).to_pylist()
        assert {brute_force_partition(md, r) for r in rows} == {f.partition}
    assert read_rows(io, files, schema) == expected_rows


def test_partition_tuples_and_paths_for_known_values() -> None:
    io = InMemoryFileIO()
    md = metadata([("region", "identity"), ("ts", "day"), ("id", "bucket[16]"), ("name", "truncate[3]")])
    data = pa.table(
        {
            "id": pa.array([34, 34], pa.int64()),
            "region": ["eu", None],
            "ts": pa.array([dt.datetime(2017, 11, 16, 22, 31, tzinfo=dt.UTC)] * 2),
            "name": ["iceberg", "iceberg"],
        }
    )
    files = sorted(write_data_files(io, md, data), key=lambda f: f.partition[0] is None)
    # Spec Appendix B: bucket(34L) hashes to 2017239379; 2017239379 % 16 == 3. 2017-11-16 is day 17486.
    assert files[0].partition == ("eu", 17486, 3, "ice")
    assert files[1].partition == (None, 17486, 3, "ice")
    assert "/data/region=eu/ts_day=2017-11-16/id_bucket_16=3/name_trunc_3=ice/" in files[0].file_path
    assert "/data/region=null/ts_day=2017-11-16/" in files[1].file_path


def test_write_data_path_property_and_custom_location_provider() -> None:
    io = InMemoryFileIO()
    md = metadata([("region", "identity")], properties={"write.data.path": "memory://other/place/"})
    files = write_data_files(io, md, events(20))
    assert all(f.file_path.startswith("memory://other/place/region=") for f in files)
    custom = DefaultLocationProvider("memory://custom")
    files = write_data_files(io, metadata(), events(5), location_provider=custom)
    assert files[0].file_path.startswith("memory://custom/") and files[0].file_path.count("/") == 3


def test_target_file_size_splits_partitions() -> None:
    io = InMemoryFileIO()
    data = events(1000)
    per_row = cast_to_schema(data, events_schema()).nbytes / 1000
    target = int(per_row * 300)
    md = metadata([("meta.source", "identity")], properties={"write.target-file-size-bytes": str(target)})
    files = write_data_files(io, md, data)
    by_partition: dict[tuple[Any, ...], list[DataFile]] = {}
    for f in files:
        by_partition.setdefault(f.partition, []).append(f)
    assert set(by_partition) == {("web",), ("app",)}
    for part_files in by_partition.values():
        counts = [f.record_count for f in part_files]
        assert sum(counts) == 500
        assert len(counts) == 2 and max(counts) <= 300
        assert all(f.file_size_in_bytes <= target for f in part_files)
    assert len({f.file_path for f in files}) == len(files) == 4
    assert read_rows(io, files, md.schema()) == cast_to_schema(data, md.schema()).to_pylist()


def test_sorted_write_records_sort_order() -> None:
    io = InMemoryFileIO()
    md = metadata([("region", "identity")], sort_order=[("score", "desc"), ("name", "asc", "nulls-last")])
    data = events(300).set_column(
        4, "score", pa.array([None if i % 7 == 0 else float(i % 13) for i in range(300)])
    )
    files = write_data_files(io, md, data, sort=True)
    assert {f.sort_order_id for f in files} == {md.default_sort_order_id} and md.default_sort_order_id != 0
    for f in files:
        rows = read_parquet_table(io, f.file_path, projected=md.schema()).to_pylist()
        # desc puts nulls last by default (build_sort_order), then names ascending.
        keys = [(r["score"] is None, -(r["score"] or 0.0), r["name"]) for r in rows]
        assert keys == sorted(keys)
    unsorted = write_data_files(io, md, data)
    assert {f.sort_order_id for f in unsorted} == {None}


def test_invalid_input_writes_nothing() -> None:
    io = InMemoryFileIO()
    md = metadata([("region", "identity")])
    with pytest.raises(ValidationError, match="bogus"):
        write_data_files(io, md, events(10).append_column("bogus", pa.array(range(10))))
    with pytest.raises(ValidationError, match="'id'"):
        write_data_files(io, md, events(10).drop_columns(["id"]))
    assert len(io) == 0
    assert write_data_files(io, md, events(0)) == []


def test_record_batch_input_and_casts() -> None:
    io = InMemoryFileIO()
    md = new_table_metadata(
        Schema(NestedField(1, "a", INT, required=True), NestedField(2, "b", DOUBLE)),
        location=LOCATION,
        partition_spec=[("a", "truncate[10]")],
        format_version=1,
    )
    batch = pa.record_batch(
        {"a": pa.array([1, 15, 19], pa.int64()), "b": pa.array([1.0, 2.0, 3.0], pa.float32())}
    )
    files = write_data_files(io, md, batch)
    assert sorted((f.partition, f.record_count) for f in files) == [((0,), 1), ((10,), 2)]


# -- interop ------------------------------------------------------------------------------------


@pytest.mark.interop
def test_pyiceberg_reads_written_files_with_identical_rows(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual
    from pyiceberg.manifest import DataFile as PyDataFile
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.manifest import FileFormat as PyFileFormat
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import (
        BinaryType,
        DateType,
        DecimalType,
        DoubleType,
        FixedType,
        FloatType,
        IntegerType,
        ListType,
        LongType,
        MapType,
        StringType,
        StructType,
        TimestampType,
        TimestamptzType,
        TimeType,
        UUIDType,
    )
    from pyiceberg.types import NestedField as PyField

    from firn.spec.metadata_json import metadata_from_json

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    py_schema = PySchema(
        PyField(1, "id", LongType(), required=True),
        PyField(2, "region", StringType()),
        PyField(3, "ts", TimestamptzType()),
        PyField(4, "local_ts", TimestampType()),
        PyField(5, "name", StringType()),
        PyField(6, "i", IntegerType()),
        PyField(7, "f", FloatType()),
        PyField(8, "d", DoubleType()),
        PyField(9, "dec", DecimalType(10, 2)),
        PyField(10, "day", DateType()),
        PyField(11, "t", TimeType()),
        PyField(12, "u", UUIDType()),
        PyField(13, "fx", FixedType(4)),
        PyField(14, "bin", BinaryType()),
        PyField(15, "st", StructType(PyField(16, "x", IntegerType()), PyField(17, "y", StringType()))),
        PyField(18, "tags", ListType(19, StringType(), element_required=False)),
        PyField(20, "attrs", MapType(21, StringType(), 22, LongType(), value_required=False)),
    )
    spec = PartitionSpec(
        PartitionField(2, 1000, IdentityTransform(), "region"),
        PartitionField(3, 1001, DayTransform(), "ts_day"),
        PartitionField(1, 1002, BucketTransform(4), "id_bucket_4"),
        PartitionField(5, 1003, TruncateTransform(3), "name_trunc_3"),
    )
    tbl = catalog.create_table("db.events", schema=py_schema, partition_spec=spec)
    md = metadata_from_json(tbl.metadata.model_dump_json())

    n = 120
    rng = np.random.default_rng(5)
    base = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    arrow_schema = tbl.schema().as_arrow()
    data = pa.Table.from_pylist(
        [
            {
                "id": i,
                "region": [None, "eu", "us"][i % 3],
                "ts": base + dt.timedelta(hours=int(rng.integers(-30, 30))),
                "local_ts": dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i),
                "name": f"nm{i % 7}",
                "i": int(rng.integers(-1000, 1000)),
                "f": [float("nan"), -0.0, 1.5, None][i % 4],
                "d": float(rng.normal()),
                "dec": Decimal(int(rng.integers(-(10**6), 10**6))).scaleb(-2),
                "day": dt.date(2023, 1, 1) + dt.timedelta(days=i),
                "t": dt.time(i % 24, i % 60),
                "u": uuid.UUID(int=i * 7919),
                "fx": bytes([i % 256, 1, 2, 3]),
                "bin": b"\xff" * (i % 20),
                "st": None if i % 5 == 0 else {"x": i, "y": "ü" * (i % 30)},
                "tags": [f"t{j}" for j in range(i % 3)] if i % 4 else None,
                "attrs": [("a", i), ("b", None)] if i % 2 else [],
            }
            for i in range(n)
        ],
        schema=arrow_schema,
    )
    io = PyArrowFileIO()
    files = write_data_files(io, md, data)
    with tbl.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for f in files:
            py_file = PyDataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f.file_path,
                file_format=PyFileFormat.PARQUET,
                partition=Record(*f.partition),
                record_count=f.record_count,
                file_size_in_bytes=f.file_size_in_bytes,
                column_sizes=f.column_sizes,
                value_counts=f.value_counts,
                null_value_counts=f.null_value_counts,
                nan_value_counts=f.nan_value_counts,
                lower_bounds=f.lower_bounds,
                upper_bounds=f.upper_bounds,
                split_offsets=list(f.split_offsets or ()),
            )
            py_file.spec_id = f.spec_id
            append.append_data_file(py_file)

    def normalized(t: pa.Table) -> list[dict[str, Any]]:
        rows = t.sort_by("id").to_pylist()
        for r in rows:
            r["f"] = "nan" if r["f"] is not None and r["f"] != r["f"] else r["f"]
        return rows

    assert normalized(tbl.scan().to_arrow()) == normalized(data)
    # Filters let PyIceberg prune with Firn's partition values and column bounds.
    flt = And(GreaterThanOrEqual("id", 60), EqualTo("region", "eu"))
    got = tbl.scan(row_filter=flt).to_arrow()
    want = data.filter((pc.field("id") >= 60) & (pc.field("region") == "eu"))
    assert normalized(got) == normalized(want)
    got_st = tbl.scan(row_filter=GreaterThanOrEqual("st.x", 100)).to_arrow()
    assert sorted(got_st.column("id").to_pylist()) == [i for i in range(100, n) if i % 5]

    # PyIceberg's own transforms put every row in the partition Firn chose, with the same path.
    py_fields = spec.fields
    source_types = [py_schema.find_type(pf.source_id) for pf in py_fields]
    for f in files:
        rows = pq.read_table(f.file_path, columns=["region", "ts", "id", "name"]).to_pylist()
        for row in rows:
            raw = {
                2: row["region"],
                3: (row["ts"] - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1),
                1: row["id"],
                5: row["name"],
            }
            expected = tuple(
                pf.transform.transform(t)(raw[pf.source_id]) for pf, t in zip(py_fields, source_types)
            )
            assert expected == f.partition
        assert f"/data/{spec.partition_to_path(Record(*f.partition), py_schema)}/" in f.file_path
    # The written files carry the field ids PyIceberg expects.
    pf = pq.ParquetFile(files[0].file_path)
    element_id = md.schema().find_field("tags.element").field_id
    value_id = md.schema().find_field("attrs.value").field_id
    assert f"field_id={element_id} element" in str(pf.schema)
    assert f"field_id={value_id} value" in str(pf.schema)
