"""Changelog scans: the rows inserted and deleted between two snapshots, as Iceberg's changelog
view (``create_changelog_view``) presents them.

``table.changelog(from_snapshot_id=a, to_snapshot_id=b)`` covers the snapshots of ``(a, b]``
(``firn.core.snapshot_range``) that may change rows: every operation but ``replace``
(compaction, delete and manifest rewrites and root flushes move rows without changing them,
so they contribute nothing). Each of those snapshots is compared with its parent, row by row:

* rows of the data files it added, with the deletes live in it -> ``INSERT``;
* rows the data files it removed held in its parent (their deletes then applied) -> ``DELETE``;
* for data files it kept whose deletes it changed (position deletes, deletion vectors,
  equality deletes added, DVs replaced, delete files removed): the rows live before and not
  after -> ``DELETE``, and the reverse -> ``INSERT``.

So an update or upsert shows as a ``DELETE`` of the old row and an ``INSERT`` of the new one,
whether written copy-on-write or merge-on-read. A copy-on-write rewrite also moves the rows it
keeps into a new file; those *carry-over* rows are removed by default (an identical DELETE and
INSERT in one snapshot cancel, ``firn.core.changelog_rows``), so what is left is the rows that
really changed. ``net_changes=True`` cancels across snapshots too.

Every row has the data columns and ``_change_type`` (``INSERT``/``DELETE``), ``_change_ordinal``
(0, 1, ... over the range's non-``replace`` snapshots, oldest first) and
``_commit_snapshot_id``. Rows come ordered by ordinal, a snapshot's DELETEs before its INSERTs.

Each snapshot's metadata is read from that snapshot alone: its parent's deletes are rebuilt
from what it removed. A range may start at an expired snapshot (``firn.core.snapshot_range``)
unless the range's first snapshot removed files: their rows are its DELETEs, but only the
expired parent referenced them, so expiry may have deleted them; that is a ``NotFound``
naming both snapshots, never a partial changelog. A snapshot
that only adds data files costs O(change) (V4: its root and new leaves). One that removes data
files or changes deletes also reads the delete files live in it, and one that changes deletes
plans its data files to find those the deletes touch (O(table), as Iceberg Java).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa

from firn.core.changelog_rows import (
    SnapshotRows,
    cancel_carry_over,
    concat,
    net_changes,
    positions_diff,
    read_rows,
)
from firn.core.planning import FileScanTask, SpecEvaluators
from firn.core.reader import METADATA_FIELDS, ReadPlan
from firn.core.scan import to_expression
from firn.core.snapshot_range import SnapshotRange, resolve_range
from firn.core.trees import live_delete_entries, plan_snapshot, snapshot_changes
from firn.deletes.index import DeleteFileIndex, partition_key
from firn.errors import NotFound, ValidationError
from firn.expressions import BooleanExpression, InclusiveMetricsEvaluator, bind
from firn.io.arrow_schema import schema_to_arrow
from firn.io.base import FileIO
from firn.spec.content import DataFile, EntryStatus, FileContent, ManifestEntry
from firn.spec.name_mapping import NameMapping, parse_name_mapping
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import TimestampLike

if TYPE_CHECKING:
    from firn.core.handle import TableHandle

CHANGE_TYPE_COLUMN = "_change_type"
CHANGE_ORDINAL_COLUMN = "_change_ordinal"
COMMIT_SNAPSHOT_ID_COLUMN = "_commit_snapshot_id"
CHANGELOG_COLUMNS = (CHANGE_TYPE_COLUMN, CHANGE_ORDINAL_COLUMN, COMMIT_SNAPSHOT_ID_COLUMN)
# The changelog columns' Arrow types (Iceberg Java: string, int, long).
CHANGELOG_FIELDS = (
    pa.field(CHANGE_TYPE_COLUMN, pa.string(), nullable=False),
    pa.field(CHANGE_ORDINAL_COLUMN, pa.int32(), nullable=False),
    pa.field(COMMIT_SNAPSHOT_ID_COLUMN, pa.int64(), nullable=False),
)


class ChangeType(enum.Enum):
    """``_change_type`` of a changelog row."""

    INSERT = "INSERT"
    DELETE = "DELETE"


class ChangeKind(enum.Enum):
    """What happened to the data file of a :class:`ChangelogTask` in its snapshot."""

    ADDED_FILE = "added-file"  # every live row is an INSERT
    REMOVED_FILE = "removed-file"  # every row live before is a DELETE
    DELETES_CHANGED = "deletes-changed"  # rows live before xor after are DELETEs / INSERTs


@dataclass(frozen=True, slots=True)
class ChangelogTask:
    """One data file's part in the changelog of one snapshot.

    ``deletes_before`` are the delete files that applied to the file in the snapshot's parent
    (None: the file was not there), ``deletes_after`` those that apply in the snapshot (None:
    the file was removed)."""

    change_ordinal: int
    commit_snapshot_id: int
    file: DataFile
    data_sequence_number: int
    residual: BooleanExpression | None
    deletes_before: tuple[DataFile, ...] | None
    deletes_after: tuple[DataFile, ...] | None

    @property
    def kind(self) -> ChangeKind:
        if self.deletes_before is None:
            return ChangeKind.ADDED_FILE
        if self.deletes_after is None:
            return ChangeKind.REMOVED_FILE
        return ChangeKind.DELETES_CHANGED

    def _task(self, deletes: tuple[DataFile, ...]) -> FileScanTask:
        return FileScanTask(self.file, self.data_sequence_number, deletes, self.residual)

    @property
    def before(self) -> FileScanTask | None:
        """The file as its parent snapshot read it (None for an added file)."""
        return self._task(self.deletes_before) if self.deletes_before is not None else None

    @property
    def after(self) -> FileScanTask | None:
        """The file as the snapshot reads it (None for a removed file)."""
        return self._task(self.deletes_after) if self.deletes_after is not None else None


# -- planning --------------------------------------------------------------------------------------
class _Pruning:
    """Partition and metrics pruning of one changelog's files, and their residuals."""

    def __init__(
        self, metadata: TableMetadata, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool
    ) -> None:
        self.evaluators = SpecEvaluators(metadata, schema, row_filter, case_sensitive)
        self.metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive=case_sensitive)

    def may_match(self, f: DataFile) -> bool:
        pev = self.evaluators.partition(f.spec_id)
        if pev is not None and not pev.eval(f.partition):
            return False
        return self.metrics.eval(f)

    def residual(self, f: DataFile) -> BooleanExpression:
        return self.evaluators.residual(f.spec_id).residual_for(f.partition)


