"""``table.scan(...)``: choose a snapshot, plan files, read rows.

Filters are expression objects (``col("id") > 5``) or strings (``"id > 5 and region = 'eu'"``).
Columns select data columns (dotted names for nested fields) and metadata columns (``_file``,
``_pos``, ``_spec_id``, and on v3+ ``_row_id``, ``_last_updated_sequence_number``).
Time travel: ``snapshot_id=``, ``ref=`` (branch or tag) or ``as_of=`` (timestamp); scans by
snapshot id or timestamp use the schema that snapshot was written with, as Iceberg Java does.

Incremental: ``from_snapshot_id=`` / ``from_timestamp=`` (exclusive) and ``to_snapshot_id=`` /
``to_timestamp=`` (inclusive) read the rows that ``append`` snapshots in that range added
(``firn.core.incremental``; the range rules are in ``firn.core.snapshot_range``). The
timestamps resolve as ``as_of=`` does, so ``scan(from_timestamp=t0, to_timestamp=t1)`` reads
what was appended between the states ``scan(as_of=t0)`` and ``scan(as_of=t1)`` read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa

from firn.core.incremental import plan_appends
from firn.core.planning import FileScanTask
from firn.core.reader import METADATA_FIELDS, ReadPlan, read_tasks
from firn.core.snapshot_range import SnapshotRange, resolve_range
from firn.core.trees import plan_snapshot
from firn.errors import NotFound, ValidationError
from firn.expressions import AlwaysTrue, BooleanExpression, bind, parse
from firn.spec.name_mapping import NameMapping, parse_name_mapping
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import TimestampLike, to_timestamp_ms

if TYPE_CHECKING:
    from firn.core.handle import TableHandle


def to_expression(filter: BooleanExpression | str | None) -> BooleanExpression:
    if filter is None:
        return AlwaysTrue()
    if isinstance(filter, str):
        return parse(filter)
    if isinstance(filter, BooleanExpression):
        return filter
    raise ValidationError(f"filter must be an expression or a string, got {type(filter).__name__}")


def snapshot_as_of(metadata: TableMetadata, table_name: str, when: TimestampLike) -> Snapshot:
    """The snapshot that was current at ``when`` (time travel by timestamp)."""
    ts = to_timestamp_ms(when)
    snap = metadata.snapshot_as_of(ts)
    if snap is None:
        first = metadata.snapshot_log[0].timestamp_ms if metadata.snapshot_log else None
        raise NotFound(
            f"table {table_name} has no snapshot at or before {ts} ms"
            + (f"; its history starts at {first} ms" if first is not None else "; it has no history")
        )
    return snap


class DataScan:
    """A configured scan. Planning and reading happen on ``plan_files``/``to_arrow``/``to_batches``."""

    def __init__(
        self,
        table: TableHandle,
        *,
        filter: BooleanExpression | str | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: dt.datetime | dt.date | int | str | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        from_timestamp: TimestampLike | None = None,
        to_timestamp: TimestampLike | None = None,
    ) -> None:
        if sum(x is not None for x in (snapshot_id, ref, as_of)) > 1:
            raise ValidationError("choose at most one of snapshot_id, ref and as_of")
        bounds = {
            "from_snapshot_id": from_snapshot_id,
            "to_snapshot_id": to_snapshot_id,
            "from_timestamp": from_timestamp,
            "to_timestamp": to_timestamp,
        }
        incremental = any(v is not None for v in bounds.values())
        if incremental and any(x is not None for x in (snapshot_id, ref, as_of)):
            given = next(k for k, v in bounds.items() if v is not None)
            raise ValidationError(
                f"{given} makes an incremental scan; it cannot be combined with snapshot_id, ref or as_of "
                "(use to_snapshot_id / to_timestamp for the end of the range)"
            )
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise ValidationError(f"limit must be an integer >= 0, got {limit!r}")
        self.table = table
        self.metadata = table.metadata
        self.row_filter = to_expression(filter)
        self.columns = tuple(columns) if columns is not None else None
        self.case_sensitive = case_sensitive
        self.limit = limit
        self._snapshot_id = snapshot_id
        self._ref = ref
        self._as_of = as_of
        self._range: SnapshotRange | None = None
        if incremental:
            self._range = resolve_range(
                self.metadata,
                table.name,
                from_snapshot_id=from_snapshot_id,
                to_snapshot_id=to_snapshot_id,
                from_timestamp=from_timestamp,
                to_timestamp=to_timestamp,
            )
        # The schema of an explicit end is that snapshot's, as for time travel.
        self._time_travel = snapshot_id is not None or as_of is not None
        self._time_travel |= to_snapshot_id is not None or to_timestamp is not None
        # Validate the filter and columns now so mistakes surface before any I/O.
        bind(self.schema, self.row_filter, case_sensitive=case_sensitive)
        _ = self._projection

    @property
    def range(self) -> SnapshotRange | None:
        """The snapshot range of an incremental scan (None for a scan of one snapshot)."""
        return self._range

    @property
    def is_incremental(self) -> bool:
        return self._range is not None

    @cached_property
    def snapshot(self) -> Snapshot | None:
        """The snapshot read (for an incremental scan: the end of its range)."""
        md = self.metadata
        if self._range is not None:
            end = self._range.to_snapshot_id
            return md.snapshot(end) if end is not None else None
        if self._snapshot_id is not None:
            return md.snapshot(self._snapshot_id)
        if self._ref is not None:
            if md.ref(self._ref) is None:
                raise NotFound(f"table {self.table.name} has no branch or tag {self._ref!r}")
            return md.snapshot_for_ref(self._ref)
        if self._as_of is not None:
            return snapshot_as_of(self.metadata, self.table.name, self._as_of)
        return md.current_snapshot()

    @cached_property
    def schema(self) -> Schema:
        """The schema rows are read with: the snapshot's for time travel, else the current one."""
        md = self.metadata
        if self._time_travel and self.snapshot is not None:
            sid = self.snapshot.schema_id
            if sid is not None and md.snapshot_by_id(self.snapshot.snapshot_id) is not None:
                try:
                    return md.schema_by_id(sid)
                except NotFound:
                    pass
        return md.schema()

    @cached_property
    def _projection(self) -> tuple[Schema, tuple[str, ...], tuple[str, ...]]:
        schema = self.schema
        if self.columns is None:
            return schema, (), tuple(f.name for f in schema.fields)
        data_cols = [c for c in self.columns if c not in METADATA_FIELDS]
        meta_cols = tuple(c for c in self.columns if c in METADATA_FIELDS)
        lineage = {"_row_id", "_last_updated_sequence_number"} & set(meta_cols)
        if lineage and not self.metadata.tracks_row_lineage:
            raise ValidationError("_row_id and _last_updated_sequence_number need format version 3 or later")
        projection = schema.select(data_cols, case_sensitive=self.case_sensitive)
        order: list[str] = []
        for c in self.columns:
            if c in METADATA_FIELDS:
                order.append(c)
            else:
                f = schema.find_field(c, case_sensitive=self.case_sensitive)
                top = f
                parent = schema.parent_id(f.field_id)
                while parent is not None:
                    top = schema.find_field(parent)
                    parent = schema.parent_id(parent)
                if top.name not in order:
                    order.append(top.name)
        return projection, meta_cols, tuple(order)

    @property
    def projection(self) -> Schema:
        return self._projection[0]

    @cached_property
    def name_mapping(self) -> NameMapping | None:
        text = self.metadata.table_properties.name_mapping_json
        return parse_name_mapping(text) if text else None

    def plan_files(self) -> Sequence[FileScanTask]:
        """The data files to read, each with its delete files and residual filter (for an
        incremental scan: the files its range's ``append`` snapshots added, no deletes)."""
        if self._range is not None:
            return plan_appends(
                self.table.io,
                self.metadata,
                self._range.snapshots,
                self.schema,
                self.row_filter,
                case_sensitive=self.case_sensitive,
            )
        snap = self.snapshot
        if snap is None:
            return []
        return plan_snapshot(
            self.table.io,
            self.metadata,
            snap,
            self.schema,
            self.row_filter,
            case_sensitive=self.case_sensitive,
        )

    def _read_plan(self) -> ReadPlan:
        projection, meta, order = self._projection
        return ReadPlan(
            table_schema=self.schema,
            projection=projection,
            metadata_columns=meta,
            output_order=order,
            specs=dict(self.metadata.specs),
            name_mapping=self.name_mapping,
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Stream the matching rows as record batches (files read a few at a time)."""
        if self.limit == 0:
            return iter(())
        return read_tasks(self.table.io, self.plan_files(), self._read_plan(), limit=self.limit)

    def to_arrow(self) -> pa.Table:
        """All matching rows as one Arrow table."""
        plan = self._read_plan()
        batches = list(self.to_batches())
        if not batches:
            return plan.output_schema.empty_table()
        return pa.Table.from_batches(batches, schema=plan.output_schema)

    def count(self) -> int:
        """The number of matching rows (metadata only when no file needs filtering or deletes)."""
        total = 0
        to_read = []
        for task in self.plan_files():
            if not task.delete_files and (task.residual is None or isinstance(task.residual, AlwaysTrue)):
                total += task.file.record_count
            else:
                to_read.append(task)
        plan = ReadPlan(
            table_schema=self.schema,
            projection=Schema(),
            metadata_columns=("_pos",),
            output_order=("_pos",),
            specs=dict(self.metadata.specs),
            name_mapping=self.name_mapping,
        )
        for batch in read_tasks(self.table.io, to_read, plan):
            total += batch.num_rows
        if self.limit is not None:
            total = min(total, self.limit)
        return total


__all__ = ["DataScan", "FileScanTask", "SnapshotRange", "to_expression"]
