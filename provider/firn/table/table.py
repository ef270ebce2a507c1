"""The user-facing Table: reading, writing, history and evolution of one Iceberg table."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firn.core.commit import CommitResult, SimpleAction, Transaction
from firn.core.updates import RemoveProperties, SetProperties, TableRequirement, TableUpdate
from firn.errors import NotFound, ValidationError
from firn.io.base import FileIO
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef
from firn.spec.sorting import SortOrder
from firn.spec.table_metadata import TableMetadata
from firn.util.timestamps import to_timestamp_ms

if TYPE_CHECKING:
    import pyarrow as pa

    from firn.catalog.base import Catalog, Identifier
    from firn.core.actions.manage_snapshots import ManageSnapshots
    from firn.core.actions.row_delta import RowDelta
    from firn.core.actions.update_schema import UpdateSchema
    from firn.core.actions.update_spec import UpdateSpec
    from firn.core.actions.upsert import UpsertResult
    from firn.core.scan import DataScan
    from firn.core.tree_types import SnapshotChanges
    from firn.expressions import BooleanExpression
    from firn.maintenance import TableMaintenance


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
        ts = to_timestamp_ms(when)
        snap = self.metadata.snapshot_as_of(ts)
        if snap is None:
            first = self.metadata.snapshot_log[0].timestamp_ms if self.metadata.snapshot_log else None
            raise NotFound(
                f"table {self.name} has no snapshot at or before {ts} ms"
                + (f"; its history starts at {first} ms" if first is not None else "; it has no history")
            )
        return snap

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
    ) -> DataScan:
        """A scan of the table; nothing is read until ``plan_files``/``to_arrow``/``to_batches``.

        Pick at most one of ``snapshot_id``, ``ref`` (branch or tag) or ``as_of`` (time travel).
        """
        from firn.core.scan import DataScan

        return DataScan(
            self,
            filter=filter,
            columns=columns,
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=as_of,
            case_sensitive=case_sensitive,
            limit=limit,
        )

    def to_arrow(self) -> pa.Table:
        """The whole current table as Arrow (shorthand for ``scan().to_arrow()``)."""
        return self.scan().to_arrow()

    # -- writing ------------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        """A transaction grouping several changes into one commit (usable as a context manager)."""
        return Transaction(self)

    def _commit(self, action: Any) -> Snapshot | None:
        result: CommitResult = Transaction(self).add_action(action).commit()
        # The action's own snapshot (on a branch, or staged, it is not main's current one).
        made: Snapshot | None = getattr(action, "last_snapshot", None)
        if made is not None and self.metadata.snapshot_by_id(made.snapshot_id) is not None:
            return self.metadata.snapshot_by_id(made.snapshot_id)
        return self.metadata.snapshot_by_id(result.snapshot_id) if result.snapshot_id is not None else None

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
        from firn.core.actions.write import append_action

        action = append_action(self, data, branch=branch, snapshot_properties=snapshot_properties)
        if action is None:
            return None
        action.stage_only = stage_only
        return self._commit_writing(action)

    def add_files(
        self,
        paths: Iterable[str],
        *,
        branch: str = MAIN_BRANCH,
        check_duplicate_files: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Snapshot | None:
        """Register existing Parquet files (written with this schema's field ids or matching
        the name mapping) without rewriting them."""
        from firn.core.actions.write import add_files_action

        action = add_files_action(
            self,
            list(paths),
            branch=branch,
            check_duplicate_files=check_duplicate_files,
            snapshot_properties=snapshot_properties,
        )
        return self._commit(action)

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
        from firn.core.actions.write import overwrite_action

        action = overwrite_action(self, data, filter, branch=branch, snapshot_properties=snapshot_properties)
        if action.is_noop:  # no rows matched and no rows given: no empty snapshot
            return None
        return self._commit_writing(action)

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
        from firn.core.actions.write import delete_action

        action = delete_action(self, filter, branch=branch, snapshot_properties=snapshot_properties)
        if action.is_noop:  # no rows matched: no empty snapshot
            return None
        return self._commit_writing(action)

    def row_delta(
        self, *, branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None
    ) -> RowDelta:
        """A builder adding data files and delete files (DVs, position and equality deletes)
        in one commit: ``table.row_delta().add_rows(df).delete_rows_at(path, [0, 5]).commit()``."""
        from firn.core.actions.row_delta import RowDelta

        return RowDelta(self, branch=branch, snapshot_properties=snapshot_properties)

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
        from firn.core.actions.upsert import upsert_action

        action, result = upsert_action(
            self,
            data,
            join_cols,
            when_matched_update_all=when_matched_update_all,
            when_not_matched_insert_all=when_not_matched_insert_all,
            skip_unchanged_rows=skip_unchanged_rows,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )
        if action is not None:
            self._commit_writing(action)
        return result

    def _commit_writing(self, action: Any) -> Snapshot | None:
        """Commit an action that wrote data files first; delete them if the commit fails."""
        from firn.errors import CommitStateUnknown

        try:
            return self._commit(action)
        except CommitStateUnknown:
            raise
        except BaseException:
            written: list[str] = getattr(action, "written_data_files", list)()
            if written:
                # Best effort: orphan-file removal catches what this cleanup misses.
                with contextlib.suppress(Exception):
                    self.io.delete_many(written)
            raise

    # -- branches, tags and history -------------------------------------------------------------
    def manage_snapshots(self) -> ManageSnapshots:
        """A builder for branch/tag changes, rollback, set-current, cherry-pick and fast-forward,
        committed together by ``.commit()`` (or on leaving a ``with`` block)."""
        from firn.core.actions.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self)

    # -- maintenance and change detection ------------------------------------------------------
    @property
    def maintenance(self) -> TableMaintenance:
        """Maintenance operations (``flush_root``, ...), each with ``plan()`` and ``commit()``."""
        from firn.maintenance import TableMaintenance

        return TableMaintenance(self)

    def changes(
        self, from_snapshot_id: int | None, to_snapshot_id: int | None = None
    ) -> list[SnapshotChanges]:
        """Files added and removed by each snapshot after ``from_snapshot_id`` up to
        ``to_snapshot_id`` (default: current), oldest first. ``to`` must descend from ``from``.

        For V4 snapshots this reads only their roots and the leaves they changed."""
        from firn.core.trees import snapshot_changes, snapshots_between

        to_id = to_snapshot_id if to_snapshot_id is not None else self.metadata.current_snapshot_id
        if to_id is None:
            return []
        return [
            snapshot_changes(self.io, self.metadata, s)
            for s in snapshots_between(self.metadata, from_snapshot_id, to_id)
        ]

    # -- evolution ----------------------------------------------------------------------------------
    def update_schema(
        self, *, case_sensitive: bool = True, allow_incompatible_changes: bool = False
    ) -> UpdateSchema:
        from firn.core.actions.update_schema import UpdateSchema

        return UpdateSchema(
            self, case_sensitive=case_sensitive, allow_incompatible_changes=allow_incompatible_changes
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        from firn.core.actions.update_spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, /, **kwargs: str) -> None:
        """Set table properties (validated: a malformed known property raises ``ValidationError``)."""
        from firn.spec.properties import RESERVED_PROPERTIES, TableProperties

        updates = {str(k): str(v) for k, v in {**(properties or {}), **kwargs}.items()}
        bad = set(updates) & RESERVED_PROPERTIES
        if bad:
            raise ValidationError(
                f"{sorted(bad)} cannot be set as properties; use table.upgrade() for the format version"
            )
        TableProperties.parse({**self.properties, **updates})

        def fn(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
            return [SetProperties(updates)], []

        Transaction(self).add_action(SimpleAction(fn)).commit()

    def remove_properties(self, *keys: str) -> None:
        def fn(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
            present = tuple(k for k in keys if k in base.properties)
            return ([RemoveProperties(present)] if present else []), []

        Transaction(self).add_action(SimpleAction(fn)).commit()

    def upgrade(self, *, format_version: int) -> None:
        """Upgrade the table's format version (v1→v2→v3→v4; never downgrades)."""
        from firn.core.actions.upgrade import upgrade_action

        Transaction(self).add_action(upgrade_action(self, format_version)).commit()

    def __repr__(self) -> str:
        return f"Table({self.name!r}, format_version={self.metadata.format_version})"


__all__ = ["HistoryEntry", "Table"]
