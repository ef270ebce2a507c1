"""``firn.spark.read``: a Firn table as a Spark DataFrame, delete-free files read by Spark itself.

The ``firn`` data source hands Spark Arrow batches from Python workers, and PySpark 4.2's cost
for that transfer alone keeps any Python data source below Spark's own Parquet reader (see
bench/README.md). ``read`` plans the scan on the driver as ``table.scan`` does (time travel,
partition and metrics pruning) and splits the planned files:

* **native**: data files without delete files that Spark's Parquet reader reads exactly as
  Firn does (``firn.spark.native_parquet`` decides from each file's footer) go to
  ``spark.read.schema(...).parquet(...)``, one call per distinct file layout and residual
  filter; columns are renamed and widened by casts, the residual filter is applied by Spark
  (``firn.spark.expressions``: Firn's null and NaN semantics, exactly);
* **firn**: every other file (delete files apply, metadata columns requested, a type or file
  Spark reads differently) is read by the ``firn`` data source, restricted to exactly those
  planned tasks.

The parts are unioned by name. The result has the columns, types and rows of
``table.scan(...).to_arrow()``; its columns are nullable when native files are read (Spark's
file sources read every column as nullable). :func:`plan_read` returns the split without
building a DataFrame, with the reason for each file Firn reads.

Each call reads every candidate file's footer on the driver (a few threads; one small ranged
read per file), the price of deciding per file. Files are found by Spark at the paths Firn
stores, mapped by ``spark_path``. By default (:class:`SparkPaths`) local paths become
``file://`` URIs, ``s3://`` and ``s3n://`` become ``s3a://``, and other schemes pass unchanged,
each only when Spark's JVM has a Hadoop FileSystem for the scheme: pip's pyspark has none for
``s3a://`` (S3A comes with hadoop-aws), so without it object-store files go to the ``firn``
data source (which reads them through Firn's FileIO) and the plan says why. Spark needs its own
Hadoop settings for the native path (``spark.hadoop.fs.s3a.*``). In-memory locations and tables
with a custom ``io-impl`` go to Firn. Files whose name starts with ``_`` or ``.`` (Spark
silently skips them) or whose path holds glob characters also go to Firn.
"""

from __future__ import annotations

import datetime as dt
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar, Concatenate, ParamSpec, Protocol

from pyspark.sql import Column
from pyspark.sql import types as st

from firn.core.planning import FileScanTask
from firn.core.reader import METADATA_FIELDS
from firn.errors import FirnError, ValidationError
from firn.expressions import AlwaysTrue, BooleanExpression, referenced_field_ids
from firn.io.pyarrow_io import IO_IMPL, parse_location
from firn.spark.config import catalog_config
from firn.spark.expressions import quote_name, to_spark_column, unsupported
from firn.spark.native_parquet import (
    NativeLayout,
    NotNative,
    native_layout,
    projection_problem,
    read_footer,
)
from firn.spark.source import FirnDataSource, FirnReader, SessionSettings, without_metrics
from firn.spark.typemap import spark_field
from firn.spark.workers import check_workers
from firn.spec.content import FileFormat
from firn.spec.name_mapping import NameMapping
from firn.spec.schema import Schema
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import NestedField, StructType
from firn.table.table import Table
from firn.util.secrets import masked_repr
from firn.util.timestamps import TimestampLike, to_timestamp_ms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from firn.core.scan import DataScan

PLANNED_SOURCE_NAME = "firn_planned"
# Parquet options for the native part: values as Iceberg stores them (proleptic Gregorian,
# no rebasing of files that do not ask for it), and a missing or damaged file is an error
# whatever the session's spark.sql.files.ignore* settings say.
NATIVE_READ_OPTIONS = {
    "mergeSchema": "false",
    "datetimeRebaseMode": "CORRECTED",
    "int96RebaseMode": "CORRECTED",
    "ignoreMissingFiles": "false",
    "ignoreCorruptFiles": "false",
}
FOOTER_THREADS = 8
# Characters Hadoop's glob expansion gives a meaning to (spark.read.parquet globs every path).
_GLOB_CHARACTERS = frozenset("*?[]{}\\")
_register_lock = threading.Lock()


