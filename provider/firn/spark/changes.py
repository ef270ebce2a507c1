"""``firn.spark.read_changes``: a table's changelog as a Spark DataFrame.

The rows, columns and semantics of ``table.changelog(...)`` (``firn.core.changelog``): the data
columns, then ``_change_type`` (INSERT/DELETE), ``_change_ordinal`` and ``_commit_snapshot_id``;
carry-over rows removed by default, net changes on request. Planning runs on the driver;
reading is split as ``firn.spark.read`` splits a scan (``firn.spark.dataframe``):

* a data file added or removed whole, with no delete file to apply, that Spark's Parquet reader
  reads exactly as Firn does, is read by Spark itself, one ``spark.read.parquet`` per file
  layout, residual filter and snapshot, with the changelog columns as literals;
* every other file (deletes apply, its deletes changed, a layout Spark reads differently) is
  read by a ``firn_changelog`` Python data source carrying exactly those tasks.

Carry-over rows and net changes are then removed by Spark over the union (window functions
partitioned by every data column), comparing rows as the library does: floats by value with
NaN equal to NaN and -0.0 apart from 0.0, maps entry by entry. The DataFrame has no order;
sort by ``_change_ordinal`` (then ``_change_type``, DELETE before INSERT) for the library's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import types as st
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from firn.core.changelog import (
    CHANGE_ORDINAL_COLUMN,
    CHANGE_TYPE_COLUMN,
    COMMIT_SNAPSHOT_ID_COLUMN,
    ChangeKind,
    ChangelogReadPlans,
    ChangelogTask,
    ChangeType,
    read_changelog_task,
    with_change_columns,
)
from firn.core.planning import FileScanTask
from firn.errors import ValidationError
from firn.expressions import BooleanExpression
from firn.spark.config import executor_io
from firn.spark.dataframe import (
    NativeGroup,
    RoutedFile,
    Router,
    dataframe_reader,
    default_spark_path,
    load_table,
    native_frame,
)
from firn.spark.expressions import quote_name
from firn.spark.source import DEFAULT_OPEN_FILE_COST, DEFAULT_SPLIT_SIZE, SplitSettings, pack_tasks
from firn.spark.typemap import spark_arrow_schema, spark_field, to_spark_batch
from firn.spark.workers import check_workers
from firn.spec.types import INT, LONG, STRING, IcebergType
from firn.table.table import Table
from firn.util.timestamps import TimestampLike

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHANGELOG_SOURCE_NAME = "firn_changelog"
CHANGELOG_SPARK_FIELDS = (
    st.StructField(CHANGE_TYPE_COLUMN, st.StringType(), nullable=False),
    st.StructField(CHANGE_ORDINAL_COLUMN, st.IntegerType(), nullable=False),
    st.StructField(COMMIT_SNAPSHOT_ID_COLUMN, st.LongType(), nullable=False),
)
_CHANGELOG_TYPES: tuple[IcebergType, ...] = (STRING, INT, LONG)
_register_lock = threading.Lock()


@dataclass(frozen=True)
class NativeChanges:
    """Whole data files of one snapshot whose rows are all INSERTs (or all DELETEs), read by
    Spark's Parquet reader in one call."""

    change_type: ChangeType
    change_ordinal: int
    commit_snapshot_id: int
    group: NativeGroup


@dataclass(frozen=True)
class _FirnPart:
    """What the ``firn_changelog`` source's workers need (pickled with the source class)."""

    table: str
    metadata_location: str
    io_properties: dict[str, str]
    plans: ChangelogReadPlans
    types: tuple[IcebergType, ...]


