"""Dynamic partition overwrite: replace the partitions that already-written data files fall in.

``tx.replace_partitions(files)`` removes every live data file of the branch whose partition
(spec id and partition tuple) is one of the added files' partitions, with the delete files
scoped to those partitions or to the removed files, and adds ``files`` in one ``overwrite``
snapshot (summary ``replace-partitions=true``), as Iceberg Java's ``ReplacePartitions``. A file
of an unpartitioned spec replaces the whole table (Java does the same). Partitions are matched
per spec: files written under another spec are left alone.

Validation (``OverwriteFiles``): files this commit removes must not have been removed or have
gained deletes concurrently; with ``serializable`` isolation, no data file may have been added
concurrently to a replaced partition (Java ``validateNoConflictingData``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from firn.core.actions.overwrite import OverwriteFiles
from firn.core.scan import DataScan
from firn.deletes.writers import referenced_data_file_of
from firn.errors import ValidationError
from firn.spec.content import DataFile, FileContent, PartitionTuple
from firn.spec.properties import IsolationLevel
from firn.spec.snapshots import MAIN_BRANCH, Operation
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.core.handle import TableHandle

# Iceberg Java's snapshot summary flag for a dynamic partition overwrite.
REPLACE_PARTITIONS_PROPERTY = "replace-partitions"

PartitionKey = tuple[int, PartitionTuple]


class ReplacePartitionsFiles(OverwriteFiles):
    """``OverwriteFiles`` whose serializable check matches concurrent data files by partition."""

    def __init__(self, *, partitions: set[PartitionKey], whole_table: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.partitions = partitions
        self.whole_table = whole_table

    def _matcher(self, base: TableMetadata) -> Callable[[DataFile], bool]:
        if self.whole_table:
            return lambda f: True
        return lambda f: (f.spec_id, f.partition) in self.partitions


def replace_partitions_action(
    table: TableHandle,
    files: Sequence[DataFile],
    *,
    branch: str = MAIN_BRANCH,
    isolation_level: IsolationLevel | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    written_files: Sequence[str] = (),
) -> ReplacePartitionsFiles | None:
    """The action replacing ``files``' partitions (None: no files, nothing to replace)."""
    if not files:
        return None
    for f in files:
        if f.content is not FileContent.DATA:
            raise ValidationError(
                f"replace_partitions takes data files only; {f.file_path} is {f.content.name}"
            )
    md = table.metadata
    for f in files:
        if f.spec_id not in md.specs:
            raise ValidationError(
                f"{f.file_path} names partition spec {f.spec_id}, which {table.name} does not have"
            )
    whole_table = any(md.specs[f.spec_id].is_unpartitioned for f in files)
    partitions = {(f.spec_id, f.partition) for f in files}
    scan = DataScan(table, ref=branch if md.refs.get(branch) is not None else None)
    snap = scan.snapshot
    removed_data: list[DataFile] = []
    removed_deletes: dict[str, DataFile] = {}
    if snap is not None:
        for task in scan.plan_files():
            f = task.file
            if not (whole_table or (f.spec_id, f.partition) in partitions):
                continue
            removed_data.append(f)
            for d in task.delete_files:
                scoped = whole_table or (d.spec_id, d.partition) in partitions
                if scoped or referenced_data_file_of(d) == f.file_path:
                    # Keyed by path and offset: several DVs may share one Puffin file.
                    removed_deletes[f"{d.file_path}#{d.content_offset}"] = d
    return ReplacePartitionsFiles(
        partitions=partitions,
        whole_table=whole_table,
        starting_snapshot_id=snap.snapshot_id if snap is not None else None,
        added_data=list(files),
        removed_data=removed_data,
        removed_deletes=list(removed_deletes.values()),
        isolation_level=isolation_level or md.table_properties.merge_isolation_level,
        operation=Operation.OVERWRITE,
        branch=branch,
        snapshot_properties={REPLACE_PARTITIONS_PROPERTY: "true", **(snapshot_properties or {})},
        written_files=written_files,
    )


__all__ = ["REPLACE_PARTITIONS_PROPERTY", "ReplacePartitionsFiles", "replace_partitions_action"]