@dataclass(frozen=True)
class RoutedFile:
    """A data file the ``firn`` data source reads, and why Spark's reader does not."""

    path: str
    reason: str


@dataclass(frozen=True)
class NativeGroup:
    """Data files Spark reads with one ``spark.read.parquet`` call: same layout, same residual."""

    layout: NativeLayout
    residual: BooleanExpression
    read_projection: Schema
    paths: tuple[str, ...]  # as Spark finds them (``spark_path`` applied)
    files: tuple[str, ...]  # as Firn stores them


@dataclass(frozen=True)
class _Pin:
    __repr__ = masked_repr  # io_properties may hold storage credentials

    table: str
    metadata_location: str
    io_properties: dict[str, str]
    options: dict[str, str]  # the firn data source options selecting the same snapshot and columns


@dataclass(frozen=True)
class SparkReadPlan:
    """How :func:`read` reads a scan: which files Spark's Parquet reader reads (``native``),
    which the ``firn`` data source reads (``firn_tasks``, with ``routed`` saying why), and
    the output ``schema`` (the ``firn`` data source's schema for the same selection)."""

    schema: st.StructType
    native: tuple[NativeGroup, ...]
    firn_tasks: tuple[FileScanTask, ...]
    routed: tuple[RoutedFile, ...]
    pin: _Pin

    __repr__ = masked_repr  # the pin's io_properties may hold storage credentials

    @property
    def native_files(self) -> tuple[str, ...]:
        """Data files Spark's own Parquet reader reads."""
        return tuple(f for g in self.native for f in g.files)

    @property
    def firn_files(self) -> tuple[str, ...]:
        """Data files the ``firn`` data source reads."""
        return tuple(r.path for r in self.routed)

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The DataFrame: the native groups and the Firn part, unioned by name."""
        names = [quote_name(f.name) for f in self.schema.fields]
        parts = [native_frame(spark, g, self.schema) for g in self.native]
        if self.firn_tasks:
            parts.append(_firn_frame(spark, self.pin, self.firn_tasks).select(*names))
        if not parts:
            return spark.createDataFrame([], self.schema)
        return reduce(lambda a, b: a.unionByName(b), parts)


def plan_read(
    spark: SparkSession,
    table: str | Table,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of_timestamp: dt.datetime | dt.date | int | str | None = None,
    columns: Sequence[str] | None = None,
    filter: BooleanExpression | str | None = None,
    case_sensitive: bool = True,
    spark_path: Callable[[str], str | None] | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    from_timestamp: TimestampLike | None = None,
    to_timestamp: TimestampLike | None = None,
    **catalog_properties: str,
) -> SparkReadPlan:
    """What :func:`read` would read, and how (driver only: plans, reads footers, runs no job)."""
    t = load_table(spark, table, catalog, warehouse, catalog_properties)
    if columns is not None:
        if isinstance(columns, str):
            raise ValidationError("columns must be a sequence of column names, not one string")
        if not columns:
            raise ValidationError("select at least one column (columns=[] selects nothing)")
    as_of = to_timestamp_ms(as_of_timestamp) if as_of_timestamp is not None else None
    start = to_timestamp_ms(from_timestamp, what="from_timestamp") if from_timestamp is not None else None
    end = to_timestamp_ms(to_timestamp, what="to_timestamp") if to_timestamp is not None else None
    scan = t.scan(
        filter=filter,
        columns=columns,
        snapshot_id=snapshot_id,
        ref=ref,
        as_of=as_of,
        case_sensitive=case_sensitive,
        from_snapshot_id=from_snapshot_id,
        to_snapshot_id=to_snapshot_id,
        from_timestamp=start,
        to_timestamp=end,
    )
    output = _output_fields(scan, columns)
    schema = st.StructType([spark_field(f) for f in output])
    options = _source_options(scan, output, columns, snapshot_id, ref, as_of)
    # The firn part reads the same range: Iceberg's option names, timestamps in epoch ms.
    for name, value in (
        ("start-snapshot-id", from_snapshot_id),
        ("end-snapshot-id", to_snapshot_id),
        ("start-timestamp", start),
        ("end-timestamp", end),
    ):
        if value is not None:
            options[name] = str(value)
    pin = _Pin(t.name, t.metadata_location, dict(t.io.properties), options)
    router = Router(t, scan, output, spark_path or default_spark_path(t, spark))
    return router.route(scan.plan_files(), schema, pin)


class _ReadPlan(Protocol):
    def to_dataframe(self, spark: SparkSession) -> DataFrame: ...


P = ParamSpec("P")


def dataframe_reader(
    plan: Callable[Concatenate[SparkSession, P], _ReadPlan], doc: str
) -> Callable[Concatenate[SparkSession, P], DataFrame]:
    """A reader with ``plan``'s signature that plans and returns the plan's DataFrame
    (``read`` from ``plan_read``, ``read_changes`` from ``plan_changes``): the options are
    declared once, on the plan function."""

    def reader(spark: SparkSession, /, *args: P.args, **kwargs: P.kwargs) -> DataFrame:
        return plan(spark, *args, **kwargs).to_dataframe(spark)

    signature = inspect.signature(plan)
    reader.__signature__ = signature.replace(return_annotation="DataFrame")  # type: ignore[attr-defined]
    reader.__name__ = reader.__qualname__ = plan.__name__.replace("plan_", "read_").replace(
        "read_read", "read"
    )
    reader.__doc__ = doc
    reader.__module__ = plan.__module__
    return reader


read = dataframe_reader(
    plan_read,
    """The rows of ``table`` (a loaded table, read in the state it holds, or a name in the
    catalog given by ``catalog``/``warehouse``/properties or ``spark.firn.catalog.*``) as a
    DataFrame: the rows and columns ``table.scan(...)`` returns for the same options, delete
    files applied. Delete-free files are read by Spark's own Parquet reader (see the module
    docstring); ``spark_path`` maps a Firn file location to the path Spark reads it at, or to
    None to leave the file to Firn. ``filter`` is a Firn filter (expression or string, Firn's
    semantics); Spark's own ``where`` on the result works too. ``from_snapshot_id`` /
    ``from_timestamp`` (exclusive) and ``to_snapshot_id`` / ``to_timestamp`` (inclusive) read
    incrementally: the rows the ``append`` snapshots in between added, as ``table.scan`` with
    the same arguments (Iceberg's ``start-snapshot-id`` ... read options).""",
)


