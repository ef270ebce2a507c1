"""The ref operations behind ``table.manage_snapshots()`` (one class per operation).

Each operation is recorded by :class:`firn.core.actions.manage_snapshots.ManageSnapshots`
and run twice over: once when recorded (``ctx`` None: validate against the builder's view,
write nothing) and again on every commit attempt against the freshest metadata. Operations
that move or remove a ref carry the snapshot the user saw the ref at (``expected``) and fail
with ``ValidationConflict`` when a concurrent commit moved it (STYLE 11: safe by default).
Ref semantics: spec "Snapshot References"; behaviour: Iceberg Java ``ManageSnapshots``,
``SetSnapshotOperation``, ``CherryPickOperation`` and the Spark snapshot procedures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firn.core.commit import CommitContext
from firn.core.updates import RemoveSnapshotRef, SetSnapshotRef, TableUpdate
from firn.errors import AlreadyExists, NotFound, ValidationConflict, ValidationError
from firn.spec.content import FileContent
from firn.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot, SnapshotRef
from firn.spec.summary import PUBLISHED_WAP_ID, SOURCE_SNAPSHOT_ID, WAP_ID
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.core.producer import SnapshotProducer
    from firn.core.tree_types import SnapshotChanges
    from firn.io.base import FileIO


# -- small helpers ------------------------------------------------------------------------------
def check_name(name: object, what: str = "ref") -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"{what} name must be a non-empty string, got {name!r}")
    return name


def check_positive(what: str, value: int | None) -> int | None:
    # Spec "Snapshot References": each retention setting is "a positive number".
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"{what} must be a positive integer, got {value!r}")
    return value


def check_snapshot_id(snapshot_id: object) -> int:
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise ValidationError(f"snapshot id must be an integer, got {snapshot_id!r}")
    return snapshot_id


def ref_kind(ref_type: RefType) -> str:
    return "branch" if ref_type is RefType.BRANCH else "tag"


def _require_snapshot(md: TableMetadata, snapshot_id: int, purpose: str) -> Snapshot:
    snap = md.snapshot_by_id(snapshot_id)
    if snap is None:
        raise NotFound(f"cannot {purpose}: the table has no snapshot {snapshot_id}")
    return snap


def _require_ref(md: TableMetadata, name: str, ref_type: RefType) -> SnapshotRef:
    ref = md.ref(name)
    if ref is None:
        raise NotFound(f"the table has no {ref_kind(ref_type)} {name!r}")
    if ref.ref_type is not ref_type:
        raise ValidationError(f"{name!r} is a {ref_kind(ref.ref_type)}, not a {ref_kind(ref_type)}")
    return ref


def _expect(md: TableMetadata, name: str, expected: int | None) -> None:
    """Fail when ``name`` no longer points where the user saw it (a concurrent commit moved it)."""
    ref = md.ref(name)
    actual = ref.snapshot_id if ref is not None else None
    if actual != expected:
        where = f"snapshot {actual}" if actual is not None else "nothing (removed)"
        raise ValidationConflict(
            f"ref {name!r} was changed concurrently: it pointed at snapshot {expected} when this "
            f"change was planned and now points at {where}; reload the table and retry"
        )


def _set(name: str, snapshot_id: int, ref: SnapshotRef | None, ref_type: RefType) -> SetSnapshotRef:
    """Point ``name`` at ``snapshot_id``, keeping the ref's retention settings."""
    return SetSnapshotRef(
        name,
        snapshot_id,
        ref_type,
        ref.min_snapshots_to_keep if ref is not None else None,
        ref.max_snapshot_age_ms if ref is not None else None,
        ref.max_ref_age_ms if ref is not None else None,
    )


def _is_ancestor(md: TableMetadata, ancestor_id: int, of_id: int | None) -> bool:
    return any(s.snapshot_id == ancestor_id for s in md.ancestors_of(of_id))


# -- operations ---------------------------------------------------------------------------------
class RefOp:
    """One recorded operation. ``run`` returns the updates against ``md``; it is called once
    when recorded (``ctx`` None: validate only, write nothing) and again on every commit attempt."""

    refs: tuple[str, ...] = ()
    touches_main_view: bool = False

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        raise NotImplementedError  # pragma: no cover - abstract

    def files_in_use(self) -> set[str]:
        return set()


