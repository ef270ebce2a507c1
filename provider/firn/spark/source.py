"""The ``firn`` PySpark data source: reading (this module) and writing (``firn.spark.writer``).

``spark.read.format("firn").option("catalog", URI).load("db.t")`` plans on the driver and
reads on the executors:

* ``schema()`` loads the table and pins the metadata file it read, so the DataFrame's schema
  and rows come from the same table state (load again to see later commits). The options
  ``snapshot-id``, ``ref`` (branch or tag) and ``as-of-timestamp`` (epoch ms or ISO-8601)
  time-travel as ``table.scan`` does. Iceberg's incremental read options ``start-snapshot-id``
  / ``start-timestamp`` (exclusive) and ``end-snapshot-id`` / ``end-timestamp`` (inclusive)
  read the rows the ``append`` snapshots in between added, as ``table.scan`` does with
  ``from_snapshot_id`` / ``from_timestamp`` / ``to_snapshot_id`` / ``to_timestamp``
  (``firn.core.incremental``). ``columns`` (comma-separated, metadata columns such as
  ``_file``/``_pos`` allowed) or a user schema (``.schema("id long, name string")``) prune
  columns. PySpark 4.2's Python data source API has no column-pruning callback (Spark reads
  every column of the schema it was given), so these two are the ways to prune.
* Row filters prune planning (manifests and files, by partitions and metrics) and are applied
  exactly by the readers. Two ways in: the ``filter`` option (a Firn filter string such as
  ``"region = 'eu' and id > 5"``, Firn's semantics), part of the DataFrame's definition; and,
  opt-in with ``firn.spark.register(spark, filter_pushdown=True)``, Spark's own filters through
  ``pushFilters`` (``firn.spark.filters`` translates them exactly; the rest go back to Spark).
  Pushdown is off by default because PySpark 4.2 keeps the reader a pushdown produced in the
  loaded DataFrame and reuses it for that DataFrame's later queries that push nothing: after
  ``df.where("id = 1").count()``, ``df.count()`` would still read only ``id = 1``. With pushdown
  on, load the DataFrame again for each query.
* ``partitions()`` packs the planned tasks into input partitions by size: at most
  ``split-size`` bytes (option; else table property ``read.split.target-size``, 128 MiB as in
  Iceberg), smaller when the table is small so every core gets work (as Spark's file sources
  do), each file weighing at least ``read.split.open-file-cost`` (4 MiB). A file is never
  split. Tasks travel without column metrics, and no FileIO travels: executors rebuild it from
  its properties once per process.
* ``read()`` streams each task's live rows (deletes applied) as Arrow record batches of
  ``batch-size`` rows in Spark's layout (``firn.spark.typemap``), reading ``read-threads``
  files at a time (default 1: the Spark task's core also serves the JVM side).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition

from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.planning import FileScanTask
from firn.core.reader import METADATA_FIELDS, ReadPlan, read_tasks
from firn.core.scan import DataScan
from firn.errors import Unsupported, ValidationError
from firn.expressions import AlwaysTrue, And, BooleanExpression, parse
from firn.io.base import FileIO
from firn.spark.config import CatalogConfig, executor_io, executor_metadata, table_name
from firn.spark.filters import FilterTranslator
from firn.spark.typemap import spark_arrow_schema, spark_field, to_spark_batch
from firn.spark.writer import FirnWriter, make_writer
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import IcebergType
from firn.util.secrets import masked_repr

SOURCE_NAME = "firn"
# Iceberg's TableProperties READ_SPLIT_SIZE / SPLIT_OPEN_FILE_COST and their defaults.
READ_SPLIT_TARGET_SIZE = "read.split.target-size"
READ_SPLIT_OPEN_FILE_COST = "read.split.open-file-cost"
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024
# Rows per Arrow batch handed to Spark (option batch-size).
DEFAULT_BATCH_SIZE = 131_072
# Files one Spark task reads in parallel (option read-threads; read-ahead helps on object stores).
DEFAULT_READ_THREADS = 1


@dataclass(frozen=True)
class SessionSettings:
    """What ``register()`` captured from the session (Python data source workers cannot read
    the conf): ``spark.firn.*`` entries, the partition overwrite mode, default parallelism."""

    __repr__ = masked_repr  # spark.firn.catalog.* entries may hold credentials

    conf: Mapping[str, str] = field(default_factory=dict)
    partition_overwrite_mode: str = "static"
    parallelism: int = 2
    filter_pushdown: bool = False


@dataclass(frozen=True)
class Selection:
    """Which snapshot(s), rows and columns a read selects (the ``snapshot-id`` / ``ref`` /
    ``as-of-timestamp`` / ``start-snapshot-id`` / ``end-snapshot-id`` / ``start-timestamp`` /
    ``end-timestamp`` / ``filter`` / ``columns`` options)."""

    snapshot_id: int | None = None
    ref: str | None = None
    as_of: int | str | None = None
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    start_timestamp: int | str | None = None
    end_timestamp: int | str | None = None

    @staticmethod
    def from_options(options: Mapping[str, str]) -> Selection:
        def get(name: str) -> str | None:
            value = options.get(name)
            return value.strip() if isinstance(value, str) and value.strip() else None

        def snapshot(name: str) -> int | None:
            text = get(name)
            try:
                return int(text) if text is not None else None
            except ValueError:
                raise ValidationError(f"option {name} must be an integer, got {text!r}") from None

        def timestamp(name: str) -> int | str | None:
            # Epoch milliseconds as text become an int; other text is parsed as ISO-8601 later.
            text = get(name)
            if text is not None and text.lstrip("-").isdigit():
                return int(text)
            return text

        cols = get("columns")
        columns = tuple(c.strip() for c in cols.split(",") if c.strip()) if cols else None
        return Selection(
            snapshot("snapshot-id"),
            get("ref"),
            timestamp("as-of-timestamp"),
            columns,
            get("filter"),
            snapshot("start-snapshot-id"),
            snapshot("end-snapshot-id"),
            timestamp("start-timestamp"),
            timestamp("end-timestamp"),
        )

    def scan(
        self,
        handle: PinnedTable,
        columns: Sequence[str] | None = None,
        extra: BooleanExpression | None = None,
    ) -> DataScan:
        chosen = columns if columns is not None else self.columns
        row_filter: BooleanExpression = parse(self.filter) if self.filter else AlwaysTrue()
        if extra is not None and not isinstance(extra, AlwaysTrue):
            row_filter = extra if isinstance(row_filter, AlwaysTrue) else And(row_filter, extra)
        return DataScan(
            handle,
            filter=row_filter,
            columns=chosen,
            snapshot_id=self.snapshot_id,
            ref=self.ref,
            as_of=self.as_of,
            from_snapshot_id=self.start_snapshot_id,
            to_snapshot_id=self.end_snapshot_id,
            from_timestamp=self.start_timestamp,
            to_timestamp=self.end_timestamp,
        )


class PinnedTable:
    """A read-only table handle on one metadata file (what ``DataScan`` needs)."""

    def __init__(self, name: str, io: FileIO, metadata: TableMetadata, metadata_location: str) -> None:
        self.name = name
        self.io = io
        self.metadata = metadata
        self.metadata_location = metadata_location

    @staticmethod
    def open(name: str, io_properties: Mapping[str, str], metadata_location: str) -> PinnedTable:
        io = executor_io(io_properties, metadata_location)
        return PinnedTable(name, io, executor_metadata(io, metadata_location), metadata_location)

    # The rest of TableHandle: a pinned table state is read-only.
    def refresh(self) -> PinnedTable:
        return self

    def catalog_metadata_location(self) -> str:
        return self.metadata_location

    def commit_metadata(self, commit: TableCommit) -> CommittedMetadata:
        raise Unsupported(f"{self.name}: a table pinned for reading cannot commit")


class FirnDataSource(DataSource):
    """The ``firn`` data source (register it with :func:`firn.spark.register`)."""

    settings: ClassVar[SessionSettings] = SessionSettings()

    # Set by schema() (pickled with the source into the reader's worker): the table state read.
    pinned: tuple[str, str, dict[str, str]] | None = None

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def catalog_config(self) -> CatalogConfig:
        return CatalogConfig.resolve(dict(self.options), self.settings.conf)

    def _pin(self) -> PinnedTable:
        if self.pinned is None:
            name = table_name(self.options)
            table = self.catalog_config().load().load_table(name)
            self.pinned = (table.name, table.metadata_location, dict(table.io.properties))
        name, location, props = self.pinned
        return PinnedTable.open(name, props, location)

    def schema(self) -> st.StructType:
        handle = self._pin()
        scan = Selection.from_options(self.options).scan(handle)
        return st.StructType([spark_field(_field_of(scan, n)) for n in _output_names(scan)])

    def reader(self, schema: st.StructType) -> FirnReader:
        handle = self._pin()
        selection = Selection.from_options(self.options)
        columns = [f.name for f in schema.fields]
        scan = selection.scan(handle)
        if _output_names(scan) != columns:
            # A user schema (``.schema(...)``) selects top-level columns by name.
            scan = selection.scan(handle, columns)
        types = []
        for f in schema.fields:
            expected = spark_field(_field_of(scan, f.name))
            if expected.dataType != f.dataType or (f.nullable is False and expected.nullable):
                raise ValidationError(
                    f"column {f.name!r} of {handle.name} reads as {expected.dataType.simpleString()}"
                    f"{'' if expected.nullable else ' not null'}; the given schema says "
                    f"{f.dataType.simpleString()}{'' if f.nullable else ' not null'}"
                )
            types.append(_field_of(scan, f.name).field_type)
        meta = tuple(c for c in columns if c in METADATA_FIELDS)
        plan = ReadPlan(
            table_schema=scan.schema,
            projection=scan.projection,
            metadata_columns=meta,
            output_order=tuple(columns),
            specs=dict(handle.metadata.specs),
            name_mapping=scan.name_mapping,
            batch_size=_int_setting(self.options, "batch-size", {}, "", DEFAULT_BATCH_SIZE),
        )
        cls = FilteringFirnReader if self.settings.filter_pushdown else FirnReader
        return cls(
            table=handle.name,
            metadata_location=handle.metadata_location,
            io_properties=dict(handle.io.properties),
            selection=replace(selection, columns=scan.columns),
            plan=plan,
            types=types,
            target=spark_arrow_schema(schema),
            split=_split_settings(self.options, handle.metadata, self.settings.parallelism),
            threads=_int_setting(self.options, "read-threads", {}, "", DEFAULT_READ_THREADS),
        )

    def writer(self, schema: st.StructType, overwrite: bool) -> FirnWriter:
        return make_writer(
            self.options, self.catalog_config(), schema, overwrite, self.settings.partition_overwrite_mode
        )


def _output_names(scan: DataScan) -> list[str]:
    if scan.columns is None:
        return [f.name for f in scan.schema.fields]
    names: list[str] = []
    for c in scan.columns:
        top = c if c in METADATA_FIELDS else c.split(".", 1)[0]
        if top not in names:
            names.append(top)
    return names


def _field_of(scan: DataScan, name: str) -> Any:
    meta = METADATA_FIELDS.get(name)
    if meta is not None:
        return meta
    f = scan.projection.find_field_or_none(name)
    if f is None or scan.projection.parent_id(f.field_id) is not None:
        raise ValidationError(f"{scan.table.name} has no column {name!r}")
    return f


@dataclass(frozen=True)
class SplitSettings:
    """How planned tasks are packed into input partitions (see the module docstring)."""

    target: int
    open_cost: int
    parallelism: int


def _int_setting(
    options: Mapping[str, str], option: str, props: Mapping[str, str], prop: str, default: int
) -> int:
    raw = options.get(option) or props.get(prop)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"{option} must be a number of bytes, got {raw!r}") from None
    if value < 1:
        raise ValidationError(f"{option} must be at least 1, got {value}")
    return value


def _split_settings(options: Mapping[str, str], md: TableMetadata, parallelism: int) -> SplitSettings:
    return SplitSettings(
        target=_int_setting(options, "split-size", md.properties, READ_SPLIT_TARGET_SIZE, DEFAULT_SPLIT_SIZE),
        open_cost=_int_setting(
            options, "file-open-cost", md.properties, READ_SPLIT_OPEN_FILE_COST, DEFAULT_OPEN_FILE_COST
        ),
        parallelism=max(1, parallelism),
    )


class FirnInputPartition(InputPartition):
    """One Spark task's share of a scan: planned file tasks, without column metrics."""

    def __init__(self, index: int, tasks: list[FileScanTask]) -> None:
        super().__init__(index)
        self.tasks = tasks


