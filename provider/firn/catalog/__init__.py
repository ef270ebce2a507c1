"""firn.catalog: the Catalog protocol, the SQL and in-memory catalogs, and ``load_catalog``."""

from firn.catalog.base import (
    Catalog,
    Identifier,
    IdentifierLike,
    PropertiesUpdateSummary,
    table_identifier,
    to_identifier,
)
from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.loader import load_catalog
from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog

__all__ = [
    "BaseCatalog",
    "Catalog",
    "Identifier",
    "IdentifierLike",
    "InMemoryCatalog",
    "PropertiesUpdateSummary",
    "SqlCatalog",
    "load_catalog",
    "table_identifier",
    "to_identifier",
]
