"""Snapshot expiry (Iceberg's ``expire_snapshots`` procedure; spec "Snapshot Retention Policy").

``table.maintenance.expire_snapshots(older_than=..., retain_last=..., snapshot_ids=...,
clean_expired_metadata=..., max_concurrent_deletes=...)`` (Iceberg's ``stream_results`` is
accepted and has no effect: the deletes are work units on the runner already):

* ``.plan()`` (the dry run) evaluates the retention policy (``firn.core.retention``: table
  defaults ``history.expire.*``, overridden by ``older_than`` / ``retain_last``, and each ref's
  own ``max-ref-age-ms`` / ``min-snapshots-to-keep`` / ``max-snapshot-age-ms``) and lists the
  snapshots and refs that would go, the schemas and specs ``clean_expired_metadata`` would
  drop, and the files that would be deleted: counts and bytes by kind, with the paths (all of
  them up to ``PLAN_MAX_PATHS``; past that the plan says the list is partial and execution
  works them out again).
* ``.run()`` commits one metadata change removing them. The commit asserts the table UUID and
  every ref it read, so a writer that lands first makes it re-evaluate the policy on the new
  metadata (the commit loop's retry); it never expires more than the plan listed. Files are
  deleted only after the commit landed, as ``delete-files`` work units through the runner, and
  they are the files the committed change freed (worked out again whenever the table moved
  since planning).

``gc.enabled=false`` makes expiry metadata-only: snapshots go, no file is deleted (Iceberg Java
refuses to expire at all; the metadata change is safe, deleting files may not be, since they
may belong to another table). Metadata JSON files beyond ``write.metadata.previous-versions-max``
are deleted by the catalog's commit when ``write.metadata.delete-after-commit.enabled`` is set;
the plan lists the ones this commit's log trim drops, and any the catalog left behind are
deleted with the rest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from firn.core.commit import CommitContext
from firn.core.retention import RefRetention, evaluate_retention
from firn.core.transaction import Transaction
from firn.core.updates import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemovePartitionSpecs,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableRequirement,
    TableUpdate,
)
from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.maintenance.base import (
    DELETION_LINEAGE,
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    PlanWork,
    Skipped,
    plan_identity,
    snapshots_held_by_runs,
)
from firn.maintenance.expire_files import ExpiredFiles, expired_files
from firn.maintenance.file_deletion import delete_units, run_delete_unit, tally
from firn.maintenance.options import ExpireSnapshotsOptions
from firn.maintenance.reachability import (
    DATA_FILES,
    EQUALITY_DELETE_FILES,
    FILE_KINDS,
    MANIFEST_LISTS,
    MANIFESTS,
    METADATA_FILES,
    POSITION_DELETE_FILES,
    STATISTICS_FILES,
    FileSet,
    read_trees,
    spec_ids_in_use,
)
from firn.maintenance.runner import LocalRunner, Runner, UnitFunction, UnitResult, WorkUnit
from firn.spec.deletion_scope import DeletionScope
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata, now_ms

# Paths a plan lists in full; past this it lists counts and bytes, and execution works the
# paths out again (plans travel as JSON: XCom, a CLI dry run, a Spark job's arguments).
PLAN_MAX_PATHS = 10_000


@dataclass(frozen=True, kw_only=True)
class FileKindGroup:
    """Files of one kind: how many, their bytes (files of unknown size count 0), and the paths
    with their sizes (-1: unknown), possibly only the first ones (see ``paths_complete``)."""

    count: int
    bytes: int
    paths: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ExpireSnapshotsResult(MaintenanceResult):
    """What an expiry did. ``deleted_files`` / ``deleted_bytes`` are by kind
    (``firn.maintenance.reachability.FILE_KINDS``); ``metadata_location`` is the committed
    metadata (None: nothing to commit). ``kept_outside_location`` counts the freed files the
    confinement check kept (outside the table's own places, inside another catalog entry's,
    reached through a symlink); each is in ``skipped`` with its reason. Iceberg's output
    columns are properties."""

    OPERATION: ClassVar[str] = "expire_snapshots"
    LINEAGE: ClassVar[Mapping[str, str]] = DELETION_LINEAGE

    metadata_location: str | None = None
    expired_snapshot_ids: tuple[int, ...] = ()
    expired_refs: tuple[str, ...] = ()
    removed_spec_ids: tuple[int, ...] = ()
    removed_schema_ids: tuple[int, ...] = ()
    strategy: str = "none"
    gc_enabled: bool = True
    deleted_files: dict[str, int] = field(default_factory=dict)
    deleted_bytes: dict[str, int] = field(default_factory=dict)
    kept_outside_location: int = 0

    @property
    def deleted_files_count(self) -> int:
        return sum(self.deleted_files.values())

    @property
    def deleted_bytes_total(self) -> int:
        return sum(self.deleted_bytes.values())

    @property
    def deleted_data_files_count(self) -> int:
        return self.deleted_files.get(DATA_FILES, 0)

    @property
    def deleted_position_delete_files_count(self) -> int:
        # Puffin DV files are position deletes too (v3); Java counts them there.
        return self.deleted_files.get(POSITION_DELETE_FILES, 0) + self.deleted_files.get("puffin_files", 0)

    @property
    def deleted_equality_delete_files_count(self) -> int:
        return self.deleted_files.get(EQUALITY_DELETE_FILES, 0)

    @property
    def deleted_manifest_files_count(self) -> int:
        return self.deleted_files.get(MANIFESTS, 0) + self.deleted_files.get("leaf_manifests", 0)

    @property
    def deleted_manifest_lists_count(self) -> int:
        return self.deleted_files.get(MANIFEST_LISTS, 0) + self.deleted_files.get("root_manifests", 0)

    @property
    def deleted_statistics_files_count(self) -> int:
        return self.deleted_files.get(STATISTICS_FILES, 0) + self.deleted_files.get(
            "partition_statistics_files", 0
        )


def _groups(files: FileSet, limit: int) -> tuple[dict[str, FileKindGroup], bool]:
    out: dict[str, FileKindGroup] = {}
    budget = limit
    complete = True
    for kind in FILE_KINDS:
        group = files.kind(kind)
        if not group:
            continue
        paths = sorted(group)
        listed = paths[: max(budget, 0)]
        budget -= len(listed)
        complete = complete and len(listed) == len(paths)
        out[kind] = FileKindGroup(
            count=len(group),
            bytes=sum(max(s, 0) for s in group.values()),
            paths=tuple(listed),
            sizes=tuple(group[p] for p in listed),
        )
    return out, complete


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def _fmt_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


@dataclass(frozen=True, kw_only=True)
class ExpireSnapshotsPlan(MaintenancePlan[ExpireSnapshotsResult]):
    """What an expiry would do, from the metadata it was planned on. ``files`` holds what would
    be deleted by kind; ``paths_complete`` says whether every path is listed.
    ``kept`` lists the freed files the table's deletion scope forbids deleting, with why
    (they are not in ``files``; ``kept_outside_location`` counts them)."""

    OPERATION: ClassVar[str] = "expire_snapshots"

    options: ExpireSnapshotsOptions
    now_ms: int
    older_than_ms: int
    retain_last: int
    expire_snapshot_ids: tuple[int, ...]
    expire_refs: tuple[str, ...]
    retained_snapshots: int
    remove_spec_ids: tuple[int, ...] = ()
    remove_schema_ids: tuple[int, ...] = ()
    gc_enabled: bool = True
    strategy: str = "none"
    files: dict[str, FileKindGroup] = field(default_factory=dict)
    paths_complete: bool = True
    skipped: tuple[Skipped, ...] = ()
    kept: tuple[Skipped, ...] = ()

    @property
    def kept_outside_location(self) -> int:
        return len(self.kept)

    @property
    def is_noop(self) -> bool:
        return not (
            self.expire_snapshot_ids or self.expire_refs or self.remove_spec_ids or self.remove_schema_ids
        )

    def work(self) -> PlanWork:
        """The files it frees: metadata only, plus one delete per file."""
        return PlanWork(files_to_delete=sum(g.count for g in self.files.values()) if self.gc_enabled else 0)

    def describe(self) -> str:
        ids = ", ".join(str(i) for i in self.expire_snapshot_ids[:10])
        more = (
            f", ... ({len(self.expire_snapshot_ids) - 10} more)" if len(self.expire_snapshot_ids) > 10 else ""
        )
        lines = [
            f"  expire {len(self.expire_snapshot_ids)} snapshots, retain {self.retained_snapshots}"
            + (f": {ids}{more}" if ids else ""),
            f"  policy: older than {_when(self.older_than_ms)}, retain last {self.retain_last}, "
            "then each ref's own settings",
        ]
        if self.expire_refs:
            lines.append(f"  drop expired refs: {', '.join(self.expire_refs)}")
        if self.remove_spec_ids or self.remove_schema_ids:
            lines.append(
                f"  remove unused partition specs {list(self.remove_spec_ids)} and schemas "
                f"{list(self.remove_schema_ids)}"
            )
        if not self.gc_enabled:
            lines.append("  gc.enabled=false: metadata only, no file will be deleted")
        elif self.files:
            total = sum(g.count for g in self.files.values())
            size = sum(g.bytes for g in self.files.values())
            lines.append(f"  would delete {total} files, {_fmt_bytes(size)} ({self.strategy} cleanup):")
            for kind, g in self.files.items():
                lines.append(f"    {kind}: {g.count} ({_fmt_bytes(g.bytes)})")
            if not self.paths_complete:
                lines.append(f"  (the plan lists the first {PLAN_MAX_PATHS} paths; all are deleted)")
        if self.kept:
            lines.append(
                f"  would keep {len(self.kept)} freed files outside the table's own locations "
                "(or inside another table's): they are never deleted"
            )
            lines += [f"    {k.item}: {k.reason}" for k in self.kept[:20]]
        for s in self.skipped:
            lines.append(f"  skipped {s.item}: {s.reason}")
        return "\n".join(lines)

    def default_runner(self) -> Runner:
        n = self.options.max_concurrent_deletes
        return LocalRunner(max_workers=n) if n else LocalRunner()

    def unit_function(self) -> UnitFunction | None:
        return run_delete_unit

    # -- commit ------------------------------------------------------------------------------------
    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> ExpireSnapshotsResult:
        start, start_location = table.metadata, table.metadata_location
        action = _ExpireAction(self)
        committed = Transaction(table).add_action(action).commit()
        base = action.base
        if base is None or not (action.expired or action.dropped_refs or action.specs or action.schemas):
            object.__setattr__(self, "_pending", FileSet())
            return ExpireSnapshotsResult(table=self.table, skipped=tuple(action.skipped), strategy="none")
        skipped = list(action.skipped)
        gc = base.table_properties.gc_enabled
        pending = FileSet()
        kept: list[Skipped] = []
        strategy = "none"
        if not gc:
            skipped.append(Skipped(item="files", reason="gc.enabled=false: metadata only, no file deleted"))
        elif action.expired:
            same_state = base is start and start_location == self.metadata_location
            if same_state and self.paths_complete and action.expired == frozenset(self.expire_snapshot_ids):
                for kind, g in self.files.items():
                    if kind == METADATA_FILES:
                        continue  # the catalog's commit deletes those (below)
                    for p, size in zip(g.paths, g.sizes):
                        pending.add(kind, p, size)
                strategy = self.strategy
                kept = list(self.kept)  # taken out of ``files`` when planning
            else:
                found = expired_files(table.io, base, action.expired)
                pending, strategy = found.files, found.strategy
        deleted: dict[str, int] = {}
        leftovers = _metadata_files_dropped(table.io, base, table.metadata)
        if gc and leftovers is not None:
            gone, still_there = leftovers
            if gone:
                deleted[METADATA_FILES] = gone
            for p in still_there:
                pending.add(METADATA_FILES, p, -1)
        object.__setattr__(self, "_pending", pending)
        return ExpireSnapshotsResult(
            table=self.table,
            metadata_location=committed.metadata_location,
            expired_snapshot_ids=tuple(sorted(action.expired)),
            expired_refs=tuple(sorted(action.dropped_refs)),
            removed_spec_ids=tuple(sorted(action.specs)),
            removed_schema_ids=tuple(sorted(action.schemas)),
            strategy=strategy,
            gc_enabled=gc,
            deleted_files=deleted,
            kept_outside_location=len(kept),
            skipped=(*skipped, *kept),
        )

    def cleanup_units(
        self, table: MaintainedTable, result: ExpireSnapshotsResult, io_ref: str
    ) -> list[WorkUnit]:
        pending: FileSet = getattr(self, "_pending", FileSet())
        n = self.options.max_concurrent_deletes
        if not pending.files:
            return []
        return delete_units(
            pending.files,
            scope=table.deletion_scope(),
            io=table.io,
            metadata_location=table.metadata_location,
            io_ref=io_ref,
            max_concurrent_deletes=int(n) if n else None,
        )

    def finish(self, result: ExpireSnapshotsResult, cleanup: Sequence[UnitResult]) -> ExpireSnapshotsResult:
        t = tally(cleanup)
        deleted = dict(result.deleted_files)
        for kind, n in t.deleted.items():
            deleted[kind] = deleted.get(kind, 0) + n
        # A file kept when planning can be kept again by a unit (a metadata file the catalog's
        # commit left for the units): count each once.
        already = {s.item for s in result.skipped}
        fresh = [(p, r) for p, r in t.skipped() if p not in already]
        newly_kept = len({k.path for k in t.kept} - already)
        object.__setattr__(self, "_pending", FileSet())
        return dataclasses.replace(
            result,
            deleted_files={k: v for k, v in deleted.items() if v},
            deleted_bytes={k: v for k, v in t.deleted_bytes.items() if v},
            kept_outside_location=result.kept_outside_location + newly_kept,
            skipped=(*result.skipped, *(Skipped(item=p, reason=r) for p, r in fresh)),
        )


def _metadata_files_dropped(
    io: FileIO, before: TableMetadata, after: TableMetadata
) -> tuple[int, list[str]] | None:
    """Metadata JSON files this commit's log trim dropped (None unless
    ``write.metadata.delete-after-commit.enabled``): how many the catalog deleted, and which
    are still there."""
    if not after.table_properties.metadata_delete_after_commit:
        return None
    kept = {e.metadata_file for e in after.metadata_log}
    dropped = [e.metadata_file for e in before.metadata_log if e.metadata_file not in kept]
    still = [p for p in dropped if io.new_input(p).exists()]
    return len(dropped) - len(still), still


def _confine(files: FileSet, scope: DeletionScope) -> list[Skipped]:
    """Take the files ``scope`` forbids deleting out of ``files``; say why for each (the delete
    units check again, and also refuse symlinks, when they run)."""
    kept: list[Skipped] = []
    for kind in list(files.files):
        group = files.files[kind]
        for path in list(group):
            verdict = scope.check(path)
            if verdict is not None:
                del group[path]
                kept.append(Skipped(item=path, reason=f"kept ({verdict.kind}): {verdict.reason}"))
        if not group:
            del files.files[kind]
    return kept


# -- the retention policy, evaluated for a plan or a commit attempt ---------------------------------
@dataclass
class _Evaluation:
    retention: RefRetention
    expire: set[int]
    skipped: list[Skipped]


def _evaluate(
    md: TableMetadata,
    *,
    now: int,
    older_than: int,
    retain_last: int,
    snapshot_ids: Sequence[int],
    strict: bool,
) -> _Evaluation:
    """The snapshots the policy expires plus those named by ``snapshot_ids`` (Java adds them to
    the policy's). A named snapshot a retained ref points at is an error when planning
    (``strict``) and left alone when a commit attempt re-evaluates."""
    retention = evaluate_retention(md, now, older_than_ms=older_than, retain_last=retain_last)
    expire = set(retention.expired_snapshot_ids(md))
    skipped: list[Skipped] = []
    heads: dict[int, list[str]] = {}
    for name, ref in retention.retained_refs.items():
        heads.setdefault(ref.snapshot_id, []).append(name)
    for sid in snapshot_ids:
        if md.snapshot_by_id(sid) is None:
            skipped.append(Skipped(item=f"snapshot {sid}", reason="not in the table (already expired?)"))
        elif sid in heads:
            if strict:
                raise ValidationError(
                    f"cannot expire snapshot {sid} of {md.location}: refs {sorted(heads[sid])} point at it"
                )
            skipped.append(
                Skipped(item=f"snapshot {sid}", reason=f"refs {sorted(heads[sid])} point at it now")
            )
        else:
            expire.add(sid)
    return _Evaluation(retention, expire, skipped)


def _unused_metadata(io: FileIO, md: TableMetadata, expire: set[int]) -> tuple[set[int], set[int]]:
    """Partition specs and schemas no retained snapshot uses (the default spec and the current
    schema always stay; a retained snapshot without a schema id keeps every schema)."""
    retained = [s for s in md.snapshots if s.snapshot_id not in expire]
    specs_used = spec_ids_in_use(io, md, read_trees(io, md, retained)) | {md.default_spec_id}
    specs = {s.spec_id for s in md.partition_specs} - specs_used
    if any(s.schema_id is None for s in retained):
        return specs, set()
    schemas_used = {s.schema_id for s in retained if s.schema_id is not None} | {md.current_schema_id}
    return specs, {s.schema_id for s in md.schemas} - schemas_used


class _ExpireAction:
    """The commit action: re-evaluates the policy on each attempt's base and expires what the
    plan listed and the policy still expires there."""

    def __init__(self, plan: ExpireSnapshotsPlan) -> None:
        self.plan = plan
        self.base: TableMetadata | None = None
        self.expired: frozenset[int] = frozenset()
        self.dropped_refs: set[str] = set()
        self.specs: set[int] = set()
        self.schemas: set[int] = set()
        self.skipped: list[Skipped] = []

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        p = self.plan
        ev = _evaluate(
            base,
            now=p.now_ms,
            older_than=p.older_than_ms,
            retain_last=p.retain_last,
            snapshot_ids=tuple(p.options.snapshot_ids),
            strict=False,
        )
        planned = set(p.expire_snapshot_ids)
        self.base = base
        held = snapshots_held_by_runs() & ev.expire & planned
        self.expired = frozenset(ev.expire & planned) - held
        self.dropped_refs = set(ev.retention.expired_refs) & set(p.expire_refs)
        self.skipped = ev.skipped + [
            Skipped(
                item=f"snapshot {sid}", reason="retained on the current metadata (a ref moved or was added)"
            )
            for sid in sorted(planned - ev.expire)
            if base.snapshot_by_id(sid) is not None
        ]
        self.skipped += [
            Skipped(
                item=f"snapshot {sid}", reason="the starting snapshot of a maintenance run holding the lease"
            )
            for sid in sorted(held)
        ]
        self.specs, self.schemas = set(), set()
        if p.options.clean_expired_metadata:
            specs, schemas = _unused_metadata(ctx.io, base, set(self.expired))
            self.specs = specs & set(p.remove_spec_ids)
            self.schemas = schemas & set(p.remove_schema_ids)
        updates: list[TableUpdate] = [RemoveSnapshotRef(name) for name in sorted(self.dropped_refs)]
        if self.expired:
            updates.append(RemoveSnapshots(tuple(sorted(self.expired))))
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        for name in sorted({*base.refs, MAIN_BRANCH}):
            ref = base.ref(name)
            requirements.append(AssertRefSnapshotId(name, ref.snapshot_id if ref is not None else None))
        if self.specs:
            updates.append(RemovePartitionSpecs(tuple(sorted(self.specs))))
            requirements.append(AssertDefaultSpecId(base.default_spec_id))
        if self.schemas:
            updates.append(RemoveSchemas(tuple(sorted(self.schemas))))
            requirements.append(AssertCurrentSchemaId(base.current_schema_id))
        if not updates:
            return [], []
        return updates, requirements

    def files_in_use(self) -> set[str]:
        return set()

    def written_files(self) -> Sequence[str]:
        return ()


class ExpireSnapshots(
    MaintenanceOperation[ExpireSnapshotsPlan, ExpireSnapshotsResult, ExpireSnapshotsOptions]
):
    """``table.maintenance.expire_snapshots(...)``; see the module docstring."""

    OPERATION = "expire_snapshots"

    def plan(self) -> ExpireSnapshotsPlan:
        md = self.table.metadata
        props = md.table_properties
        now = now_ms()
        o = self.options
        older_than = o.older_than_ms if o.older_than_ms is not None else now - props.max_snapshot_age_ms
        retain_last = o.retain_last if o.retain_last is not None else props.min_snapshots_to_keep
        snapshot_ids = tuple(o.snapshot_ids)
        clean = o.clean_expired_metadata
        ev = _evaluate(
            md,
            now=now,
            older_than=older_than,
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            strict=True,
        )
        specs: set[int] = set()
        schemas: set[int] = set()
        if clean:
            specs, schemas = _unused_metadata(self.table.io, md, ev.expire)
        found = ExpiredFiles("none", FileSet())
        if props.gc_enabled and ev.expire:
            found = expired_files(self.table.io, md, frozenset(ev.expire))
        files = found.files
        if props.gc_enabled and props.metadata_delete_after_commit and ev.expire:
            # The commit appends the current metadata file to the log, trimmed to the maximum.
            log = [e.metadata_file for e in md.metadata_log] + [self.table.metadata_location]
            for p in log[: max(0, len(log) - props.metadata_previous_versions_max)]:
                files.add(METADATA_FILES, p, -1)
        kept = _confine(files, self.table.deletion_scope()) if files.files else []
        groups, complete = _groups(files, PLAN_MAX_PATHS)
        head = md.snapshot_for_ref(MAIN_BRANCH)
        # The plan records the values used; ``stream_results`` has no effect and is not kept.
        options = dataclasses.replace(o, older_than=older_than, retain_last=retain_last, stream_results=None)
        return ExpireSnapshotsPlan(
            **plan_identity(self.table, head.snapshot_id if head else None, options),
            now_ms=now,
            older_than_ms=older_than,
            retain_last=retain_last,
            expire_snapshot_ids=tuple(sorted(ev.expire)),
            expire_refs=tuple(sorted(ev.retention.expired_refs)),
            retained_snapshots=len(md.snapshots) - len(ev.expire),
            remove_spec_ids=tuple(sorted(specs)),
            remove_schema_ids=tuple(sorted(schemas)),
            gc_enabled=props.gc_enabled,
            strategy=found.strategy,
            files=groups,
            paths_complete=complete,
            skipped=tuple(ev.skipped),
            kept=tuple(kept),
        )


__all__ = [
    "PLAN_MAX_PATHS",
    "ExpireSnapshots",
    "ExpireSnapshotsPlan",
    "ExpireSnapshotsResult",
    "FileKindGroup",
]