def load_table(
    spark: SparkSession,
    table: str | Table,
    catalog: str | None,
    warehouse: str | None,
    catalog_properties: Mapping[str, str],
) -> Table:
    """``table`` itself, or the table of that name in the catalog the arguments (or the
    session's ``spark.firn.catalog.*``) name."""
    if isinstance(table, str):
        return catalog_config(spark, catalog, warehouse, **catalog_properties).load().load_table(table)
    if isinstance(table, Table):
        return table
    raise ValidationError(f"table must be a name or a loaded Table, got {type(table).__name__}")


class RoutedScan(Protocol):
    """What routing files between Spark's reader and Firn's needs of a scan."""

    @property
    def schema(self) -> Schema: ...

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def name_mapping(self) -> NameMapping | None: ...


# -- planning ------------------------------------------------------------------------------------------
def _output_fields(scan: DataScan, columns: Sequence[str] | None) -> list[NestedField]:
    """The output's top-level fields in order, as the ``firn`` data source orders them."""
    projection = scan.projection
    if columns is None:
        return list(projection.fields)
    out: list[NestedField] = []
    for c in columns:
        meta = METADATA_FIELDS.get(c)
        if meta is not None:
            f = meta
        else:
            fid = scan.schema.find_field(c, case_sensitive=scan.case_sensitive).field_id
            while (parent := scan.schema.parent_id(fid)) is not None:
                fid = parent
            f = projection.find_field(fid)
        if f not in out:
            out.append(f)
    return out


