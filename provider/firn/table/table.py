"""The user-facing Table: reading, writing, history and evolution of one Iceberg table."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firn.core.actions.manage_snapshots import ManageSnapshots
from firn.core.actions.row_delta import RowDelta
from firn.core.actions.update_schema import UpdateSchema
from firn.core.actions.update_spec import UpdateSpec
from firn.core.actions.upsert import UpsertResult
from firn.core.changelog import ChangelogScan
from firn.core.handle import CommittedMetadata, TableCommit
from firn.core.scan import DataScan, snapshot_as_of
from firn.core.snapshot_range import resolve_range
from firn.core.transaction import Transaction
from firn.core.tree_types import SnapshotChanges
from firn.core.trees import snapshot_changes
from firn.io.base import FileIO
from firn.maintenance import TableHealth, TableMaintenance, table_health
from firn.spec.deletion_scope import DeletionScope
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef
from firn.spec.sorting import SortOrder
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import TimestampLike

if TYPE_CHECKING:
    import pyarrow as pa

    from firn.catalog.base import Catalog, Identifier
    from firn.expressions import BooleanExpression


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One entry of ``table.history()``: a snapshot that was current at ``timestamp_ms``."""

    snapshot_id: int
    timestamp_ms: int
    parent_snapshot_id: int | None
    is_current_ancestor: bool
    operation: str | None

    @property
    def timestamp(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.timestamp_ms / 1000, tz=dt.UTC)


