"""Root flush for V4 tables (seed 004 "root flush"): move root entries into leaf manifests.

``table.maintenance.flush_root().plan()`` is the dry run: what would move given the
``commit.root.*`` thresholds (or everything with ``force=True``). ``.run()`` writes the leaves
and a new root in one ``replace`` snapshot and returns a :class:`FlushRootResult`. Concurrent
commits are handled by re-planning on the refreshed root at each retry; a flush changes no
table data, so it never conflicts with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from firn.core.commit import CommitContext
from firn.core.producer import SnapshotProducer
from firn.core.transaction import Transaction
from firn.core.tree_types import PendingFiles, TreeResult
from firn.core.v4.entries import root_for_next_snapshot
from firn.core.v4.flush import FlushStats, flush_decision, flush_root_table, root_counts
from firn.core.v4.reader import root_table
from firn.core.v4.writer import root_location
from firn.errors import Unsupported
from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    plan_identity,
)
from firn.maintenance.options import FlushRootOptions
from firn.maintenance.runner import UnitResult
from firn.maintenance.tree_writer import MaintenanceTreeWriter
from firn.spec import summary as S
from firn.spec.properties import (
    ROOT_MAX_BYTES,
    ROOT_MAX_DATA_FILES,
    ROOT_MAX_DELETE_VECTORS,
    ROOT_MAX_MANIFEST_DVS,
)
from firn.spec.snapshots import Operation, Snapshot
from firn.spec.table_metadata import TableMetadata


@dataclass(frozen=True, kw_only=True)
class FlushRootResult(MaintenanceResult):
    """What a committed flush did."""

    OPERATION: ClassVar[str] = "flush_root"
    LINEAGE: ClassVar[Mapping[str, str]] = {"files_added": "leaves_written", "bytes_added": "bytes_written"}

    data_files_moved: int = 0
    delete_files_moved: int = 0
    manifest_dvs_folded: int = 0
    entries_rewritten: int = 0
    leaves_written: int = 0
    bytes_written: int = 0

    @property
    def entries_moved(self) -> int:
        return self.data_files_moved + self.delete_files_moved


@dataclass(frozen=True, kw_only=True)
class FlushRootPlan(MaintenancePlan[FlushRootResult]):
    """What a flush would do, from the current root."""

    OPERATION: ClassVar[str] = "flush_root"

    options: FlushRootOptions
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

    def describe(self) -> str:
        t = self.thresholds
        lines = [
            f"  root: {self.root_data_files} data files, {self.root_delete_files} delete files, "
            f"{self.root_manifest_dvs} manifest DVs, {self.root_data_manifests} data and "
            f"{self.root_delete_manifests} delete manifests",
            f"  thresholds: {t.get(ROOT_MAX_DATA_FILES)} data files, {t.get(ROOT_MAX_DELETE_VECTORS)} DVs, "
            f"{t.get(ROOT_MAX_MANIFEST_DVS)} manifest DVs, {t.get(ROOT_MAX_BYTES)} bytes"
            + (" (forced)" if self.options.force else ""),
        ]
        moves = [
            name
            for name, flag in (
                ("data files into leaves", self.move_data_files),
                ("delete files into leaves", self.move_delete_files),
                ("manifest DVs into rewritten leaves", self.fold_manifest_dvs),
            )
            if flag
        ]
        if moves:
            lines.append("  would move " + "; ".join(moves))
        return "\n".join(lines)

    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> FlushRootResult:
        action = _FlushAction(
            force=self.options.force, affiliate=self.options.affiliate, branch=self.options.branch
        )
        committed = Transaction(table).add_action(action).commit()
        s = action.stats
        return FlushRootResult(
            table=self.table,
            snapshot_id=committed.snapshot.snapshot_id if committed.snapshot is not None else None,
            data_files_moved=s.data_files_moved,
            delete_files_moved=s.delete_files_moved,
            manifest_dvs_folded=s.manifest_dvs_folded,
            entries_rewritten=s.entries_rewritten,
            leaves_written=len(s.leaves),
            bytes_written=s.bytes_written,
        )


class _FlushTree(MaintenanceTreeWriter["_FlushAction"]):
    def write_tree(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        ctx: CommitContext,
        snapshot_id: int,
        sequence_number: int,
    ) -> tuple[TreeResult, set[str]]:
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
        extra = {
            S.FLUSHED_DATA_FILES: str(stats.data_files_moved),
            S.FLUSHED_DELETE_FILES: str(stats.delete_files_moved),
            S.FOLDED_MANIFEST_DVS: str(stats.manifest_dvs_folded),
            S.MANIFESTS_CREATED: str(len(stats.leaves)),
            S.ROOT_MANIFEST_SIZE: str(size),
            S.ROOT_ENTRIES: str(root.num_rows),
        }
        result = TreeResult(
            root_manifest=location, added_rows=0 if base.tracks_row_lineage else None, summary_extra=extra
        )
        return result, {location, *stats.leaves}


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


class FlushRoot(MaintenanceOperation[FlushRootPlan, FlushRootResult, FlushRootOptions]):
    """``table.maintenance.flush_root(force=False, affiliate=True, branch="main")``."""

    OPERATION = "flush_root"

    def __init__(self, table: MaintainedTable, options: FlushRootOptions) -> None:
        super().__init__(table, options)
        if not table.metadata.uses_root_manifest:
            raise Unsupported(
                f"{table.name} is format version {table.metadata.format_version}; root flush needs a "
                "V4 table (table.upgrade(format_version=4))"
            )

    def plan(self) -> FlushRootPlan:
        md = self.table.metadata
        snap = md.snapshot_for_ref(self.options.branch)
        counts = root_counts(root_for_next_snapshot(root_table(self.table.io, md, snap)))
        d = flush_decision(counts, md, force=self.options.force)
        p = md.table_properties
        return FlushRootPlan(
            **plan_identity(self.table, snap.snapshot_id if snap else None, self.options),
            root_data_files=counts.data_files,
            root_delete_files=counts.delete_files,
            root_manifest_dvs=counts.manifest_dvs,
            root_data_manifests=counts.data_manifests,
            root_delete_manifests=counts.delete_manifests,
            move_data_files=d.move_data,
            move_delete_files=d.move_deletes,
            fold_manifest_dvs=d.fold_manifest_dvs,
            thresholds={
                ROOT_MAX_DATA_FILES: p.root_max_data_files,
                ROOT_MAX_DELETE_VECTORS: p.root_max_delete_vectors,
                ROOT_MAX_MANIFEST_DVS: p.root_max_manifest_dvs,
                ROOT_MAX_BYTES: p.root_max_bytes,
            },
        )


__all__ = ["FlushRoot", "FlushRootPlan", "FlushRootResult"]
