"""Committing rewritten file groups: ``replace`` snapshots validated group by group.

A rewrite (compaction, DV rewrite) changes no table data, so it must never lose or resurrect a
row that a concurrent commit wrote or deleted. :class:`RewriteFiles` validates every group
against the snapshots committed since the rewrite was planned (Java's ``BaseRewriteFiles``
validation, notes §11). Unlike Java, which fails the whole rewrite, it keeps the work:

* a writer's merge-on-read delete (an ``overwrite``/``delete`` snapshot) of rows a compaction
  group rewrote — a DV or position delete for one of its input files — is **carried over**:
  the rows are followed to the group's new files and the same deletes are written against
  them in this ``replace`` snapshot (:mod:`firn.maintenance.delete_carryover`); the writer's
  DV that replaced one the group removes is removed instead;
* equality deletes committed meanwhile keep applying to the new files when they keep the
  starting data sequence number (``use-starting-sequence-number``, as Java);
* a DV rewrite leaves out the data files a writer gave a new DV meanwhile (that DV already
  holds every position) or removed, and commits the rest of the group;
* position deletes that a concurrent ``replace`` added (a delete-file rewrite) are the ones
  already applied, so they are no conflict (Java validates overwrite and delete only).

A group is dropped, with its reason, only when that is impossible: a file it removes was
removed concurrently (e.g. a writer's copy-on-write delete), an equality delete landed and
the outputs take a new sequence number, the rows a writer deleted cannot be read to follow
them, or a DV target gained another DV that cannot be left out. Its output files are
deleted once the commit lands; the remaining groups commit. When no group remains, nothing is
committed. Retries of the commit loop (another writer won the race) re-run this validation on
the refreshed table.
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
from firn.maintenance.delete_carryover import CarriedDeletes, carry_over
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
    # Compaction: the delete files applied to each rewritten data file when it was read.
    applied_deletes: dict[str, list[DataFile]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.removed_data or self.removed_deletes or self.added_data or self.added_deletes)


@dataclass
class _Carry:
    """What one group carries over from the concurrent commits of one attempt."""

    # Rewritten data file -> the concurrent position deletes / DVs for it (by file key).
    deletes: dict[str, dict[str, DataFile]] = field(default_factory=dict)
    # The group's removed delete files that a concurrent commit already replaced.
    unremove: set[str] = field(default_factory=set)
    # Concurrent file-scoped deletes of rewritten files, removed along with them.
    also_remove: set[str] = field(default_factory=set)
    remove_files: dict[str, DataFile] = field(default_factory=dict)
    result: CarriedDeletes | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.deletes or self.unremove or self.also_remove)

    @property
    def key(self) -> tuple[tuple[str, ...], ...]:
        return tuple(sorted((p, *sorted(ds)) for p, ds in self.deletes.items()))


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
        # Concurrent deletes carried over to each group's outputs (see ``delete_carryover``):
        # recomputed on every attempt, reused while the deletes to carry stay the same.
        self.carried: dict[int, _Carry] = {}
        # DV rewrites: data files left out of a group because a writer gave them a new DV.
        self.released: dict[int, int] = {}
        self.superseded: list[str] = []
        self._carry_written: list[str] = []

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
        except FirnError as e:
            raise ValidationConflict(
                f"cannot validate the rewrite on branch {self.branch!r}: {e}; nothing was committed"
            ) from None
        out = []
        for s in snaps:
            ch = self._changes_cache.get(s.snapshot_id)
            if ch is None:
                ch = self._changes_cache[s.snapshot_id] = snapshot_changes(ctx.io, base, s)
            out.append(ch)
        return out

    def _conflict(
        self, g: GroupChange, ch: SnapshotChanges, base: TableMetadata, carry: _Carry | None = None
    ) -> str | None:
        """Why ``g`` cannot commit after ``ch``, or None. With ``carry``, deletes that ``ch``
        added for rows ``g`` rewrote are recorded there to be carried over instead."""
        rewritten = {f.file_path: f for f in g.removed_data}
        removed = {f.file_key for f in (*ch.removed_data_files, *ch.removed_delete_files)}
        if carry is not None:
            carry.also_remove -= removed  # superseded again (e.g. a DV merged into a newer one)
        mine = {f.file_key: f for f in (*g.removed_data, *g.removed_deletes)}
        gone = set(mine) & removed
        if carry is not None:
            # A writer's merge-on-read delete (or a DV rewrite) replaced a DV or file-scoped
            # delete of a file this group rewrites with a new one holding the old positions
            # too: the group no longer removes the old one, but the new one (below), carrying
            # over what it adds.
            swappable = {k for k in gone if k in mine and referenced_data_file_of(mine[k]) in rewritten}
            carry.unremove |= swappable
            gone -= swappable
        if gone:
            return f"snapshot {ch.snapshot_id} ({ch.operation}) removed {sorted(gone)[0]} concurrently"
        if g.dv_targets:
            dropped = g.dv_targets & {f.file_path for f in ch.removed_data_files}
            if dropped:
                return f"snapshot {ch.snapshot_id} removed data file {sorted(dropped)[0]} that a new DV refers to"
        ignore_equality = self.data_sequence_number is not None
        for d in ch.added_delete_files:
            if d.is_dv and d.referenced_data_file in g.dv_targets:
                return f"snapshot {ch.snapshot_id} added another DV for {d.referenced_data_file} concurrently"
            if not rewritten:
                continue
            hits = self._applies_to(d, rewritten, base, ignore_equality)
            if not hits:
                continue
            if carry is not None and d.content is FileContent.POSITION_DELETES:
                target = referenced_data_file_of(d)
                if target is not None:
                    carry.also_remove.add(d.file_key)  # scoped to a file this group removes
                    carry.remove_files[d.file_key] = d
                if ch.operation != Operation.REPLACE.value:
                    # A replace only rewrote deletes the group already applied (Java
                    # validates overwrite and delete snapshots only); others are carried.
                    for path in hits:
                        carry.deletes.setdefault(path, {})[d.file_key] = d
                continue
            if ch.operation == Operation.REPLACE.value and d.content is FileContent.POSITION_DELETES:
                continue
            return (
                f"snapshot {ch.snapshot_id} ({ch.operation}) added deletes ({d.file_path}) for "
                f"{hits[0]}, which this rewrite replaces"
            )
        return None

    @staticmethod
    def _applies_to(
        d: DataFile, rewritten: Mapping[str, DataFile], base: TableMetadata, ignore_equality: bool
    ) -> list[str]:
        """The rewritten data files ``d`` may apply to."""
        if d.content is FileContent.EQUALITY_DELETES:
            if ignore_equality:
                return []
            spec = base.specs.get(d.spec_id)
            is_global = spec is None or spec.is_unpartitioned
            key = partition_key(d.spec_id, d.partition)
            return [
                path
                for path, f in rewritten.items()
                if is_global or partition_key(f.spec_id, f.partition) == key
            ]
        target = referenced_data_file_of(d)
        if target is not None:
            return [target] if target in rewritten else []
        key = partition_key(d.spec_id, d.partition)
        return [
            path
            for path, f in rewritten.items()
            if partition_key(f.spec_id, f.partition) == key and _bounds_cover(d, path)
        ]

    def drop_conflicting(self, base: TableMetadata, ctx: CommitContext) -> None:
        parent = base.snapshot_for_ref(self.branch)
        carries = {g.group_id: _Carry() for g in self.live_groups if g.removed_data and g.added_data}
        for ch in self._concurrent(base, parent, ctx):
            for g in self.live_groups:
                if g.dv_targets and not g.removed_data:
                    self._release_targets(g, ch)
                reason = self._conflict(g, ch, base, carries.get(g.group_id))
                if reason is not None:
                    log.info("rewrite group %d dropped: %s", g.group_id, reason)
                    self.failed[g.group_id] = reason
        for g in self.live_groups:
            carry = carries.get(g.group_id)
            if carry is None or carry.is_empty:
                self.carried.pop(g.group_id, None)
                continue
            reason = self._carry_over(g, carry, base, ctx)
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

    def _release_targets(self, g: GroupChange, ch: SnapshotChanges) -> None:
        """A DV rewrite leaves out the data files a concurrent commit already gave a new DV
        (a writer's merge-on-read delete merges every earlier position into it) or removed:
        its DV for them is obsolete, and the rest of the group still applies. Only for data
        files whose replaced deletes are all scoped to them (a partition-scoped position file
        still conflicts)."""
        removed = {f.file_key for f in ch.removed_delete_files}
        touched: set[str | None] = {d.referenced_data_file for d in ch.added_delete_files if d.is_dv}
        touched |= {f.file_path for f in ch.removed_data_files}
        touched |= {referenced_data_file_of(d) for d in g.removed_deletes if d.file_key in removed}
        release = {t for t in g.dv_targets if t in touched}
        if not release:
            return
        shared = [d for d in g.removed_deletes if referenced_data_file_of(d) not in release]
        if any(d.file_key in removed for d in shared):
            return  # a partition-scoped file this group replaces changed: the group conflicts
        g.removed_deletes = shared
        g.added_deletes = [d for d in g.added_deletes if d.referenced_data_file not in release]
        g.dv_targets -= release
        self.released[g.group_id] = self.released.get(g.group_id, 0) + len(release)
        if not g.added_deletes:
            # Nothing of the group's output is referenced any more.
            self.superseded.extend(g.written)
            g.written = []

    def _carry_over(
        self, g: GroupChange, carry: _Carry, base: TableMetadata, ctx: CommitContext
    ) -> str | None:
        """Write the deletes ``carry`` found for ``g``'s rewritten rows against its outputs
        (reused from an earlier attempt when they are the same); the reason when impossible."""
        previous = self.carried.get(g.group_id)
        if previous is not None and previous.key == carry.key:
            carry.result = previous.result
        elif carry.deletes:
            if previous is not None and previous.result is not None:
                # Deletes computed for an earlier attempt's view of the table: superseded.
                stale = set(previous.result.written)
                delete_quietly(
                    ctx.io,
                    DeletionScope.for_written(base.location, base),
                    sorted(stale),
                    "superseded carry-over",
                )
                self._carry_written = [p for p in self._carry_written if p not in stale]
            result = carry_over(
                ctx.io,
                base,
                {p: list(ds.values()) for p, ds in carry.deletes.items()},
                {f.file_path: f for f in g.removed_data},
                g.added_data,
                g.applied_deletes,
            )
            if isinstance(result, str):
                return f"{result}; concurrent deletes could not be carried over"
            carry.result = result
            self._carry_written.extend(result.written)
        self.carried[g.group_id] = carry
        return None

    # -- the action protocol -------------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        before = len(self.failed)
        carried_before = {gid: c.key for gid, c in self.carried.items()}
        released_before = dict(self.released)
        self.drop_conflicting(base, ctx)
        if (
            len(self.failed) != before
            or carried_before != {gid: c.key for gid, c in self.carried.items()}
            or released_before != self.released
        ):
            # Tree writers reuse the manifests they wrote for this commit's new files across
            # attempts; with fewer groups those are stale, so start a fresh writer.
            self._tree = None
        if not any(not g.is_empty for g in self.live_groups):
            return [], []
        if S.MAINTENANCE_RUN_ID in self.snapshot_properties:
            # Which groups this commit lands, for a re-run of the same plan to skip.
            self.snapshot_properties[S.MAINTENANCE_RUN_GROUPS] = ",".join(
                str(g.group_id) for g in self.live_groups
            )
        return super().apply(base, ctx)

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        out = PendingFiles(data_sequence_number=self.data_sequence_number)
        for g in self.live_groups:
            carry = self.carried.get(g.group_id)
            out.removed_data.extend(g.removed_data)
            out.added_data.extend(g.added_data)
            out.added_deletes.extend(g.added_deletes)
            out.origins.update(g.origins)
            if carry is None:
                out.removed_deletes.extend(g.removed_deletes)
                continue
            out.removed_deletes.extend(d for d in g.removed_deletes if d.file_key not in carry.unremove)
            out.removed_deletes.extend(carry.remove_files[k] for k in sorted(carry.also_remove))
            if carry.result is not None:
                out.added_deletes.extend(carry.result.added_deletes)
        return out

    def written_files(self) -> Sequence[str]:
        return (*super().written_files(), *self._carry_written)

    @property
    def carried_rows(self) -> int:
        """Rows deleted concurrently that the committed groups carried over to their outputs."""
        return sum(
            c.result.rows
            for gid, c in self.carried.items()
            if c.result is not None and gid not in self.failed
        )


@dataclass
class BatchOutcome:
    """What committing a batch of groups did."""

    snapshot_id: int | None
    committed: list[GroupChange]
    failed: dict[int, str]
    # Rows deleted concurrently that the committed groups carried over to their new files.
    carried_rows: int = 0


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
    orphans = [p for g in dropped for p in g.written] + action.superseded
    for g in dropped:  # deletes written to carry over to a group that then did not commit
        carry = action.carried.get(g.group_id)
        if carry is not None and carry.result is not None:
            orphans += carry.result.written
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
        action.carried_rows if snapshot is not None else 0,
    )


@dataclass
class BatchedCommits:
    """What :func:`commit_in_batches` committed: the snapshots, the groups that landed and how
    many commits failed as a whole."""

    snapshot_ids: list[int] = field(default_factory=list)
    committed: list[GroupChange] = field(default_factory=list)
    failed_commits: int = 0
    carried_rows: int = 0


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
    snapshot_properties: Mapping[str, str] | None = None,
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
            snapshot_properties={S.MAINTENANCE_OPERATION: operation, **(snapshot_properties or {})},
            failed_before=failed_before,
        )
        if outcome.snapshot_id is not None:
            out.snapshot_ids.append(outcome.snapshot_id)
        else:
            out.failed_commits += 1
        out.committed += outcome.committed
        out.carried_rows += outcome.carried_rows
        failed.update(outcome.failed)
    return out


def groups_committed_by(metadata: TableMetadata, branch: str, since: int | None, run_id: str) -> set[int]:
    """The file groups that commits of run ``run_id`` landed on ``branch`` after snapshot
    ``since`` (the snapshot the run planned on)."""
    head = metadata.snapshot_for_ref(branch)
    done: set[int] = set()
    for snap in metadata.ancestors_of(head.snapshot_id if head is not None else None):
        if snap.snapshot_id == since:
            break
        props = snap.summary.properties
        if props.get(S.MAINTENANCE_RUN_ID) == run_id:
            done |= {int(g) for g in props.get(S.MAINTENANCE_RUN_GROUPS, "").split(",") if g}
    return done


__all__ = [
    "BatchOutcome",
    "BatchedCommits",
    "GroupChange",
    "RewriteFiles",
    "commit_groups",
    "commit_in_batches",
    "groups_committed_by",
]
