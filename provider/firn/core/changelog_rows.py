"""Reading changelog tasks into rows, and the two cancellations of Iceberg's changelog view.

* **Carry-over rows.** A copy-on-write delete, update or merge rewrites a data file: the rows
  it keeps are removed with the old file and added with the new one, though they did not
  change. Within one snapshot, a DELETE row and an INSERT row equal in every column cancel
  out, pair by pair (a multiset difference: two identical rows deleted and one re-inserted
  leave one DELETE). Iceberg's ``create_changelog_view`` removes them by default too.
* **Net changes** (opt-in) do the same across the whole range: a row inserted and later
  deleted disappears; what is left is the difference between the table at the start and at
  the end, each surviving change stamped with the snapshot of its last occurrence.

Rows are compared on every column of the read schema, whatever the output selects (an update
of a column the output leaves out is still a change). Floats compare by their bits with every
NaN equal, so -0.0 -> 0.0 is a change and NaN -> NaN is not.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.planning import FileScanTask
from firn.core.reader import ReadPlan, read_task
from firn.io.base import FileIO

POS = "_pos"


@dataclass(frozen=True)
class SnapshotRows:
    """The changed rows of one snapshot of a changelog: its DELETE rows and its INSERT rows."""

    change_ordinal: int
    commit_snapshot_id: int
    deleted: pa.Table
    inserted: pa.Table


def read_rows(io: FileIO, task: FileScanTask, plan: ReadPlan) -> pa.Table:
    """The live rows of one task, as a table in ``plan.output_schema``."""
    batches = list(read_task(io, task, plan))
    if not batches:
        return plan.output_schema.empty_table()
    return pa.Table.from_batches(batches, schema=plan.output_schema)


def positions_diff(before: pa.Table, after: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Rows of ``before`` whose ``_pos`` is not in ``after`` (deleted) and the reverse
    (restored), both without the ``_pos`` column."""
    gone = before.filter(pc.invert(pc.is_in(before.column(POS), value_set=after.column(POS))))
    back = after.filter(pc.invert(pc.is_in(after.column(POS), value_set=before.column(POS))))
    return gone.drop_columns([POS]), back.drop_columns([POS])


# -- comparing rows ----------------------------------------------------------------------------------
_NAN = ("NaN",)


def _freeze(value: object) -> Hashable:
    if isinstance(value, float):
        return _NAN if math.isnan(value) else struct.pack("<d", value)
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    assert isinstance(value, Hashable)
    return value


def _column_keys(col: pa.ChunkedArray) -> list[Hashable]:
    values = col.to_pylist()
    t = col.type
    if pa.types.is_floating(t) or pa.types.is_nested(t):
        return [_freeze(v) for v in values]
    return values


def row_keys(table: pa.Table) -> list[Hashable]:
    """One hashable key per row, equal exactly when the rows are equal in every column."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    return list(zip(*(_column_keys(c) for c in table.columns), strict=True))


def cancel_carry_over(deleted: pa.Table, inserted: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Drop DELETE/INSERT pairs of identical rows (see the module docstring)."""
    if deleted.num_rows == 0 or inserted.num_rows == 0:
        return deleted, inserted
    available = Counter(row_keys(inserted))
    cancelled: Counter[Hashable] = Counter()
    keep_deleted = np.ones(deleted.num_rows, dtype=bool)
    for i, key in enumerate(row_keys(deleted)):
        if available[key] > 0:
            available[key] -= 1
            cancelled[key] += 1
            keep_deleted[i] = False
    keep_inserted = np.ones(inserted.num_rows, dtype=bool)
    for i, key in enumerate(row_keys(inserted)):
        if cancelled[key] > 0:
            cancelled[key] -= 1
            keep_inserted[i] = False
    return _filter(deleted, keep_deleted), _filter(inserted, keep_inserted)


def net_changes(changes: Sequence[SnapshotRows]) -> list[SnapshotRows]:
    """Cancel changes across snapshots: per distinct row, the inserts minus the deletes of the
    whole range survive, as the last such events (see the module docstring)."""
    keys = [(row_keys(c.deleted), row_keys(c.inserted)) for c in changes]
    balance: Counter[Hashable] = Counter()
    for deleted_keys, inserted_keys in keys:
        balance.update(inserted_keys)
        balance.subtract(deleted_keys)
    # Walk backwards keeping, per row, as many of the last events of the surviving kind as
    # the balance says; within one snapshot INSERTs come after DELETEs.
    to_keep_inserts = Counter({k: n for k, n in balance.items() if n > 0})
    to_keep_deletes = Counter({k: -n for k, n in balance.items() if n < 0})
    out: list[SnapshotRows] = []
    for c, (deleted_keys, inserted_keys) in zip(reversed(changes), reversed(keys)):
        keep_i = _keep_last(inserted_keys, to_keep_inserts)
        keep_d = _keep_last(deleted_keys, to_keep_deletes)
        out.append(
            SnapshotRows(
                c.change_ordinal,
                c.commit_snapshot_id,
                _filter(c.deleted, keep_d),
                _filter(c.inserted, keep_i),
            )
        )
    out.reverse()
    return out


def _keep_last(keys: Sequence[Hashable], quota: Counter[Hashable]) -> np.ndarray:
    keep = np.zeros(len(keys), dtype=bool)
    for i in range(len(keys) - 1, -1, -1):
        k = keys[i]
        if quota[k] > 0:
            quota[k] -= 1
            keep[i] = True
    return keep


def _filter(table: pa.Table, keep: np.ndarray) -> pa.Table:
    return table if keep.all() else table.filter(pa.array(keep))


def concat(tables: Iterable[pa.Table], schema: pa.Schema) -> pa.Table:
    parts = [t for t in tables if t.num_rows]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


__all__ = [
    "SnapshotRows",
    "cancel_carry_over",
    "concat",
    "net_changes",
    "positions_diff",
    "read_rows",
    "row_keys",
]