class CreateRef(RefOp):
    def __init__(self, name: str, ref_type: RefType, snapshot_id: int, retention: tuple[int | None, ...]):
        self.refs = (name,)
        self.name, self.ref_type, self.snapshot_id = name, ref_type, snapshot_id
        self.retention = retention

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        existing = md.ref(self.name)
        if existing is not None:
            raise AlreadyExists(
                f"cannot create {ref_kind(self.ref_type)} {self.name!r}: a {ref_kind(existing.ref_type)} "
                f"with that name already exists (at snapshot {existing.snapshot_id})"
            )
        _require_snapshot(md, self.snapshot_id, f"create {ref_kind(self.ref_type)} {self.name!r}")
        min_keep, max_age, max_ref_age = self.retention
        return [SetSnapshotRef(self.name, self.snapshot_id, self.ref_type, min_keep, max_age, max_ref_age)]


class CreateEmptyBranch(RefOp):
    """A branch of a table without snapshots starts at a new empty snapshot (Iceberg Java)."""

    def __init__(self, name: str, retention: tuple[int | None, ...]):
        self.refs = (name,)
        self.name = name
        self.retention = retention
        self._producer: SnapshotProducer | None = None

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        existing = md.ref(self.name)
        if existing is not None:
            raise AlreadyExists(f"cannot create branch {self.name!r}: a {ref_kind(existing.ref_type)} exists")
        if ctx is None:
            return []
        if self._producer is None:
            from firn.core.actions.append import AppendFiles

            self._producer = AppendFiles([], branch=self.name)
        updates, _ = self._producer.apply(md, ctx)
        min_keep, max_age, max_ref_age = self.retention
        if any(v is not None for v in self.retention):
            sid = self._producer.snapshot_id
            updates.append(SetSnapshotRef(self.name, sid, RefType.BRANCH, min_keep, max_age, max_ref_age))
        return updates

    def files_in_use(self) -> set[str]:
        return self._producer.files_in_use() if self._producer is not None else set()


class ReplaceRef(RefOp):
    def __init__(self, name: str, ref_type: RefType, snapshot_id: int, expected: int | None):
        self.refs = (name,)
        self.touches_main_view = name == MAIN_BRANCH
        self.name, self.ref_type, self.snapshot_id, self.expected = name, ref_type, snapshot_id, expected

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        ref = _require_ref(md, self.name, self.ref_type)
        _expect(md, self.name, self.expected)
        _require_snapshot(md, self.snapshot_id, f"replace {ref_kind(self.ref_type)} {self.name!r}")
        if ref.snapshot_id == self.snapshot_id:
            return []
        return [_set(self.name, self.snapshot_id, ref, self.ref_type)]


class RemoveRef(RefOp):
    def __init__(self, name: str, ref_type: RefType, expected: int | None):
        self.refs = (name,)
        self.name, self.ref_type, self.expected = name, ref_type, expected

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        if self.name == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be removed")
        _require_ref(md, self.name, self.ref_type)
        _expect(md, self.name, self.expected)
        return [RemoveSnapshotRef(self.name)]


class RenameBranch(RefOp):
    def __init__(self, old: str, new: str, expected: int | None):
        self.refs = (old, new)
        self.old, self.new, self.expected = old, new, expected

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        if self.old == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be renamed")
        ref = _require_ref(md, self.old, RefType.BRANCH)
        _expect(md, self.old, self.expected)
        existing = md.ref(self.new)
        if existing is not None:
            raise AlreadyExists(
                f"cannot rename branch {self.old!r} to {self.new!r}: a {ref_kind(existing.ref_type)} "
                "with that name already exists"
            )
        return [RemoveSnapshotRef(self.old), _set(self.new, ref.snapshot_id, ref, RefType.BRANCH)]


# The ref retention settings by their Appendix C field names (which SetRetention changes).
REF_MIN_SNAPSHOTS_TO_KEEP = "min-snapshots-to-keep"
REF_MAX_SNAPSHOT_AGE_MS = "max-snapshot-age-ms"
REF_MAX_REF_AGE_MS = "max-ref-age-ms"


