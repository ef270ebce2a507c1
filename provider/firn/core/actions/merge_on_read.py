"""Merge-on-read row deletes: deletion vectors (v3+) or position delete files (v2).

Instead of rewriting a partially matching data file (copy-on-write), a merge-on-read delete
records the positions of the matching rows:

* v3+ (spec "Deletion Vectors"): one DV per data file per snapshot. The new DV is the union of
  the new positions and every earlier delete of that file — its live DV, or the position
  delete files that apply to it — and the DV and *file-scoped* position delete files it
  supersedes are removed in the same commit (Java ``BaseDVFileWriter`` + ``RowDelta``; notes
  §11 "How DVs are rewritten and merged"). Partition-scoped v2 position files stay: readers
  ignore them for a file that has a DV. All DVs of one commit share one Puffin file.
* v2: position delete files, one per partition (Java ``write.delete.granularity=partition``).
  Earlier deletes stay; position deletes are additive.

Whole-file removals are not handled here: the planner already dropped those files (with their
DVs and file-scoped deletes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from firn.core.planning import FileScanTask
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap, PositionsLike
from firn.deletes.writers import (
    referenced_data_file_of,
    write_deletion_vectors,
    write_position_delete_files,
)
from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.spec.content import DataFile, FileContent
from firn.spec.properties import RowLevelMode, TableProperties
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS, MIN_FORMAT_VERSION_ROW_LEVEL_DELETES
from firn.util.arrow_chunks import single_array

if TYPE_CHECKING:
    from firn.core.actions.write import RowDeletePlan
    from firn.core.handle import TableHandle

# Which table property governs which kind of row-level operation (Java ``TableProperties``).
ROW_LEVEL_OPERATIONS = ("delete", "update", "merge")


def row_level_mode(properties: TableProperties, operation: str, format_version: int) -> RowLevelMode:
    """The effective mode of a row-level ``operation`` (``delete``/``update``/``merge``):
    ``write.<operation>.mode`` (copy-on-write by default, as Java), and always copy-on-write
    on v1, which has no delete files."""
    if operation not in ROW_LEVEL_OPERATIONS:
        raise ValidationError(f"unknown row-level operation {operation!r}; use one of {ROW_LEVEL_OPERATIONS}")
    mode: RowLevelMode = {
        "delete": properties.delete_mode,
        "update": properties.update_mode,
        "merge": properties.merge_mode,
    }[operation]
    if format_version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        return RowLevelMode.COPY_ON_WRITE
    return mode


def matched_positions(rows: pa.Table) -> pa.Array:
    """The ``_pos`` values of the rows whose ``__match`` is true (a planner's partial file)."""
    positions = rows.column("_pos").filter(pc.fill_null(rows.column("__match"), False))
    return single_array(positions)


def _previous_position_deletes(task: FileScanTask) -> list[DataFile]:
    # The planner attaches the file's live DV, or (no DV) the position delete files that apply
    # to it (spec "Scan Planning"); equality deletes are not positions and are left alone.
    return [d for d in task.delete_files if d.content is FileContent.POSITION_DELETES]


def write_position_deletes_for(
    io: FileIO,
    metadata: TableMetadata,
    targets: Iterable[tuple[FileScanTask, PositionsLike | PositionBitmap]],
) -> tuple[list[DataFile], list[DataFile], list[str]]:
    """Write the deletes that remove ``positions`` from each task's data file.

    Returns ``(added delete files, replaced delete files, written paths)``: on v3+ the DVs
    (merged with each file's earlier DV / position deletes) and the file-scoped delete files
    they supersede; on v2 position delete files and nothing replaced.
    """
    merged: dict[str, tuple[FileScanTask, PositionBitmap]] = {}
    for task, positions in targets:
        new = (
            positions.copy()
            if isinstance(positions, PositionBitmap)
            else PositionBitmap.from_positions(positions)
        )
        prev = merged.get(task.file.file_path)
        if prev is not None:
            prev[1].update(new)
        else:
            merged[task.file.file_path] = (task, new)
    merged = {k: v for k, v in merged.items() if v[1]}
    if not merged:
        return [], [], []
    v = metadata.format_version
    if v < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        raise ValidationError(f"format version {v} has no row-level deletes; use copy-on-write")
    if v < MIN_FORMAT_VERSION_DELETION_VECTORS:
        added = write_position_delete_files(io, metadata, [(t.file, b) for t, b in merged.values()])
        return added, [], [f.file_path for f in added]

    replaced: dict[str, DataFile] = {}
    dvs: list[tuple[DataFile, PositionBitmap]] = []
    for task, bitmap in merged.values():
        previous = _previous_position_deletes(task)
        if previous:
            # Spec "Deletion Vectors": a new DV must hold every earlier deleted position.
            earlier = load_positions(io, task.file, previous)
            if earlier is not None:
                bitmap |= earlier
            for d in previous:
                if referenced_data_file_of(d) == task.file.file_path:
                    # Several DVs may share one Puffin file.
                    replaced[d.file_key] = d
        dvs.append((task.file, bitmap))
    added = write_deletion_vectors(io, metadata, dvs)
    return added, list(replaced.values()), sorted({f.file_path for f in added})


def merge_on_read_deletes(
    table: TableHandle, plan: RowDeletePlan
) -> tuple[list[DataFile], list[DataFile], list[str]]:
    """Delete the matching rows of ``plan``'s partially matching files with DVs (v3+) or
    position delete files (v2); see the module docstring.

    Returns ``(added_deletes, replaced_deletes, written_paths)``: the new delete files, the
    earlier DVs / file-scoped position delete files they supersede (to remove in the same
    commit), and the files written (to delete if the commit fails).
    """
    targets: Sequence[tuple[FileScanTask, PositionsLike]] = [
        (task, matched_positions(rows).to_numpy()) for task, rows in plan.partial
    ]
    return write_position_deletes_for(table.io, table.metadata, targets)


__all__ = [
    "ROW_LEVEL_OPERATIONS",
    "matched_positions",
    "merge_on_read_deletes",
    "row_level_mode",
    "write_position_deletes_for",
]