@dataclass(frozen=True)
class SparkChangelogPlan:
    """How :func:`read_changes` reads a changelog: the files Spark's reader reads (``native``),
    the tasks the ``firn_changelog`` source reads (``firn_tasks``, ``routed`` saying why), and
    ``schema``, the rows as read (every compared data column, then the changelog columns)."""

    schema: st.StructType
    columns: tuple[str, ...]  # the data columns returned
    native: tuple[NativeChanges, ...]
    firn_tasks: tuple[ChangelogTask, ...]
    routed: tuple[RoutedFile, ...]
    remove_carry_over: bool
    net_changes: bool
    part: _FirnPart

    @property
    def native_files(self) -> tuple[str, ...]:
        return tuple(f for n in self.native for f in n.group.files)

    @property
    def firn_files(self) -> tuple[str, ...]:
        return tuple(r.path for r in self.routed)

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        from pyspark.sql import functions as F

        data = st.StructType(list(self.schema.fields[: -len(CHANGELOG_SPARK_FIELDS)]))
        names = [quote_name(f.name) for f in self.schema.fields]
        parts: list[DataFrame] = []
        for n in self.native:
            frame = native_frame(spark, n.group, data)
            parts.append(
                frame.select(
                    *[quote_name(f.name) for f in data.fields],
                    F.lit(n.change_type.value).alias(CHANGE_TYPE_COLUMN),
                    F.lit(n.change_ordinal).cast("int").alias(CHANGE_ORDINAL_COLUMN),
                    F.lit(n.commit_snapshot_id).cast("long").alias(COMMIT_SNAPSHOT_ID_COLUMN),
                )
            )
        if self.firn_tasks:
            parts.append(_firn_frame(spark, self).select(*names))
        if not parts:
            df = spark.createDataFrame([], self.schema)
        else:
            df = reduce(lambda a, b: a.unionByName(b), parts)
        if self.remove_carry_over:
            df = _cancel(df, data, within_snapshot=True)
        if self.net_changes:
            df = _cancel(df, data, within_snapshot=False)
        return df.select(*[quote_name(c) for c in (*self.columns, *(f.name for f in CHANGELOG_SPARK_FIELDS))])


def plan_changes(
    spark: SparkSession,
    table: str | Table,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    *,
    from_timestamp: TimestampLike | None = None,
    to_timestamp: TimestampLike | None = None,
    columns: Sequence[str] | None = None,
    filter: BooleanExpression | str | None = None,
    case_sensitive: bool = True,
    net_changes: bool = False,
    remove_carry_over: bool = True,
    spark_path: Callable[[str], str | None] | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
    **catalog_properties: str,
) -> SparkChangelogPlan:
    """What :func:`read_changes` would read, and how (driver only: plans, reads footers)."""
    t = load_table(spark, table, catalog, warehouse, catalog_properties)
    if columns is not None and not isinstance(columns, str) and not columns:
        raise ValidationError("select at least one column (columns=[] selects nothing)")
    scan = t.changelog(
        from_snapshot_id=from_snapshot_id,
        to_snapshot_id=to_snapshot_id,
        from_timestamp=from_timestamp,
        to_timestamp=to_timestamp,
        filter=filter,
        columns=columns,
        case_sensitive=case_sensitive,
        net_changes=net_changes,
        remove_carry_over=remove_carry_over,
    )
    read_fields = list(scan.read_schema.fields)
    schema = st.StructType([*(spark_field(f) for f in read_fields), *CHANGELOG_SPARK_FIELDS])
    part = _FirnPart(
        t.name,
        t.metadata_location,
        dict(t.io.properties),
        scan.read_plans(),
        (*(f.field_type for f in read_fields), *_CHANGELOG_TYPES),
    )
    router = Router(t, scan, read_fields, spark_path or default_spark_path(t, spark))
    native: list[NativeChanges] = []
    firn_tasks: list[ChangelogTask] = []
    routed: list[RoutedFile] = []
    whole: dict[tuple[ChangeType, int, int], list[tuple[ChangelogTask, FileScanTask]]] = {}
    for task in scan.plan_tasks():
        file_task = _whole_file(task)
        if file_task is None:
            firn_tasks.append(task)
            reason = (
                "its delete files changed"
                if task.kind is ChangeKind.DELETES_CHANGED
                else "delete files apply"
            )
            routed.append(RoutedFile(task.file.file_path, reason))
            continue
        change = ChangeType.INSERT if task.kind is ChangeKind.ADDED_FILE else ChangeType.DELETE
        whole.setdefault((change, task.change_ordinal, task.commit_snapshot_id), []).append((task, file_task))
    for (change, ordinal, snapshot_id), pairs in whole.items():
        by_path = {x.file.file_path: x for x, _ in pairs}
        groups, left, why = router.split([f for _, f in pairs])
        native += [NativeChanges(change, ordinal, snapshot_id, g) for g in groups]
        firn_tasks += [by_path[x.file.file_path] for x in left]
        routed += why
    return SparkChangelogPlan(
        schema,
        tuple(f.name for f in scan.projection.fields),
        tuple(native),
        tuple(firn_tasks),
        tuple(routed),
        remove_carry_over,
        net_changes,
        part,
    )


