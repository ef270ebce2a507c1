"""Root flush for V4 tables: planner -> JSON-serializable plan -> commit (DESIGN "Maintenance").

``table.maintenance.flush_root().plan()`` is a dry run: what would move given the
``commit.root.*`` thresholds (or everything with ``force=True``). ``.commit()`` writes the
leaves and a new root in one ``replace`` snapshot and returns a :class:`FlushRootResult`.
Concurrent commits are handled by re-planning on the refreshed root at each retry; a flush
changes no table data, so it never conflicts with them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from firn.core.commit import CommitContext
from firn.core.producer import SnapshotProducer
from firn.core.transaction import Transaction
from firn.core.tree_types import PendingFiles, TreeResult
from firn.core.v4.entries import root_for_next_snapshot
from firn.core.v4.flush import FlushStats, flush_decision, flush_root_table, root_counts
from firn.core.v4.reader import root_table
from firn.core.v4.writer import root_location
from firn.errors import Unsupported
from firn.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from firn.core.handle import TableHandle


@dataclass(frozen=True)
class FlushRootPlan:
    """What a flush would do, from the current root (JSON-serializable)."""

    table: str
    snapshot_id: int | None
    force: bool
    root_data_files: int
    root_delete_files: int
    root_manifest_dvs: int
    root_data_manifests: int
    root_delete_manifests: int
    move_data_files: bool
    move_delete_files: bool
    fold_manifest_dvs: bool
    thresholds: dict[str, int]

    @property
    def is_noop(self) -> bool:
        return not (self.move_data_files or self.move_delete_files or self.fold_manifest_dvs)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "is_noop": self.is_noop}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


@dataclass(frozen=True)
class FlushRootResult:
    """What a committed flush did."""

    table: str
    snapshot_id: int | None
    data_files_moved: int
    delete_files_moved: int
    manifest_dvs_folded: int
    entries_rewritten: int
    leaves_written: int
    bytes_written: int

    @property
    def entries_moved(self) -> int:
        return self.data_files_moved + self.delete_files_moved

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _FlushTree:
    def __init__(self, action: _FlushAction) -> None:
        self.action = action
        self._in_use: set[str] = set()

    def write(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        changes: PendingFiles,
        snapshot_id: int,
        sequence_number: int,
        ctx: CommitContext,
    ) -> TreeResult:
        from firn.manifests.v4_io import write_v4_manifest

        root = root_for_next_snapshot(root_table(ctx.io, base, parent))
        root, stats = flush_root_table(
            ctx.io,
            base,
            root,
            ctx,
            snapshot_id,
            sequence_number,
            force=self.action.force,
            affiliate=self.action.affiliate,
        )
        self.action.stats = stats
        location = root_location(base, snapshot_id, ctx.attempt)
        ctx.written.append(location)
        size = write_v4_manifest(ctx.io, location, root, "root")
        self._in_use = {location, *stats.leaves}
        extra = {
            "flushed-data-files": str(stats.data_files_moved),
            "flushed-delete-files": str(stats.delete_files_moved),
            "folded-manifest-dvs": str(stats.manifest_dvs_folded),
            "manifests-created": str(len(stats.leaves)),
            "root-manifest-size": str(size),
            "root-entries": str(root.num_rows),
        }
        return TreeResult(
            root_manifest=location, added_rows=0 if base.tracks_row_lineage else None, summary_extra=extra
        )

    def files_in_use(self) -> set[str]:
        return set(self._in_use)


class _FlushAction(SnapshotProducer):
    operation = Operation.REPLACE

    def __init__(self, *, force: bool, affiliate: bool, branch: str) -> None:
        super().__init__(branch=branch)
        self.force = force
        self.affiliate = affiliate
        self.stats = FlushStats()

    def make_tree_writer(self, base: TableMetadata) -> _FlushTree:
        return _FlushTree(self)

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        return PendingFiles()

    def apply(self, base: TableMetadata, ctx: CommitContext):  # type: ignore[no-untyped-def]
        parent = base.snapshot_for_ref(self.branch)
        root = root_for_next_snapshot(root_table(ctx.io, base, parent))
        if not flush_decision(root_counts(root), base, force=self.force).any:
            self.stats = FlushStats()
            return [], []
        return super().apply(base, ctx)


class FlushRoot:
    """``table.maintenance.flush_root(...)``: plan (dry run) or commit a root flush."""

    def __init__(
        self, table: TableHandle, *, force: bool = False, affiliate: bool = True, branch: str = MAIN_BRANCH
    ) -> None:
        if not table.metadata.uses_root_manifest:
            raise Unsupported(
                f"{table.name} is format version {table.metadata.format_version}; root flush needs a V4 table "
                "(table.upgrade(format_version=4))"
            )
        self.table = table
        self.force = force
        self.affiliate = affiliate
        self.branch = branch

    def plan(self) -> FlushRootPlan:
        md = self.table.metadata
        snap = md.snapshot_for_ref(self.branch)
        counts = root_counts(root_for_next_snapshot(root_table(self.table.io, md, snap)))
        d = flush_decision(counts, md, force=self.force)
        p = md.table_properties
        return FlushRootPlan(
            table=self.table.name,
            snapshot_id=snap.snapshot_id if snap else None,
            force=self.force,
            root_data_files=counts.data_files,
            root_delete_files=counts.delete_files,
            root_manifest_dvs=counts.manifest_dvs,
            root_data_manifests=counts.data_manifests,
            root_delete_manifests=counts.delete_manifests,
            move_data_files=d.move_data,
            move_delete_files=d.move_deletes,
            fold_manifest_dvs=d.fold_manifest_dvs,
            thresholds={
                "commit.root.max-data-files": p.root_max_data_files,
                "commit.root.max-delete-vectors": p.root_max_delete_vectors,
                "commit.root.max-manifest-dvs": p.root_max_manifest_dvs,
                "commit.root.max-bytes": p.root_max_bytes,
            },
        )

    def commit(self) -> FlushRootResult:
        action = _FlushAction(force=self.force, affiliate=self.affiliate, branch=self.branch)
        result = Transaction(self.table).add_action(action).commit()
        s = action.stats
        return FlushRootResult(
            table=self.table.name,
            snapshot_id=result.snapshot_id if s.leaves or s.manifest_dvs_folded else None,
            data_files_moved=s.data_files_moved,
            delete_files_moved=s.delete_files_moved,
            manifest_dvs_folded=s.manifest_dvs_folded,
            entries_rewritten=s.entries_rewritten,
            leaves_written=len(s.leaves),
            bytes_written=s.bytes_written,
        )


__all__ = ["FlushRoot", "FlushRootPlan", "FlushRootResult"]
