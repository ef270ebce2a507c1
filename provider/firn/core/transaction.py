"""Transactions: the whole write API of a table, committed as one metadata version.

Every change goes through a :class:`Transaction`; ``Table.append(...)`` and the other write
methods of the ``Table`` front object are ``with table.transaction() as tx: tx.append(...)``.
Changes apply in the order they are made, and commit atomically when the transaction does
(its :meth:`~Transaction.commit`, or a clean exit from a ``with`` block)::

    with table.transaction() as tx:
        tx.append(batch)
        tx.delete("day < '2024-01-01'")
        tx.set_properties({"owner": "ingest"})

Data files are written when a change is made (``append``, ``overwrite``, ``delete``,
``upsert``), from the metadata the transaction started on; the metadata tree is written at
commit, against the table as it is then. If the commit fails, the files it wrote are deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from firn.core.actions.append import AppendFiles
from firn.core.actions.manage_snapshots import ManageSnapshots
from firn.core.actions.replace_partitions import replace_partitions_action
from firn.core.actions.row_delta import RowDelta
from firn.core.actions.update_schema import UpdateSchema
from firn.core.actions.update_spec import UpdateSpec
from firn.core.actions.upgrade import upgrade_action
from firn.core.actions.upsert import UpsertResult, upsert_action
from firn.core.actions.write import (
    add_files_action,
    append_action,
    delete_action,
    overwrite_action,
    overwrite_files_action,
)
from firn.core.commit import Action, CommitResult, SimpleAction, commit_actions
from firn.core.handle import TableHandle
from firn.core.updates import RemoveProperties, SetProperties, TableRequirement, TableUpdate
from firn.errors import FirnError, ValidationError
from firn.spec.content import DataFile
from firn.spec.properties import RESERVED_PROPERTIES, IsolationLevel, TableProperties
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from firn.expressions import BooleanExpression


class Transaction:
    """A set of changes to one table that commit atomically (one new metadata version).

    ``autocommit=True`` is for single changes made through the ``Table``: builders it makes
    (``update_schema()``, ``row_delta()``, ...) commit on their own ``commit()``.
    """

    def __init__(self, table: TableHandle, *, autocommit: bool = False) -> None:
        self._table = table
        self._start = table.metadata
        self._actions: list[Action] = []
        self._autocommit = autocommit
        self._result: CommitResult | None = None

    @property
    def table(self) -> TableHandle:
        return self._table

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @property
    def start_metadata(self) -> TableMetadata:
        """The metadata the transaction's changes were planned on."""
        return self._start

    @property
    def result(self) -> CommitResult | None:
        """What the commit did, once committed."""
        return self._result

    def add_action(self, action: Action) -> Transaction:
        """Add a change (an :class:`~firn.core.commit.Action`); the write methods below do this."""
        if self._result is not None:
            raise FirnError("this transaction has already been committed")
        self._actions.append(action)
        return self

    # -- data ------------------------------------------------------------------------------------------
    def append(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        stage_only: bool = False,
    ) -> Transaction:
        """Write ``data`` as Parquet files (partitioned, split by target size) and add them in an
        ``append`` snapshot (none for empty data). ``stage_only`` adds the snapshot without
        moving any branch (write-audit-publish: publish it with ``manage_snapshots().cherry_pick``)."""
        action = append_action(
            self._table, data, branch=branch, snapshot_properties=snapshot_properties, stage_only=stage_only
        )
        return self.add_action(action) if action is not None else self

    def add_files(
        self,
        paths: Iterable[str],
        *,
        branch: str = MAIN_BRANCH,
        check_duplicate_files: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Register existing Parquet files (written with this schema's field ids or matching the
        name mapping) without rewriting them."""
        action = add_files_action(
            self._table,
            list(paths),
            branch=branch,
            check_duplicate_files=check_duplicate_files,
            snapshot_properties=snapshot_properties,
        )
        return self.add_action(action)

    def overwrite(
        self,
        data: pa.Table,
        filter: BooleanExpression | str | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Replace the rows matching ``filter`` (default: all rows) with ``data`` in one snapshot
        (none when nothing matched and ``data`` is empty)."""
        action = overwrite_action(
            self._table, data, filter, branch=branch, snapshot_properties=snapshot_properties
        )
        return self if action.is_noop else self.add_action(action)

    def append_files(
        self,
        data_files: Sequence[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        delete_on_failure: bool = False,
    ) -> Transaction:
        """Add data files already written with this table's schema and a spec of it (e.g. by
        Spark tasks through ``firn.core.writer.write_data_files``) in an ``append`` snapshot
        (none when there are no files). ``delete_on_failure``: delete them if the commit
        definitely fails (never when its outcome is unknown)."""
        if not data_files:
            return self
        written = [f.file_path for f in data_files] if delete_on_failure else []
        action = AppendFiles(
            data_files, branch=branch, snapshot_properties=snapshot_properties, written_files=written
        )
        return self.add_action(action)

    def overwrite_files(
        self,
        data_files: Sequence[DataFile],
        filter: BooleanExpression | str | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        delete_on_failure: bool = False,
    ) -> Transaction:
        """:meth:`overwrite` with data files already written: replace the rows matching
        ``filter`` (default: all rows) with ``data_files`` in one snapshot, validated per
        ``write.merge.isolation-level`` (none when nothing matched and there are no files)."""
        action = overwrite_files_action(
            self._table,
            data_files,
            filter,
            branch=branch,
            snapshot_properties=snapshot_properties,
            delete_on_failure=delete_on_failure,
        )
        return self if action.is_noop else self.add_action(action)

    def replace_partitions(
        self,
        data_files: Sequence[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        isolation_level: IsolationLevel | None = None,
        snapshot_properties: Mapping[str, str] | None = None,
        delete_on_failure: bool = False,
    ) -> Transaction:
        """Dynamic partition overwrite: replace every partition ``data_files`` fall in with them
        (see ``firn.core.actions.replace_partitions``); isolation defaults to
        ``write.merge.isolation-level``. No snapshot when there are no files."""
        action = replace_partitions_action(
            self._table,
            data_files,
            branch=branch,
            isolation_level=isolation_level,
            snapshot_properties=snapshot_properties,
            written_files=[f.file_path for f in data_files] if delete_on_failure else (),
        )
        return self if action is None else self.add_action(action)

    def delete(
        self,
        filter: BooleanExpression | str,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Delete the rows matching ``filter``: whole files it covers are dropped, the rest per
        ``write.delete.mode`` (copy-on-write, or merge-on-read deletion vectors / position
        deletes). No snapshot when no row matched."""
        action = delete_action(self._table, filter, branch=branch, snapshot_properties=snapshot_properties)
        return self if action.is_noop else self.add_action(action)

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
        """Update the rows whose ``join_cols`` match a row of ``data`` and insert the rest, in one
        snapshot (see ``firn.core.actions.upsert``). Returns the row counts it will commit."""
        action, result = upsert_action(
            self._table,
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
            self.add_action(action)
        return result

    def row_delta(
        self, *, branch: str = MAIN_BRANCH, snapshot_properties: Mapping[str, str] | None = None
    ) -> RowDelta:
        """A builder adding data files and delete files (DVs, position and equality deletes) in
        one snapshot: ``tx.row_delta().add_rows(df).delete_rows_at(path, [0, 5])``."""
        return RowDelta(self, branch=branch, snapshot_properties=snapshot_properties)

    # -- evolution and refs ---------------------------------------------------------------------------
    def update_schema(
        self, *, case_sensitive: bool = True, allow_incompatible_changes: bool = False
    ) -> UpdateSchema:
        """A builder of schema changes (add, drop, rename, promote, reorder columns)."""
        return UpdateSchema(
            self, case_sensitive=case_sensitive, allow_incompatible_changes=allow_incompatible_changes
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """A builder of partition spec changes."""
        return UpdateSpec(self, case_sensitive=case_sensitive)

    def manage_snapshots(self) -> ManageSnapshots:
        """A builder of branch and tag changes, rollback, set-current, cherry-pick, fast-forward."""
        return ManageSnapshots(self)

    def upgrade(self, *, format_version: int) -> Transaction:
        """Upgrade the format version (v1→v2→v3→v4; never downgrades; metadata only)."""
        return self.add_action(upgrade_action(self._table, format_version))

    def set_properties(self, properties: Mapping[str, str] | None = None, /, **kwargs: str) -> Transaction:
        """Set table properties (validated: a malformed known property raises ``ValidationError``)."""
        updates = {str(k): str(v) for k, v in {**(properties or {}), **kwargs}.items()}
        bad = set(updates) & RESERVED_PROPERTIES
        if bad:
            raise ValidationError(
                f"{sorted(bad)} cannot be set as properties; use upgrade() for the format version"
            )
        TableProperties.parse({**self._start.properties, **updates})

        def fn(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
            return [SetProperties(updates)], []

        return self.add_action(SimpleAction(fn))

    def remove_properties(self, *keys: str) -> Transaction:
        """Remove table properties (absent keys are ignored)."""

        def fn(base: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
            present = tuple(k for k in keys if k in base.properties)
            return ([RemoveProperties(present)] if present else []), []

        return self.add_action(SimpleAction(fn))

    # -- committing ------------------------------------------------------------------------------------
    def commit(self) -> CommitResult:
        """Apply every change and land them as one metadata version; retries conflicts per
        ``commit.retry.*`` (see ``firn.core.commit``)."""
        if self._result is not None:
            raise FirnError("this transaction has already been committed")
        self._result = commit_actions(self._table, self._actions, self._start)
        return self._result

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None and self._result is None:
            self.commit()


__all__ = ["Transaction"]
