"""The SQL catalog's tables: exactly Iceberg Java's ``JdbcCatalog`` (V1 schema) and PyIceberg's
``SqlCatalog`` tables, plus how their drivers report an aborted transaction."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa

# -- the shared schema (Iceberg Java JdbcCatalog V1 / PyIceberg SqlCatalog) --------------------
ICEBERG_TABLES = "iceberg_tables"
NAMESPACE_PROPERTIES = "iceberg_namespace_properties"
TABLE_TYPE = "TABLE"
VIEW_TYPE = "VIEW"
MAX_NAME_LENGTH = 255  # VARCHAR(255): catalog, namespace, table name, property key
MAX_LOCATION_LENGTH = 1000  # VARCHAR(1000): metadata locations, property values

SCHEMA = sa.MetaData()
iceberg_tables = sa.Table(
    ICEBERG_TABLES,
    SCHEMA,
    sa.Column("catalog_name", sa.String(255), primary_key=True, nullable=False),
    sa.Column("table_namespace", sa.String(255), primary_key=True, nullable=False),
    sa.Column("table_name", sa.String(255), primary_key=True, nullable=False),
    sa.Column("metadata_location", sa.String(1000), nullable=True),
    sa.Column("previous_metadata_location", sa.String(1000), nullable=True),
    sa.Column("iceberg_type", sa.String(5), nullable=True),
)
namespace_properties = sa.Table(
    NAMESPACE_PROPERTIES,
    SCHEMA,
    sa.Column("catalog_name", sa.String(255), primary_key=True, nullable=False),
    sa.Column("namespace", sa.String(255), primary_key=True, nullable=False),
    sa.Column("property_key", sa.String(255), primary_key=True, nullable=False),
    sa.Column("property_value", sa.String(1000), nullable=False),
)

# Firn's own table: one maintenance lease row per table (firn.catalog.lease). Created on first
# use, so opening a catalog shared with other engines adds no table until maintenance runs.
MAINTENANCE_LEASES = "firn_maintenance_leases"
LEASE_SCHEMA = sa.MetaData()
maintenance_leases = sa.Table(
    MAINTENANCE_LEASES,
    LEASE_SCHEMA,
    sa.Column("catalog_name", sa.String(255), primary_key=True, nullable=False),
    sa.Column("table_namespace", sa.String(255), primary_key=True, nullable=False),
    sa.Column("table_name", sa.String(255), primary_key=True, nullable=False),
    sa.Column("lease_id", sa.String(64), nullable=False),
    sa.Column("owner", sa.String(1000), nullable=False),
    sa.Column("operation", sa.String(255), nullable=False),
    sa.Column("acquired_at_ms", sa.BigInteger, nullable=False),
    sa.Column("expires_at_ms", sa.BigInteger, nullable=False),
)

WRITE_OPTION = "firn_write"  # execution option: start the transaction with BEGIN IMMEDIATE (SQLite)
# Driver errors that mean "the transaction was aborted, nothing applied": SQLite busy/locked,
# Postgres serialization failure, deadlock, lock not available.
_SQLITE_LOCK_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_PG_ABORT_STATES = frozenset({"40001", "40P01", "55P03"})


def is_lock_conflict(error: BaseException) -> bool:
    """True for errors after which the database guarantees the transaction did not commit."""
    orig = getattr(error, "orig", error)
    if isinstance(orig, sqlite3.OperationalError):
        code = getattr(orig, "sqlite_errorcode", None)
        if code is not None:
            return (code & 0xFF) in _SQLITE_LOCK_CODES
        text = str(orig).lower()
        return "locked" in text or "busy" in text
    return getattr(orig, "sqlstate", None) in _PG_ABORT_STATES


__all__ = [
    "ICEBERG_TABLES",
    "LEASE_SCHEMA",
    "MAINTENANCE_LEASES",
    "MAX_LOCATION_LENGTH",
    "MAX_NAME_LENGTH",
    "NAMESPACE_PROPERTIES",
    "SCHEMA",
    "TABLE_TYPE",
    "VIEW_TYPE",
    "WRITE_OPTION",
    "iceberg_tables",
    "is_lock_conflict",
    "maintenance_leases",
    "namespace_properties",
]