class _Touched:
    """A cheap over-approximation of the data files some delete files may apply to."""

    def __init__(self, deletes: Sequence[DataFile], metadata: TableMetadata) -> None:
        self.paths: set[str] = set()
        self.partitions: set[tuple[object, ...]] = set()
        self.everything = False
        for d in deletes:
            if d.content is FileContent.POSITION_DELETES and d.referenced_data_file is not None:
                self.paths.add(d.referenced_data_file)
                continue
            spec = metadata.specs.get(d.spec_id)
            if d.content is FileContent.EQUALITY_DELETES and (spec is None or spec.is_unpartitioned):
                self.everything = True  # a global equality delete
            else:
                self.partitions.add(partition_key(d.spec_id, d.partition))

    def may_touch(self, f: DataFile) -> bool:
        return (
            self.everything
            or f.file_path in self.paths
            or (bool(self.partitions) and partition_key(f.spec_id, f.partition) in self.partitions)
        )


def _keys(files: Sequence[DataFile]) -> frozenset[str]:
    return frozenset(f.file_key for f in files)


def plan_snapshot_changelog(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    change_ordinal: int,
    schema: Schema,
    row_filter: BooleanExpression,
    *,
    case_sensitive: bool = True,
) -> list[ChangelogTask]:
    """The changelog tasks of one snapshot against its parent (see the module docstring)."""
    changes = snapshot_changes(io, metadata, snapshot)
    seq_of = changes.data_sequence_number
    sid = snapshot.snapshot_id
    parent = snapshot.parent_snapshot_id
    if parent is not None and metadata.snapshot_by_id(parent) is None:
        removed_files = len(changes.removed_data_files) + len(changes.removed_delete_files)
        if removed_files:
            # The rows these files held are the snapshot's DELETEs, but only its parent
            # referenced the files, and expiring the parent may have deleted them.
            raise NotFound(
                f"cannot read the rows snapshot {sid} ({changes.operation}) deleted: it removed "
                f"{removed_files} file(s) that its parent {parent} referenced, and snapshot {parent} "
                f"has been expired (its files may be gone); start the changelog at snapshot {sid} "
                f"(from_snapshot_id={sid}) to read the changes after it"
            )
    prune = _Pruning(metadata, schema, row_filter, case_sensitive)
    added = [f for f in changes.added_data_files if prune.may_match(f)]
    removed = [f for f in changes.removed_data_files if prune.may_match(f)]
    deletes_changed = bool(changes.added_delete_files or changes.removed_delete_files)

    def task(
        f: DataFile, before: tuple[DataFile, ...] | None, after: tuple[DataFile, ...] | None
    ) -> ChangelogTask:
        return ChangelogTask(change_ordinal, sid, f, seq_of(f), prune.residual(f), before, after)

    if not deletes_changed and not removed and all(seq_of(f) == snapshot.sequence_number for f in added):
        # Only new files, at the snapshot's own sequence number, and no new deletes: no delete
        # file applies to them (deletes apply to data at most as new as themselves, equality
        # deletes to strictly older data), so nothing else needs reading.
        return [task(f, None, ()) for f in added]

    live = live_delete_entries(io, metadata, snapshot)
    after = DeleteFileIndex(live, metadata.specs)
    # The parent's deletes: the snapshot's, less those it added, plus those it removed.
    added_keys = _keys(changes.added_delete_files)
    before_entries = [e for e in live if e.data_file.file_key not in added_keys]
    before_entries += [
        ManifestEntry(EntryStatus.EXISTING, None, seq_of(d), seq_of(d), d)
        for d in changes.removed_delete_files
    ]
    before = DeleteFileIndex(before_entries, metadata.specs)

    tasks = [task(f, None, after.for_data_file(f, seq_of(f))) for f in added]
    tasks += [task(f, before.for_data_file(f, seq_of(f)), None) for f in removed]
    if deletes_changed:
        touched = _Touched((*changes.added_delete_files, *changes.removed_delete_files), metadata)
        skip = {f.file_path for f in (*changes.added_data_files, *changes.removed_data_files)}
        for t in plan_snapshot(io, metadata, snapshot, schema, row_filter, case_sensitive=case_sensitive):
            f = t.file
            if f.file_path in skip or not touched.may_touch(f):
                continue
            seq = t.data_sequence_number
            was = before.for_data_file(f, seq)
            now = after.for_data_file(f, seq)
            if _keys(was) != _keys(now):
                tasks.append(ChangelogTask(change_ordinal, sid, f, seq, t.residual, was, now))
    return tasks


