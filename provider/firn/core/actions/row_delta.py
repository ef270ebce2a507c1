"""``table.row_delta()``: add data files and delete files (position, equality, DV) in one commit.

The builder collects changes and writes nothing until it commits (:meth:`RowDelta.commit`,
or the transaction it belongs to): the first commit attempt writes the new files, and one
snapshot is committed through :class:`OverwriteFiles`, whose validation runs on every attempt
(retries re-validate). Rules, as Iceberg Java's ``BaseRowDelta`` /
``MergingSnapshotProducer``:

* Version rules (notes §2): no delete files on v1, no DVs on v2, no new v2 position delete
  files on v3+.
* One DV per data file per snapshot (spec "Deletion Vectors"): new positions for a data file
  (``delete_rows_at``, or more than one added DV, or an added DV for a file that already has
  deletes) are merged with the file's live DV / file-scoped position deletes into one new DV,
  and the superseded ones are removed in the same commit (Java ``DVUtil`` commit-time merge).
* Removing a data file also removes its DVs and file-scoped position deletes (spec "Delete
  Formats": no dangling DVs).
* Validation against commits made since the starting snapshot (``validate_from_snapshot``,
  default: the branch head when the builder was made): data files referenced by the added
  position deletes / DVs must still exist, no concurrent DV for the same data file, files
  removed here must not have been removed or gained deletes concurrently, and with
  ``serializable`` isolation no concurrently added data file may match the conflict-detection
  filter (default: the whole table).

The snapshot's operation follows Java: ``append`` when only data is added, ``delete`` when only
deletes are added (or files removed), ``overwrite`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

from firn.core.actions.merge_on_read import write_position_deletes_for
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.actions.position_remap import remap_positions
from firn.core.actions.replan import MAX_REPLANS
from firn.core.commit import CommitContext, PendingUpdate, Staging
from firn.core.planning import FileScanTask
from firn.core.scan import DataScan, to_expression
from firn.core.updates import TableRequirement, TableUpdate
from firn.core.writer import write_data_files
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap, PositionsLike
from firn.deletes.writers import referenced_data_file_of, write_position_delete_files
from firn.errors import NotFound, RewrittenConcurrently, ValidationError
from firn.expressions import AlwaysTrue, BooleanExpression
from firn.io.deletion import delete_quietly
from firn.spec.content import DataFile, FileContent
from firn.spec.deletion_scope import DeletionScope
from firn.spec.properties import IsolationLevel
from firn.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS, MIN_FORMAT_VERSION_ROW_LEVEL_DELETES


def _check_delete_file(f: DataFile, version: int) -> None:
    """The spec's version rules for an added delete file (notes §2; Java
    ``MergingSnapshotProducer.validateDeleteFileForVersion``)."""
    if not f.is_delete:
        raise ValidationError(f"{f.file_path} is a data file; add it with add_data_files")
    if version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        raise ValidationError(f"format version {version} has no delete files ({f.file_path})")
    if f.is_dv:
        if version < MIN_FORMAT_VERSION_DELETION_VECTORS:
            raise ValidationError(
                f"deletion vector {f.file_path}: DVs need format version "
                f"{MIN_FORMAT_VERSION_DELETION_VECTORS}+, table is v{version}"
            )
        if f.referenced_data_file is None or f.content_offset is None or f.content_size_in_bytes is None:
            raise ValidationError(
                f"deletion vector {f.file_path} needs referenced_data_file, content_offset and "
                "content_size_in_bytes"
            )
    elif f.content is FileContent.POSITION_DELETES and version >= MIN_FORMAT_VERSION_DELETION_VECTORS:
        raise ValidationError(
            f"format version {version} does not allow new position delete files ({f.file_path}); "
            "write a deletion vector"
        )
    elif f.content is FileContent.EQUALITY_DELETES and not f.equality_ids:
        raise ValidationError(f"equality delete file {f.file_path} has no equality_ids")


class RowDelta(PendingUpdate):
    """Builder for one commit that adds data files and row-level deletes.

    Chain the ``add_*``/``remove_*``/``delete_rows_at``/``validate_*`` calls, then
    :meth:`commit` (or commit the transaction it belongs to). Nothing is written before.
    """

    def __init__(
        self,
        transaction: Staging,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(transaction)
        table = transaction.table
        self._branch = branch
        self._snapshot_properties = dict(snapshot_properties or {})
        self._rows: list[pa.Table] = []
        self._data_files: list[DataFile] = []
        self._deletes: list[DataFile] = []
        self._removed_data: list[DataFile] = []
        self._removed_deletes: list[DataFile] = []
        self._positions: dict[str, PositionBitmap] = {}
        head = self._branch_head(table.metadata)
        self._starting_snapshot_id: int | None = head.snapshot_id if head is not None else None
        self._conflict_filter: BooleanExpression | None = None
        self._isolation = IsolationLevel.SNAPSHOT
        self._action: OverwriteFiles | None = None
        self._built = False
        # The live tasks the positions were planned against, and how often they were followed.
        self._tasks: dict[str, FileScanTask] = {}
        self._remaps = 0

    def _branch_head(self, metadata: TableMetadata) -> Snapshot | None:
        if metadata.refs.get(self._branch) is not None:
            return metadata.snapshot_for_ref(self._branch)
        # A new branch starts from main's current snapshot (as SnapshotProducer does).
        return metadata.current_snapshot() if self._branch != MAIN_BRANCH else None

    # -- collecting changes ----------------------------------------------------------------------
    def add_rows(self, data: pa.Table) -> RowDelta:
        """Rows to write as new data files (partitioned by the default spec) in this commit."""
        if not isinstance(data, pa.Table | pa.RecordBatch):
            raise ValidationError(f"add_rows takes a pyarrow Table, got {type(data).__name__}")
        if data.num_rows:
            self._rows.append(pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data)
        return self

    def add_data_files(self, files: Iterable[DataFile]) -> RowDelta:
        """Data files already written (e.g. by ``firn.core.writer.write_data_files``)."""
        for f in files:
            if f.content is not FileContent.DATA:
                raise ValidationError(f"{f.file_path} is a delete file; add it with add_deletes")
            self._data_files.append(f)
        return self

    def add_deletes(self, files: Iterable[DataFile]) -> RowDelta:
        """Delete files already written: DVs (v3+), position delete files (v2), equality
        delete files (v2+) — see ``firn.deletes.writers``."""
        self._deletes.extend(files)
        return self

    def delete_rows_at(self, data_file_path: str, positions: PositionsLike | PositionBitmap) -> RowDelta:
        """Delete rows of one data file by position (0-based): a DV on v3+ (merged with the
        file's earlier deletes), a position delete file on v2. The file must be live in the
        branch or added by this row delta."""
        bitmap = (
            positions.copy()
            if isinstance(positions, PositionBitmap)
            else PositionBitmap.from_positions(positions)
        )
        prev = self._positions.get(data_file_path)
        if prev is None:
            self._positions[data_file_path] = bitmap
        else:
            prev.update(bitmap)
        return self

    def remove_data_files(self, files: Iterable[DataFile]) -> RowDelta:
        """Data files to remove (their DVs and file-scoped position deletes go with them)."""
        self._removed_data.extend(files)
        return self

    def remove_deletes(self, files: Iterable[DataFile]) -> RowDelta:
        """Delete files to remove (e.g. equality deletes that were rewritten)."""
        self._removed_deletes.extend(files)
        return self

    # -- validation options ---------------------------------------------------------------------------
    def validate_from_snapshot(self, snapshot_id: int) -> RowDelta:
        """Validate against every commit after ``snapshot_id`` (the snapshot this change was
        planned on); it must be an ancestor of the branch head at commit time."""
        if self.table.metadata.snapshot_by_id(snapshot_id) is None:
            raise NotFound(f"table {self.table.name} has no snapshot {snapshot_id}")
        self._starting_snapshot_id = snapshot_id
        return self

    def conflict_detection_filter(self, expr: BooleanExpression | str) -> RowDelta:
        """Rows this change depends on: with ``serializable`` isolation, a concurrently added
        data file that may hold matching rows fails the commit."""
        self._conflict_filter = to_expression(expr)
        return self

    def isolation_level(self, level: IsolationLevel | str) -> RowDelta:
        """``snapshot`` (default) or ``serializable`` (also rejects concurrently added data
        matching the conflict-detection filter)."""
        if isinstance(level, str):
            try:
                level = IsolationLevel(level.strip().lower())
            except ValueError:
                raise ValidationError(
                    f"isolation level must be 'snapshot' or 'serializable', got {level!r}"
                ) from None
        self._isolation = level
        return self

    # -- the action protocol ----------------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        # The files are written once, on the first attempt; retries re-apply the same change.
        if not self._built:
            self._action = self._build()
            self._built = True
        if self._action is None:
            return [], []
        try:
            return self._action.apply(base, ctx)
        except RewrittenConcurrently as e:
            if not self._positions:
                raise
            # Explicit positions name rows of the files this change was planned on; a rewrite
            # moved them. Follow them by _row_id (``position_remap``) and plan again at the
            # branch head, or refuse saying why.
            reason = self._follow_positions(base)
            if reason is not None:
                raise RewrittenConcurrently(
                    f"{e}. This row delta deletes rows by position (delete_rows_at) in "
                    f"{sorted(self._positions)[0]}, and {reason}: nothing was committed; delete by "
                    "filter (table.delete), which plans again on its own, or plan the positions again "
                    "on the refreshed table"
                ) from e
            return self.apply(base, ctx)

    def _follow_positions(self, base: TableMetadata) -> str | None:
        """Move ``delete_rows_at`` positions to where a concurrent rewrite put their rows and
        rebuild the change at the branch head; the reason when that cannot be done."""
        if self._remaps >= MAX_REPLANS:
            return f"its rows moved {self._remaps} times while it committed"
        if self.table.metadata is not base:
            return "it is part of a transaction whose earlier changes it would have to plan on"
        live = self._live_tasks(base)
        planned = self._tasks
        moved = {
            p: (planned[p].file, b) for p, b in self._positions.items() if p not in live and p in planned
        }
        candidates = [t.file for path, t in live.items() if path not in planned]
        found = remap_positions(self.table.io, base, moved, candidates) if moved else {}
        if isinstance(found, str):
            return found
        positions = {p: b for p, b in self._positions.items() if p in live}
        for path, bitmap in found.items():
            if path in positions:
                positions[path] = positions[path] | bitmap
            else:
                positions[path] = bitmap
        old = self._action
        head = self._branch_head(base)
        self._positions = positions
        self._starting_snapshot_id = head.snapshot_id if head is not None else None
        self._remaps += 1
        self._action = self._build()
        if old is not None:
            keep = set(self._action.written_files()) if self._action is not None else set()
            stale = [p for p in old.written_files() if p not in keep]
            delete_quietly(
                self.table.io, DeletionScope.for_written(self.table.name, base), stale, "superseded row delta"
            )
        return None

    def files_in_use(self) -> set[str]:
        return self._action.files_in_use() if self._action is not None else set()

    def written_files(self) -> Sequence[str]:
        return self._action.written_files() if self._action is not None else ()

    def _build(self) -> OverwriteFiles | None:
        table = self.table
        md = table.metadata
        version = md.format_version
        for f in self._deletes:
            _check_delete_file(f, version)
        if self._positions and version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
            raise ValidationError(f"format version {version} has no row-level deletes")
        needs_tasks = bool(
            self._positions
            or self._removed_data
            or any(f.content is FileContent.POSITION_DELETES for f in self._deletes)
        )
        tasks = self._live_tasks(md) if needs_tasks else {}
        self._tasks = dict(tasks)
        for f in self._removed_data:
            if f.file_path not in tasks:
                raise ValidationError(
                    f"cannot remove {f.file_path}: it is not a live data file of {table.name}"
                )

        written: list[str] = []
        try:
            new_data = [f for rows in self._rows for f in write_data_files(table.io, md, rows)]
            written += [f.file_path for f in new_data]
            added_data = [*self._data_files, *new_data]
            added_paths = {f.file_path for f in added_data}
            for f in added_data:
                # A file added here can take position deletes in the same commit: equal data
                # sequence numbers still apply (spec "Scan Planning").
                tasks.setdefault(f.file_path, FileScanTask(f, 0))
            added_deletes, replaced, more = self._position_deletes(md, tasks)
            written += more
        except BaseException:
            delete_quietly(table.io, DeletionScope.for_written(table.name, md), written, "row delta")
            raise

        removed_deletes = {f.file_key: f for f in [*self._removed_deletes, *replaced]}
        removed_paths = {f.file_path for f in self._removed_data}
        for f in self._removed_data:
            for d in tasks[f.file_path].delete_files:
                # Spec "Delete Formats": removing a data file removes its DVs (and file-scoped deletes).
                if referenced_data_file_of(d) == f.file_path:
                    removed_deletes.setdefault(d.file_key, d)
        referenced = {p for d in added_deletes if (p := referenced_data_file_of(d)) is not None}
        missing = sorted(referenced - set(tasks))
        if missing:
            delete_quietly(table.io, DeletionScope.for_written(table.name, md), written, "row delta")
            raise ValidationError(
                f"deletes refer to {missing[0]}, which is not a live data file of {table.name}"
            )
        gone = sorted(referenced & removed_paths)
        if gone:
            delete_quietly(table.io, DeletionScope.for_written(table.name, md), written, "row delta")
            raise ValidationError(f"deletes refer to {gone[0]}, which this row delta removes")
        if not (added_data or added_deletes or self._removed_data or removed_deletes):
            return None

        if added_data and not added_deletes and not self._removed_data and not removed_deletes:
            operation = Operation.APPEND
        elif not added_data:
            operation = Operation.DELETE
        else:
            operation = Operation.OVERWRITE
        conflict_filter = self._conflict_filter
        if conflict_filter is None and self._isolation is IsolationLevel.SERIALIZABLE:
            conflict_filter = AlwaysTrue()  # Java's default conflict-detection filter
        return OverwriteFiles(
            starting_snapshot_id=self._starting_snapshot_id,
            added_data=added_data,
            removed_data=self._removed_data,
            added_deletes=added_deletes,
            removed_deletes=list(removed_deletes.values()),
            conflict_filter=conflict_filter,
            isolation_level=self._isolation,
            validate_deletes_for=self._removed_data,
            operation=operation,
            branch=self._branch,
            snapshot_properties=self._snapshot_properties,
            written_files=written,
            required_data_files=sorted(referenced - added_paths),
        )

    def _live_tasks(self, md: TableMetadata) -> dict[str, FileScanTask]:
        """The branch head's data files with the deletes that apply to each, by path."""
        head = self._branch_head(md)
        if head is None:
            return {}
        scan = DataScan(self.table, snapshot_id=head.snapshot_id)
        return {t.file.file_path: t for t in scan.plan_files()}

    def _position_deletes(
        self, md: TableMetadata, tasks: dict[str, FileScanTask]
    ) -> tuple[list[DataFile], list[DataFile], list[str]]:
        """The delete files to add and the ones they replace, after writing what is needed:
        ``delete_rows_at`` positions, and DV merges that keep one DV per data file."""
        io = self.table.io
        for path in self._positions:
            if path not in tasks:
                raise ValidationError(f"delete_rows_at: {path} is not a live data file of {self.table.name}")
        others = [f for f in self._deletes if not f.is_dv]
        if md.format_version < MIN_FORMAT_VERSION_DELETION_VECTORS:
            if not self._positions:
                return others, [], []
            pairs = [(tasks[p].file, b) for p, b in self._positions.items()]
            position_files = write_position_delete_files(io, md, pairs)
            return [*others, *position_files], [], [f.file_path for f in position_files]

        dvs_by_file: dict[str, list[DataFile]] = {}
        for f in self._deletes:
            if f.is_dv:
                dvs_by_file.setdefault(f.referenced_data_file or "", []).append(f)
        kept: list[DataFile] = []
        targets: list[tuple[FileScanTask, PositionBitmap]] = []
        for path in sorted(set(dvs_by_file) | set(self._positions)):
            dvs = dvs_by_file.get(path, [])
            task = tasks.get(path)
            if task is None:
                raise ValidationError(f"deletion vector refers to {path}, which is not a live data file")
            has_earlier = any(d.content is FileContent.POSITION_DELETES for d in task.delete_files)
            if len(dvs) == 1 and path not in self._positions and not has_earlier:
                kept.append(dvs[0])  # the common case: the caller's DV is the only one
                continue
            bitmap = self._positions.get(path, PositionBitmap()).copy()
            for dv in dvs:
                # Commit-time merge (Java DVUtil): fold the added DVs into one new DV.
                loaded = load_positions(io, task.file, [dv])
                if loaded is not None:
                    bitmap |= loaded
            targets.append((task, bitmap))
        added, replaced, written = write_position_deletes_for(io, md, targets)
        return [*others, *kept, *added], replaced, written


__all__ = ["RowDelta"]
