"""``rewrite_deletion_vectors`` (v3 / V4): one DV per data file, in few Puffin files, nothing
dangling.

The plan, from the branch head's data files and every live delete file:

* **convert**: a data file that v2 position delete files apply to (a table upgraded from v2)
  gets one DV holding the union of their positions (spec "Deletion Vectors": one DV per data
  file, holding every deleted position). File-scoped position files of it are removed with
  it; a partition-scoped one is removed once every data file it applies to has its DV (a
  separate commit group that depends on the groups writing those DVs), as Java's
  ``rewrite_position_delete_files`` does on v3 tables (notes §11).
* **pack**: DVs that sit in small Puffin files (below ``min-file-size-bytes``, 0.75x the
  ``write.delete.target-file-size-bytes`` target) are copied into Puffin files of about the
  target size when at least ``min-input-files`` such Puffin files exist (``rewrite-all``:
  every DV). Readers then open a few files instead of one per commit that deleted rows.
* **dangling**: DVs whose data file is gone, and position delete files that apply to no live
  data file (:mod:`firn.maintenance.dangling_deletes`), are removed.
* **hand-over**: data files whose deleted share is at or above ``delete-ratio-threshold``
  (0.3) are listed in the plan and the result (``high_delete_ratio``): rewriting their rows is
  ``rewrite_data_files``' job (its ratio criterion selects them), so their DVs are not packed.
  This operation only reports them.

Each group of DVs becomes one work unit writing one Puffin file. The commit is a ``replace``
snapshot validated per group (:mod:`firn.maintenance.rewrite_commit`): a concurrent DV for one
of the group's data files, or the concurrent removal of a file it replaces, drops the group.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from firn.core.planning import FileScanTask
from firn.core.scan import to_expression
from firn.deletes.apply import load_positions
from firn.deletes.bitmap import PositionBitmap
from firn.deletes.writers import referenced_data_file_of, write_deletion_vectors
from firn.errors import FirnError, StalePlan, Unsupported
from firn.expressions import bind
from firn.io.deletion import delete_quietly
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
from firn.maintenance.options import RewriteDeletionVectorsOptions, RewritePositionDeleteFilesOptions
from firn.maintenance.rewrite_commit import GroupChange, commit_in_batches
from firn.maintenance.rewrite_planning import (
    FileSizes,
    branch_scan,
    known_deleted_records,
    live_delete_entries,
    pack,
)
from firn.maintenance.run_record import (
    FailedGroup,
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
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS

UNIT_KIND = "rewrite-deletion-vectors"
# Bytes of DV per deleted position assumed when sizing conversions (notes §3a: about 2).
_BYTES_PER_POSITION = 2


@dataclass(frozen=True, kw_only=True)
class DVItem:
    """One data file's new DV: the union of ``deletes`` (its DV, or its v2 position files)."""

    data_file: dict[str, Any]
    deletes: tuple[dict[str, Any], ...]
    action: str  # "convert" or "pack"


@dataclass(frozen=True, kw_only=True)
class DVGroup:
    """What one commit group does: DVs written into one Puffin file (``items``, one unit) and
    delete files removed (``removes``) — only once the groups in ``depends_on`` committed."""

    group_id: int
    items: tuple[DVItem, ...] = ()
    removes: tuple[dict[str, Any], ...] = ()
    depends_on: tuple[int, ...] = ()
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class HighDeleteRatio:
    """A data file with a large deleted share: for ``rewrite_data_files``."""

    data_file: str
    deleted_records: int
    record_count: int

    @property
    def ratio(self) -> float:
        return self.deleted_records / self.record_count if self.record_count else 0.0