class Table:
    """A table loaded from a catalog: metadata, where it lives, and how to change it.

    Changes commit through the catalog's atomic swap; on success the object reflects the new
    metadata. Long-lived objects can fall behind other writers: :meth:`refresh` reloads.
    """

    def __init__(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

    # -- identity and metadata ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties

    def schema(self) -> Schema:
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        return dict(self.metadata.specs)

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog."""
        fresh = self.catalog.load_table(self.identifier)
        self._set_metadata(fresh.metadata, fresh.metadata_location)
        return self

    def _set_metadata(self, metadata: TableMetadata, location: str) -> None:
        self.metadata = metadata
        self.metadata_location = location

    # -- snapshots and history ------------------------------------------------------------------
    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshot_by_name(self, ref: str) -> Snapshot | None:
        """The snapshot a branch or tag points at."""
        return self.metadata.snapshot_for_ref(ref)

    def snapshot_as_of(self, when: dt.datetime | dt.date | int | str) -> Snapshot:
        """The snapshot that was current at ``when`` (time travel by timestamp)."""
        return snapshot_as_of(self.metadata, self.name, when)

    def refs(self) -> dict[str, SnapshotRef]:
        return dict(self.metadata.refs)

    def history(self) -> list[HistoryEntry]:
        """The snapshot log: which snapshot was current when, oldest first."""
        current = self.metadata.current_snapshot_id
        ancestors = {s.snapshot_id for s in self.metadata.ancestors_of(current)}
        out = []
        for e in self.metadata.snapshot_log:
            s = self.metadata.snapshot_by_id(e.snapshot_id)
            out.append(
                HistoryEntry(
                    e.snapshot_id,
                    e.timestamp_ms,
                    s.parent_snapshot_id if s else None,
                    e.snapshot_id in ancestors,
                    s.summary.operation.value if s else None,
                )
            )
        return out

    # -- reading ------------------------------------------------------------------------------------
    def scan(
        self,
        *,
        filter: BooleanExpression | str | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: dt.datetime | dt.date | int | str | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        from_timestamp: TimestampLike | None = None,
        to_timestamp: TimestampLike | None = None,
    ) -> DataScan:
        """A scan of the table; nothing is read until ``plan_files``/``to_arrow``/``to_batches``.

        Pick at most one of ``snapshot_id``, ``ref`` (branch or tag) or ``as_of`` (time travel).
        Or read incrementally: ``from_snapshot_id`` / ``from_timestamp`` (exclusive; default the
        table's first snapshot) to ``to_snapshot_id`` / ``to_timestamp`` (inclusive; default the
        current snapshot) returns the rows that the ``append`` snapshots in between added, as
        appended (``firn.core.incremental``); ``scan.range`` lists the snapshots. Overwrites,
        deletes and upserts are the changelog's (:meth:`changelog`)."""
        return DataScan(
            self,
            filter=filter,
            columns=columns,
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=as_of,
            case_sensitive=case_sensitive,
            limit=limit,
            from_snapshot_id=from_snapshot_id,
            to_snapshot_id=to_snapshot_id,
            from_timestamp=from_timestamp,
            to_timestamp=to_timestamp,
        )

    def changelog(
        self,
        *,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        from_timestamp: TimestampLike | None = None,
        to_timestamp: TimestampLike | None = None,
        filter: BooleanExpression | str | None = None,
        columns: Sequence[str] | None = None,
        case_sensitive: bool = True,
        net_changes: bool = False,
        remove_carry_over: bool = True,
    ) -> ChangelogScan:
        """The rows inserted and deleted in ``(from, to]`` (range as for :meth:`scan`), each with
        ``_change_type`` (INSERT/DELETE), ``_change_ordinal`` and ``_commit_snapshot_id``, as
        Iceberg's changelog view: position deletes, DVs and equality deletes included, an update
        as a DELETE plus an INSERT, ``replace`` commits contributing nothing, copy-on-write
        carry-over rows removed (``remove_carry_over``); ``net_changes`` cancels across
        snapshots too (``firn.core.changelog``). Nothing is read until ``to_arrow``."""
        return ChangelogScan(
            self,
            from_snapshot_id=from_snapshot_id,
            to_snapshot_id=to_snapshot_id,
            from_timestamp=from_timestamp,
            to_timestamp=to_timestamp,
            filter=filter,
            columns=columns,
            case_sensitive=case_sensitive,
            net_changes=net_changes,
            remove_carry_over=remove_carry_over,
        )

    def to_arrow(self) -> pa.Table:
        """The whole current table as Arrow (shorthand for ``scan().to_arrow()``)."""
        return self.scan().to_arrow()

    # -- the core's view of the table (firn.core.handle.TableHandle) --------------------------
    def catalog_metadata_location(self) -> str:
        """Where the catalog's pointer for this table is now (it may be ahead of this object)."""
        return self.catalog.load_metadata_location(self.identifier)

    def commit_metadata(self, commit: TableCommit) -> CommittedMetadata:
        """Land one commit attempt through the catalog; this object then holds its metadata."""
        committed = self.catalog.commit_table(self.identifier, commit)
        self._set_metadata(committed.metadata, committed.metadata_location)
        return committed

    # -- writing ------------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        """A transaction grouping several changes into one commit (usable as a context manager);
        it carries the whole write API (``append``, ``delete``, ``update_schema``, ...)."""
        return Transaction(self)

    def append(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        stage_only: bool = False,
    ) -> Snapshot | None:
        """Write ``data`` as Parquet files (partitioned, split by target size) and commit one
        ``append`` snapshot. Returns the new snapshot (None when ``data`` is empty).

        ``stage_only=True`` adds the snapshot without moving any branch (write-audit-publish):
        publish it later with ``manage_snapshots().cherry_pick(snapshot.snapshot_id)``."""
        with self.transaction() as tx:
            tx.append(data, branch=branch, snapshot_properties=snapshot_properties, stage_only=stage_only)
            return tx.commit().snapshot

    def add_files(
        self,
        paths: Iterable[str],
        *,
        branch: str = MAIN_BRANCH,
        check_duplicate_files: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Snapshot | None:
        """Register existing Parquet files (written with this schema's field ids or matching
        the name mapping) without rewriting them; returns the new snapshot."""
        with self.transaction() as tx:
            tx.add_files(
                paths,
                branch=branch,
                check_duplicate_files=check_duplicate_files,
                snapshot_properties=snapshot_properties,
            )
            return tx.commit().snapshot

    def overwrite(
        self,
        data: pa.Table,
        filter: BooleanExpression | str | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Snapshot | None:
        """Replace the rows matching ``filter`` (default: all rows) with ``data`` in one snapshot
        (None, and no commit, when nothing matched and ``data`` is empty)."""
        with self.transaction() as tx:
            tx.overwrite(data, filter, branch=branch, snapshot_properties=snapshot_properties)
            return tx.commit().snapshot

    def delete(
        self,
        filter: BooleanExpression | str,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Snapshot | None:
        """Delete the rows matching ``filter``. Whole files the filter covers are dropped; the
        rest are handled per ``write.delete.mode`` (copy-on-write rewrites them, merge-on-read
        writes deletion vectors / position deletes). Returns the new snapshot, or None (and
        commits nothing) when no row matched."""
        with self.transaction() as tx:
            tx.delete(filter, branch=branch, snapshot_properties=snapshot_properties)
            return tx.commit().snapshot

    def row_delta(
        self, *, branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None
    ) -> RowDelta:
        """A builder adding data files and delete files (DVs, position and equality deletes)
        in one commit: ``table.row_delta().add_rows(df).delete_rows_at(path, [0, 5]).commit()``."""
        return Transaction(self, autocommit=True).row_delta(
            branch=branch, snapshot_properties=snapshot_properties
        )

    def upsert(
        self,
        data: pa.Table,
        join_cols: Sequence[str] | None = None,
        *,
        when_matched_update_all: bool = True,
        when_not_matched_insert_all: bool = True,
        skip_unchanged_rows: bool = True,
        case_sensitive: bool = True,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> UpsertResult:
        """Update the rows whose ``join_cols`` values (default: the identifier fields) match a
        row of ``data`` and insert the rest, in one snapshot. Matched rows are deleted per
        ``write.merge.mode`` (copy-on-write or merge-on-read); nulls in join columns never
        match; duplicate keys in ``data`` raise ``ValidationError``. With
        ``skip_unchanged_rows``, matched rows whose values are identical are left alone."""
        with self.transaction() as tx:
            return tx.upsert(
                data,
                join_cols,
                when_matched_update_all=when_matched_update_all,
                when_not_matched_insert_all=when_not_matched_insert_all,
                skip_unchanged_rows=skip_unchanged_rows,
                case_sensitive=case_sensitive,
                branch=branch,
                snapshot_properties=snapshot_properties,
            )

    # -- branches, tags and history -------------------------------------------------------------
    def manage_snapshots(self) -> ManageSnapshots:
        """A builder for branch/tag changes, rollback, set-current, cherry-pick and fast-forward,
        committed together by ``.commit()`` (or on leaving a ``with`` block)."""
        return Transaction(self, autocommit=True).manage_snapshots()

    # -- maintenance and change detection ------------------------------------------------------
    def maintenance_lease(self, operation: str) -> contextlib.AbstractContextManager[object]:
        """The table's maintenance lease for a run of ``operation``, from its catalog: a context
        manager that raises ``LeaseHeld`` on entry while another run holds it, and renews the
        lease until the block ends (``firn.catalog.lease``)."""
        return self.catalog.maintenance_lease(self.identifier, operation)

    def deletion_scope(self) -> DeletionScope:
        """Where a destructive step on this table may delete: its location, ``write.data.path``
        and ``write.metadata.path``, minus the place of every other table and view of its
        catalog that overlaps them (one catalog query; ``firn.spec.deletion_scope``)."""
        return DeletionScope.for_table(
            self.name, self.metadata, self.catalog.entry_locations(), self_identifier=self.identifier
        )

    def health(self) -> TableHealth:
        """Maintenance metrics of the current snapshot (files, small files, deletes, manifests,
        snapshots, the V4 root), read from metadata only; cheap enough to poll
        (``firn.maintenance.health``). Call :meth:`refresh` first to see other writers' commits."""
        return table_health(self)

    @property
    def maintenance(self) -> TableMaintenance:
        """Maintenance operations (``flush_root``, ...), each with ``plan()`` and ``run()``."""
        return TableMaintenance(self)

    def changes(
        self, from_snapshot_id: int | None, to_snapshot_id: int | None = None
    ) -> list[SnapshotChanges]:
        """Files added and removed by each snapshot after ``from_snapshot_id`` up to
        ``to_snapshot_id`` (default: current), oldest first. ``to`` must descend from ``from``
        (the range rules of :meth:`scan`'s incremental reads).

        For V4 snapshots this reads only their roots and the leaves they changed."""
        span = resolve_range(
            self.metadata, self.name, from_snapshot_id=from_snapshot_id, to_snapshot_id=to_snapshot_id
        )
        return [snapshot_changes(self.io, self.metadata, s) for s in span.snapshots]

    # -- evolution ----------------------------------------------------------------------------------
    def update_schema(
        self, *, case_sensitive: bool = True, allow_incompatible_changes: bool = False
    ) -> UpdateSchema:
        """A builder of schema changes, committed by ``.commit()`` or a clean ``with`` exit."""
        return Transaction(self, autocommit=True).update_schema(
            case_sensitive=case_sensitive, allow_incompatible_changes=allow_incompatible_changes
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """A builder of partition spec changes, committed by ``.commit()`` or a clean ``with`` exit."""
        return Transaction(self, autocommit=True).update_spec(case_sensitive=case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, /, **kwargs: str) -> None:
        """Set table properties (validated: a malformed known property raises ``ValidationError``)."""
        with self.transaction() as tx:
            tx.set_properties(properties, **kwargs)

    def remove_properties(self, *keys: str) -> None:
        """Remove table properties (absent keys are ignored)."""
        with self.transaction() as tx:
            tx.remove_properties(*keys)

    def upgrade(self, *, format_version: int) -> None:
        """Upgrade the table's format version (v1→v2→v3→v4; never downgrades)."""
        with self.transaction() as tx:
            tx.upgrade(format_version=format_version)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, format_version={self.metadata.format_version})"


__all__ = ["HistoryEntry", "Table"]
