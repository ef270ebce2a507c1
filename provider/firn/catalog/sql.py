"""The SQL catalog: SQLite (embedded default) or PostgreSQL through SQLAlchemy.

It uses exactly the tables of Iceberg Java's ``JdbcCatalog`` (V1 schema) and PyIceberg's
``SqlCatalog``, so those engines can share one catalog::

    iceberg_tables (catalog_name, table_namespace, table_name,        -- primary key
                    metadata_location, previous_metadata_location,
                    iceberg_type)            -- 'TABLE' / 'VIEW'; NULL (old rows) means table
    iceberg_namespace_properties (catalog_name, namespace, property_key,  -- primary key
                                  property_value)

Catalogs created by older Java versions lack ``iceberg_type`` (the "V0" schema); Firn then
works without it (and without views), or adds it when ``sql.schema-version=v1`` is set. Views
are rows with ``iceberg_type = 'VIEW'`` (:mod:`firn.catalog.sql_views`).

The commit is one statement, the spec's check-and-put ("Metastore Tables")::

    UPDATE iceberg_tables SET metadata_location = :new, previous_metadata_location = :expected
     WHERE catalog_name = :c AND table_namespace = :ns AND table_name = :t
       AND metadata_location = :expected

run in an explicit transaction, which makes failures classifiable: anything that goes wrong
before ``COMMIT`` is sent leaves the catalog unchanged (the server rolls back an uncommitted
transaction, also when the connection drops), so it is reported as a retryable
``CommitConflict`` when transient (lock timeout, serialization failure, lost connection) and
as ``FirnError`` otherwise. Only a failure of the ``COMMIT`` itself is ambiguous: then the
pointer is re-read, and if it (or the current metadata's log) shows the new location the
commit succeeded; otherwise ``CommitStateUnknown`` is raised.

SQLite settings, for many processes sharing one file: every connection sets a busy timeout
(``sqlite.busy-timeout-ms``, default 5000) so lock waits queue instead of failing; the
database uses WAL journaling (``sqlite.journal-mode``, default ``wal``) so readers never block
the writer; write transactions start with ``BEGIN IMMEDIATE`` so the write lock is taken up
front (a busy error then means nothing was applied) and are one or two statements long.
WAL needs shared memory, so it does not work on network filesystems: use ``delete`` there.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from firn.catalog.base_catalog import EntryKind
from firn.catalog.lease import LeaseInfo
from firn.catalog.sql_schema import (
    ICEBERG_TABLES,
    LEASE_SCHEMA,
    MAINTENANCE_LEASES,
    MAX_LOCATION_LENGTH,
    MAX_NAME_LENGTH,
    NAMESPACE_PROPERTIES,
    SCHEMA,
    TABLE_TYPE,
    VIEW_TYPE,
    WRITE_OPTION,
    iceberg_tables,
    is_lock_conflict,
    maintenance_leases,
    namespace_properties,
)
from firn.catalog.sql_views import SqlViewsMixin
from firn.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    FirnError,
    NoSuchTable,
    ValidationError,
)
from firn.io.base import FileIO
from firn.io.pyarrow_io import parse_bool
from firn.util.secrets import mask_secrets

logger = logging.getLogger(__name__)

# -- properties --------------------------------------------------------------------------------
URI = "uri"
SQLITE_BUSY_TIMEOUT_MS = "sqlite.busy-timeout-ms"
DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5000
SQLITE_JOURNAL_MODE = "sqlite.journal-mode"
DEFAULT_SQLITE_JOURNAL_MODE = "wal"
SQLITE_SYNCHRONOUS = "sqlite.synchronous"  # unset: SQLite's default (FULL)
INIT_CATALOG_TABLES = "sql.init-catalog-tables"
SCHEMA_VERSION = "sql.schema-version"  # "v1" upgrades a V0 catalog (adds iceberg_type)
POOL_PRE_PING = "sql.pool-pre-ping"

_JOURNAL_MODES = frozenset({"wal", "delete", "truncate", "persist", "memory", "off"})
_SYNCHRONOUS = frozenset({"off", "normal", "full", "extra", "0", "1", "2", "3"})


def normalize_sql_uri(uri: str) -> URL:
    """A SQLAlchemy URL; ``postgresql://`` and ``postgres://`` get the psycopg 3 driver."""
    if uri.startswith("postgres://"):
        uri = "postgresql://" + uri[len("postgres://") :]
    try:
        url = make_url(uri)
    except (SQLAlchemyError, ValueError) as e:
        raise ValidationError(mask_secrets(f"invalid catalog URI {uri!r}: {e}")) from e
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url