# -- reading ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChangelogReadPlans:
    """The read plans of one changelog: ``rows`` for whole files, ``with_pos`` (the same
    columns, then ``_pos``) to compare a file's rows before and after its deletes changed."""

    rows: ReadPlan
    with_pos: ReadPlan


def read_changelog_task(
    io: FileIO, task: ChangelogTask, plans: ChangelogReadPlans
) -> tuple[pa.Table, pa.Table]:
    """One task's (DELETE rows, INSERT rows), in ``plans.rows.output_schema``; carry-over rows
    are not removed here (they pair across the tasks of a snapshot)."""
    empty = plans.rows.output_schema.empty_table()
    kind = task.kind
    if kind is ChangeKind.ADDED_FILE:
        assert task.after is not None
        return empty, read_rows(io, task.after, plans.rows)
    if kind is ChangeKind.REMOVED_FILE:
        assert task.before is not None
        return read_rows(io, task.before, plans.rows), empty
    assert task.before is not None and task.after is not None
    return positions_diff(
        read_rows(io, task.before, plans.with_pos), read_rows(io, task.after, plans.with_pos)
    )


def with_change_columns(rows: pa.Table, change: ChangeType, ordinal: int, snapshot_id: int) -> pa.Table:
    """``rows`` with ``_change_type``, ``_change_ordinal`` and ``_commit_snapshot_id`` appended."""
    n = rows.num_rows
    out = rows.append_column(CHANGELOG_FIELDS[0], pa.array([change.value] * n, pa.string()))
    out = out.append_column(CHANGELOG_FIELDS[1], pa.array([ordinal] * n, pa.int32()))
    return out.append_column(CHANGELOG_FIELDS[2], pa.array([snapshot_id] * n, pa.int64()))