def _source_options(
    scan: DataScan,
    output: list[NestedField],
    columns: Sequence[str] | None,
    snapshot_id: int | None,
    ref: str | None,
    as_of: int | None,
) -> dict[str, str]:
    options: dict[str, str] = {}
    if snapshot_id is not None:
        options["snapshot-id"] = str(snapshot_id)
    if ref is not None:
        options["ref"] = ref
    if as_of is not None:
        options["as-of-timestamp"] = str(as_of)
    if columns is not None:
        # The data source selects by exact names: resolve case-insensitive spellings here.
        names = []
        for c in columns:
            if c in METADATA_FIELDS:
                names.append(c)
            else:
                f = scan.schema.find_field(c, case_sensitive=scan.case_sensitive)
                names.append(scan.schema.find_column_name(f.field_id) or c)
        if any("," in n for n in names):
            raise ValidationError(
                f"column names containing ',' cannot be selected for the firn data source: {names}"
            )
        options["columns"] = ",".join(names)
    return options


def _selected_ids(fields: Iterable[NestedField]) -> set[int]:
    """Ids that ``Schema.select_ids`` turns back into exactly these (possibly pruned) fields."""
    ids: set[int] = set()
    for f in fields:
        if isinstance(f.field_type, StructType):
            ids |= _selected_ids(f.field_type.fields)
        else:
            ids.add(f.field_id)
    return ids


# Firn's schemes -> the Hadoop scheme Spark's own readers use for the same objects.
SPARK_SCHEMES = {
    "s3": "s3a",
    "s3a": "s3a",
    "s3n": "s3a",
    "gs": "gs",
    "gcs": "gs",
    "hdfs": "hdfs",
    "viewfs": "viewfs",
}
# What makes a scheme readable by Spark itself, for the reason a file goes to Firn instead.
_HADOOP_HINTS = {
    "s3a": "S3A comes with hadoop-aws: spark.jars.packages=org.apache.hadoop:hadoop-aws:<the Hadoop "
    "version of Spark's jars> (README, 'Spark on S3')",
    "gs": "gs:// needs the GCS connector on Spark's classpath",
}


def hadoop_filesystem_problem(spark: SparkSession, scheme: str) -> str | None:
    """None when Spark's JVM has a Hadoop FileSystem for ``scheme`` (``fs.<scheme>.impl`` or
    one its service loader finds, its class on the classpath); else why not."""
    jvm, jsc = getattr(spark, "_jvm", None), getattr(spark, "_jsc", None)
    if jvm is None or jsc is None:
        return f"Firn cannot ask this Spark session (Spark Connect?) whether it reads {scheme}:// itself"
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, jsc.hadoopConfiguration())
    except Exception as e:  # py4j's Py4JJavaError: no FileSystem for the scheme or its class missing
        cause = next((line.strip() for line in str(e).splitlines() if "Exception:" in line), type(e).__name__)
        hint = _HADOOP_HINTS.get(scheme)
        return f"Spark has no Hadoop FileSystem for {scheme}:// ({cause.lstrip(': ')})" + (
            f"; {hint}" if hint else ""
        )
    return None


