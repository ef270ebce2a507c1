"""``rewrite_data_files``: compaction (Iceberg's procedure of that name; notes §11).

``table.maintenance.rewrite_data_files(**options).plan()`` selects files and packs them into
file groups, per partition, exactly as Iceberg Java's bin-pack planner does (a file is a
candidate when its size is outside [min, max] or it has at least ``delete-file-threshold``
deletes or a delete ratio at or above ``delete-ratio-threshold``; a group is kept when it has
at least two files and ``min-input-files`` files or more than the target size, or more than
the maximum size, or a file with too many deletes; ``rewrite-all`` keeps everything). Each
group is a JSON work unit (:mod:`firn.maintenance.data_file_rewriter`) that writes the group's
live rows again (deletes applied, sorted with ``strategy="sort"``).

The driver commits ``replace`` snapshots (:mod:`firn.maintenance.rewrite_commit`): the
rewritten data files and their file-scoped deletes (DVs, single-file position deletes) go,
the new files come in, with the data sequence number of the snapshot the rewrite started from
while ``use-starting-sequence-number`` is on (so equality deletes committed meanwhile still
apply to the new files). Groups whose files were changed concurrently are dropped and
reported; the others commit. Without partial progress everything commits in one snapshot;
with it, in up to ``partial-progress.max-commits`` snapshots. A group that fails while
rewriting fails the run (nothing committed, outputs deleted) unless partial progress is on,
in which case it is reported and the other groups commit; more than
``partial-progress.max-failed-commits`` commits without a snapshot fail the run after the others
landed. Unlike Java, which fails a whole commit when one of its groups conflicts, a
conflicting group is dropped and the rest of the commit lands (the rewrite changes no data, so
committing the groups that still apply is safe). ``remove-dangling-deletes`` then removes, in
one more commit, the delete files no live data file needs (Java's rules; see
:mod:`firn.maintenance.dangling_deletes`).

Memory: a sort group is held in memory whole, a bin-pack group one output file at a time; the
default ``max-file-group-size-bytes`` (100 GB, Java's) suits Spark executors, so lower it for
large sort rewrites on one machine.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from firn.core.scan import to_expression
from firn.deletes.index import partition_key
from firn.errors import FirnError, StalePlan, ValidationError
from firn.expressions import bind
from firn.io.deletion import delete_quietly
from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    PlanWork,
    Skipped,
    plan_identity,
)
from firn.maintenance.dangling_deletes import dangling_deletes
from firn.maintenance.data_file_rewriter import UNIT_KIND, parse_sort_order, rewrite_file_group
from firn.maintenance.options import RewriteDataFilesOptions
from firn.maintenance.rewrite_commit import GroupChange, commit_groups, commit_in_batches
from firn.maintenance.rewrite_planning import (
    FileGroup,
    FileSizes,
    GroupFile,
    branch_scan,
    delete_ratio,
    live_delete_entries,
    order_groups,
    pack,
    partition_label,
)
from firn.maintenance.run_record import (
    FailedGroup,
    GroupedPlan,
    GroupRunResult,
    check_failed_groups,
    failed_groups,
    skipped_of,
)
from firn.maintenance.runner import LocalRunner, Runner, UnitFunction, UnitResult, WorkUnit, make_unit
from firn.spec import summary as S
from firn.spec.content_json import data_file_from_json
from firn.spec.deletion_scope import DeletionScope
from firn.spec.schema_json import sort_order_from_json, sort_order_to_json
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.sorting import SortOrder
from firn.spec.versions import MIN_FORMAT_VERSION_SEQUENCE_NUMBERS

log = logging.getLogger(__name__)

# Plans list at most this many skipped partitions by name (the rest are counted).
MAX_SKIPPED_LISTED = 100


@dataclass(frozen=True, kw_only=True)
class RewriteDataFilesResult(GroupRunResult):
    """What a compaction did (Iceberg's procedure output, plus commits and failed groups)."""

    OPERATION: ClassVar[str] = "rewrite_data_files"
    LINEAGE: ClassVar[Mapping[str, str]] = {
        "files_rewritten": "rewritten_data_files_count",
        "bytes_rewritten": "rewritten_bytes_count",
        "records_rewritten": "rewritten_records",
        "files_added": "added_data_files_count",
        "bytes_added": "added_bytes_count",
    }

    rewritten_data_files_count: int = 0
    added_data_files_count: int = 0
    rewritten_bytes_count: int = 0
    added_bytes_count: int = 0
    failed_data_files_count: int = 0
    removed_delete_files_count: int = 0
    removed_dangling_deletes_count: int = 0
    rewritten_records: int = 0
    snapshot_ids: tuple[int, ...] = ()
    # Rows that writers deleted while the compaction ran, re-stated on its new files (issue 23).
    carried_delete_rows: int = 0


@dataclass(frozen=True, kw_only=True)
class RewriteDataFilesPlan(GroupedPlan, MaintenancePlan[RewriteDataFilesResult]):
    """The file groups a compaction would rewrite (``groups``) and what it left alone."""

    OPERATION: ClassVar[str] = "rewrite_data_files"

    options: RewriteDataFilesOptions
    branch: str
    strategy: str
    output_spec_id: int
    sort_order: dict[str, Any] | None
    target_file_size_bytes: int
    data_sequence_number: int | None
    groups: tuple[FileGroup, ...]
    files_scanned: int
    skipped: tuple[Skipped, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not self.groups and not self.options.remove_dangling_deletes

    @property
    def rewritten_files(self) -> int:
        return sum(len(g.files) for g in self.groups)

    def work(self) -> PlanWork:
        """The data files it reads and rewrites."""
        return PlanWork(data_bytes=sum(g.input_bytes for g in self.groups))

    def describe(self) -> str:
        total = sum(g.input_bytes for g in self.groups)
        lines = [
            f"  {self.strategy}: {self.rewritten_files} of {self.files_scanned} data files in "
            f"{len(self.groups)} group(s), {total:,} bytes; target {self.target_file_size_bytes:,} bytes"
        ]
        lines += [f"  {g.describe()}" for g in self.groups[:20]]
        if len(self.groups) > 20:
            lines.append(f"  ... {len(self.groups) - 20} more groups")
        lines += [f"  skipped {s.item}: {s.reason}" for s in self.skipped[:20]]
        return "\n".join(lines)

    # -- validation and units ----------------------------------------------------------------------------
    def validate(self, table: MaintainedTable) -> None:
        super().validate(table)
        md = table.metadata
        head = md.snapshot_for_ref(self.branch)
        if self.snapshot_id is not None and (
            head is None or self.snapshot_id not in {s.snapshot_id for s in md.ancestors_of(head.snapshot_id)}
        ):
            raise StalePlan(
                f"rewrite_data_files plan for {self.table} was made on snapshot {self.snapshot_id}, which is "
                f"no longer an ancestor of branch {self.branch!r}; plan again"
            )
        if self.output_spec_id not in md.specs:
            raise StalePlan(f"{self.table} has no partition spec {self.output_spec_id} any more; plan again")

    def units(self, table: MaintainedTable, io_ref: str) -> list[WorkUnit]:
        done = self.groups_done(table)
        return [
            make_unit(
                UNIT_KIND,
                io=table.io,
                metadata_location=self.metadata_location,
                io_ref=io_ref,
                payload={
                    "group": g.to_json(),
                    "output-spec-id": self.output_spec_id,
                    "sort-order": self.sort_order,
                    "target-file-size-bytes": self.target_file_size_bytes,
                },
            )
            for g in self.groups
            if g.group_id not in done
        ]

    def unit_function(self) -> UnitFunction:
        return rewrite_file_group

    def execute(self, table: MaintainedTable, runner: Runner | None = None) -> RewriteDataFilesResult:
        """Run the plan; without a runner, ``max-concurrent-file-group-rewrites`` groups at a time."""
        if runner is None:
            runner = LocalRunner(self.options.max_concurrent_file_group_rewrites)
        result = super().execute(table, runner)
        check_failed_groups(self.OPERATION, self.table, result, self.options.tolerate_failed_groups)
        return result

    # -- committing -----------------------------------------------------------------------------------
    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> RewriteDataFilesResult:
        groups = {g.group_id: g for g in self.groups}
        partial = self.options.partial_progress_enabled
        done_before = self.groups_done(table)
        changes: list[GroupChange] = []
        errors: dict[int, str] = {}
        if any(r.get("error") for r in results) and not partial:
            _delete_outputs(table, results)
            first = next(r for r in results if r.get("error"))
            raise FirnError(
                f"rewrite_data_files on {self.table}: group {first['group-id']} failed ({first['error']}); "
                "nothing was committed (enable partial-progress.enabled to commit the other groups)"
            )
        for r in results:
            g = groups[int(r["group-id"])]
            if r.get("error"):
                errors[g.group_id] = str(r["error"])
            else:
                changes.append(_group_change(g, r))
        max_commits = self.options.partial_progress_max_commits if partial else 1
        dropped: dict[int, str] = {}
        done = commit_in_batches(
            table,
            changes,
            max_commits,
            operation=self.OPERATION,
            starting_snapshot_id=self.snapshot_id,
            data_sequence_number=self.data_sequence_number,
            branch=self.branch,
            failed=dropped,
            run_id=self.run_id,
        )
        snapshot_ids = done.snapshot_ids
        dangling = 0
        if self.options.remove_dangling_deletes:
            sid, dangling = _remove_dangling(table, self.branch)
            if sid is not None:
                snapshot_ids.append(sid)
        max_failed = self.options.partial_progress_max_failed_commits
        max_failed = max_commits if max_failed is None else max_failed
        if partial and done.failed_commits > max_failed:
            raise FirnError(
                f"rewrite_data_files on {self.table}: {done.failed_commits} commits failed (more than "
                f"partial-progress.max-failed-commits={max_failed}); committed snapshots: {snapshot_ids}"
            )
        shape = {g.group_id: (g.partition, len(g.files)) for g in self.groups}
        failed = failed_groups(errors, dropped, shape)
        result = self._result(done.committed, failed, snapshot_ids, dangling, done.carried_rows)
        return dataclasses.replace(result, groups_skipped_as_done=len(done_before))

    def _result(
        self,
        committed: list[GroupChange],
        failed: tuple[FailedGroup, ...],
        snapshot_ids: list[int],
        dangling: int,
        carried: int = 0,
    ) -> RewriteDataFilesResult:
        groups = {g.group_id: g for g in self.groups}
        return RewriteDataFilesResult(
            table=self.table,
            snapshot_id=snapshot_ids[-1] if snapshot_ids else None,
            rewritten_data_files_count=sum(len(c.removed_data) for c in committed),
            added_data_files_count=sum(len(c.added_data) for c in committed),
            rewritten_bytes_count=sum(f.file_size_in_bytes for c in committed for f in c.removed_data),
            added_bytes_count=sum(f.file_size_in_bytes for c in committed for f in c.added_data),
            failed_data_files_count=sum(f.files for f in failed),
            removed_delete_files_count=sum(len(c.removed_deletes) for c in committed) + dangling,
            removed_dangling_deletes_count=dangling,
            rewritten_records=sum(groups[c.group_id].input_records for c in committed),
            groups_committed=len(committed),
            snapshot_ids=tuple(snapshot_ids),
            failed_groups=failed,
            carried_delete_rows=carried,
            skipped=(*self.skipped, *skipped_of(failed)),
        )


def _group_change(g: FileGroup, result: UnitResult) -> GroupChange:
    removed_data, removed_deletes, origins, applied = [], {}, {}, {}
    for gf in g.files:
        f = gf.data_file()
        removed_data.append(f)
        deletes = gf.delete_files()
        applied[f.file_path] = deletes
        for i in gf.file_scoped:
            d = deletes[i]
            removed_deletes[(d.file_path, d.content_offset)] = d
        if gf.origin is not None:
            origins[f.file_path] = gf.origin
    added = [data_file_from_json(x) for x in result.get("added", [])]
    return GroupChange(
        group_id=g.group_id,
        removed_data=removed_data,
        removed_deletes=list(removed_deletes.values()),
        added_data=added,
        origins=origins,
        written=[f.file_path for f in added],
        applied_deletes=applied,
    )


def _delete_outputs(table: MaintainedTable, results: Sequence[UnitResult]) -> None:
    paths = [str(f["file-path"]) for r in results for f in r.get("added", [])]
    # Best effort: orphan removal reclaims what is left.
    delete_quietly(table.io, DeletionScope.for_written(table.name, table.metadata), paths, "rewrite output")


def _remove_dangling(table: MaintainedTable, branch: str) -> tuple[int | None, int]:
    """``remove-dangling-deletes``: one more ``replace`` commit removing delete files that
    apply to no live data file (Java does it in a separate commit too)."""
    table.refresh()
    md = table.metadata
    snap = md.snapshot_for_ref(branch)
    if snap is None:
        return None, 0
    tasks = branch_scan(table, branch).plan_files()
    found = dangling_deletes(md, tasks, live_delete_entries(table.io, md, snap), table.io)
    if not found:
        return None, 0
    outcome = commit_groups(
        table,
        [GroupChange(group_id=0, removed_deletes=found)],
        starting_snapshot_id=snap.snapshot_id,
        data_sequence_number=None,
        branch=branch,
        snapshot_properties={S.MAINTENANCE_OPERATION: "remove_dangling_deletes"},
    )
    return outcome.snapshot_id, len(found) if outcome.snapshot_id is not None else 0


class RewriteDataFiles(
    MaintenanceOperation[RewriteDataFilesPlan, RewriteDataFilesResult, RewriteDataFilesOptions]
):
    """``table.maintenance.rewrite_data_files(...)``: Iceberg's options as typed keywords
    (``min_input_files=2``, ``target_file_size_bytes=...``, ``partial_progress_enabled=True``)."""

    OPERATION = "rewrite_data_files"

    def _resolved(self) -> tuple[RewriteDataFilesOptions, FileSizes]:
        """The options with the table's defaults filled in, and the file sizes they give."""
        o = self.options
        md = self.table.metadata
        sizes = FileSizes.resolve(o, md.table_properties.write_target_file_size_bytes, self.OPERATION)
        strategy = o.strategy or ("sort" if o.sort_order else "binpack")
        output_spec_id = md.default_spec_id if o.output_spec_id is None else o.output_spec_id
        max_failed = o.partial_progress_max_failed_commits
        resolved = dataclasses.replace(
            o,
            strategy=strategy,
            target_file_size_bytes=sizes.target,
            min_file_size_bytes=sizes.min,
            max_file_size_bytes=sizes.max,
            output_spec_id=output_spec_id,
            partial_progress_max_failed_commits=o.partial_progress_max_commits
            if max_failed is None
            else max_failed,
        )
        if output_spec_id not in md.specs:
            raise ValidationError(
                f"{self.OPERATION}: {self.table.name} has no partition spec {output_spec_id}; "
                f"specs: {sorted(md.specs)}"
            )
        return resolved, sizes

    def _sort_order(self, o: RewriteDataFilesOptions) -> SortOrder | None:
        if o.strategy != "sort":
            if o.sort_order is not None:
                raise ValidationError(f"{self.OPERATION}: sort_order needs strategy 'sort'")
            return None
        md = self.table.metadata
        if o.sort_order is not None:
            return parse_sort_order(md.schema(), o.sort_order, existing=md.sort_orders)
        order = md.sort_order()
        if order.is_unsorted:
            raise ValidationError(
                f"{self.OPERATION}: {self.table.name} has no sort order; pass sort_order='col [ASC|DESC], ...'"
            )
        return order

    def plan(self) -> RewriteDataFilesPlan:
        o, sizes = self._resolved()
        md = self.table.metadata
        order = self._sort_order(o)
        snap = md.snapshot_for_ref(o.branch)
        if snap is None and o.branch != MAIN_BRANCH and md.refs.get(o.branch) is None:
            raise ValidationError(f"{self.OPERATION}: {self.table.name} has no branch {o.branch!r}")
        where = to_expression(o.where)
        bind(md.schema(), where)
        tasks = branch_scan(self.table, o.branch, where).plan_files() if snap else []
        groups, skipped = _plan_groups(
            md, list(tasks), o, sizes, md.default_spec_id if o.output_spec_id is None else o.output_spec_id
        )
        seq = None
        if (
            snap is not None
            and o.use_starting_sequence_number
            and md.format_version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS
        ):
            seq = snap.sequence_number
        return RewriteDataFilesPlan(
            **plan_identity(self.table, snap.snapshot_id if snap else None, o),
            branch=o.branch,
            strategy=o.strategy or "binpack",
            output_spec_id=md.default_spec_id if o.output_spec_id is None else o.output_spec_id,
            sort_order=sort_order_to_json(order) if order is not None else None,
            target_file_size_bytes=sizes.target,
            data_sequence_number=seq,
            groups=tuple(groups),
            files_scanned=len(tasks),
            skipped=tuple(skipped),
        )


def _plan_groups(
    md: Any, tasks: list[Any], o: RewriteDataFilesOptions, sizes: FileSizes, out_spec: int
) -> tuple[list[FileGroup], list[Skipped]]:
    """Java's bin-pack planning, per partition of the output spec (files of other specs are
    planned together, as Java does, since they may hold rows of several partitions)."""
    rewrite_all = o.rewrite_all
    min_inputs = o.min_input_files
    delete_threshold = o.delete_file_threshold
    ratio_threshold = o.delete_ratio_threshold

    def too_many_deletes(t: Any) -> bool:
        return len(t.delete_files) >= delete_threshold

    def too_high_ratio(t: Any) -> bool:
        return bool(t.delete_files) and delete_ratio(t) >= ratio_threshold

    by_partition: dict[tuple[Any, ...], list[Any]] = {}
    labels: dict[tuple[Any, ...], str] = {}
    for t in tasks:
        f = t.file
        key = partition_key(f.spec_id, f.partition) if f.spec_id == out_spec else ("other-specs",)
        if key not in by_partition:
            by_partition[key] = []
            labels[key] = (
                partition_label(md, f.spec_id, f.partition)
                if f.spec_id == out_spec
                else "files of other specs"
            )
        by_partition[key].append(t)

    candidates: list[tuple[str, list[Any]]] = []
    skipped: list[Skipped] = []
    hidden = 0
    for key, part_tasks in by_partition.items():
        selected = (
            part_tasks
            if rewrite_all
            else [
                t
                for t in part_tasks
                if sizes.wrongly_sized(t.file.file_size_in_bytes) or too_many_deletes(t) or too_high_ratio(t)
            ]
        )
        kept = 0
        for bin_ in pack(selected, lambda t: t.file.file_size_in_bytes, o.max_file_group_size_bytes):
            size = sum(t.file.file_size_in_bytes for t in bin_)
            keep = rewrite_all or (
                (len(bin_) > 1 and len(bin_) >= min_inputs)
                or (len(bin_) > 1 and size > sizes.target)
                or size > sizes.max
                or any(too_many_deletes(t) or too_high_ratio(t) for t in bin_)
            )
            if keep:
                candidates.append((labels[key], bin_))
                kept += 1
            elif len(skipped) < MAX_SKIPPED_LISTED:
                skipped.append(
                    Skipped(
                        item=labels[key],
                        reason=f"{len(bin_)} candidate file(s), {size:,} bytes: below min-input-files "
                        f"({min_inputs}) and the target size, no file with too many deletes",
                    )
                )
            else:
                hidden += 1
    if hidden:
        skipped.append(Skipped(item=f"{hidden} more group(s)", reason="not rewritten (same criteria)"))

    candidates = order_groups(
        candidates,
        o.rewrite_job_order,
        lambda c: sum(t.file.file_size_in_bytes for t in c[1]),
        lambda c: len(c[1]),
    )
    limit = o.max_files_to_rewrite
    groups: list[FileGroup] = []
    taken = 0
    for label, bin_ in candidates:
        if limit is not None:
            room = int(limit) - taken
            if room <= 0:
                skipped.append(Skipped(item=label, reason=f"max-files-to-rewrite ({limit}) reached"))
                continue
            bin_ = bin_[:room]
        taken += len(bin_)
        size = sum(t.file.file_size_in_bytes for t in bin_)
        groups.append(
            FileGroup(
                group_id=len(groups),
                partition=label,
                files=tuple(GroupFile.of(t) for t in bin_),
                input_bytes=size,
                input_records=sum(t.file.record_count for t in bin_),
                output_files=sizes.expected_output_files(size),
            )
        )
    return groups, skipped


def sort_order_of(plan: RewriteDataFilesPlan) -> SortOrder | None:
    """The sort order a plan rewrites with (None: bin-pack)."""
    return sort_order_from_json(plan.sort_order) if plan.sort_order is not None else None


__all__ = [
    "FailedGroup",
    "RewriteDataFiles",
    "RewriteDataFilesPlan",
    "RewriteDataFilesResult",
    "sort_order_of",
]