class SetRetention(RefOp):
    """Change one retention setting; the ref stays where it is (whatever it points at now)."""

    def __init__(self, name: str, setting: str, value: int | None):
        self.refs = (name,)
        self.name, self.setting, self.value = name, setting, value

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        ref = md.ref(self.name)
        if ref is None:
            what = "branch or tag" if self.setting == REF_MAX_REF_AGE_MS else "branch"
            raise NotFound(f"the table has no {what} {self.name!r}")
        if self.setting != REF_MAX_REF_AGE_MS and not ref.is_branch:
            # Spec "Snapshot References": min-snapshots-to-keep / max-snapshot-age-ms are branch-only.
            raise ValidationError(f"{self.setting} applies to branches only; {self.name!r} is a tag")
        if self.setting == REF_MAX_REF_AGE_MS and self.name == MAIN_BRANCH:
            raise ValidationError("the main branch never expires; it takes no max-ref-age-ms")
        min_keep, max_age, max_ref_age = (
            ref.min_snapshots_to_keep,
            ref.max_snapshot_age_ms,
            ref.max_ref_age_ms,
        )
        if self.setting == REF_MIN_SNAPSHOTS_TO_KEEP:
            min_keep = self.value
        elif self.setting == REF_MAX_SNAPSHOT_AGE_MS:
            max_age = self.value
        else:
            max_ref_age = self.value
        return [SetSnapshotRef(self.name, ref.snapshot_id, ref.ref_type, min_keep, max_age, max_ref_age)]


class SetMain(RefOp):
    """Rollback (target must be an ancestor of main) or set-current (any snapshot)."""

    refs = (MAIN_BRANCH,)
    touches_main_view = True

    def __init__(self, snapshot_id: int, *, rollback: bool, expected: int | None):
        self.snapshot_id, self.rollback, self.expected = snapshot_id, rollback, expected

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        verb = "roll back to" if self.rollback else "set the current snapshot to"
        _require_snapshot(md, self.snapshot_id, f"{verb} snapshot {self.snapshot_id}")
        _expect(md, MAIN_BRANCH, self.expected)
        main = md.ref(MAIN_BRANCH)
        current = main.snapshot_id if main is not None else None
        if self.rollback and not _is_ancestor(md, self.snapshot_id, current):
            raise ValidationError(
                f"cannot roll back to snapshot {self.snapshot_id}: it is not an ancestor of main's current "
                f"snapshot {current} (set_current_snapshot moves main to any snapshot)"
            )
        if current == self.snapshot_id:
            return []
        return [_set(MAIN_BRANCH, self.snapshot_id, main, RefType.BRANCH)]


class FastForward(RefOp):
    def __init__(self, branch: str, target_id: int, label: str):
        self.refs = (branch,)
        self.touches_main_view = branch == MAIN_BRANCH
        self.branch, self.target_id, self.label = branch, target_id, label

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        _require_snapshot(md, self.target_id, f"fast-forward {self.branch!r} to {self.label}")
        ref = md.ref(self.branch)
        if ref is None:
            # Iceberg Java: fast-forwarding a missing branch creates it at the target.
            return [SetSnapshotRef(self.branch, self.target_id, RefType.BRANCH)]
        if not ref.is_branch:
            raise ValidationError(f"cannot fast-forward {self.branch!r}: it is a tag, not a branch")
        if ref.snapshot_id == self.target_id:
            return []
        # Re-checked on every attempt: a branch that moved concurrently may only be
        # fast-forwarded if the target still descends from it (nothing is dropped).
        if not _is_ancestor(md, ref.snapshot_id, self.target_id):
            raise ValidationError(
                f"cannot fast-forward {self.branch!r}: its snapshot {ref.snapshot_id} is not an ancestor "
                f"of {self.label} (snapshot {self.target_id})"
            )
        return [_set(self.branch, self.target_id, ref, RefType.BRANCH)]