class SparkPaths:
    """Where Spark's own Parquet reader finds a table's files: local paths as ``file://`` URIs,
    ``s3://`` and ``s3n://`` as ``s3a://`` (Hadoop's S3 filesystem), other schemes as they
    are, each only when Spark has a Hadoop FileSystem for that scheme (asked once per scheme);
    None, with :meth:`why_not`, for a file Spark cannot read (it goes to the ``firn`` data
    source). In-memory locations and tables with a custom ``io-impl`` always go to Firn: the
    bytes Spark would read may not be the bytes that FileIO serves."""

    def __init__(self, table: Table, filesystem_problem: Callable[[str], str | None]) -> None:
        self._custom_io = bool(table.io.properties.get(IO_IMPL))
        self._filesystem_problem = filesystem_problem
        self._problems: dict[str, str | None] = {}

    def __call__(self, location: str) -> str | None:
        return self.resolve(location)[0]

    def why_not(self, location: str) -> str:
        """Why :meth:`__call__` gave None for ``location``."""
        return self.resolve(location)[1] or "Spark cannot read this location"

    def resolve(self, location: str) -> tuple[str | None, str | None]:
        """(the path Spark reads, None) or (None, why Spark cannot read it)."""
        if self._custom_io:
            return None, f"the table's FileIO is a custom {IO_IMPL}"
        if location.startswith("memory:"):
            return None, "an in-memory location"
        try:
            parsed = parse_location(location)
        except FirnError as e:
            return None, str(e)
        if parsed.is_local:
            return "file://" + parsed.path, None
        scheme = SPARK_SCHEMES.get(parsed.scheme, parsed.scheme)
        if scheme not in self._problems:
            self._problems[scheme] = self._filesystem_problem(scheme)
        problem = self._problems[scheme]
        if problem is not None:
            return None, problem
        return f"{scheme}://{location.split('://', 1)[1]}", None


def default_spark_path(table: Table, spark: SparkSession) -> SparkPaths:
    """The default ``spark_path`` of :func:`read`: :class:`SparkPaths` asking ``spark``."""
    return SparkPaths(table, lambda scheme: hadoop_filesystem_problem(spark, scheme))


def _residual(task: FileScanTask) -> BooleanExpression:
    return AlwaysTrue() if task.residual is None else task.residual


def _spark_path_problem(location: str, path: str | None, why: str | None = None) -> str | None:
    if path is None:
        return why or "Spark cannot read this location (spark_path gave None)"
    if any(c in _GLOB_CHARACTERS for c in path):
        return "the path holds glob characters, which spark.read.parquet would expand"
    base = path.rstrip("/").rsplit("/", 1)[-1]
    if base.startswith(("_", ".")):
        return "the file name starts with '_' or '.', which Spark's file listing skips"
    return None