read_changes = dataframe_reader(
    plan_changes,
    """The changelog of ``table`` between ``from`` (exclusive; snapshot id or time, default the
    table's first snapshot) and ``to`` (inclusive; default the current snapshot) as a DataFrame:
    the rows of ``table.changelog(...)`` with the same arguments (see the module docstring).
    ``table`` and the catalog arguments are as for :func:`firn.spark.read`.""",
)


def _whole_file(task: ChangelogTask) -> FileScanTask | None:
    """The file task of a changelog task whose rows are one whole delete-free file, else None."""
    if task.kind is ChangeKind.ADDED_FILE and not task.deletes_after:
        return task.after
    if task.kind is ChangeKind.REMOVED_FILE and not task.deletes_before:
        return task.before
    return None


# -- cancelling rows in Spark -----------------------------------------------------------------------
def _key(col: Column, t: st.DataType) -> Column:
    """A sortable, groupable form of ``col`` that is equal exactly when the library's row keys
    are (``firn.core.changelog_rows``): floats by their text (NaN equal, -0.0 apart), maps as
    their entries, a null struct apart from a struct of nulls."""
    from pyspark.sql import functions as F

    if isinstance(t, st.FloatType | st.DoubleType):
        return col.cast("string")
    if isinstance(t, st.StructType):
        inner = F.struct(*[_key(col.getField(f.name), f.dataType).alias(f.name) for f in t.fields])
        return F.when(col.isNull(), F.lit(None)).otherwise(inner)
    if isinstance(t, st.ArrayType):
        element = t.elementType
        return F.transform(col, lambda e: _key(e, element))
    if isinstance(t, st.MapType):
        kt, vt = t.keyType, t.valueType
        return F.transform(
            F.map_entries(col),
            lambda e: F.struct(
                _key(e.getField("key"), kt).alias("k"), _key(e.getField("value"), vt).alias("v")
            ),
        )
    return col


def _cancel(df: DataFrame, data: st.StructType, *, within_snapshot: bool) -> DataFrame:
    """Carry-over removal (``within_snapshot``) or net changes, as ``firn.core.changelog_rows``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [f"__firn_key_{i}" for i in range(len(data.fields))]
    for k, f in zip(keys, data.fields, strict=True):
        df = df.withColumn(k, _key(F.col(quote_name(f.name)), f.dataType))
    kind = F.col(CHANGE_TYPE_COLUMN)
    is_insert = kind == F.lit(ChangeType.INSERT.value)
    group = [F.col(k) for k in keys]
    if within_snapshot:
        group = [F.col(CHANGE_ORDINAL_COLUMN), *group]
    # Within a snapshot every survivor is as good as another; across snapshots the last
    # occurrences survive (their _commit_snapshot_id is where the row last changed).
    order = F.lit(1) if within_snapshot else F.col(CHANGE_ORDINAL_COLUMN).desc()
    balance, rank = "__firn_balance", "__firn_rank"
    df = df.withColumn(balance, F.sum(F.when(is_insert, 1).otherwise(-1)).over(Window.partitionBy(*group)))
    df = df.withColumn(rank, F.row_number().over(Window.partitionBy(kind, *group).orderBy(order)))
    keep = (is_insert & (F.col(rank) <= F.col(balance))) | (~is_insert & (F.col(rank) <= -F.col(balance)))
    return df.where(keep).drop(*keys, balance, rank)


# -- the firn_changelog source ---------------------------------------------------------------------
class ChangelogSource(DataSource):
    """The ``firn_changelog`` data source: reads exactly the changelog tasks it carries
    (registered per :func:`read_changes` call with them as class attributes)."""

    tasks: ClassVar[tuple[ChangelogTask, ...]] = ()
    part: ClassVar[_FirnPart | None] = None
    spark_schema: ClassVar[st.StructType] = st.StructType([])
    parallelism: ClassVar[int] = 2

    @classmethod
    def name(cls) -> str:
        return CHANGELOG_SOURCE_NAME

    def schema(self) -> st.StructType:
        return self.spark_schema

    def reader(self, schema: st.StructType) -> ChangelogReader:
        assert self.part is not None
        return ChangelogReader(self.part, self.tasks, spark_arrow_schema(schema), self.parallelism)


class ChangelogInputPartition(InputPartition):
    """One Spark task's changelog tasks."""

    def __init__(self, index: int, tasks: list[ChangelogTask]) -> None:
        super().__init__(index)
        self.tasks = tasks