class CherryPick(RefOp):
    """Re-apply one snapshot's changes on top of main (Iceberg Java ``CherryPickOperation``).

    * The source's parent is main's current snapshot: main is fast-forwarded to the source.
    * ``append``: its data files are added to main in a new ``append`` snapshot.
    * ``overwrite`` / ``delete``: its file changes are re-applied as a new snapshot, validated
      like a concurrent overwrite under snapshot isolation from the point where the source's
      history forked from main: every file it removes must still be live on main, and no
      delete files may have been added on main since the fork for the data files it removes
      (re-adding their rewritten survivors would resurrect deleted rows) — else
      ``ValidationConflict``.
    * ``replace`` (compaction) snapshots and equality deletes are not re-applied (Java does
      not either): equality deletes re-sequenced on main would also delete rows committed to
      main after the source was written.

    The new snapshot's summary carries ``source-snapshot-id`` (and ``published-wap-id`` for a
    staged write-audit-publish snapshot with ``wap.id``); a snapshot already on main, already
    cherry-picked, or whose WAP id was already published is rejected.
    """

    refs = (MAIN_BRANCH,)

    def __init__(self, source_id: int, changes: SnapshotChanges | None):
        self.source_id = source_id
        self._changes = changes
        self._producer: SnapshotProducer | None = None
        self._used_producer = False
        self.result_id: int | None = None

    def _check(self, md: TableMetadata) -> tuple[Snapshot, bool]:
        source = _require_snapshot(md, self.source_id, f"cherry-pick snapshot {self.source_id}")
        main = md.current_snapshot()
        main_id = main.snapshot_id if main is not None else None
        ancestors = md.ancestors_of(main_id)
        if any(a.snapshot_id == self.source_id for a in ancestors):
            raise ValidationError(
                f"cannot cherry-pick snapshot {self.source_id}: it is already an ancestor of main"
            )
        for a in ancestors:
            if a.summary.get(SOURCE_SNAPSHOT_ID) == str(self.source_id):
                raise ValidationError(
                    f"cannot cherry-pick snapshot {self.source_id}: it was already cherry-picked "
                    f"as snapshot {a.snapshot_id}"
                )
        wap_id = source.summary.get(WAP_ID)
        if wap_id is not None:
            for a in ancestors:
                if a.summary.get(PUBLISHED_WAP_ID) == wap_id:
                    raise ValidationError(
                        f"cannot cherry-pick snapshot {self.source_id}: WAP id {wap_id!r} was already "
                        f"published as snapshot {a.snapshot_id}"
                    )
        fast_forward = source.parent_snapshot_id == main_id
        if not fast_forward and source.operation not in (
            Operation.APPEND,
            Operation.OVERWRITE,
            Operation.DELETE,
        ):
            raise ValidationError(
                f"cannot cherry-pick snapshot {self.source_id}: a {source.operation.value} snapshot can only "
                "be fast-forwarded (its parent must be main's current snapshot)"
            )
        return source, fast_forward

    def _source_changes(self, md: TableMetadata, ctx: CommitContext) -> SnapshotChanges:
        if self._changes is None:
            from firn.core.trees import snapshot_changes

            self._changes = pickable_changes(snapshot_changes(ctx.io, md, md.snapshot(self.source_id)))
        return self._changes

    def run(self, md: TableMetadata, ctx: CommitContext | None) -> list[TableUpdate]:
        source, fast_forward = self._check(md)
        self._used_producer = False
        if fast_forward:
            self.result_id = source.snapshot_id
            return [_set(MAIN_BRANCH, source.snapshot_id, md.ref(MAIN_BRANCH), RefType.BRANCH)]
        if ctx is None:
            return []
        producer = self._producer_for(md, ctx, source)
        self._check_delete_targets(md, ctx)
        try:
            updates, _ = producer.apply(md, ctx)
        except ValidationConflict as e:
            raise ValidationConflict(f"cannot cherry-pick snapshot {self.source_id} onto main: {e}") from e
        self._used_producer = True
        self.result_id = producer.snapshot_id
        return updates

    def _check_delete_targets(self, md: TableMetadata, ctx: CommitContext) -> None:
        """Position deletes / DVs picked onto main must refer to data files live on main."""
        ch = self._source_changes(md, ctx)
        targets = {d.referenced_data_file for d in ch.added_delete_files if d.referenced_data_file}
        targets -= {f.file_path for f in ch.added_data_files}
        if not targets:
            return
        missing = targets - _live_data_paths(ctx.io, md)
        if missing:
            raise ValidationConflict(
                f"cannot cherry-pick snapshot {self.source_id} onto main: its deletes refer to "
                f"{len(missing)} data file(s) not live on main, e.g. {sorted(missing)[0]}"
            )

    def _producer_for(self, md: TableMetadata, ctx: CommitContext, source: Snapshot) -> SnapshotProducer:
        from firn.core.actions.append import AppendFiles
        from firn.core.actions.overwrite import OverwriteFiles
        from firn.spec.properties import IsolationLevel

        fork = _fork_point(md, source)
        if self._producer is not None:
            if isinstance(self._producer, OverwriteFiles):
                self._producer.starting_snapshot_id = fork
            return self._producer
        ch = self._source_changes(md, ctx)
        props = {SOURCE_SNAPSHOT_ID: str(source.snapshot_id)}
        wap_id = source.summary.get(WAP_ID)
        if wap_id is not None:
            props[PUBLISHED_WAP_ID] = wap_id
        # Added rows are new on main: v3 row ids are assigned afresh from the manifest list.
        added = [f.evolve(first_row_id=None) for f in ch.added_data_files]
        if not (ch.removed_data_files or ch.added_delete_files or ch.removed_delete_files):
            self._producer = AppendFiles(added, snapshot_properties=props)
        else:
            self._producer = OverwriteFiles(
                starting_snapshot_id=fork,
                added_data=added,
                removed_data=ch.removed_data_files,
                added_deletes=ch.added_delete_files,
                removed_deletes=ch.removed_delete_files,
                isolation_level=IsolationLevel.SNAPSHOT,
                operation=source.operation,
                snapshot_properties=props,
            )
        return self._producer

    def files_in_use(self) -> set[str]:
        if self._producer is None or not self._used_producer:
            return set()
        return self._producer.files_in_use()