class Router:
    """Splits planned tasks into groups Spark's Parquet reader reads (one ``spark.read.parquet``
    per file layout and residual) and tasks the ``firn`` data source reads, with the reason."""

    def __init__(
        self,
        table: Table,
        scan: RoutedScan,
        output: list[NestedField],
        spark_path: Callable[[str], str | None],
    ) -> None:
        self.table = table
        self.scan = scan
        self.spark_path = spark_path
        self.output_ids = _selected_ids(f for f in output if f.name not in METADATA_FIELDS)
        meta = [f.name for f in output if f.name in METADATA_FIELDS]
        self.global_reason = f"metadata column {meta[0]!r} requested" if meta else None
        self._projections: dict[BooleanExpression, tuple[Schema, str | None]] = {}

    def projection_for(self, residual: BooleanExpression) -> tuple[Schema, str | None]:
        """The fields a native read of a file with ``residual`` needs, and why it cannot be native."""
        cached = self._projections.get(residual)
        if cached is None:
            ids = self.output_ids | referenced_field_ids(residual)
            projection = self.scan.schema.select_ids(ids)
            problem = self.global_reason or projection_problem(projection)
            if problem is None and not isinstance(residual, AlwaysTrue):
                reason = unsupported(residual)
                problem = f"the filter has no exact Spark form: {reason}" if reason else None
            cached = self._projections[residual] = (projection, problem)
        return cached

    def map_path(self, location: str) -> tuple[str | None, str | None]:
        """The path Spark reads ``location`` at, or None and (when known) why not."""
        if isinstance(self.spark_path, SparkPaths):
            return self.spark_path.resolve(location)
        return self.spark_path(location), None

    def candidate_problem(self, task: FileScanTask, path: str | None, why: str | None = None) -> str | None:
        f = task.file
        if task.delete_files:
            return f"{len(task.delete_files)} delete file(s) apply"
        if f.file_format is not FileFormat.PARQUET:
            return f"a {f.file_format.value} data file"
        if f.key_metadata:
            return "an encrypted data file"
        problem = self.projection_for(_residual(task))[1]
        return problem or _spark_path_problem(f.file_path, path, why)

    def route(self, tasks: Sequence[FileScanTask], schema: st.StructType, pin: _Pin) -> SparkReadPlan:
        native, firn_tasks, routed = self.split(tasks)
        return SparkReadPlan(schema, native, firn_tasks, routed, pin)

    def split(
        self, tasks: Sequence[FileScanTask]
    ) -> tuple[tuple[NativeGroup, ...], tuple[FileScanTask, ...], tuple[RoutedFile, ...]]:
        """The native groups, the tasks left to Firn, and why each of those is."""
        routed: list[RoutedFile] = []
        firn_tasks: list[FileScanTask] = []
        candidates: list[tuple[FileScanTask, str]] = []
        for task in tasks:
            path, why = self.map_path(task.file.file_path)
            problem = self.candidate_problem(task, path, why)
            if problem is not None:
                routed.append(RoutedFile(task.file.file_path, problem))
                firn_tasks.append(task)
            else:
                assert path is not None
                candidates.append((task, path))
        groups: dict[tuple[str, BooleanExpression], list[tuple[str, str]]] = {}
        layouts: dict[tuple[str, BooleanExpression], tuple[NativeLayout, Schema]] = {}
        for (task, path), outcome in zip(candidates, self._layouts([t for t, _ in candidates])):
            if isinstance(outcome, str):
                routed.append(RoutedFile(task.file.file_path, outcome))
                firn_tasks.append(task)
                continue
            layout, residual, projection = outcome
            key = (layout.key, residual)
            groups.setdefault(key, []).append((path, task.file.file_path))
            layouts[key] = (layout, projection)
        native = tuple(
            NativeGroup(
                layouts[key][0],
                key[1],
                layouts[key][1],
                tuple(p for p, _ in files),
                tuple(f for _, f in files),
            )
            for key, files in groups.items()
        )
        return native, tuple(firn_tasks), tuple(routed)

    def _layouts(
        self, tasks: Sequence[FileScanTask]
    ) -> list[tuple[NativeLayout, BooleanExpression, Schema] | str]:
        md = self.scan.metadata
        io = self.table.io
        name_mapping = self.scan.name_mapping

        def one(task: FileScanTask) -> tuple[NativeLayout, BooleanExpression, Schema] | str:
            residual = _residual(task)
            projection = self.projection_for(residual)[0]
            spec = md.specs.get(task.file.spec_id)
            identity = frozenset(
                pf.source_id for pf in (spec.fields if spec else ()) if pf.transform.is_identity
            )
            try:
                footer = read_footer(io, task.file.file_path)
                layout = native_layout(
                    footer, projection, identity_source_ids=identity, name_mapping=name_mapping
                )
            except NotNative as e:
                return str(e)
            except (OSError, FirnError, ValueError) as e:
                # Unreadable here means Firn's reader reports it, with its own message.
                return f"footer not readable: {e}"
            return layout, residual, projection

        if len(tasks) <= 1:
            return [one(t) for t in tasks]
        with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(tasks))) as pool:
            return list(pool.map(one, tasks))


# -- building the DataFrame ----------------------------------------------------------------------------
def _extra_paths(read: st.DataType, out: st.DataType, prefix: str = "") -> list[str]:
    """Struct fields ``read`` has beyond ``out`` (read only for the filter), as dotted paths."""
    if not (isinstance(read, st.StructType) and isinstance(out, st.StructType)):
        return []
    wanted = {f.name: f for f in out.fields}
    paths: list[str] = []
    for f in read.fields:
        inner = wanted.get(f.name)
        if inner is None:
            paths.append(prefix + quote_name(f.name))
        else:
            paths.extend(_extra_paths(f.dataType, inner.dataType, prefix + quote_name(f.name) + "."))
    return paths