def _escape_like(value: str) -> str:
    return value.replace("!", "!!").replace("%", "!%").replace("_", "!_")


class SqlCatalog(SqlViewsMixin):
    """A catalog in SQL tables shared with Iceberg Java's JDBC catalog and PyIceberg.

    ``uri`` is a SQLAlchemy URL: ``sqlite:///path/catalog.db`` or
    ``postgresql+psycopg://user@host/db`` (``postgresql://`` means psycopg 3 too). Several
    catalogs (``name``) can share one database; each sees only its own rows.

    ``sqlite://`` (an in-memory database) keeps one shared connection so every thread sees
    the same data; it is meant for tests and single-threaded use, not concurrent writers.
    """

    def __init__(
        self,
        name: str,
        uri: str,
        *,
        warehouse: str | None = None,
        io: FileIO | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        if len(name) > MAX_NAME_LENGTH:
            raise ValidationError(f"catalog name longer than {MAX_NAME_LENGTH} characters: {name!r}")
        super().__init__(name, warehouse=warehouse, io=io, properties={**(properties or {}), URI: uri})
        self._url = normalize_sql_uri(uri)
        self._is_sqlite = self._url.get_backend_name() == "sqlite"
        self._engine = self._create_engine()
        self._has_type = True
        self._leases_ready = False
        try:
            self._init_schema()
        except BaseException:
            self._engine.dispose()
            raise

    # -- connection setup ----------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def url(self) -> str:
        """The database URL with any password masked."""
        return self._url.render_as_string(hide_password=True)

    def close(self) -> None:
        super().close()
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"SqlCatalog({self.name!r}, {self.url!r}, warehouse={self.warehouse!r})"

    def _create_engine(self) -> Engine:
        props = self._properties
        if not self._is_sqlite:
            try:
                return sa.create_engine(
                    self._url, pool_pre_ping=parse_bool(props.get(POOL_PRE_PING), default=True)
                )
            except (SQLAlchemyError, ImportError) as e:
                raise FirnError(f"catalog {self.name!r}: cannot use {self.url}: {e}") from e
        busy_ms = int(props.get(SQLITE_BUSY_TIMEOUT_MS, DEFAULT_SQLITE_BUSY_TIMEOUT_MS))
        journal = props.get(SQLITE_JOURNAL_MODE, DEFAULT_SQLITE_JOURNAL_MODE).lower()
        synchronous = props.get(SQLITE_SYNCHRONOUS, "").lower() or None
        if journal not in _JOURNAL_MODES:
            raise ValidationError(
                f"{SQLITE_JOURNAL_MODE} must be one of {sorted(_JOURNAL_MODES)}, got {journal!r}"
            )
        if synchronous is not None and synchronous not in _SYNCHRONOUS:
            raise ValidationError(
                f"{SQLITE_SYNCHRONOUS} must be one of {sorted(_SYNCHRONOUS)}, got {synchronous!r}"
            )
        database = self._url.database or ""
        in_memory = database in ("", ":memory:") or self._url.query.get("mode") == "memory"
        if not in_memory and not self._url.query.get("uri"):
            # SQLite creates the file but not its directory; do that too so a fresh
            # ``sqlite:///some/dir/catalog.db`` just works.
            os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)
        connect_args: dict[str, Any] = {"timeout": busy_ms / 1000}
        kwargs: dict[str, Any] = {}
        if in_memory:
            # One shared connection, or every pooled connection would see its own empty database.
            kwargs["poolclass"] = StaticPool
            connect_args["check_same_thread"] = False
        try:
            engine = sa.create_engine(self._url, connect_args=connect_args, **kwargs)
        except SQLAlchemyError:
            raise ValidationError(
                f"catalog {self.name!r}: {self.url!r} is not a SQLite catalog URI; use "
                "sqlite:///relative/path/catalog.db, sqlite:////absolute/path/catalog.db or "
                "sqlite:// (in memory)"
            ) from None

        def on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
            # Autocommit at the driver level: pysqlite's implicit BEGIN would defer locking to
            # the first write; the "begin" hook below issues BEGIN [IMMEDIATE] itself instead.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            try:
                cur.execute(f"PRAGMA busy_timeout = {busy_ms:d}")
                if not in_memory and cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != journal:
                    cur.execute(f"PRAGMA journal_mode = {journal}")
                if synchronous is not None:
                    cur.execute(f"PRAGMA synchronous = {synchronous}")
            finally:
                cur.close()

        def on_begin(conn: Connection) -> None:
            mode = "IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "DEFERRED"
            conn.exec_driver_sql(f"BEGIN {mode}")

        event.listen(engine, "connect", on_connect)
        event.listen(engine, "begin", on_begin)
        return engine

    def _init_schema(self) -> None:
        """Create the two tables if missing; detect (or add) the ``iceberg_type`` column."""
        with self._db("inspect the catalog tables"):
            existing = set(sa.inspect(self._engine).get_table_names())
            if not {ICEBERG_TABLES, NAMESPACE_PROPERTIES} <= existing:
                if not parse_bool(self._properties.get(INIT_CATALOG_TABLES), default=True):
                    raise FirnError(
                        f"catalog tables are missing in {self.url} and {INIT_CATALOG_TABLES} is false"
                    )
                self._create_tables()
            columns = {c["name"].lower() for c in sa.inspect(self._engine).get_columns(ICEBERG_TABLES)}
        self._has_type = "iceberg_type" in columns
        if not self._has_type and self._properties.get(SCHEMA_VERSION, "").lower() == "v1":
            with self._db("add the iceberg_type column"), self._write() as conn:
                conn.exec_driver_sql(f"ALTER TABLE {ICEBERG_TABLES} ADD COLUMN iceberg_type VARCHAR(5)")
            self._has_type = True
        if not self._has_type:
            logger.warning("catalog %s uses the V0 JDBC schema (no iceberg_type column)", self.url)

    def _create_tables(self) -> None:
        try:
            with self._write() as conn:
                SCHEMA.create_all(conn, checkfirst=True)
        except (OperationalError, ProgrammingError, IntegrityError):
            # Another process may have created them at the same moment; that is fine.
            if not {ICEBERG_TABLES, NAMESPACE_PROPERTIES} <= set(sa.inspect(self._engine).get_table_names()):
                raise

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A connection in a write transaction (BEGIN IMMEDIATE on SQLite), committed on exit."""
        with self._engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _db(self, action: str) -> Iterator[None]:
        """Translate driver errors into ``FirnError`` naming the catalog and the action."""
        try:
            yield
        except FirnError:
            raise
        except SQLAlchemyError as e:
            detail = getattr(e, "orig", None) or e
            hint = " (the database stayed locked longer than the busy timeout)" if is_lock_conflict(e) else ""
            raise FirnError(
                mask_secrets(f"catalog {self.name!r} ({self.url}): {action} failed: {detail}{hint}")
            ) from e

    def _check_lengths(self, what: str, value: str, limit: int) -> None:
        if len(value) > limit:
            raise ValidationError(
                f"{what} is longer than the catalog's {limit}-character column: {value[:80]}..."
            )

    def _check_properties(self, props: Mapping[str, str]) -> None:
        super()._check_properties(props)
        for key, value in props.items():
            self._check_lengths("namespace property key", key, MAX_NAME_LENGTH)
            self._check_lengths(f"value of namespace property {key!r}", value, MAX_LOCATION_LENGTH)

    def _tables_only(self) -> sa.ColumnElement[bool]:
        """Rows that are tables: views written by Java or other engines are skipped."""
        t = iceberg_tables.c
        if not self._has_type:
            return sa.true()
        return sa.or_(t.iceberg_type == TABLE_TYPE, t.iceberg_type.is_(None))

    def _row(self, ns: str, name: str) -> sa.ColumnElement[bool]:
        t = iceberg_tables.c
        return sa.and_(t.catalog_name == self.name, t.table_namespace == ns, t.table_name == name)

    # -- namespaces ----------------------------------------------------------------------------
    def _ns_filter(self, column: sa.ColumnElement[str], ns: str) -> sa.ColumnElement[bool]:
        return sa.or_(column == ns, column.like(_escape_like(ns) + ".%", escape="!"))

    def _ns_exists(self, ns: str) -> bool:
        t, p = iceberg_tables.c, namespace_properties.c
        in_props = sa.select(p.namespace).where(p.catalog_name == self.name, self._ns_filter(p.namespace, ns))
        in_tables = sa.select(t.table_namespace).where(
            t.catalog_name == self.name, self._ns_filter(t.table_namespace, ns)
        )
        with self._db(f"look up namespace {ns!r}"), self._engine.connect() as conn:
            if conn.execute(in_props.limit(1)).first() is not None:
                return True
            return conn.execute(in_tables.limit(1)).first() is not None

    def _ns_names(self, prefix: str) -> set[str]:
        t, p = iceberg_tables.c, namespace_properties.c
        q_props = sa.select(p.namespace).where(p.catalog_name == self.name)
        q_tables = sa.select(t.table_namespace).where(t.catalog_name == self.name)
        if prefix:
            q_props = q_props.where(self._ns_filter(p.namespace, prefix))
            q_tables = q_tables.where(self._ns_filter(t.table_namespace, prefix))
        with self._db("list namespaces"), self._engine.connect() as conn:
            return set(conn.execute(sa.union(q_props, q_tables)).scalars())

    def _ns_entries(self, ns: str) -> list[str]:
        t = iceberg_tables.c
        q = sa.select(t.table_name).where(t.catalog_name == self.name, t.table_namespace == ns)
        with self._db(f"list entries of namespace {ns!r}"), self._engine.connect() as conn:
            return list(conn.execute(q).scalars())

    def _ns_load(self, ns: str) -> dict[str, str]:
        p = namespace_properties.c
        q = sa.select(p.property_key, p.property_value).where(p.catalog_name == self.name, p.namespace == ns)
        with self._db(f"load properties of namespace {ns!r}"), self._engine.connect() as conn:
            return {row[0]: row[1] for row in conn.execute(q)}

    def _ns_insert(self, ns: str, properties: Mapping[str, str]) -> None:
        self._check_lengths("namespace", ns, MAX_NAME_LENGTH)
        rows = [
            {"catalog_name": self.name, "namespace": ns, "property_key": k, "property_value": v}
            for k, v in properties.items()
        ]
        with self._db(f"create namespace {ns!r}"):
            try:
                with self._write() as conn:
                    conn.execute(sa.insert(namespace_properties), rows)
            except IntegrityError as e:
                raise AlreadyExists(f"namespace {ns!r} already exists in catalog {self.name!r}") from e

    def _ns_delete(self, ns: str) -> None:
        p = namespace_properties.c
        with self._db(f"drop namespace {ns!r}"), self._write() as conn:
            conn.execute(
                sa.delete(namespace_properties).where(p.catalog_name == self.name, p.namespace == ns)
            )

    def _ns_update(self, ns: str, removals: set[str], updates: Mapping[str, str]) -> None:
        p = namespace_properties.c
        this_ns = sa.and_(p.catalog_name == self.name, p.namespace == ns)
        with self._db(f"update properties of namespace {ns!r}"), self._write() as conn:
            if removals:
                conn.execute(
                    sa.delete(namespace_properties).where(this_ns, p.property_key.in_(sorted(removals)))
                )
            for key, value in updates.items():
                changed = conn.execute(
                    sa.update(namespace_properties)
                    .where(this_ns, p.property_key == key)
                    .values(property_value=value)
                ).rowcount
                if not changed:
                    conn.execute(
                        sa.insert(namespace_properties).values(
                            catalog_name=self.name, namespace=ns, property_key=key, property_value=value
                        )
                    )

    # -- tables --------------------------------------------------------------------------------
    def _tbl_names(self, ns: str) -> list[str]:
        t = iceberg_tables.c
        q = sa.select(t.table_name).where(
            t.catalog_name == self.name, t.table_namespace == ns, self._tables_only()
        )
        with self._db(f"list tables of namespace {ns!r}"), self._engine.connect() as conn:
            return list(conn.execute(q).scalars())

    def _tbl_get(self, ns: str, name: str) -> str | None:
        q = sa.select(iceberg_tables.c.metadata_location).where(self._row(ns, name), self._tables_only())
        with self._db(f"look up table '{ns}.{name}'"), self._engine.connect() as conn:
            location: str | None = conn.execute(q).scalar_one_or_none()
        return location or None

    def _all_entries(self) -> list[tuple[str, str, str, EntryKind]]:
        t = iceberg_tables.c
        kind = t.iceberg_type if self._has_type else sa.null()
        q = sa.select(t.table_namespace, t.table_name, t.metadata_location, kind).where(
            t.catalog_name == self.name
        )
        with self._db("list every table and view"), self._engine.connect() as conn:
            rows = conn.execute(q).all()
        return [
            (ns, name, location, "view" if typ == VIEW_TYPE else "table")
            for ns, name, location, typ in rows
            if location
        ]

    def _check_table_row(self, ns: str, name: str, metadata_location: str) -> None:
        self._check_lengths("namespace", ns, MAX_NAME_LENGTH)
        self._check_lengths("table name", name, MAX_NAME_LENGTH)
        self._check_lengths("metadata location", metadata_location, MAX_LOCATION_LENGTH)

    def _tbl_insert(self, ns: str, name: str, metadata_location: str) -> None:
        self._check_table_row(ns, name, metadata_location)
        row: dict[str, str | None] = {
            "catalog_name": self.name,
            "table_namespace": ns,
            "table_name": name,
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._has_type:
            row["iceberg_type"] = TABLE_TYPE
        with self._db(f"create table '{ns}.{name}'"):
            try:
                with self._write() as conn:
                    conn.execute(sa.insert(iceberg_tables).values(**row))
            except IntegrityError as e:
                raise AlreadyExists(
                    f"a table or view '{ns}.{name}' already exists in catalog {self.name!r}"
                ) from e

    def _tbl_delete(self, ns: str, name: str) -> bool:
        with self._db(f"drop table '{ns}.{name}'"), self._write() as conn:
            stmt = sa.delete(iceberg_tables).where(self._row(ns, name), self._tables_only())
            return bool(conn.execute(stmt).rowcount)

    def _tbl_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:
        self._check_lengths("namespace", dst_ns, MAX_NAME_LENGTH)
        self._check_lengths("table name", dst_name, MAX_NAME_LENGTH)
        stmt = (
            sa.update(iceberg_tables)
            .where(self._row(src_ns, src_name), self._tables_only())
            .values(table_namespace=dst_ns, table_name=dst_name)
        )
        with self._db(f"rename table '{src_ns}.{src_name}'"):
            try:
                with self._write() as conn:
                    renamed = conn.execute(stmt).rowcount
            except IntegrityError as e:
                raise AlreadyExists(f"a table or view '{dst_ns}.{dst_name}' already exists") from e
        if not renamed:
            raise NoSuchTable(f"table '{src_ns}.{src_name}' does not exist in catalog {self.name!r}")

    # -- the maintenance lease (firn.catalog.lease) ---------------------------------------------
    def _db_now_ms(self) -> sa.ColumnElement[int]:
        """The database's clock in epoch milliseconds: every host compares expiry times
        against one clock, so skew between machines cannot end a lease early."""
        if self._is_sqlite:
            return sa.literal_column("CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)")
        return sa.literal_column("CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)")

    def _ensure_lease_table(self) -> None:
        if self._leases_ready:
            return
        try:
            with self._db("create the maintenance lease table"), self._write() as conn:
                LEASE_SCHEMA.create_all(conn, checkfirst=True)
        except FirnError:
            # Another process may have created it at the same moment; that is fine.
            if MAINTENANCE_LEASES not in sa.inspect(self._engine).get_table_names():
                raise
        self._leases_ready = True

    def _lease_row(self, ns: str, name: str) -> sa.ColumnElement[bool]:
        c = maintenance_leases.c
        return sa.and_(c.catalog_name == self.name, c.table_namespace == ns, c.table_name == name)

    def _read_lease(self, conn: Connection, ns: str, name: str) -> tuple[LeaseInfo | None, int]:
        c = maintenance_leases.c
        now = conn.execute(sa.select(self._db_now_ms())).scalar_one()
        row = conn.execute(
            sa.select(c.lease_id, c.owner, c.operation, c.acquired_at_ms, c.expires_at_ms).where(
                self._lease_row(ns, name)
            )
        ).first()
        if row is None:
            return None, int(now)
        return LeaseInfo(f"{ns}.{name}", row[1], row[2], row[0], int(row[3]), int(row[4])), int(now)

    def _lease_acquire(
        self, ns: str, name: str, lease_id: str, owner: str, operation: str, duration_ms: int
    ) -> tuple[LeaseInfo, int]:
        self._check_lengths("lease owner", owner, MAX_LOCATION_LENGTH)
        self._ensure_lease_table()
        now = self._db_now_ms()
        values = {
            "catalog_name": self.name,
            "table_namespace": ns,
            "table_name": name,
            "lease_id": lease_id,
            "owner": owner,
            "operation": operation,
            "acquired_at_ms": now,
            "expires_at_ms": now + duration_ms,
        }
        # One statement: insert the row, or take it over only where it has expired. Two
        # processes racing serialize on the row (SQLite: BEGIN IMMEDIATE; Postgres: the unique
        # index, then the row lock and a re-check of the WHERE on the committed row), so
        # exactly one of them gets it.
        dialect = sqlite_dialect if self._is_sqlite else pg_dialect
        stmt = dialect.insert(maintenance_leases).values(**values)
        stmt = stmt.on_conflict_do_update(
            index_elements=["catalog_name", "table_namespace", "table_name"],
            set_={
                k: stmt.excluded[k]
                for k in ("lease_id", "owner", "operation", "acquired_at_ms", "expires_at_ms")
            },
            where=maintenance_leases.c.expires_at_ms <= now,
        )
        with self._db(f"acquire the maintenance lease of '{ns}.{name}'"), self._write() as conn:
            conn.execute(stmt)
            row, clock = self._read_lease(conn, ns, name)
        if row is None:
            raise FirnError(f"catalog {self.name!r}: the maintenance lease row of '{ns}.{name}' vanished")
        return row, clock

    def _lease_renew(self, ns: str, name: str, lease_id: str, duration_ms: int) -> int | None:
        c = maintenance_leases.c
        stmt = (
            sa.update(maintenance_leases)
            .where(self._lease_row(ns, name), c.lease_id == lease_id)
            .values(expires_at_ms=self._db_now_ms() + duration_ms)
        )
        with self._db(f"renew the maintenance lease of '{ns}.{name}'"), self._write() as conn:
            if conn.execute(stmt).rowcount != 1:
                return None
            row, _ = self._read_lease(conn, ns, name)
        return row.expires_at_ms if row is not None else None

    def _lease_release(self, ns: str, name: str, lease_id: str) -> None:
        c = maintenance_leases.c
        stmt = (
            sa.update(maintenance_leases)
            .where(self._lease_row(ns, name), c.lease_id == lease_id)
            .values(expires_at_ms=self._db_now_ms())
        )
        with self._db(f"release the maintenance lease of '{ns}.{name}'"), self._write() as conn:
            conn.execute(stmt)

    def _lease_get(self, ns: str, name: str) -> tuple[LeaseInfo | None, int]:
        self._ensure_lease_table()
        with self._db(f"read the maintenance lease of '{ns}.{name}'"), self._engine.connect() as conn:
            return self._read_lease(conn, ns, name)

    # -- the compare-and-swap ------------------------------------------------------------------
    def _tbl_swap(self, ns: str, name: str, expected: str, new: str) -> None:
        self._check_lengths("metadata location", new, MAX_LOCATION_LENGTH)
        ident = f"{ns}.{name}"
        stmt = (
            sa.update(iceberg_tables)
            .where(self._row(ns, name), iceberg_tables.c.metadata_location == expected, self._tables_only())
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        commit_error: BaseException | None = None
        try:
            conn = self._engine.connect()
        except SQLAlchemyError as e:
            raise self._not_applied(ident, "connect", e) from e
        with conn:
            try:
                conn.execution_options(**{WRITE_OPTION: True})
                trans = conn.begin()
                matched = conn.execute(stmt).rowcount
            except SQLAlchemyError as e:
                # Nothing was committed: the transaction dies with the statement or connection.
                raise self._not_applied(ident, "update", e) from e
            if matched == 1:
                try:
                    trans.commit()
                except Exception as e:
                    if is_lock_conflict(e):
                        raise CommitConflict(
                            f"commit of table {ident!r} aborted by the database ({e}); nothing was applied"
                        ) from e
                    commit_error = e
                else:
                    return
            else:
                trans.rollback()
        if commit_error is not None:
            self._resolve_unknown(ns, name, new, commit_error)
            return
        if matched > 1:  # impossible with the primary key, but never commit a multi-row swap
            raise FirnError(f"commit of table {ident!r} matched {matched} catalog rows; nothing was applied")
        current = self._tbl_get(ns, name)
        if current is None:
            raise NoSuchTable(f"cannot commit: table {ident!r} does not exist in catalog {self.name!r}")
        raise CommitConflict(
            f"table {ident!r} was changed concurrently: expected metadata {expected}, catalog has {current}"
        )

    def _not_applied(self, ident: str, step: str, error: SQLAlchemyError) -> FirnError:
        """The error for a swap that certainly did not happen."""
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
                f"commit of table {ident!r} failed before it was applied ({step}: {detail}); "
                "nothing changed, retrying is safe"
            )
        return FirnError(f"commit of table {ident!r} failed ({step}: {detail}); nothing was applied")

    def _resolve_unknown(self, ns: str, name: str, new: str, error: BaseException) -> None:
        """COMMIT failed in flight: succeed if the pointer shows ``new``, else CommitStateUnknown."""
        ident = f"{ns}.{name}"
        try:
            current = self._tbl_get(ns, name)
            if current == new:
                logger.warning("commit of %s reported %r but was applied", ident, error)
                return
            if current is not None:
                log = self._read_metadata(current).metadata_log
                if any(entry.metadata_file == new for entry in log):
                    logger.warning("commit of %s reported %r but was applied (and superseded)", ident, error)
                    return
        except FirnError as check_error:
            logger.warning("could not check the outcome of the commit of %s: %s", ident, check_error)
        raise CommitStateUnknown(
            f"commit of table {ident!r} to {new} may or may not have been applied (COMMIT failed: {error}); "
            "keep the new metadata file and check the table before retrying"
        ) from error


__all__ = [
    "ICEBERG_TABLES",
    "MAINTENANCE_LEASES",
    "NAMESPACE_PROPERTIES",
    "TABLE_TYPE",
    "VIEW_TYPE",
    "SqlCatalog",
    "iceberg_tables",
    "maintenance_leases",
    "namespace_properties",
    "normalize_sql_uri",
]