def without_metrics(task: FileScanTask) -> FileScanTask:
    """``task`` without its data file's column metrics (what travels to Spark's workers).

    Readers need the file's path, size, partition and row count, and the delete files (their
    bounds name the data file they apply to), not the data file's column metrics."""
    f = task.file.evolve(
        column_sizes=None,
        value_counts=None,
        null_value_counts=None,
        nan_value_counts=None,
        lower_bounds=None,
        upper_bounds=None,
    )
    return FileScanTask(f, task.data_sequence_number, tuple(task.delete_files), task.residual, None)


def pack_tasks(tasks: Sequence[FileScanTask], split: SplitSettings) -> list[list[FileScanTask]]:
    """Group tasks, in planning order, into input partitions of at most about ``split.target``
    bytes, lowered so a small scan still spreads over ``split.parallelism`` partitions, and
    balanced: as many partitions as the target needs, of near-equal weight."""

    def weight(t: FileScanTask) -> int:
        size = t.file.file_size_in_bytes + sum(d.file_size_in_bytes for d in t.delete_files)
        return max(size, split.open_cost)

    if not tasks:
        return []
    weights = [weight(t) for t in tasks]
    total = sum(weights)
    target = min(split.target, max(split.open_cost, -(-total // split.parallelism)))
    count = max(1, min(len(tasks), math.ceil(total / target)))
    share = total / count
    # Each task goes to the partition its weight's midpoint falls in: contiguous, balanced.
    groups: list[list[FileScanTask]] = [[] for _ in range(count)]
    sizes = [0] * count
    done = 0
    for t, w in zip(tasks, weights):
        i = min(count - 1, int((done + w / 2) // share))
        groups[i].append(t)
        sizes[i] += w
        done += w
    if any(size > split.target and len(g) > 1 for size, g in zip(sizes, groups)):
        return _next_fit(tasks, weights, target)  # large files: never group past split.target
    return [g for g in groups if g]


def _next_fit(tasks: Sequence[FileScanTask], weights: list[int], target: int) -> list[list[FileScanTask]]:
    groups: list[list[FileScanTask]] = []
    current: list[FileScanTask] = []
    size = 0
    for t, w in zip(tasks, weights):
        if current and size + w > target:
            groups.append(current)
            current, size = [], 0
        current.append(t)
        size += w
    if current:
        groups.append(current)
    return groups


class FirnReader(DataSourceReader):
    """Plans on the driver (``partitions``) and reads on executors (``read``). Holds only what
    every task needs: the read plan, the output types, the pushed filters."""

    def __init__(
        self,
        *,
        table: str,
        metadata_location: str,
        io_properties: dict[str, str],
        selection: Selection,
        plan: ReadPlan,
        types: list[IcebergType],
        target: pa.Schema,
        split: SplitSettings,
        threads: int = 1,
    ) -> None:
        self.table = table
        self.metadata_location = metadata_location
        self.io_properties = io_properties
        self.selection = selection
        self.plan = plan
        self.types = types
        self.target = target
        self.split = split
        self.threads = threads
        self.filters: list[BooleanExpression] = []

    def row_filter(self) -> BooleanExpression:
        if not self.filters:
            return AlwaysTrue()
        expr = self.filters[0]
        for f in self.filters[1:]:
            expr = And(expr, f)
        return expr

    def plan_files(self) -> Sequence[FileScanTask]:
        """The scan's planned tasks, with the pushed filters (driver side)."""
        handle = PinnedTable.open(self.table, self.io_properties, self.metadata_location)
        return self.selection.scan(handle, extra=self.row_filter()).plan_files()

    def partitions(self) -> list[InputPartition]:
        tasks = [without_metrics(t) for t in self.plan_files()]
        return [FirnInputPartition(i, group) for i, group in enumerate(pack_tasks(tasks, self.split))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        tasks = getattr(partition, "tasks", None)
        if not tasks:
            return
        io = executor_io(self.io_properties, self.metadata_location)
        for batch in read_tasks(io, tasks, self.plan, threads=self.threads):
            yield to_spark_batch(batch, self.types, self.target)


class FilteringFirnReader(FirnReader):
    """:class:`FirnReader` with filter pushdown (``spark.sql.python.filterPushdown.enabled``)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        translator = FilterTranslator(self.plan.table_schema)
        for f in filters:
            expr = translator.translate(f)
            if expr is None:
                yield f
            else:
                self.filters.append(expr)


__all__ = [
    "FilteringFirnReader",
    "FirnDataSource",
    "FirnInputPartition",
    "FirnReader",
    "PinnedTable",
    "Selection",
    "SessionSettings",
    "SplitSettings",
    "pack_tasks",
]