class ChangelogReader(DataSourceReader):
    """Splits the tasks by size on the driver; reads each task's DELETE and INSERT rows with
    their changelog columns on the executors."""

    def __init__(
        self, part: _FirnPart, tasks: Sequence[ChangelogTask], target: pa.Schema, parallelism: int
    ) -> None:
        self.part = part
        self.tasks = list(tasks)
        self.target = target
        self.parallelism = parallelism

    def partitions(self) -> list[InputPartition]:
        # pack_tasks weighs file tasks by size: weigh each changelog task by its file and
        # every delete file it reads.
        proxies: dict[int, ChangelogTask] = {}
        weighed: list[FileScanTask] = []
        for t in self.tasks:
            deletes = (*(t.deletes_before or ()), *(t.deletes_after or ()))
            proxy = FileScanTask(t.file, t.data_sequence_number, deletes)
            proxies[id(proxy)] = t
            weighed.append(proxy)
        split = SplitSettings(DEFAULT_SPLIT_SIZE, DEFAULT_OPEN_FILE_COST, max(1, self.parallelism))
        groups = pack_tasks(weighed, split)
        return [ChangelogInputPartition(i, [proxies[id(p)] for p in g]) for i, g in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        tasks: list[ChangelogTask] = getattr(partition, "tasks", [])
        if not tasks:
            return
        io = executor_io(self.part.io_properties, self.part.metadata_location)
        types = list(self.part.types)
        for t in tasks:
            deleted, inserted = read_changelog_task(io, t, self.part.plans)
            for rows, change in ((deleted, ChangeType.DELETE), (inserted, ChangeType.INSERT)):
                if rows.num_rows:
                    out = with_change_columns(rows, change, t.change_ordinal, t.commit_snapshot_id)
                    for batch in out.to_batches():
                        yield to_spark_batch(batch, types, self.target)


def _lean(task: ChangelogTask) -> ChangelogTask:
    """``task`` without its data file's column metrics (readers do not need them)."""
    f = task.file.evolve(
        column_sizes=None,
        value_counts=None,
        null_value_counts=None,
        nan_value_counts=None,
        lower_bounds=None,
        upper_bounds=None,
    )
    return replace(task, file=f)


def _firn_frame(spark: SparkSession, plan: SparkChangelogPlan) -> DataFrame:
    check_workers(spark)  # these tasks import firn on the workers: fail clearly if they cannot
    attrs: dict[str, Any] = {
        "tasks": tuple(_lean(t) for t in plan.firn_tasks),
        "part": plan.part,
        "spark_schema": plan.schema,
        "parallelism": spark.sparkContext.defaultParallelism,
    }
    # A class made here is pickled by value, tasks included, into the Python workers (as
    # firn.spark.dataframe does for the planned scan source).
    source = type(ChangelogSource.__name__, (ChangelogSource,), attrs)
    source.__qualname__ = "_firn_frame.<locals>.ChangelogSource"
    with _register_lock:
        spark.dataSource.register(source)
        df: DataFrame = spark.read.format(CHANGELOG_SOURCE_NAME).load()
    return df


__all__ = [
    "CHANGELOG_SOURCE_NAME",
    "ChangelogReader",
    "ChangelogSource",
    "NativeChanges",
    "SparkChangelogPlan",
    "plan_changes",
    "read_changes",
]