def pickable_changes(changes: SnapshotChanges) -> SnapshotChanges:
    eq = [f for f in changes.added_delete_files if f.content is FileContent.EQUALITY_DELETES]
    if eq:
        raise ValidationError(
            f"cannot cherry-pick snapshot {changes.snapshot_id}: it adds equality deletes "
            f"({eq[0].file_path}), which would also delete matching rows committed to main since; "
            "only a fast-forward can publish it"
        )
    return changes


def _live_data_paths(io: FileIO, md: TableMetadata) -> set[str]:
    """Paths of the data files in main's current snapshot (plans the whole snapshot)."""
    from firn.expressions import AlwaysTrue

    snap = md.current_snapshot()
    if snap is None:
        return set()
    if snap.root_manifest is not None:
        from firn.core.v4.planning import plan_root

        return {t.file.file_path for t in plan_root(io, md, snap, md.schema(), AlwaysTrue())}
    from firn.core.legacy.planning import plan_legacy

    return {t.file.file_path for t in plan_legacy(io, md, snap, md.schema(), AlwaysTrue())}


def _fork_point(md: TableMetadata, source: Snapshot) -> int | None:
    """The newest ancestor of ``source``'s parent that is also an ancestor of main (None if none)."""
    on_main = {s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id)}
    for s in md.ancestors_of(source.parent_snapshot_id):
        if s.snapshot_id in on_main:
            return s.snapshot_id
    return None


__all__ = [
    "REF_MAX_REF_AGE_MS",
    "REF_MAX_SNAPSHOT_AGE_MS",
    "REF_MIN_SNAPSHOTS_TO_KEEP",
    "CherryPick",
    "CreateEmptyBranch",
    "CreateRef",
    "FastForward",
    "RefOp",
    "RemoveRef",
    "RenameBranch",
    "ReplaceRef",
    "SetMain",
    "SetRetention",
    "check_name",
    "check_positive",
    "check_snapshot_id",
    "pickable_changes",
    "ref_kind",
]
