"""Committing rewritten file groups: ``replace`` snapshots validated group by group.

A rewrite (compaction, DV rewrite) changes no table data, so it must never lose or resurrect a
row that a concurrent commit wrote or deleted. :class:`RewriteFiles` validates every group
against the snapshots committed since the rewrite was planned (Java's ``BaseRewriteFiles``
validation, notes §11) and, unlike Java, drops only the groups that conflict:

* a file the group removes was removed concurrently (or a DV / delete file it replaces);
* a data file the group rewrites gained deletes concurrently: a DV or position delete for it
  (its rows moved, so those positions would no longer apply), or an equality delete that may
  apply to it unless the outputs keep the starting data sequence number
  (``use-starting-sequence-number``: newer equality deletes still apply to them, so Java
  ignores them here too);
* a data file the group adds a DV for gained another DV concurrently (one DV per data file),
  or was removed concurrently (the DV would dangle).

A dropped group is reported with its reason and its output files are deleted once the commit
lands; the remaining groups commit. When no group remains, nothing is committed. Retries of
the commit loop (another writer won the race) re-run this validation on the refreshed table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from firn.core.commit import CommitContext
from firn.core.handle import TableHandle
from firn.core.producer import SnapshotProducer
from firn.core.transaction import Transaction
from firn.core.tree_types import PendingFiles, SnapshotChanges
from firn.core.trees import snapshot_changes, snapshots_between
from firn.core.updates import TableRequirement, TableUpdate
from firn.deletes.index import partition_key
from firn.deletes.writers import referenced_data_file_of
from firn.errors import CommitStateUnknown, FirnError, ValidationConflict
from firn.io.deletion import delete_quietly
from firn.maintenance.rewrite_planning import commit_batches
from firn.spec import summary as S
from firn.spec.content import DataFile, FileContent
from firn.spec.deletion_scope import DeletionScope
from firn.spec.field_ids import DELETE_FILE_PATH_ID
from firn.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from firn.spec.table_metadata import TableMetadata

log = logging.getLogger(__name__)


@dataclass
class GroupChange:
    """What one file group replaces: files removed and added, and what to validate."""

    group_id: int
    removed_data: list[DataFile] = field(default_factory=list)
    removed_deletes: list[DataFile] = field(default_factory=list)
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    # V4: where removed data files live (manifest, ordinal), from planning.
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Data files this group adds DVs for: no concurrent DV for them, and they must still exist.
    dv_targets: set[str] = field(default_factory=set)
    # Files the group wrote (deleted when the group is dropped or the commit fails).
    written: list[str] = field(default_factory=list)
    # Groups that must commit for this one to be valid (e.g. removing a partition-scoped
    # position delete file needs the DVs that took over its positions).
    depends_on: set[int] = field(default_factory=set)

    @property
    def is_empty(self) -> bool:
        return not (self.removed_data or self.removed_deletes or self.added_data or self.added_deletes)


def _bounds_cover(d: DataFile, path: str) -> bool:
    """Whether a partition-scoped position delete file may hold positions for ``path`` (its
    ``file_path`` bounds; no bounds: it may)."""
    lo = (d.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (d.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    raw = path.encode("utf-8")
    # Bounds may be truncated prefixes: compare on the bound's length.
    if lo is not None and raw[: len(lo)] < lo:
        return False
    return not (hi is not None and raw[: len(hi)] > hi)


class RewriteFiles(SnapshotProducer):
    """A ``replace`` snapshot of file groups (see the module docstring)."""

    operation = Operation.REPLACE

    def __init__(
        self,
        groups: Sequence[GroupChange],
        *,
        starting_snapshot_id: int | None,
        data_sequence_number: int | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        failed_before: Mapping[int, str] | None = None,
    ) -> None:
        written = [p for g in groups for p in g.written]
        super().__init__(branch=branch, snapshot_properties=snapshot_properties, written_files=written)
        self.groups = list(groups)
        self.starting_snapshot_id = starting_snapshot_id
        self.data_sequence_number = data_sequence_number
        # Groups that failed earlier (another batch): their dependents cannot commit.
        self._failed_before = dict(failed_before or {})
        self.failed: dict[int, str] = {}
        self._changes_cache: dict[int, SnapshotChanges] = {}

    @property
    def live_groups(self) -> list[GroupChange]:
        return [g for g in self.groups if g.group_id not in self.failed]

    # -- validation --------------------------------------------------------------------------------
    def _concurrent(
        self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext
    ) -> list[SnapshotChanges]:
        if parent is None or parent.snapshot_id == self.starting_snapshot_id:
            return []
        try:
            snaps = snapshots_between(base, self.starting_snapshot_id, parent.snapshot_id)
        except FirnError:
            raise ValidationConflict(
                f"cannot validate the rewrite: branch {self.branch!r} no longer descends from snapshot "
                f"{self.starting_snapshot_id} (rolled back or replaced concurrently); nothing was committed"
            ) from None
        out = []
        for s in snaps:
            ch = self._changes_cache.get(s.snapshot_id)
            if ch is None:
                ch = self._changes_cache[s.snapshot_id] = snapshot_changes(ctx.io, base, s)
            out.append(ch)
        return out

    def _conflict(self, g: GroupChange, ch: SnapshotChanges, base: TableMetadata) -> str | None:
        removed = {f.file_key for f in (*ch.removed_data_files, *ch.removed_delete_files)}
        mine = {f.file_key for f in (*g.removed_data, *g.removed_deletes)}
        gone = mine & removed
        if gone:
            return f"snapshot {ch.snapshot_id} ({ch.operation}) removed {sorted(gone)[0]} concurrently"
        if g.dv_targets:
            dropped = g.dv_targets & {f.file_path for f in ch.removed_data_files}
            if dropped:
                return f"snapshot {ch.snapshot_id} removed data file {sorted(dropped)[0]} that a new DV refers to"
        rewritten = {f.file_path: f for f in g.removed_data}
        ignore_equality = self.data_sequence_number is not None
        for d in ch.added_delete_files:
            if d.is_dv and d.referenced_data_file in g.dv_targets:
                return f"snapshot {ch.snapshot_id} added another DV for {d.referenced_data_file} concurrently"
            if not rewritten:
                continue
            hit = self._applies_to(d, rewritten, base, ignore_equality)
            if hit is not None:
                return (
                    f"snapshot {ch.snapshot_id} ({ch.operation}) added deletes ({d.file_path}) for "
                    f"{hit}, which this rewrite replaces"
                )
        return None

    @staticmethod
    def _applies_to(
        d: DataFile, rewritten: Mapping[str, DataFile], base: TableMetadata, ignore_equality: bool
    ) -> str | None:
        if d.content is FileContent.EQUALITY_DELETES:
            if ignore_equality:
                return None
            spec = base.specs.get(d.spec_id)
            is_global = spec is None or spec.is_unpartitioned
            key = partition_key(d.spec_id, d.partition)
            for path, f in rewritten.items():
                if is_global or partition_key(f.spec_id, f.partition) == key:
                    return path
            return None
        target = referenced_data_file_of(d)
        if target is not None:
            return target if target in rewritten else None
        key = partition_key(d.spec_id, d.partition)
        for path, f in rewritten.items():
            if partition_key(f.spec_id, f.partition) == key and _bounds_cover(d, path):
                return path
        return None

    def drop_conflicting(self, base: TableMetadata, ctx: CommitContext) -> None:
        parent = base.snapshot_for_ref(self.branch)
        for ch in self._concurrent(base, parent, ctx):
            for g in self.live_groups:
                reason = self._conflict(g, ch, base)
                if reason is not None:
                    log.info("rewrite group %d dropped: %s", g.group_id, reason)
                    self.failed[g.group_id] = reason
        changed = True
        while changed:
            changed = False
            gone = {**self._failed_before, **self.failed}
            for g in self.live_groups:
                missing = sorted(g.depends_on & set(gone))
                if missing:
                    self.failed[g.group_id] = f"needs group {missing[0]}, which was not committed"
                    changed = True

    # -- the action protocol -------------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        before = len(self.failed)
        self.drop_conflicting(base, ctx)
        if len(self.failed) != before:
            # Tree writers reuse the manifests they wrote for this commit's new files across
            # attempts; with fewer groups those are stale, so start a fresh writer.
            self._tree = None
        if not any(not g.is_empty for g in self.live_groups):
            return [], []
        return super().apply(base, ctx)

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        out = PendingFiles(data_sequence_number=self.data_sequence_number)
        for g in self.live_groups:
            out.removed_data.extend(g.removed_data)
            out.removed_deletes.extend(g.removed_deletes)
            out.added_data.extend(g.added_data)
            out.added_deletes.extend(g.added_deletes)
            out.origins.update(g.origins)
        return out


@dataclass
class BatchOutcome:
    """What committing a batch of groups did."""

    snapshot_id: int | None
    committed: list[GroupChange]
    failed: dict[int, str]


def commit_groups(
    table: TableHandle,
    groups: Sequence[GroupChange],
    *,
    starting_snapshot_id: int | None,
    data_sequence_number: int | None,
    branch: str,
    snapshot_properties: Mapping[str, str] | None = None,
    failed_before: Mapping[int, str] | None = None,
) -> BatchOutcome:
    """Commit ``groups`` in one ``replace`` snapshot, dropping the ones that conflict (their
    outputs are deleted). A conflict that concerns the whole commit (the branch was rolled
    back) fails every group; its outputs are deleted by the commit loop."""
    action = RewriteFiles(
        groups,
        starting_snapshot_id=starting_snapshot_id,
        data_sequence_number=data_sequence_number,
        branch=branch,
        snapshot_properties=snapshot_properties,
        failed_before=failed_before,
    )
    try:
        result = Transaction(table).add_action(action).commit()
    except CommitStateUnknown:
        raise
    except ValidationConflict as e:
        return BatchOutcome(None, [], {g.group_id: str(e) for g in groups})
    dropped = [g for g in groups if g.group_id in action.failed]
    orphans = [p for g in dropped for p in g.written]
    # Best effort: orphan removal reclaims what is left.
    delete_quietly(
        table.io,
        DeletionScope.for_written(table.name, table.metadata),
        orphans,
        "dropped rewrite group output",
    )
    snapshot = result.snapshot
    return BatchOutcome(
        snapshot.snapshot_id if snapshot is not None else None,
        action.live_groups if snapshot is not None else [],
        dict(action.failed),
    )


@dataclass
class BatchedCommits:
    """What :func:`commit_in_batches` committed: the snapshots, the groups that landed and how
    many commits failed as a whole."""

    snapshot_ids: list[int] = field(default_factory=list)
    committed: list[GroupChange] = field(default_factory=list)
    failed_commits: int = 0


def commit_in_batches(
    table: TableHandle,
    changes: Sequence[GroupChange],
    max_commits: int,
    *,
    operation: str,
    starting_snapshot_id: int | None,
    data_sequence_number: int | None,
    branch: str,
    failed: dict[int, str],
    failed_before: Mapping[int, str] | None = None,
) -> BatchedCommits:
    """Commit ``changes`` in at most ``max_commits`` ``replace`` snapshots (partial progress),
    each with :func:`commit_groups`; the groups a commit drops are added to ``failed``."""
    out = BatchedCommits()
    for batch in commit_batches(changes, max_commits):
        outcome = commit_groups(
            table,
            batch,
            starting_snapshot_id=starting_snapshot_id,
            data_sequence_number=data_sequence_number,
            branch=branch,
            snapshot_properties={S.MAINTENANCE_OPERATION: operation},
            failed_before=failed_before,
        )
        if outcome.snapshot_id is not None:
            out.snapshot_ids.append(outcome.snapshot_id)
        else:
            out.failed_commits += 1
        out.committed += outcome.committed
        failed.update(outcome.failed)
    return out


__all__ = [
    "BatchedCommits",
    "commit_in_batches",
    "BatchOutcome",
    "GroupChange",
    "RewriteFiles",
    "commit_groups",
]
