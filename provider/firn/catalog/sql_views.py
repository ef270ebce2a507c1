"""The SQL catalog's view rows: Iceberg Java ``JdbcCatalog``'s layout (its "V1" schema).

A view is a row of ``iceberg_tables`` with ``iceberg_type = 'VIEW'``, in the same primary key
as tables (catalog, namespace, name), so a table and a view can never share a name, even when
two engines race to create them. Every statement here is Java's: insert with a NULL previous
location, ``... AND iceberg_type = 'VIEW'`` on lookups, drops and renames, and the commit::

    UPDATE iceberg_tables SET metadata_location = :new, previous_metadata_location = :expected
     WHERE catalog_name = :c AND table_namespace = :ns AND table_name = :v
       AND metadata_location = :expected AND iceberg_type = 'VIEW'

classified like the table commit (see :mod:`firn.catalog.sql`). A catalog whose table lacks
the ``iceberg_type`` column (Java's "V0" schema) holds no views: lookups find none, and
creating one raises ``Unsupported`` until it is opened with ``sql.schema-version=v1`` (Java:
``jdbc.schema-version=V1``), which adds the column.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from firn.catalog.sql_schema import (
    MAX_LOCATION_LENGTH,
    MAX_NAME_LENGTH,
    VIEW_TYPE,
    WRITE_OPTION,
    iceberg_tables,
    is_lock_conflict,
)
from firn.catalog.views import ViewCatalogMixin
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    NoSuchView,
    Unsupported,
)

logger = logging.getLogger(__name__)

# The module with the shared table definitions imports this one (SqlCatalog derives from the
# mixin below), so its names are imported inside the methods, once the module is complete.


class SqlViewsMixin(ViewCatalogMixin):
    """View primitives over ``iceberg_tables``; mixed into :class:`~firn.catalog.sql.SqlCatalog`."""

    if TYPE_CHECKING:
        _engine: Engine
        _has_type: bool
        _is_sqlite: bool

        @property
        @abstractmethod
        def url(self) -> str: ...

        @abstractmethod
        def _db(self, action: str) -> AbstractContextManager[None]: ...

        @abstractmethod
        def _write(self) -> AbstractContextManager[Connection]: ...

        @abstractmethod
        def _row(self, ns: str, name: str) -> sa.ColumnElement[bool]: ...

        @abstractmethod
        def _check_lengths(self, what: str, value: str, limit: int) -> None: ...

    def _require_view_support(self, action: str) -> None:
        if not self._has_type:
            raise Unsupported(
                f"cannot {action}: catalog {self.name!r} ({self.url}) uses the V0 JDBC schema, whose "
                "iceberg_tables has no iceberg_type column, so it cannot hold views; open it with "
                "sql.schema-version=v1 to add the column (Iceberg Java: jdbc.schema-version=V1)"
            )

    def _check_view_row(self, ns: str, name: str) -> None:

        self._require_view_support(f"store view '{ns}.{name}'")
        self._check_lengths("namespace", ns, MAX_NAME_LENGTH)
        self._check_lengths("view name", name, MAX_NAME_LENGTH)

    def _views_only(self) -> sa.ColumnElement[bool]:

        return iceberg_tables.c.iceberg_type == VIEW_TYPE

    def _view_names(self, ns: str) -> list[str]:

        if not self._has_type:
            return []
        t = iceberg_tables.c
        q = sa.select(t.table_name).where(
            t.catalog_name == self.name, t.table_namespace == ns, self._views_only()
        )
        with self._db(f"list views of namespace {ns!r}"), self._engine.connect() as conn:
            return list(conn.execute(q).scalars())

    def _view_get(self, ns: str, name: str) -> str | None:

        if not self._has_type:
            return None
        q = sa.select(iceberg_tables.c.metadata_location).where(self._row(ns, name), self._views_only())
        with self._db(f"look up view '{ns}.{name}'"), self._engine.connect() as conn:
            location: str | None = conn.execute(q).scalar_one_or_none()
        return location or None

    def _view_insert(self, ns: str, name: str, metadata_location: str) -> None:

        self._require_view_support(f"create view '{ns}.{name}'")
        self._check_lengths("namespace", ns, MAX_NAME_LENGTH)
        self._check_lengths("view name", name, MAX_NAME_LENGTH)
        self._check_lengths("metadata location", metadata_location, MAX_LOCATION_LENGTH)
        row = {
            "catalog_name": self.name,
            "table_namespace": ns,
            "table_name": name,
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
            "iceberg_type": VIEW_TYPE,
        }
        with self._db(f"create view '{ns}.{name}'"):
            try:
                with self._write() as conn:
                    conn.execute(sa.insert(iceberg_tables).values(**row))
            except IntegrityError as e:
                raise AlreadyExists(
                    f"a table or view '{ns}.{name}' already exists in catalog {self.name!r}"
                ) from e

    def _view_delete(self, ns: str, name: str) -> bool:

        if not self._has_type:
            return False
        with self._db(f"drop view '{ns}.{name}'"), self._write() as conn:
            stmt = sa.delete(iceberg_tables).where(self._row(ns, name), self._views_only())
            return bool(conn.execute(stmt).rowcount)

    def _view_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:

        self._require_view_support(f"rename view '{src_ns}.{src_name}'")
        self._check_lengths("namespace", dst_ns, MAX_NAME_LENGTH)
        self._check_lengths("view name", dst_name, MAX_NAME_LENGTH)
        stmt = (
            sa.update(iceberg_tables)
            .where(self._row(src_ns, src_name), self._views_only())
            .values(table_namespace=dst_ns, table_name=dst_name)
        )
        with self._db(f"rename view '{src_ns}.{src_name}'"):
            try:
                with self._write() as conn:
                    renamed = conn.execute(stmt).rowcount
            except IntegrityError as e:
                raise AlreadyExists(f"a table or view '{dst_ns}.{dst_name}' already exists") from e
        if not renamed:
            raise NoSuchView(f"view '{src_ns}.{src_name}' does not exist in catalog {self.name!r}")

    def _view_swap(self, ns: str, name: str, expected: str, new: str) -> None:

        ident = f"{ns}.{name}"
        self._require_view_support(f"commit view {ident!r}")
        self._check_lengths("metadata location", new, MAX_LOCATION_LENGTH)
        stmt = (
            sa.update(iceberg_tables)
            .where(self._row(ns, name), iceberg_tables.c.metadata_location == expected, self._views_only())
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        commit_error: BaseException | None = None
        try:
            conn = self._engine.connect()
        except SQLAlchemyError as e:
            raise self._view_not_applied(ident, "connect", e) from e
        with conn:
            try:
                conn.execution_options(**{WRITE_OPTION: True})
                trans = conn.begin()
                matched = conn.execute(stmt).rowcount
            except SQLAlchemyError as e:
                # Nothing was committed: the transaction dies with the statement or connection.
                raise self._view_not_applied(ident, "update", e) from e
            if matched == 1:
                try:
                    trans.commit()
                except Exception as e:
                    if is_lock_conflict(e):
                        raise CommitConflict(
                            f"commit of view {ident!r} aborted by the database ({e}); nothing was applied"
                        ) from e
                    commit_error = e
                else:
                    return
            else:
                trans.rollback()
        if commit_error is not None:
            # COMMIT failed in flight: it happened if the pointer shows the new file.
            try:
                if self._view_get(ns, name) == new:
                    logger.warning("commit of view %s reported %r but was applied", ident, commit_error)
                    return
            except FirnError as check_error:
                logger.warning("could not check the outcome of the commit of view %s: %s", ident, check_error)
            raise CommitStateUnknown(
                f"commit of view {ident!r} to {new} may or may not have been applied (COMMIT failed: "
                f"{commit_error}); keep the new metadata file and check the view before retrying"
            ) from commit_error
        if matched > 1:  # impossible with the primary key, but never commit a multi-row swap
            raise FirnError(f"commit of view {ident!r} matched {matched} catalog rows; nothing was applied")
        current = self._view_get(ns, name)
        if current is None:
            raise NoSuchView(f"cannot commit: view {ident!r} does not exist in catalog {self.name!r}")
        raise CommitConflict(
            f"view {ident!r} was changed concurrently: expected metadata {expected}, catalog has {current}"
        )

    def _view_not_applied(self, ident: str, step: str, error: SQLAlchemyError) -> FirnError:
        """The error for a view swap that certainly did not happen."""

        detail = getattr(error, "orig", None) or error
        transient = is_lock_conflict(error) or (
            not self._is_sqlite
            and (
                isinstance(error, OperationalError)
                or (isinstance(error, DBAPIError) and error.connection_invalidated)
            )
        )
        if transient:
            return CommitConflict(
                f"commit of view {ident!r} failed before it was applied ({step}: {detail}); "
                "nothing changed, retrying is safe"
            )
        return FirnError(f"commit of view {ident!r} failed ({step}: {detail}); nothing was applied")


__all__ = ["SqlViewsMixin"]