@dataclass(frozen=True, kw_only=True)
class RewriteDeletionVectorsResult(GroupRunResult):
    """What a DV rewrite did (Java's ``rewrite_position_delete_files`` output, plus details)."""

    OPERATION: ClassVar[str] = "rewrite_deletion_vectors"
    LINEAGE: ClassVar[Mapping[str, str]] = DELETE_REWRITE_LINEAGE

    rewritten_delete_files_count: int = 0
    added_delete_files_count: int = 0
    rewritten_bytes_count: int = 0
    added_bytes_count: int = 0
    converted_data_files: int = 0
    packed_dvs: int = 0
    removed_dangling_count: int = 0
    snapshot_ids: tuple[int, ...] = ()
    high_delete_ratio: tuple[HighDeleteRatio, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RewriteDeletionVectorsPlan(GroupedPlan, MaintenancePlan[RewriteDeletionVectorsResult]):
    """The DV groups of a rewrite; see the module docstring."""

    OPERATION: ClassVar[str] = "rewrite_deletion_vectors"

    # A conversion inside ``rewrite_position_delete_files`` (v3+) keeps that operation's options.
    options: RewriteDeletionVectorsOptions | RewritePositionDeleteFilesOptions
    branch: str
    groups: tuple[DVGroup, ...]
    files_scanned: int
    high_delete_ratio: tuple[HighDeleteRatio, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not self.groups

    def count(self, action: str) -> int:
        return sum(1 for g in self.groups for i in g.items if i.action == action)

    @property
    def dangling(self) -> int:
        return sum(len(g.removes) for g in self.groups if g.reason == "dangling")

    def work(self) -> PlanWork:
        """The delete files its groups read (each once) to write deletion vectors."""
        sizes = {
            str(d.get("file-path")): int(d.get("file-size-in-bytes") or 0)
            for g in self.groups
            for item in g.items
            for d in item.deletes
        }
        return PlanWork(data_bytes=sum(sizes.values()))

    def describe(self) -> str:
        lines = [
            f"  {self.files_scanned} data files: convert {self.count('convert')} to DVs, pack "
            f"{self.count('pack')} DVs, remove {self.dangling} dangling delete file(s)",
        ]
        for g in self.groups[:20]:
            lines.append(
                f"  group {g.group_id}: {len(g.items)} DV(s), removes {len(g.removes)} delete file(s)"
                + (f" after groups {list(g.depends_on)}" if g.depends_on else "")
                + (f" ({g.reason})" if g.reason else "")
            )
        if self.high_delete_ratio:
            lines.append(
                f"  {len(self.high_delete_ratio)} data file(s) at or above the delete ratio threshold: "
                "run rewrite_data_files"
            )
        lines += [f"  skipped {s.item}: {s.reason}" for s in self.skipped[:20]]
        return "\n".join(lines)

    def validate(self, table: MaintainedTable) -> None:
        super().validate(table)
        md = table.metadata
        head = md.snapshot_for_ref(self.branch)
        if self.snapshot_id is not None and (
            head is None or self.snapshot_id not in {s.snapshot_id for s in md.ancestors_of(head.snapshot_id)}
        ):
            raise StalePlan(
                f"{self.OPERATION} plan for {self.table} was made on snapshot {self.snapshot_id}, which is "
                f"no longer an ancestor of branch {self.branch!r}; plan again"
            )

    def units(self, table: MaintainedTable, io_ref: str) -> list[WorkUnit]:
        done = self.groups_done(table)
        return [
            make_unit(
                UNIT_KIND,
                io=table.io,
                metadata_location=self.metadata_location,
                io_ref=io_ref,
                payload={
                    "group-id": g.group_id,
                    "items": [
                        {"data-file": i.data_file, "deletes": list(i.deletes), "action": i.action}
                        for i in g.items
                    ],
                },
            )
            for g in self.groups
            if g.items and g.group_id not in done
        ]

    def unit_function(self) -> UnitFunction:
        return rewrite_dv_group

    def execute(self, table: MaintainedTable, runner: Runner | None = None) -> RewriteDeletionVectorsResult:
        if runner is None:
            runner = LocalRunner(self.options.max_concurrent_file_group_rewrites)
        result = super().execute(table, runner)
        check_failed_groups(self.OPERATION, self.table, result, self.options.tolerate_failed_groups)
        return result

    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> RewriteDeletionVectorsResult:
        partial = self.options.partial_progress_enabled
        errors_of = [r for r in results if r.get("error")]
        if errors_of and not partial:
            _delete_added(table, results)
            raise FirnError(
                f"{self.OPERATION} on {self.table}: group {errors_of[0]['group-id']} failed "
                f"({errors_of[0]['error']}); "
                "nothing was committed"
            )
        done_before = self.groups_done(table)
        by_id = {int(r["group-id"]): r for r in results}
        errors: dict[int, str] = {int(r["group-id"]): str(r["error"]) for r in errors_of}
        dropped: dict[int, str] = {}
        changes = [
            _change(g, by_id.get(g.group_id))
            for g in self.groups
            if g.group_id not in errors and g.group_id not in done_before
        ]
        # Groups others depend on commit first; dependents (removals) go last.
        changes.sort(key=lambda c: bool(c.depends_on))
        max_commits = self.options.partial_progress_max_commits if partial else 1
        done = commit_in_batches(
            table,
            changes,
            max_commits,
            operation=self.OPERATION,
            starting_snapshot_id=self.snapshot_id,
            data_sequence_number=None,
            branch=self.branch,
            failed=dropped,
            failed_before=ChainMap(dropped, errors),  # a group whose dependency did not land waits
            run_id=self.run_id,
        )
        failed = failed_groups(errors, dropped)
        result = self._result(done.committed, failed, done.snapshot_ids)
        return dataclasses.replace(result, groups_skipped_as_done=len(done_before))

    def _result(
        self, committed: list[GroupChange], failed: tuple[FailedGroup, ...], snapshot_ids: list[int]
    ) -> RewriteDeletionVectorsResult:
        groups = {g.group_id: g for g in self.groups}
        done = [groups[c.group_id] for c in committed]
        # Items whose deletes held no position for their file write no DV: count what was written.
        written = {d.referenced_data_file for c in committed for d in c.added_deletes}

        def count(action: str) -> int:
            return sum(
                1 for g in done for i in g.items if i.action == action and i.data_file["file-path"] in written
            )

        return RewriteDeletionVectorsResult(
            table=self.table,
            snapshot_id=snapshot_ids[-1] if snapshot_ids else None,
            rewritten_delete_files_count=sum(len(c.removed_deletes) for c in committed),
            added_delete_files_count=sum(len(c.added_deletes) for c in committed),
            rewritten_bytes_count=sum(_bytes(c.removed_deletes) for c in committed),
            added_bytes_count=sum(_bytes(c.added_deletes) for c in committed),
            converted_data_files=count("convert"),
            packed_dvs=count("pack"),
            removed_dangling_count=sum(len(g.removes) for g in done if g.reason == "dangling"),
            snapshot_ids=tuple(snapshot_ids),
            high_delete_ratio=self.high_delete_ratio,
            groups_committed=len(committed),
            failed_groups=failed,
            skipped=(*self.skipped, *skipped_of(failed)),
        )


def _bytes(files: Sequence[DataFile]) -> int:
    # DVs sharing a Puffin file count its size once.
    return sum({f.file_path: f.file_size_in_bytes for f in files}.values())


def _change(g: DVGroup, result: UnitResult | None) -> GroupChange:
    added = [data_file_from_json(x) for x in (result or {}).get("added", [])]
    return GroupChange(
        group_id=g.group_id,
        removed_deletes=[data_file_from_json(d) for d in g.removes],
        added_deletes=added,
        dv_targets={str(i.data_file["file-path"]) for i in g.items},
        written=sorted({f.file_path for f in added}),
        depends_on=set(g.depends_on),
    )


def _delete_added(table: MaintainedTable, results: Sequence[UnitResult]) -> None:
    paths = sorted({str(f["file-path"]) for r in results for f in r.get("added", [])})
    # Best effort: orphan removal reclaims what is left.
    delete_quietly(table.io, DeletionScope.for_written(table.name, table.metadata), paths, "rewrite output")


# -- the work unit ---------------------------------------------------------------------------------------
def write_dv_group(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    """Write one Puffin file with the DV of every item (the union of its deletes)."""
    md = ctx.metadata
    pairs: list[tuple[DataFile, PositionBitmap]] = []
    for item in payload.get("items", []):
        data_file = data_file_from_json(item["data-file"])
        deletes = [data_file_from_json(d) for d in item.get("deletes", [])]
        bitmap = load_positions(ctx.io, data_file, deletes)
        if bitmap is not None and bitmap:
            pairs.append((data_file, bitmap))
    if not pairs:
        return {"group-id": payload["group-id"], "added": []}
    added = write_deletion_vectors(ctx.io, md, pairs)
    return {"group-id": payload["group-id"], "added": [data_file_to_json(f) for f in added]}


def _unit(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    try:
        return write_dv_group(ctx, payload)
    except (FirnError, OSError) as e:
        return {"group-id": payload.get("group-id"), "added": [], "error": f"{type(e).__name__}: {e}"}


def rewrite_dv_group(unit: WorkUnit) -> UnitResult:
    """The work unit of ``rewrite_deletion_vectors``: write one Puffin file of DVs (module
    level, so a Spark runner can ship it by reference)."""
    return execute_unit(_unit, unit)


# -- planning ----------------------------------------------------------------------------------------------
@dataclass
class _Planned:
    groups: list[DVGroup]
    high: list[HighDeleteRatio]
    skipped: list[Skipped]


def plan_dv_groups(
    table: MaintainedTable,
    md: TableMetadata,
    o: RewriteDeletionVectorsOptions,
    sizes: FileSizes,
    *,
    pack_dvs: bool,
) -> tuple[_Planned, int]:
    """The groups of a DV rewrite of the head of branch ``o.branch`` (``pack_dvs=False``:
    conversions and dangling removals only, as ``rewrite_position_delete_files`` does on v3+)."""
    snap = md.snapshot_for_ref(o.branch)
    all_tasks: Sequence[FileScanTask] = branch_scan(table, o.branch).plan_files()
    where = to_expression(o.where)
    bind(md.schema(), where)
    if o.where is not None:
        selected = {t.file.file_path for t in branch_scan(table, o.branch, where).plan_files()}
    else:
        selected = {t.file.file_path for t in all_tasks}
    entries = live_delete_entries(table.io, md, snap)
    threshold = o.delete_ratio_threshold

    dangling = [
        d for d in dangling_deletes(md, all_tasks, entries) if d.content is FileContent.POSITION_DELETES
    ]
    dangling_keys = {d.file_key for d in dangling}
    attached: dict[str, set[str]] = {}
    v2_files: dict[str, DataFile] = {}
    for t in all_tasks:
        for d in t.delete_files:
            if d.content is FileContent.POSITION_DELETES and not d.is_dv:
                attached.setdefault(d.file_key, set()).add(t.file.file_path)
                v2_files.setdefault(d.file_key, d)
    for e in entries:  # unattached v2 files (every file they touch has a DV) are covered too
        d = e.data_file
        if d.content is FileContent.POSITION_DELETES and not d.is_dv:
            attached.setdefault(d.file_key, set())
            v2_files.setdefault(d.file_key, d)

    converts: list[tuple[DVItem, list[DataFile], int]] = []
    packs: dict[str, list[tuple[DVItem, DataFile]]] = {}
    high: list[HighDeleteRatio] = []
    for t in all_tasks:
        path = t.file.file_path
        pos = [d for d in t.delete_files if d.content is FileContent.POSITION_DELETES]
        if not pos or path not in selected:
            continue
        deleted = known_deleted_records(t)
        is_high = t.file.record_count > 0 and deleted / t.file.record_count >= threshold
        if is_high:
            high.append(
                HighDeleteRatio(data_file=path, deleted_records=deleted, record_count=t.file.record_count)
            )
        item_deletes = tuple(data_file_to_json(d) for d in pos)
        if any(not d.is_dv for d in pos):
            scoped = [d for d in pos if referenced_data_file_of(d) == path]
            estimate = sum(d.record_count for d in pos) * _BYTES_PER_POSITION
            converts.append(
                (
                    DVItem(data_file=data_file_to_json(t.file), deletes=item_deletes, action="convert"),
                    scoped,
                    estimate,
                )
            )
        elif pack_dvs and not is_high and len(pos) == 1 and pos[0].file_key not in dangling_keys:
            dv = pos[0]
            if o.rewrite_all or dv.file_size_in_bytes < sizes.min:
                item = DVItem(data_file=data_file_to_json(t.file), deletes=item_deletes, action="pack")
                packs.setdefault(dv.file_path, []).append((item, dv))

    skipped: list[Skipped] = []
    if packs and not o.rewrite_all and len(packs) < o.min_input_files:
        skipped.append(
            Skipped(
                item=f"{sum(len(v) for v in packs.values())} DV(s) in {len(packs)} small Puffin file(s)",
                reason=f"fewer than min-input-files ({o.min_input_files}) Puffin files to pack",
            )
        )
        packs = {}

    groups: list[DVGroup] = []
    taken: set[str] = set()
    converted_in: dict[str, int] = {}
    weighted: list[tuple[DVItem, list[DataFile], int]] = [
        *converts,
        *((item, [dv], dv.content_size_in_bytes or 0) for items in packs.values() for item, dv in items),
    ]
    for bin_ in pack(weighted, lambda x: x[2], sizes.target):
        gid = len(groups)
        removes = {d.file_key: d for _, rm, _ in bin_ for d in rm if d.file_key not in dangling_keys}
        taken |= set(removes)
        for item, _, _ in bin_:
            if item.action == "convert":
                converted_in[str(item.data_file["file-path"])] = gid
        groups.append(
            DVGroup(
                group_id=gid,
                items=tuple(x[0] for x in bin_),
                removes=tuple(data_file_to_json(d) for d in removes.values()),
            )
        )
    # Partition-scoped v2 files go once every data file they apply to has its DV.
    later: dict[tuple[int, ...], list[DataFile]] = {}
    for key, paths in attached.items():
        if key in taken or key in dangling_keys:
            continue
        if all(p in converted_in for p in paths):
            later.setdefault(tuple(sorted({converted_in[p] for p in paths})), []).append(v2_files[key])
    for deps, files in later.items():
        groups.append(
            DVGroup(
                group_id=len(groups),
                removes=tuple(data_file_to_json(d) for d in files),
                depends_on=deps,
                reason="position delete files superseded by DVs",
            )
        )
    if dangling:
        groups.append(
            DVGroup(
                group_id=len(groups), removes=tuple(data_file_to_json(d) for d in dangling), reason="dangling"
            )
        )
    return _Planned(groups, high, skipped), len(all_tasks)


DV = TypeVar("DV", bound=RewriteDeletionVectorsOptions)


def resolve_dv_options(op: str, options: DV, md: TableMetadata) -> tuple[DV, FileSizes]:
    """Options with their defaults (targets from ``write.delete.target-file-size-bytes``), and
    the file sizes they give."""
    sizes = FileSizes.resolve(options, md.table_properties.delete_target_file_size_bytes, op)
    resolved = dataclasses.replace(
        options,
        target_file_size_bytes=sizes.target,
        min_file_size_bytes=sizes.min,
        max_file_size_bytes=sizes.max,
    )
    return resolved, sizes


class RewriteDeletionVectors(
    MaintenanceOperation[
        RewriteDeletionVectorsPlan, RewriteDeletionVectorsResult, RewriteDeletionVectorsOptions
    ]
):
    """``table.maintenance.rewrite_deletion_vectors(...)`` (v3 and V4 tables)."""

    OPERATION = "rewrite_deletion_vectors"

    def __init__(self, table: MaintainedTable, options: RewriteDeletionVectorsOptions) -> None:
        super().__init__(table, options)
        v = table.metadata.format_version
        if v < MIN_FORMAT_VERSION_DELETION_VECTORS:
            raise Unsupported(
                f"{table.name} is format version {v}; deletion vectors need v{MIN_FORMAT_VERSION_DELETION_VECTORS}+ "
                "(use rewrite_position_delete_files, or upgrade the table)"
            )

    def plan(self) -> RewriteDeletionVectorsPlan:
        md = self.table.metadata
        o, sizes = resolve_dv_options(self.OPERATION, self.options, md)
        snap = md.snapshot_for_ref(o.branch)
        if snap is None:
            planned, scanned = _Planned([], [], []), 0
        else:
            planned, scanned = plan_dv_groups(self.table, md, o, sizes, pack_dvs=True)
        return RewriteDeletionVectorsPlan(
            **plan_identity(self.table, snap.snapshot_id if snap else None, o),
            branch=o.branch,
            groups=tuple(planned.groups),
            files_scanned=scanned,
            high_delete_ratio=tuple(planned.high),
            skipped=tuple(planned.skipped),
        )


__all__ = [
    "DVGroup",
    "DVItem",
    "HighDeleteRatio",
    "RewriteDeletionVectors",
    "RewriteDeletionVectorsPlan",
    "RewriteDeletionVectorsResult",
    "plan_dv_groups",
    "resolve_dv_options",
    "rewrite_dv_group",
]
