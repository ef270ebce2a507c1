"""Managing branches, tags and the current snapshot: ``table.manage_snapshots()``.

One builder collects several ref operations and commits them as one metadata version, like
Iceberg Java's ``ManageSnapshots``::

    with table.manage_snapshots() as ms:
        ms.create_branch("audit", min_snapshots_to_keep=3)
        ms.create_tag("v1.0", snapshot_id)

    table.manage_snapshots().rollback_to(snapshot_id).commit()

Semantics follow the spec ("Snapshot References") and Iceberg Java / the Spark procedures
(``rollback_to_snapshot``, ``rollback_to_timestamp``, ``set_current_snapshot``,
``cherrypick_snapshot``, ``fast_forward``); the operations live in
:mod:`firn.core.actions.ref_operations`.

* Each call is validated at once against the table as this builder sees it (the metadata
  when it was created plus the earlier calls), raising ``NotFound``, ``AlreadyExists`` or
  ``ValidationError``; nothing is written before :meth:`ManageSnapshots.commit`.
* Operations that move or remove a ref the user looked at (replace, remove, rename,
  rollback, set-current) remember where the ref pointed. If a concurrent commit moved it
  before this one lands, the commit fails with ``ValidationConflict`` instead of silently
  discarding the other writer's snapshot (STYLE 11: destructive operations are safe by
  default). Operations that lose nothing — creating refs, changing retention settings,
  fast-forwarding (re-checked: the branch must still be an ancestor of the target) and
  cherry-picking (re-applied on the new main, re-validated) — retry transparently.
* Every commit sends ``AssertRefSnapshotId`` for each ref it changes (STYLE 6), so a
  catalog that checks requirements rejects a commit based on stale refs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from firn.core.actions.ref_operations import (
    REF_MAX_REF_AGE_MS,
    REF_MAX_SNAPSHOT_AGE_MS,
    REF_MIN_SNAPSHOTS_TO_KEEP,
    CherryPick,
    CreateEmptyBranch,
    CreateRef,
    FastForward,
    RefOp,
    RemoveRef,
    RenameBranch,
    ReplaceRef,
    SetMain,
    SetRetention,
    check_name,
    check_positive,
    check_snapshot_id,
    pickable_changes,
    ref_kind,
)
from firn.core.commit import CommitContext, CommitResult, PendingUpdate, Staging
from firn.core.metadata_builder import apply_updates
from firn.core.updates import AssertRefSnapshotId, AssertTableUUID, TableRequirement, TableUpdate
from firn.errors import AlreadyExists, NotFound, ValidationConflict, ValidationError
from firn.spec.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotRef
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import to_timestamp_ms

if TYPE_CHECKING:
    import datetime as dt

_USER_ERRORS = (ValidationError, NotFound, AlreadyExists)


@dataclass(frozen=True, slots=True)
class ManageSnapshotsResult(CommitResult):
    """What a ``manage_snapshots()`` commit did (a :class:`~firn.core.commit.CommitResult`).

    ``previous_snapshot_id`` / ``current_snapshot_id`` are main's snapshot before and after;
    ``cherry_picked`` maps each cherry-picked source snapshot to the snapshot that now carries
    its changes on main (the source itself when it was fast-forwarded).
    """

    previous_snapshot_id: int | None = None
    current_snapshot_id: int | None = None
    refs: Mapping[str, SnapshotRef] = field(default_factory=lambda: MappingProxyType({}))
    cherry_picked: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))


# -- the builder ----------------------------------------------------------------------------------
class ManageSnapshots(PendingUpdate):
    """Builder for branch, tag, rollback, cherry-pick and fast-forward operations committed together.

    Obtain it from :meth:`firn.table.table.Table.manage_snapshots`; finish with :meth:`commit`
    or use it as a context manager (commits on a clean exit). It is also a transaction action
    (``transaction.add_action(builder)``).
    """

    def __init__(self, transaction: Staging) -> None:
        super().__init__(transaction)
        self._start = transaction.table.metadata
        self._view = self._start
        self._ops: list[RefOp] = []
        self._main_unknown = False  # after a cherry-pick that creates a new snapshot
        self._pending_branches: set[str] = set()  # empty branches created at commit
        self._last_base: TableMetadata | None = None

    # -- recording ------------------------------------------------------------------------------
    def _add(self, op: RefOp) -> ManageSnapshots:
        self._check_open()
        for name in op.refs:
            if name in self._pending_branches:
                raise ValidationError(
                    f"branch {name!r} is created from an empty table in this same commit; "
                    "change it in a later commit"
                )
        if op.touches_main_view and self._main_unknown:
            raise ValidationError(
                "main's snapshot after a cherry-pick is only known at commit; "
                "commit the cherry-pick before changing main further"
            )
        updates = op.run(self._view, None)
        self._view = apply_updates(self._view, updates)
        self._ops.append(op)
        return self

    def _current_of(self, name: str) -> int | None:
        ref = self._view.ref(name)
        return ref.snapshot_id if ref is not None else None

    # -- branches and tags ----------------------------------------------------------------------
    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> ManageSnapshots:
        """Create branch ``name`` at ``snapshot_id`` (default: main's current snapshot).

        On a table without snapshots the branch starts at a new empty snapshot, as Iceberg Java
        does. Retention settings left as None fall back to the ``history.expire.*`` properties.
        """
        check_name(name, "branch")
        retention = (
            check_positive("min_snapshots_to_keep", min_snapshots_to_keep),
            check_positive("max_snapshot_age_ms", max_snapshot_age_ms),
            check_positive("max_ref_age_ms", max_ref_age_ms),
        )
        if name == MAIN_BRANCH and max_ref_age_ms is not None:
            raise ValidationError("the main branch never expires; it takes no max-ref-age-ms")
        if snapshot_id is None:
            if self._main_unknown:
                raise ValidationError(
                    "main's snapshot after a cherry-pick is only known at commit; pass snapshot_id "
                    "or commit the cherry-pick first"
                )
            current = self._view.current_snapshot_id
            if current is None:
                op = CreateEmptyBranch(name, retention)
                self._add(op)
                self._pending_branches.add(name)
                return self
            snapshot_id = current
        return self._add(CreateRef(name, RefType.BRANCH, check_snapshot_id(snapshot_id), retention))

    def create_tag(
        self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None
    ) -> ManageSnapshots:
        """Create tag ``name`` at ``snapshot_id``. Tags are immutable labels: commits cannot move them."""
        check_name(name, "tag")
        retention = (None, None, check_positive("max_ref_age_ms", max_ref_age_ms))
        return self._add(CreateRef(name, RefType.TAG, check_snapshot_id(snapshot_id), retention))

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point existing branch ``name`` at ``snapshot_id`` (any snapshot), keeping its retention."""
        check_name(name, "branch")
        op = ReplaceRef(name, RefType.BRANCH, check_snapshot_id(snapshot_id), self._current_of(name))
        return self._add(op)

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point existing tag ``name`` at ``snapshot_id``, keeping its ``max-ref-age-ms``."""
        check_name(name, "tag")
        return self._add(
            ReplaceRef(name, RefType.TAG, check_snapshot_id(snapshot_id), self._current_of(name))
        )

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        """Rename a branch (not main); the new name must be free. Retention settings move with it."""
        check_name(name, "branch")
        check_name(new_name, "branch")
        return self._add(RenameBranch(name, new_name, self._current_of(name)))

    def remove_branch(self, name: str) -> ManageSnapshots:
        """Remove a branch (main cannot be removed). Its snapshots stay until snapshot expiry."""
        check_name(name, "branch")
        return self._add(RemoveRef(name, RefType.BRANCH, self._current_of(name)))

    def remove_tag(self, name: str) -> ManageSnapshots:
        """Remove a tag."""
        check_name(name, "tag")
        return self._add(RemoveRef(name, RefType.TAG, self._current_of(name)))

    # -- retention settings (spec "Snapshot References"; None resets to the table default) ---------
    def set_min_snapshots_to_keep(self, branch: str, n: int | None) -> ManageSnapshots:
        """Keep at least ``n`` snapshots of ``branch`` (including its head) when expiring."""
        check_name(branch, "branch")
        return self._add(
            SetRetention(branch, REF_MIN_SNAPSHOTS_TO_KEEP, check_positive("min_snapshots_to_keep", n))
        )

    def set_max_snapshot_age_ms(self, branch: str, ms: int | None) -> ManageSnapshots:
        """Keep snapshots of ``branch`` younger than ``ms`` milliseconds when expiring."""
        check_name(branch, "branch")
        return self._add(
            SetRetention(branch, REF_MAX_SNAPSHOT_AGE_MS, check_positive("max_snapshot_age_ms", ms))
        )

    def set_max_ref_age_ms(self, ref: str, ms: int | None) -> ManageSnapshots:
        """Expire the branch or tag ``ref`` (never main) once its snapshot is older than ``ms``."""
        check_name(ref)
        return self._add(SetRetention(ref, REF_MAX_REF_AGE_MS, check_positive("max_ref_age_ms", ms)))

    # -- main's current snapshot ------------------------------------------------------------------
    def rollback_to(self, snapshot_id: int) -> ManageSnapshots:
        """Move main back to ``snapshot_id``, which must be an ancestor of main's current snapshot."""
        sid = check_snapshot_id(snapshot_id)
        return self._add(SetMain(sid, rollback=True, expected=self._current_of(MAIN_BRANCH)))

    def rollback_to_time(self, when: dt.datetime | dt.date | int | str) -> ManageSnapshots:
        """Roll main back to its newest ancestor committed strictly before ``when``
        (Iceberg Java ``rollbackToTime``: snapshot timestamps, not the snapshot log)."""
        if self._main_unknown:
            raise ValidationError("commit the cherry-pick before rolling main back")
        ts = to_timestamp_ms(when)
        best: Snapshot | None = None
        for s in self._view.ancestors_of(self._view.current_snapshot_id):
            if s.timestamp_ms < ts and (best is None or s.timestamp_ms > best.timestamp_ms):
                best = s
        if best is None:
            raise ValidationError(f"cannot roll back: main has no snapshot older than {ts} ms")
        return self.rollback_to(best.snapshot_id)

    def set_current_snapshot(
        self, snapshot_id: int | None = None, *, ref: str | None = None
    ) -> ManageSnapshots:
        """Make ``snapshot_id`` (or the snapshot of branch/tag ``ref``) main's current snapshot.
        Unlike rollback, it need not be an ancestor."""
        if (snapshot_id is None) == (ref is None):
            raise ValidationError("pass exactly one of snapshot_id and ref")
        if ref is not None:
            r = self._view.ref(check_name(ref))
            if r is None:
                raise NotFound(f"the table has no branch or tag {ref!r}")
            snapshot_id = r.snapshot_id
        sid = check_snapshot_id(snapshot_id)
        return self._add(SetMain(sid, rollback=False, expected=self._current_of(MAIN_BRANCH)))

    def cherry_pick(self, snapshot_id: int) -> ManageSnapshots:
        """Apply the changes of ``snapshot_id`` (from another branch or a staged snapshot) to main.

        See :class:`CherryPick` for what can be picked; fast-forwards when the snapshot's parent
        is main's current snapshot.
        """
        sid = check_snapshot_id(snapshot_id)
        self._check_open()
        op = CherryPick(sid, None)
        source, fast_forward = op._check(self._view)
        if not fast_forward:
            from firn.core.trees import snapshot_changes

            op._changes = pickable_changes(snapshot_changes(self.table.io, self._view, source))
        self._add(op)
        if not fast_forward:
            self._main_unknown = True
        return self

    def fast_forward(self, branch: str, to: str | int) -> ManageSnapshots:
        """Move ``branch`` forward to ``to`` (a branch/tag name or a snapshot id). The branch's
        snapshot must be an ancestor of the target; a missing branch is created at the target.

        A ref name is resolved now, so the branch lands on the snapshot that was looked at even
        if ``to`` moves before the commit."""
        check_name(branch, "branch")
        if isinstance(to, str):
            r = self._view.ref(to)
            if r is None:
                raise NotFound(f"cannot fast-forward {branch!r}: the table has no branch or tag {to!r}")
            return self._add(FastForward(branch, r.snapshot_id, f"{ref_kind(r.ref_type)} {to!r}"))
        sid = check_snapshot_id(to)
        return self._add(FastForward(branch, sid, f"snapshot {sid}"))

    # -- the action protocol ------------------------------------------------------------------------
    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        """Re-run every recorded operation against ``base`` (called on each commit attempt)."""
        self._last_base = base
        md = base
        updates: list[TableUpdate] = []
        touched: dict[str, None] = {}
        for op in self._ops:
            try:
                u = op.run(md, ctx)
            except _USER_ERRORS as e:
                if base is self._start:
                    raise
                # Valid when recorded; a concurrent commit changed what it relied on.
                raise ValidationConflict(f"a concurrent commit conflicts with this change: {e}") from e
            md = apply_updates(md, u)
            updates.extend(u)
            touched.update(dict.fromkeys(op.refs))
        if not updates:
            return [], []
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        for name in touched:
            ref = base.ref(name)
            requirements.append(AssertRefSnapshotId(name, ref.snapshot_id if ref is not None else None))
        return updates, requirements

    def files_in_use(self) -> set[str]:
        out: set[str] = set()
        for op in self._ops:
            out |= op.files_in_use()
        return out

    # -- committing ----------------------------------------------------------------------------------
    def _result(self, result: CommitResult) -> ManageSnapshotsResult:
        before = self._last_base if self._last_base is not None else self._start
        md = self.table.metadata
        picked = {
            op.source_id: op.result_id
            for op in self._ops
            if isinstance(op, CherryPick) and op.result_id is not None
        }
        return ManageSnapshotsResult(
            metadata_location=result.metadata_location,
            attempts=result.attempts,
            snapshot_id=result.snapshot_id,
            snapshot=result.snapshot,
            previous_snapshot_id=before.current_snapshot_id,
            current_snapshot_id=md.current_snapshot_id,
            refs=MappingProxyType(dict(md.refs)),
            cherry_picked=MappingProxyType(picked),
        )

    def commit(self) -> ManageSnapshotsResult:
        """Commit every recorded operation in one metadata version (retrying per ``commit.retry.*``)."""
        return self._result(self._commit())


__all__ = ["ManageSnapshots", "ManageSnapshotsResult"]