def native_frame(spark: SparkSession, group: NativeGroup, schema: st.StructType) -> DataFrame:
    """A native group's rows as a DataFrame with ``schema``'s columns (Spark's Parquet reader)."""
    from pyspark.sql import functions as F

    layout = group.layout
    df = spark.read.schema(layout.read_schema).options(**NATIVE_READ_OPTIONS).parquet(*group.paths)
    cols: list[Column] = []
    for c in layout.columns:
        col = F.col(quote_name(c.read_name))
        if c.target is not None:
            col = col.cast(c.target)
        cols.append(col.alias(c.name))
    df = df.select(*cols)
    if not isinstance(group.residual, AlwaysTrue):
        df = df.where(to_spark_column(group.residual))
    by_name = {f.name: f for f in group.read_projection.fields}
    out = []
    for f in schema.fields:
        col = F.col(quote_name(f.name))
        extra = _extra_paths(spark_field(by_name[f.name]).dataType, f.dataType)
        out.append(col.dropFields(*extra).alias(f.name) if extra else col)
    return df.select(*out)


class PlannedFirnSource(FirnDataSource):
    """The ``firn`` data source reading exactly the planned tasks it carries (registered per
    :func:`read` call with the tasks and the pinned table state as class attributes)."""

    tasks: ClassVar[tuple[FileScanTask, ...]] = ()

    @classmethod
    def name(cls) -> str:
        return PLANNED_SOURCE_NAME

    def reader(self, schema: st.StructType) -> PlannedFirnReader:
        return PlannedFirnReader(super().reader(schema), self.tasks)


class PlannedFirnReader(FirnReader):
    """A :class:`FirnReader` whose planned tasks were planned by :func:`plan_read`."""

    def __init__(self, base: FirnReader, tasks: Sequence[FileScanTask]) -> None:
        self.__dict__.update(vars(base))
        self.tasks = list(tasks)

    def plan_files(self) -> Sequence[FileScanTask]:
        return self.tasks


def _firn_frame(spark: SparkSession, pin: _Pin, tasks: Sequence[FileScanTask]) -> DataFrame:
    check_workers(spark)  # these tasks import firn on the workers: fail clearly if they cannot
    attrs: dict[str, Any] = {
        "settings": SessionSettings(parallelism=spark.sparkContext.defaultParallelism),
        "pinned": (pin.table, pin.metadata_location, dict(pin.io_properties)),
        "tasks": tuple(without_metrics(t) for t in tasks),
    }
    # A class made here (not importable by name) is pickled by value, tasks included, into
    # the Python workers, as firn.spark.register does with its settings.
    source = type(PlannedFirnSource.__name__, (PlannedFirnSource,), attrs)
    source.__qualname__ = "_firn_frame.<locals>.PlannedFirnSource"
    with _register_lock:
        # The DataFrame keeps the class registered when it is loaded; the lock keeps another
        # thread's registration from landing in between.
        spark.dataSource.register(source)
        df: DataFrame = spark.read.format(PLANNED_SOURCE_NAME).options(**pin.options).load(pin.table)
    return df


__all__ = [
    "dataframe_reader",
    "NATIVE_READ_OPTIONS",
    "PLANNED_SOURCE_NAME",
    "NativeGroup",
    "RoutedScan",
    "Router",
    "SPARK_SCHEMES",
    "SparkPaths",
    "default_spark_path",
    "hadoop_filesystem_problem",
    "load_table",
    "native_frame",
    "PlannedFirnReader",
    "PlannedFirnSource",
    "RoutedFile",
    "SparkReadPlan",
    "plan_read",
    "read",
]
