"""Replacing files with conflict validation (overwrite, copy-on-write delete, row delta, rewrite).

Isolation follows Iceberg Java (``OverwriteFiles``/``RowDelta``/``RewriteFiles`` validation):
with concurrent commits between the snapshot an operation planned against and the current
one, the operation fails with :class:`ValidationConflict` when

* (both levels) a concurrent commit removed a file this operation removes or rewrites;
* (both levels) a concurrent ``overwrite`` or ``delete`` commit added delete files (DVs,
  position or equality deletes) that apply to a data file this operation removes or
  rewrites — its survivors would resurrect the deleted rows (a ``replace`` only rewrites
  deletes that were already there: Java validates these two operations only);
* (both levels) a concurrent commit added a DV for a data file this operation adds a DV for
  (at most one DV per data file);
* (both levels) a concurrent commit removed a data file that this operation's new position
  deletes or DVs refer to (``required_data_files``; Java ``validateDataFilesExist``) — e.g. a
  compaction moved its rows elsewhere, so the deletes would no longer apply;
* (``serializable`` only) a concurrent ``append`` or ``overwrite`` added data files that may
  match this operation's conflict-detection filter.

The validation history may start after an expired starting snapshot (``trees.snapshots_between``).
When every conflict comes from ``replace`` commits (compaction, delete-file and manifest
rewrites, root flushes: they move rows without changing any), the error is
:class:`RewrittenConcurrently`, and a write that can plan again does so on the refreshed
table (``firn.core.actions.replan``) instead of failing, which Iceberg Java does not do.
Retries re-run this validation against the refreshed table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from firn.core.commit import CommitContext
from firn.core.planning import partition_type_or_none
from firn.core.producer import SnapshotProducer
from firn.core.tree_types import PendingFiles, SnapshotChanges
from firn.core.trees import snapshot_changes, snapshots_between
from firn.errors import RewrittenConcurrently, ValidationConflict, ValidationError
from firn.expressions import AlwaysFalse, BooleanExpression, InclusiveMetricsEvaluator, PartitionEvaluator
from firn.spec.content import DataFile, FileContent
from firn.spec.properties import IsolationLevel
from firn.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from firn.spec.table_metadata import TableMetadata

# Java ``MergingSnapshotProducer``: the operations whose added delete files / data files are
# validated (VALIDATE_ADDED_DELETE_FILES_OPERATIONS, VALIDATE_ADDED_FILES_OPERATIONS).
_DELETE_VALIDATED_OPERATIONS = frozenset({Operation.OVERWRITE, Operation.DELETE})
_DATA_VALIDATED_OPERATIONS = frozenset({Operation.APPEND, Operation.OVERWRITE})


class OverwriteFiles(SnapshotProducer):
    """Adds and removes data and delete files in one snapshot, validating concurrent commits."""

    operation = Operation.OVERWRITE

    def __init__(
        self,
        *,
        starting_snapshot_id: int | None,
        added_data: Sequence[DataFile] = (),
        removed_data: Sequence[DataFile] = (),
        added_deletes: Sequence[DataFile] = (),
        removed_deletes: Sequence[DataFile] = (),
        conflict_filter: BooleanExpression | None = None,
        isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE,
        validate_deletes_for: Sequence[DataFile] | None = None,
        operation: Operation | None = None,
        data_sequence_number: int | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        written_files: Sequence[str] = (),
        required_data_files: Sequence[str] = (),
    ) -> None:
        super().__init__(branch=branch, snapshot_properties=snapshot_properties, written_files=written_files)
        self.starting_snapshot_id = starting_snapshot_id
        self.added_data = list(added_data)
        self.removed_data = list(removed_data)
        self.added_deletes = list(added_deletes)
        self.removed_deletes = list(removed_deletes)
        self.conflict_filter = conflict_filter
        self.isolation_level = isolation_level
        # Data files whose rows must not have been deleted concurrently (rewritten or referenced).
        self.validate_deletes_for = (
            list(validate_deletes_for) if validate_deletes_for is not None else list(removed_data)
        )
        # Data files that added position deletes / DVs refer to: they must still exist.
        self.required_data_files = set(required_data_files)
        self.fixed_operation = operation
        self.data_sequence_number = data_sequence_number

    @property
    def is_noop(self) -> bool:
        """Nothing to add or remove (e.g. a delete that matched no rows): no snapshot needed."""
        return not (self.added_data or self.removed_data or self.added_deletes or self.removed_deletes)

    def operation_for(self, changes: PendingFiles) -> Operation:
        if self.fixed_operation is not None:
            return self.fixed_operation
        adds = bool(changes.added_data or changes.added_deletes)
        removes = bool(changes.removed_data or changes.removed_deletes)
        if adds and not removes and not changes.added_deletes:
            return Operation.APPEND
        if removes and not changes.added_data and not changes.added_deletes:
            return Operation.DELETE
        return Operation.OVERWRITE

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        return PendingFiles(
            added_data=self.added_data,
            added_deletes=self.added_deletes,
            removed_data=self.removed_data,
            removed_deletes=self.removed_deletes,
            data_sequence_number=self.data_sequence_number,
        )

    # -- validation ------------------------------------------------------------------------------
    def validate(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> None:
        if parent is None or parent.snapshot_id == self.starting_snapshot_id:
            return
        try:
            concurrent = snapshots_between(base, self.starting_snapshot_id, parent.snapshot_id)
        except ValidationError as e:
            raise ValidationConflict(f"cannot validate: {e}") from None
        protected = {f.file_path: f for f in self.validate_deletes_for}
        matcher = self._matcher(base) if self.isolation_level is IsolationLevel.SERIALIZABLE else None
        moved: list[str] = []  # conflicts with data-preserving rewrites: plan again
        for snap in concurrent:
            op = snap.summary.operation
            ch = snapshot_changes(ctx.io, base, snap)
            reason = self._file_conflict(snap, ch)
            if reason is not None:
                if op is not Operation.REPLACE:
                    raise ValidationConflict(reason)
                moved.append(reason)
            if op in _DELETE_VALIDATED_OPERATIONS:
                # Java ``validateNoNewDeletesForDataFiles``: only overwrite and delete snapshots
                # delete rows; a replace only rewrites deletes that were already there.
                for d in ch.added_delete_files:
                    hit = self._delete_hits(d, protected, base)
                    if hit is not None:
                        raise ValidationConflict(
                            f"concurrent snapshot {snap.snapshot_id} ({op.value}) added deletes "
                            f"({d.file_path}) for data file {hit} that this operation rewrites; "
                            "retrying would resurrect deleted rows"
                        )
            if matcher is not None and op in _DATA_VALIDATED_OPERATIONS:
                for f in ch.added_data_files:
                    if matcher(f):
                        raise ValidationConflict(
                            f"serializable isolation: concurrent snapshot {snap.snapshot_id} added data file "
                            f"{f.file_path} that may match this operation's filter; set the isolation level "
                            "to 'snapshot' to allow it"
                        )
        if moved:
            raise RewrittenConcurrently(
                f"{moved[0]}; {len(moved)} conflict(s), all with replace commits that moved rows "
                "without changing them"
            )

    def _file_conflict(self, snap: Snapshot, ch: SnapshotChanges) -> str | None:
        """A concurrent commit removed a file this operation removes or its deletes refer to,
        or added a second DV for a file this operation adds one for."""
        removed_paths = {f.file_key for f in (*self.removed_data, *self.removed_deletes)}
        gone = removed_paths & {f.file_key for f in (*ch.removed_data_files, *ch.removed_delete_files)}
        if gone:
            return (
                f"concurrent snapshot {snap.snapshot_id} ({ch.operation}) already removed "
                f"{len(gone)} file(s) this operation replaces, e.g. {sorted(gone)[0]}"
            )
        if self.required_data_files:
            dropped = self.required_data_files & {f.file_path for f in ch.removed_data_files}
            if dropped:
                return (
                    f"concurrent snapshot {snap.snapshot_id} ({ch.operation}) removed data file "
                    f"{sorted(dropped)[0]} that this operation's position deletes refer to"
                )
        dv_targets = {f.referenced_data_file for f in self.added_deletes if f.is_dv}
        for d in ch.added_delete_files:
            if d.is_dv and d.referenced_data_file in dv_targets:
                return (
                    f"found concurrently added DV for {d.referenced_data_file} (snapshot {snap.snapshot_id})"
                )
        return None

    def _delete_hits(self, d: DataFile, protected: dict[str, DataFile], base: TableMetadata) -> str | None:
        if not protected:
            return None
        if d.referenced_data_file is not None:
            return d.referenced_data_file if d.referenced_data_file in protected else None
        # Partition-scoped position deletes and equality deletes: same spec and partition,
        # or a global (unpartitioned) equality delete.
        spec = base.specs.get(d.spec_id)
        global_eq = d.content is FileContent.EQUALITY_DELETES and (spec is None or spec.is_unpartitioned)
        for path, f in protected.items():
            if global_eq or (f.spec_id == d.spec_id and f.partition == d.partition):
                return path
        return None

    def _matcher(self, base: TableMetadata):  # type: ignore[no-untyped-def]
        expr = self.conflict_filter
        if expr is None or isinstance(expr, AlwaysFalse):
            return None
        schema = base.schema()
        metrics = InclusiveMetricsEvaluator(schema, expr)
        parts: dict[int, PartitionEvaluator | None] = {}

        def match(f: DataFile) -> bool:
            if f.spec_id not in parts:
                spec = base.specs.get(f.spec_id)
                ok = spec is not None and spec.fields and partition_type_or_none(spec, schema) is not None
                parts[f.spec_id] = PartitionEvaluator.for_row_filter(spec, schema, expr) if ok else None  # type: ignore[arg-type]
            pev = parts[f.spec_id]
            if pev is not None and not pev.eval(f.partition):
                return False
            return metrics.eval(f)

        return match


__all__ = ["OverwriteFiles"]
