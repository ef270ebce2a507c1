"""``rewrite_position_delete_files`` (Iceberg's procedure; notes §11).

On a v2 table it compacts position delete files: per partition, files smaller than
``min-file-size-bytes`` or larger than ``max-file-size-bytes`` (defaults 0.75x and 1.8x
``write.delete.target-file-size-bytes``, 64 MB) are bin-packed into groups, kept by the same
criteria as data compaction (``min-input-files`` 5, ...; ``rewrite-all`` keeps everything).
Each group is a work unit that reads its files, drops the positions of data files that are no
longer live (dangling deletes are always filtered out, as Java does), and writes position
delete files of about the target size. Delete files that apply to no live data file at all
are removed too (:mod:`firn.maintenance.dangling_deletes`).

On a v3+ table (and V4), position delete files may no longer be written: as Java does there,
the operation converts the v2 position delete files left over from before the upgrade into
deletion vectors and does nothing else — the planning and units of
:mod:`firn.maintenance.rewrite_deletion_vectors`, without packing.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.scan import to_expression
from firn.deletes.apply import POSITION_DELETE_SCHEMA
from firn.deletes.index import partition_key
from firn.deletes.writers import referenced_data_file_of, write_position_delete_file
from firn.errors import FirnError, ValidationError
from firn.expressions import bind
from firn.io.deletion import delete_quietly
from firn.io.parquet_read import read_parquet_table
from firn.maintenance.base import (
    DELETE_REWRITE_LINEAGE,
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    PlanWork,
    Skipped,
    plan_identity,
)
from firn.maintenance.dangling_deletes import dangling_deletes
from firn.maintenance.options import RewritePositionDeleteFilesOptions
from firn.maintenance.rewrite_commit import GroupChange, commit_in_batches
from firn.maintenance.rewrite_deletion_vectors import (
    RewriteDeletionVectorsPlan,
    plan_dv_groups,
    resolve_dv_options,
)
from firn.maintenance.rewrite_planning import (
    FileSizes,
    branch_scan,
    live_delete_entries,
    order_groups,
    pack,
    partition_label,
)
from firn.maintenance.run_record import (
    GroupedPlan,
    GroupRunResult,
    check_failed_groups,
    failed_groups,
    skipped_of,
)
from firn.maintenance.runner import (
    LocalRunner,
    Runner,
    UnitContext,
    UnitFunction,
    UnitResult,
    WorkUnit,
    execute_unit,
    make_unit,
)
from firn.spec.content import DataFile, FileContent
from firn.spec.content_json import data_file_from_json, data_file_to_json
from firn.spec.deletion_scope import DeletionScope
from firn.spec.locations import DefaultLocationProvider
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS, MIN_FORMAT_VERSION_ROW_LEVEL_DELETES

UNIT_KIND = "rewrite-position-delete-files"


@dataclass(frozen=True, kw_only=True)
class PositionDeleteGroup:
    """Position delete files of one partition rewritten together; ``live_data_files`` are the
    partition's live data files (positions of any other file are dangling)."""

    group_id: int
    partition: str
    files: tuple[dict[str, Any], ...] = ()
    live_data_files: tuple[str, ...] = ()
    input_bytes: int = 0
    dangling: bool = False


