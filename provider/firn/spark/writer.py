"""Writing through the ``firn`` data source: ``df.write.format("firn").mode(...).save("db.t")``.

* On the driver, ``writer()`` loads the table and checks the DataFrame's schema against it
  (``firn.spark.typemap.check_write_schema``): a missing required column, an unknown column
  or a type that does not convert fails here, before any task runs.
* Each task conforms its Arrow batches to the table schema and writes Parquet data files with
  the table's default partition spec, sort order and write properties
  (``firn.core.writer.write_data_files``), buffering up to ``write-buffer-bytes`` of Arrow data
  (default: the table's target file size, at most 256 MiB) per flush. It returns its
  ``DataFile``\\s as the commit message; on failure it deletes what it wrote.
* The driver commits once: ``append`` (``Transaction.append_files``), ``overwrite`` of the whole
  table (``overwrite_files``), or a dynamic partition overwrite (``replace_partitions``) when
  ``overwrite-mode`` (or Spark's per-write ``partitionOverwriteMode`` option, or the session's
  ``spark.sql.sources.partitionOverwriteMode`` as captured by ``register``) is ``dynamic``.
  Options: ``branch``, ``isolation-level`` (dynamic overwrite), ``snapshot-property.<key>``.
* ``abort`` deletes what the job wrote, unless the table shows the commit landed (its snapshot
  carries this write's ``firn.write-id``: after a commit whose outcome was unknown, the files
  may be referenced). Spark hands ``abort`` the messages of the tasks that finished before the
  job failed, while other tasks may still be finishing, so every file of the job is named
  ``<write id>-<task>-<attempt>-...`` and ``abort`` first leaves a marker
  (``_firn-aborted-<write id>`` in the data directory; remove_orphan_files collects it), then
  deletes the reported files and any other file named for the job. A task checks the marker
  after each flush and deletes its own files when it is there: a file is either listed by
  ``abort`` or deleted by its task.

Rows of one Spark partition that fall into many table partitions make one file per table
partition and flush; repartition by the partition columns first for fewer, larger files.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import types as st
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from firn.core.writer import write_data_files
from firn.errors import FirnError, ValidationError
from firn.io.deletion import delete_confined, delete_quietly
from firn.spark.config import CatalogConfig, executor_io, executor_metadata, table_name
from firn.spark.typemap import check_write_schema, from_spark_table
from firn.spec.content import DataFile
from firn.spec.deletion_scope import DeletionScope
from firn.spec.locations import DefaultLocationProvider
from firn.spec.properties import IsolationLevel
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata

log = logging.getLogger(__name__)

WRITE_ID_PROPERTY = "firn.write-id"
SNAPSHOT_PROPERTY_PREFIX = "snapshot-property."
MAX_WRITE_BUFFER = 256 * 1024 * 1024
ABORT_MARKER_PREFIX = "_firn-aborted-"
MODES = ("append", "overwrite", "dynamic")


@dataclass
class FirnCommitMessage(WriterCommitMessage):
    """What one write task produced: its data files."""

    data_files: list[DataFile] = field(default_factory=list)


def _overwrite_mode(options: Mapping[str, str], session_mode: str) -> str:
    lowered = {k.lower(): v for k, v in options.items()}
    for key in ("overwrite-mode", "partitionoverwritemode"):
        value = lowered.get(key)
        if value:
            break
    else:
        value = session_mode
    mode = value.strip().lower()
    if mode not in ("static", "dynamic"):
        raise ValidationError(f"overwrite mode must be 'static' or 'dynamic', got {value!r}")
    return mode


def make_writer(
    options: Mapping[str, str],
    catalog: CatalogConfig,
    schema: st.StructType,
    overwrite: bool,
    session_overwrite_mode: str = "static",
) -> FirnWriter:
    """The writer for one ``save()`` (driver side: table loaded, schema checked)."""
    options = dict(options)
    table = catalog.load().load_table(table_name(options))
    check_write_schema(schema, table.metadata.schema(), table.name)
    mode = "append"
    if overwrite:
        dynamic = _overwrite_mode(options, session_overwrite_mode) == "dynamic"
        mode = "dynamic" if dynamic else "overwrite"
    isolation = options.get("isolation-level")
    if isolation is not None and isolation.strip().lower() not in {lvl.value for lvl in IsolationLevel}:
        raise ValidationError(f"isolation-level must be 'serializable' or 'snapshot', got {isolation!r}")
    target = table.metadata.table_properties.write_target_file_size_bytes
    buffer_raw = options.get("write-buffer-bytes")
    try:
        buffer = int(buffer_raw) if buffer_raw else min(target, MAX_WRITE_BUFFER)
    except ValueError:
        raise ValidationError(f"write-buffer-bytes must be a number of bytes, got {buffer_raw!r}") from None
    props = {
        k[len(SNAPSHOT_PROPERTY_PREFIX) :]: v
        for k, v in options.items()
        if k.lower().startswith(SNAPSHOT_PROPERTY_PREFIX)
    }
    return FirnWriter(
        catalog=catalog,
        table=table.name,
        metadata_location=table.metadata_location,
        io_properties=dict(table.io.properties),
        mode=mode,
        branch=options.get("branch") or MAIN_BRANCH,
        isolation_level=isolation.strip().lower() if isolation else None,
        snapshot_properties=props,
        buffer_bytes=max(1, buffer),
    )


class FirnWriter(DataSourceArrowWriter):
    """Writes data files on executors; commits once on the driver (module docstring)."""

    def __init__(
        self,
        *,
        catalog: CatalogConfig,
        table: str,
        metadata_location: str,
        io_properties: dict[str, str],
        mode: str,
        branch: str,
        isolation_level: str | None,
        snapshot_properties: dict[str, str],
        buffer_bytes: int,
    ) -> None:
        if mode not in MODES:
            raise ValidationError(f"write mode must be one of {MODES}, got {mode!r}")
        self.catalog = catalog
        self.table = table
        self.metadata_location = metadata_location
        self.io_properties = io_properties
        self.mode = mode
        self.branch = branch
        self.isolation_level = isolation_level
        self.snapshot_properties = snapshot_properties
        self.buffer_bytes = buffer_bytes
        self.write_id = uuid.uuid4().hex

    def _marker(self, metadata: TableMetadata) -> str:
        return f"{DefaultLocationProvider.for_table(metadata).data_path}/{ABORT_MARKER_PREFIX}{self.write_id}"

    # -- executors -------------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> FirnCommitMessage:
        io = executor_io(self.io_properties, self.metadata_location)
        metadata = executor_metadata(io, self.metadata_location)
        schema = metadata.schema()
        task = TaskContext.get()
        prefix = self.write_id
        if task is not None:
            prefix = f"{prefix}-{task.partitionId():05d}-{task.attemptNumber()}"
        locations = _PrefixedLocations(DefaultLocationProvider.for_table(metadata), prefix)
        marker = self._marker(metadata)
        written: list[DataFile] = []
        pending: list[pa.RecordBatch] = []
        size = 0

        def flush() -> None:
            nonlocal pending, size
            if pending:
                data = from_spark_table(pa.Table.from_batches(pending), schema)
                pending, size = [], 0
                written.extend(write_data_files(io, metadata, data, sort=True, location_provider=locations))
                if io.new_input(marker).exists():
                    raise FirnError(f"the write to {self.table} ({self.write_id}) was aborted")

        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                pending.append(batch)
                size += batch.nbytes
                if size >= self.buffer_bytes:
                    flush()
            flush()
        except BaseException:
            # Spark hands abort() no message for a failed task: clean up here.
            delete_quietly(
                io,
                DeletionScope.for_written(self.table, metadata),
                [f.file_path for f in written],
                "task output",
            )
            raise
        return FirnCommitMessage(written)

    # -- driver ------------------------------------------------------------------------------------
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = _files_of(messages)
        table = self.catalog.load().load_table(self.table)
        props = {**self.snapshot_properties, WRITE_ID_PROPERTY: self.write_id}
        tx = table.transaction()
        if self.mode == "append":
            tx.append_files(files, branch=self.branch, snapshot_properties=props, delete_on_failure=True)
        elif self.mode == "overwrite":
            tx.overwrite_files(files, branch=self.branch, snapshot_properties=props, delete_on_failure=True)
        else:
            tx.replace_partitions(
                files,
                branch=self.branch,
                isolation_level=IsolationLevel(self.isolation_level) if self.isolation_level else None,
                snapshot_properties=props,
                delete_on_failure=True,
            )
        tx.commit()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        paths = [f.file_path for f in _files_of(messages)]
        try:
            table = self.catalog.load().load_table(self.table)
        except Exception as e:  # cannot tell whether a commit landed: keep the files
            log.warning("not deleting the files written for %s (%s): %s", self.table, self.write_id, e)
            return
        if any(s.summary.get(WRITE_ID_PROPERTY) == self.write_id for s in table.metadata.snapshots):
            return
        io = executor_io(self.io_properties, self.metadata_location)
        metadata = executor_metadata(io, self.metadata_location)
        io.new_output(self._marker(metadata)).write(b"", overwrite=True)
        data_path = DefaultLocationProvider.for_table(metadata).data_path
        named = [
            info.location
            for info in io.list_prefix(data_path)
            if info.location.rsplit("/", 1)[-1].startswith(self.write_id)
        ]
        report = delete_confined(io, DeletionScope.for_written(self.table, metadata), [*paths, *named])
        if report.kept or report.failed:
            log.warning("aborted write %s to %s: %s", self.write_id, self.table, report.summary())


@dataclass(frozen=True)
class _PrefixedLocations:
    """The table's data locations, file names prefixed with the job's and task's ids."""

    base: DefaultLocationProvider
    prefix: str

    def new_data_location(self, file_name: str, partition_path: str | None = None) -> str:
        return self.base.new_data_location(f"{self.prefix}-{file_name}", partition_path)


def _files_of(messages: list[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, FirnCommitMessage) for f in m.data_files]


__all__ = ["WRITE_ID_PROPERTY", "FirnCommitMessage", "FirnWriter", "make_writer"]