# -- the scan ----------------------------------------------------------------------------------------
class ChangelogScan:
    """A configured changelog scan; ``plan_tasks`` / ``to_batches`` / ``to_arrow`` run it.

    The range is given as for an incremental scan; ``filter`` keeps the changed rows that match
    it; ``columns`` selects top-level data columns (the changelog columns always follow them)."""

    def __init__(
        self,
        table: TableHandle,
        *,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        from_timestamp: TimestampLike | None = None,
        to_timestamp: TimestampLike | None = None,
        filter: BooleanExpression | str | None = None,
        columns: Sequence[str] | None = None,
        case_sensitive: bool = True,
        net_changes: bool = False,
        remove_carry_over: bool = True,
    ) -> None:
        if net_changes and not remove_carry_over:
            raise ValidationError(
                "net_changes=True removes carry-over rows too; it needs remove_carry_over=True"
            )
        if isinstance(columns, str):
            raise ValidationError("columns must be a sequence of column names, not one string")
        self.table = table
        self.metadata = table.metadata
        self.row_filter = to_expression(filter)
        self.case_sensitive = case_sensitive
        self.net_changes = net_changes
        self.remove_carry_over = remove_carry_over
        self.range: SnapshotRange = resolve_range(
            self.metadata,
            table.name,
            from_snapshot_id=from_snapshot_id,
            to_snapshot_id=to_snapshot_id,
            from_timestamp=from_timestamp,
            to_timestamp=to_timestamp,
        )
        self._explicit_end = to_snapshot_id is not None or to_timestamp is not None
        self.columns = tuple(columns) if columns is not None else None
        bind(self.schema, self.row_filter, case_sensitive=case_sensitive)
        _ = self.projection

    @cached_property
    def schema(self) -> Schema:
        """The schema rows are read with: the end snapshot's when the end was given, else the
        table's current one (as a scan of that snapshot)."""
        md = self.metadata
        end = self.range.to_snapshot_id
        if self._explicit_end and end is not None:
            sid = md.snapshot(end).schema_id
            if sid is not None:
                try:
                    return md.schema_by_id(sid)
                except NotFound:
                    pass
        return md.schema()

    @cached_property
    def projection(self) -> Schema:
        """The data columns returned (top-level columns of :attr:`schema`)."""
        if self.columns is None:
            return self.schema
        names = []
        for c in self.columns:
            if c in METADATA_FIELDS or c in CHANGELOG_COLUMNS:
                raise ValidationError(
                    f"a changelog returns data columns and {', '.join(CHANGELOG_COLUMNS)}; "
                    f"{c!r} cannot be selected"
                )
            f = self.schema.find_field(c, case_sensitive=self.case_sensitive)
            if self.schema.parent_id(f.field_id) is not None:
                raise ValidationError(f"a changelog selects top-level columns; {c!r} is nested")
            names.append(f.name)
        return self.schema.select(names)

    @property
    def output_schema(self) -> pa.Schema:
        """The Arrow schema of the rows: the selected data columns, then the changelog columns."""
        return pa.schema([*schema_to_arrow(self.projection), *CHANGELOG_FIELDS])

    @cached_property
    def name_mapping(self) -> NameMapping | None:
        text = self.metadata.table_properties.name_mapping_json
        return parse_name_mapping(text) if text else None

    def plan_tasks(self) -> list[ChangelogTask]:
        """The data files to read, per snapshot of the range that changes data, in ordinal order."""
        tasks: list[ChangelogTask] = []
        for ordinal, snap in enumerate(self.range.data_changes):
            tasks += plan_snapshot_changelog(
                self.table.io,
                self.metadata,
                snap,
                ordinal,
                self.schema,
                self.row_filter,
                case_sensitive=self.case_sensitive,
            )
        return tasks

    # -- reading -------------------------------------------------------------------------------------
    @property
    def read_schema(self) -> Schema:
        """The columns rows are read with: every column when carry-over rows are removed (rows
        compare whole), else the selected ones."""
        return self.schema if self.remove_carry_over else self.projection

    def read_plans(self) -> ChangelogReadPlans:
        """How :func:`read_changelog_task` reads this scan's tasks."""
        projection = self.read_schema
        names = tuple(f.name for f in projection.fields)

        def plan(with_pos: bool) -> ReadPlan:
            return ReadPlan(
                table_schema=self.schema,
                projection=projection,
                metadata_columns=("_pos",) if with_pos else (),
                output_order=(*names, "_pos") if with_pos else names,
                specs=dict(self.metadata.specs),
                name_mapping=self.name_mapping,
            )

        return ChangelogReadPlans(plan(False), plan(True))

    def _snapshot_rows(self, tasks: Sequence[ChangelogTask]) -> Iterator[SnapshotRows]:
        io = self.table.io
        plans = self.read_plans()
        empty = plans.rows.output_schema
        by_ordinal: dict[int, list[ChangelogTask]] = {}
        for t in tasks:
            by_ordinal.setdefault(t.change_ordinal, []).append(t)
        for ordinal, group in sorted(by_ordinal.items()):
            deleted: list[pa.Table] = []
            inserted: list[pa.Table] = []
            for t in group:
                gone, new = read_changelog_task(io, t, plans)
                deleted.append(gone)
                inserted.append(new)
            d, i = concat(deleted, empty), concat(inserted, empty)
            if self.remove_carry_over:
                d, i = cancel_carry_over(d, i)
            yield SnapshotRows(ordinal, group[0].commit_snapshot_id, d, i)

    def _finish(self, rows: pa.Table, change: ChangeType, ordinal: int, snapshot_id: int) -> pa.Table:
        out = rows.select([f.name for f in self.projection.fields])
        return with_change_columns(out, change, ordinal, snapshot_id).cast(self.output_schema)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The changed rows as record batches, snapshot by snapshot (with ``net_changes``, after
        reading the whole range)."""
        changes: Iterator[SnapshotRows] | list[SnapshotRows] = self._snapshot_rows(self.plan_tasks())
        if self.net_changes:
            changes = net_changes(list(changes))
        for c in changes:
            for table, kind in ((c.deleted, ChangeType.DELETE), (c.inserted, ChangeType.INSERT)):
                if table.num_rows:
                    yield from self._finish(table, kind, c.change_ordinal, c.commit_snapshot_id).to_batches()

    def to_arrow(self) -> pa.Table:
        """Every changed row as one Arrow table (schema :attr:`output_schema`)."""
        batches = list(self.to_batches())
        if not batches:
            return self.output_schema.empty_table()
        return pa.Table.from_batches(batches, schema=self.output_schema)


__all__ = [
    "CHANGELOG_COLUMNS",
    "CHANGELOG_FIELDS",
    "CHANGE_ORDINAL_COLUMN",
    "CHANGE_TYPE_COLUMN",
    "COMMIT_SNAPSHOT_ID_COLUMN",
    "ChangeKind",
    "ChangeType",
    "ChangelogReadPlans",
    "ChangelogScan",
    "ChangelogTask",
    "plan_snapshot_changelog",
    "read_changelog_task",
    "with_change_columns",
]