@dataclass(frozen=True, kw_only=True)
class RewritePositionDeleteFilesResult(GroupRunResult):
    """Java's procedure output, plus the commits and what became of dangling deletes."""

    OPERATION: ClassVar[str] = "rewrite_position_delete_files"
    LINEAGE: ClassVar[Mapping[str, str]] = DELETE_REWRITE_LINEAGE

    rewritten_delete_files_count: int = 0
    added_delete_files_count: int = 0
    rewritten_bytes_count: int = 0
    added_bytes_count: int = 0
    converted_data_files: int = 0
    removed_dangling_count: int = 0
    snapshot_ids: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RewritePositionDeleteFilesPlan(GroupedPlan, MaintenancePlan[RewritePositionDeleteFilesResult]):
    """v2: groups of position delete files; v3+: the conversion to DVs (``dv_plan``)."""

    OPERATION: ClassVar[str] = "rewrite_position_delete_files"

    options: RewritePositionDeleteFilesOptions
    branch: str
    target_file_size_bytes: int
    groups: tuple[PositionDeleteGroup, ...] = ()
    dv_plan: RewriteDeletionVectorsPlan | None = None
    skipped: tuple[Skipped, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not self.groups and (self.dv_plan is None or self.dv_plan.is_noop)

    def work(self) -> PlanWork:
        """The position delete files it reads and rewrites (and a nested DV plan's work)."""
        nested = self.dv_plan.work().data_bytes if self.dv_plan is not None else 0
        return PlanWork(data_bytes=sum(g.input_bytes for g in self.groups) + nested)

    def describe(self) -> str:
        if self.dv_plan is not None:
            return "  v3+: convert v2 position delete files to DVs\n" + self.dv_plan.describe()
        lines = [
            f"  group {g.group_id} ({g.partition}): "
            + (
                f"remove {len(g.files)} dangling file(s)"
                if g.dangling
                else f"{len(g.files)} files, {g.input_bytes:,} bytes"
            )
            for g in self.groups[:20]
        ]
        lines += [f"  skipped {s.item}: {s.reason}" for s in self.skipped[:20]]
        return "\n".join(lines)

    def validate(self, table: MaintainedTable) -> None:
        if self.dv_plan is not None:
            self.dv_plan.validate(table)
        else:
            super().validate(table)

    def units(self, table: MaintainedTable, io_ref: str) -> list[WorkUnit]:
        if self.dv_plan is not None:
            return self.dv_plan.units(table, io_ref)
        done = self.groups_done(table)
        return [
            make_unit(
                UNIT_KIND,
                io=table.io,
                metadata_location=self.metadata_location,
                io_ref=io_ref,
                payload={
                    "group-id": g.group_id,
                    "files": list(g.files),
                    "live-data-files": list(g.live_data_files),
                    "target-file-size-bytes": self.target_file_size_bytes,
                },
            )
            for g in self.groups
            if not g.dangling and g.group_id not in done
        ]

    def unit_function(self) -> UnitFunction:
        if self.dv_plan is not None:
            return self.dv_plan.unit_function()
        return rewrite_position_delete_group

    def execute(
        self, table: MaintainedTable, runner: Runner | None = None
    ) -> RewritePositionDeleteFilesResult:
        if runner is None:
            runner = LocalRunner(self.options.max_concurrent_file_group_rewrites)
        result = super().execute(table, runner)
        check_failed_groups(self.OPERATION, self.table, result, self.options.tolerate_failed_groups)
        return result

    def commit(
        self, table: MaintainedTable, results: Sequence[UnitResult]
    ) -> RewritePositionDeleteFilesResult:
        if self.dv_plan is not None:
            r = self.dv_plan.commit(table, results)
            return RewritePositionDeleteFilesResult(
                table=self.table,
                snapshot_id=r.snapshot_id,
                rewritten_delete_files_count=r.rewritten_delete_files_count,
                added_delete_files_count=r.added_delete_files_count,
                rewritten_bytes_count=r.rewritten_bytes_count,
                added_bytes_count=r.added_bytes_count,
                converted_data_files=r.converted_data_files,
                removed_dangling_count=r.removed_dangling_count,
                snapshot_ids=r.snapshot_ids,
                skipped=r.skipped,
                groups_committed=r.groups_committed,
                groups_skipped_as_done=r.groups_skipped_as_done,
                failed_groups=r.failed_groups,
            )
        partial = self.options.partial_progress_enabled
        errors = [r for r in results if r.get("error")]
        if errors and not partial:
            paths = sorted({str(f["file-path"]) for r in results for f in r.get("added", [])})
            delete_quietly(
                table.io, DeletionScope.for_written(table.name, table.metadata), paths, "rewrite output"
            )
            raise FirnError(
                f"{self.OPERATION} on {self.table}: group {errors[0]['group-id']} failed ({errors[0]['error']}); "
                "nothing was committed"
            )
        done_before = self.groups_done(table)
        by_id = {int(r["group-id"]): r for r in results}
        failed = {int(r["group-id"]): str(r["error"]) for r in errors}
        changes = []
        for g in self.groups:
            if g.group_id in failed or g.group_id in done_before:
                continue
            added = [data_file_from_json(x) for x in by_id.get(g.group_id, {}).get("added", [])]
            changes.append(
                GroupChange(
                    group_id=g.group_id,
                    removed_deletes=[data_file_from_json(f) for f in g.files],
                    added_deletes=added,
                    written=[f.file_path for f in added],
                )
            )
        max_commits = self.options.partial_progress_max_commits if partial else 1
        dropped: dict[int, str] = {}
        done = commit_in_batches(
            table,
            changes,
            max_commits,
            operation=self.OPERATION,
            starting_snapshot_id=self.snapshot_id,
            data_sequence_number=None,
            branch=self.branch,
            failed=dropped,
            run_id=self.run_id,
        )
        snapshot_ids, committed = done.snapshot_ids, done.committed
        not_committed = failed_groups(
            failed, dropped, {g.group_id: (g.partition, len(g.files)) for g in self.groups}
        )
        dangling_ids = {g.group_id for g in self.groups if g.dangling}

        def size(files: Sequence[DataFile]) -> int:
            return sum(f.file_size_in_bytes for f in files)

        return RewritePositionDeleteFilesResult(
            table=self.table,
            snapshot_id=snapshot_ids[-1] if snapshot_ids else None,
            rewritten_delete_files_count=sum(len(c.removed_deletes) for c in committed),
            added_delete_files_count=sum(len(c.added_deletes) for c in committed),
            rewritten_bytes_count=sum(size(c.removed_deletes) for c in committed),
            added_bytes_count=sum(size(c.added_deletes) for c in committed),
            removed_dangling_count=sum(
                len(c.removed_deletes) for c in committed if c.group_id in dangling_ids
            ),
            snapshot_ids=tuple(snapshot_ids),
            groups_committed=len(committed),
            groups_skipped_as_done=len(done_before),
            failed_groups=not_committed,
            skipped=(*self.skipped, *skipped_of(not_committed)),
        )


# -- the work unit ---------------------------------------------------------------------------------------
def _write_chunks(
    io: Any,
    md: TableMetadata,
    rows: pa.Table,
    *,
    spec_id: int,
    partition: tuple[Any, ...],
    rows_per_file: int,
) -> list[DataFile]:
    spec = md.spec_by_id(spec_id)
    path = spec.partition_path(partition, md.schema()) if spec.fields else None
    provider = DefaultLocationProvider.for_table(md)
    write_id = uuid.uuid4()
    out: list[DataFile] = []
    try:
        for n, start in enumerate(range(0, rows.num_rows, rows_per_file)):
            chunk = rows.slice(start, rows_per_file)
            paths = chunk.column("file_path").combine_chunks()
            positions = chunk.column("pos").combine_chunks().to_numpy()
            # Rows are sorted by path: each path's positions are one contiguous run.
            values = paths.to_pylist()
            bounds = [0, *(i for i in range(1, len(values)) if values[i] != values[i - 1]), len(values)]
            by_file = {values[a]: positions[a:b] for a, b in itertools.pairwise(bounds)}
            location = provider.new_data_location(f"{write_id}-{n:05d}-deletes.parquet", path)
            out.append(
                write_position_delete_file(
                    io, location, by_file, md.table_properties, spec_id=spec_id, partition=partition
                )
            )
    except BaseException:
        delete_quietly(
            io, DeletionScope.for_written(md.location, md), [f.file_path for f in out], "rewrite output"
        )
        raise
    return out


def rewrite_position_files(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    """Read a group's position delete files, keep the positions of live data files, and write
    them sorted by path and position into files of about the target size."""
    files = [data_file_from_json(f) for f in payload["files"]]
    live = pa.array(sorted(set(payload.get("live-data-files", []))), pa.string())
    tables = [read_parquet_table(ctx.io, f.file_path, projected=POSITION_DELETE_SCHEMA) for f in files]
    rows = pa.concat_tables(tables)
    rows = rows.filter(pc.is_in(rows.column("file_path"), value_set=live))
    if rows.num_rows == 0:
        return {"group-id": payload["group-id"], "added": []}
    rows = rows.sort_by([("file_path", "ascending"), ("pos", "ascending")])
    # Duplicated positions (the same delete recorded twice) are written once.
    keep = np.ones(rows.num_rows, dtype=bool)
    paths = rows.column("file_path").to_numpy(zero_copy_only=False)
    pos = rows.column("pos").to_numpy()
    keep[1:] = (paths[1:] != paths[:-1]) | (pos[1:] != pos[:-1])
    rows = rows.filter(pa.array(keep))
    input_bytes = sum(f.file_size_in_bytes for f in files)
    input_rows = sum(f.record_count for f in files) or 1
    target = int(payload["target-file-size-bytes"])
    rows_per_file = max(1, int(target / max(1.0, input_bytes / input_rows)))
    added = _write_chunks(
        ctx.io,
        ctx.metadata,
        rows,
        spec_id=files[0].spec_id,
        partition=files[0].partition,
        rows_per_file=rows_per_file,
    )
    return {"group-id": payload["group-id"], "added": [data_file_to_json(f) for f in added]}


def _unit(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    try:
        return rewrite_position_files(ctx, payload)
    except (FirnError, OSError, pa.ArrowException) as e:
        return {"group-id": payload.get("group-id"), "added": [], "error": f"{type(e).__name__}: {e}"}


def rewrite_position_delete_group(unit: WorkUnit) -> UnitResult:
    """The work unit of ``rewrite_position_delete_files`` on v2 tables (module level, so a
    Spark runner can ship it by reference)."""
    return execute_unit(_unit, unit)


# -- the operation -----------------------------------------------------------------------------------------
class RewritePositionDeleteFiles(
    MaintenanceOperation[
        RewritePositionDeleteFilesPlan, RewritePositionDeleteFilesResult, RewritePositionDeleteFilesOptions
    ]
):
    """``table.maintenance.rewrite_position_delete_files(...)`` (v2+; see the module)."""

    OPERATION = "rewrite_position_delete_files"

    def __init__(self, table: MaintainedTable, options: RewritePositionDeleteFilesOptions) -> None:
        super().__init__(table, options)
        v = table.metadata.format_version
        if v < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
            raise ValidationError(f"{table.name} is format version {v}, which has no delete files")

    def plan(self) -> RewritePositionDeleteFilesPlan:
        md = self.table.metadata
        o, sizes = resolve_dv_options(self.OPERATION, self.options, md)
        snap = md.snapshot_for_ref(o.branch)
        identity = plan_identity(self.table, snap.snapshot_id if snap else None, o)
        if md.format_version >= MIN_FORMAT_VERSION_DELETION_VECTORS:
            dv_plan = None
            if snap is not None:
                planned, scanned = plan_dv_groups(self.table, md, o, sizes, pack_dvs=False)
                dv_plan = RewriteDeletionVectorsPlan(
                    **identity,
                    branch=o.branch,
                    groups=tuple(planned.groups),
                    files_scanned=scanned,
                )
            return RewritePositionDeleteFilesPlan(
                **identity, branch=o.branch, target_file_size_bytes=sizes.target, dv_plan=dv_plan
            )
        groups: list[PositionDeleteGroup] = []
        skipped: list[Skipped] = []
        if snap is not None:
            groups, skipped = self._plan_v2(md, snap.snapshot_id, o, sizes)
        return RewritePositionDeleteFilesPlan(
            **identity,
            branch=o.branch,
            target_file_size_bytes=sizes.target,
            groups=tuple(groups),
            skipped=tuple(skipped),
        )

    def _plan_v2(
        self, md: TableMetadata, snapshot_id: int, o: RewritePositionDeleteFilesOptions, sizes: FileSizes
    ) -> tuple[list[PositionDeleteGroup], list[Skipped]]:
        tasks = branch_scan(self.table, o.branch).plan_files()
        entries = live_delete_entries(self.table.io, md, md.snapshot(snapshot_id))
        dangling = {
            d.file_key: d
            for d in dangling_deletes(md, tasks, entries)
            if d.content is FileContent.POSITION_DELETES
        }
        live_by_partition: dict[tuple[Any, ...], list[str]] = {}
        for t in tasks:
            live_by_partition.setdefault(partition_key(t.file.spec_id, t.file.partition), []).append(
                t.file.file_path
            )
        wanted: set[str] | None = None
        if o.where is not None:
            where = to_expression(o.where)
            bind(md.schema(), where)
            wanted = {
                partition_label(md, t.file.spec_id, t.file.partition)
                for t in branch_scan(self.table, o.branch, where).plan_files()
            }
        by_partition: dict[tuple[Any, ...], list[DataFile]] = {}
        for e in entries:
            d = e.data_file
            if d.content is not FileContent.POSITION_DELETES or d.is_dv or d.file_key in dangling:
                continue
            if wanted is not None and partition_label(md, d.spec_id, d.partition) not in wanted:
                continue
            by_partition.setdefault(partition_key(d.spec_id, d.partition), []).append(d)
        candidates: list[tuple[tuple[Any, ...], list[DataFile]]] = []
        skipped: list[Skipped] = []
        min_inputs = o.min_input_files
        for key, files in by_partition.items():
            selected = (
                files if o.rewrite_all else [f for f in files if sizes.wrongly_sized(f.file_size_in_bytes)]
            )
            for bin_ in pack(selected, lambda f: f.file_size_in_bytes, o.max_file_group_size_bytes):
                size = sum(f.file_size_in_bytes for f in bin_)
                if (
                    o.rewrite_all
                    or (len(bin_) > 1 and (len(bin_) >= min_inputs or size > sizes.target))
                    or size > sizes.max
                ):
                    candidates.append((key, bin_))
                else:
                    label = partition_label(md, bin_[0].spec_id, bin_[0].partition)
                    skipped.append(
                        Skipped(
                            item=label,
                            reason=f"{len(bin_)} position delete file(s) below min-input-files ({min_inputs})",
                        )
                    )
        candidates = order_groups(
            candidates,
            o.rewrite_job_order,
            lambda c: sum(f.file_size_in_bytes for f in c[1]),
            lambda c: len(c[1]),
        )
        groups = [
            PositionDeleteGroup(
                group_id=i,
                partition=partition_label(md, files[0].spec_id, files[0].partition),
                files=tuple(data_file_to_json(f) for f in files),
                live_data_files=tuple(sorted(_referenced_live(files, live_by_partition.get(key, [])))),
                input_bytes=sum(f.file_size_in_bytes for f in files),
            )
            for i, (key, files) in enumerate(candidates)
        ]
        if dangling:
            groups.append(
                PositionDeleteGroup(
                    group_id=len(groups),
                    partition="(any)",
                    files=tuple(data_file_to_json(d) for d in dangling.values()),
                    dangling=True,
                )
            )
        return groups, skipped


def _referenced_live(files: Sequence[DataFile], live: Sequence[str]) -> set[str]:
    """The live data files the group's positions may refer to (all of the partition's, unless
    every file is file-scoped)."""
    targets = {referenced_data_file_of(f) for f in files}
    if None in targets:
        return set(live)
    return {p for p in live if p in targets}


__all__ = [
    "PositionDeleteGroup",
    "RewritePositionDeleteFiles",
    "RewritePositionDeleteFilesPlan",
    "RewritePositionDeleteFilesResult",
    "rewrite_position_delete_group",
]
