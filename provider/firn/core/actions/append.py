"""Appending files: ``table.append(arrow_table)`` and ``table.add_files(paths)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from firn.core.commit import CommitContext
from firn.core.producer import SnapshotProducer
from firn.core.tree_types import PendingFiles
from firn.errors import ValidationError
from firn.spec.content import DataFile, FileContent
from firn.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from firn.spec.table_metadata import TableMetadata


class AppendFiles(SnapshotProducer):
    """Adds data files; never removes anything (operation ``append``)."""

    operation = Operation.APPEND

    def __init__(
        self,
        files: Sequence[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        stage_only: bool = False,
        written_files: Sequence[str] = (),
    ) -> None:
        super().__init__(
            branch=branch,
            snapshot_properties=snapshot_properties,
            stage_only=stage_only,
            written_files=written_files,
        )
        for f in files:
            if f.content is not FileContent.DATA:
                raise ValidationError(f"append takes data files only; {f.file_path} is {f.content.name}")
        paths = [f.file_path for f in files]
        if len(set(paths)) != len(paths):
            raise ValidationError("the same file was given twice to one append")
        self.files = list(files)

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        return PendingFiles(added_data=self.files)


__all__ = ["AppendFiles"]
