"""Where a Spark job finds its catalog, and the per-process caches executors share.

The catalog comes from data source options (``catalog`` = URI, ``warehouse``, and
``catalog.<property>`` for any catalog property) over the Spark conf ``spark.firn.catalog.*``
(``uri``, ``warehouse``, and any property), so jobs configured once with
``--conf spark.firn.catalog.uri=...`` need no repeated options. The property ``name`` is the
catalog's name (default ``default``): SQL catalogs keep tables per catalog name, as Iceberg's
JDBC catalog does. Spark lower-cases option keys, so property names arrive lower-cased.

PySpark runs a Python data source's ``schema()``, ``reader()`` and ``writer()`` in Python
workers that cannot see the session's conf, so :func:`firn.spark.register` captures the
``spark.firn.*`` conf when it registers the source (register again after changing it).
Driver-side helpers (``delete``, the maintenance job) read the live conf.

Executors rebuild a FileIO from the properties a task carries and read immutable metadata
files once per process (as ``firn.maintenance.runner`` does for work units).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from firn.catalog import load_catalog
from firn.catalog.base import Catalog
from firn.core.metadata_io import read_metadata
from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.io.pyarrow_io import load_file_io
from firn.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONF_PREFIX = "spark.firn.catalog."
OPTION_CATALOG = "catalog"
OPTION_WAREHOUSE = "warehouse"
OPTION_PROPERTY_PREFIX = "catalog."
CATALOG_NAME_PROPERTY = "name"
DEFAULT_CATALOG_NAME = "default"


@dataclass(frozen=True)
class CatalogConfig:
    """How to open the catalog: its URI, warehouse and properties (picklable, no connections)."""

    uri: str
    warehouse: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.properties.get(CATALOG_NAME_PROPERTY, DEFAULT_CATALOG_NAME)

    def load(self) -> Catalog:
        """The catalog (one per configuration and process)."""
        key = json.dumps([self.uri, self.warehouse, sorted(self.properties.items())])
        props = {k: v for k, v in self.properties.items() if k != CATALOG_NAME_PROPERTY}
        with _lock:
            catalog = _catalogs.get(key)
            if catalog is None:
                catalog = _catalogs[key] = load_catalog(
                    self.uri, warehouse=self.warehouse, name=self.name, **props
                )
        return catalog

    @staticmethod
    def from_conf(conf: Mapping[str, str]) -> CatalogConfig | None:
        """From ``spark.firn.catalog.*`` entries (None when no ``uri`` is set)."""
        props = {k[len(CONF_PREFIX) :]: v for k, v in conf.items() if k.startswith(CONF_PREFIX)}
        uri = props.pop("uri", None)
        if not uri:
            return None
        warehouse = props.pop("warehouse", None)
        return CatalogConfig(uri, warehouse, props)

    @staticmethod
    def resolve(options: Mapping[str, str], conf: Mapping[str, str]) -> CatalogConfig:
        """From data source ``options`` over the captured ``conf``; a clear error when neither
        names a catalog."""
        base = CatalogConfig.from_conf(conf)
        props = dict(base.properties) if base is not None else {}
        for key, value in options.items():
            if key.lower().startswith(OPTION_PROPERTY_PREFIX):
                props[key[len(OPTION_PROPERTY_PREFIX) :]] = value
        uri = options.get(OPTION_CATALOG) or (base.uri if base is not None else None)
        if not uri:
            raise ValidationError(
                "no Firn catalog: pass .option('catalog', '<uri>') or set the Spark conf "
                f"{CONF_PREFIX}uri (then call firn.spark.register(spark) again)"
            )
        warehouse = options.get(OPTION_WAREHOUSE) or (base.warehouse if base is not None else None)
        return CatalogConfig(uri, warehouse, props)


def table_name(options: Mapping[str, str]) -> str:
    """The table identifier from ``load("db.t")`` / ``save("db.t")`` or the ``table`` option."""
    name = options.get("path") or options.get("table")
    if not name:
        raise ValidationError('name the table: spark.read.format("firn").load("db.table")')
    return name


def session_conf(spark: SparkSession, prefix: str = "spark.firn.") -> dict[str, str]:
    """The session's conf entries under ``prefix`` (runtime SQL conf and SparkContext conf)."""
    out = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(prefix)}
    runtime: dict[str, Any] = spark.conf.getAll
    out.update({k: str(v) for k, v in runtime.items() if k.startswith(prefix)})
    return out


def catalog_config(
    spark: SparkSession, catalog: str | None = None, warehouse: str | None = None, **properties: str
) -> CatalogConfig:
    """Explicit arguments over the session's ``spark.firn.catalog.*`` conf."""
    options: dict[str, str] = {f"{OPTION_PROPERTY_PREFIX}{k}": v for k, v in properties.items()}
    if catalog:
        options[OPTION_CATALOG] = catalog
    if warehouse:
        options[OPTION_WAREHOUSE] = warehouse
    return CatalogConfig.resolve(options, session_conf(spark))


# -- per-process caches (executors) -------------------------------------------------------------------
_lock = threading.Lock()
_catalogs: dict[str, Catalog] = {}
_ios: dict[str, FileIO] = {}
_metadata: dict[tuple[str, str], TableMetadata] = {}


def executor_io(properties: Mapping[str, str], location: str) -> FileIO:
    """A FileIO built from ``properties`` (one per distinct properties and process)."""
    key = json.dumps(sorted(properties.items()))
    with _lock:
        io = _ios.get(key)
        if io is None:
            io = _ios[key] = load_file_io(dict(properties), location)
    return io


def executor_metadata(io: FileIO, location: str) -> TableMetadata:
    """The metadata file at ``location`` (metadata files are immutable, so cached by location)."""
    key = (json.dumps(sorted(io.properties.items())), location)
    with _lock:
        md = _metadata.get(key)
    if md is None:
        md = read_metadata(io, location)
        with _lock:
            if len(_metadata) > 32:
                _metadata.clear()
            _metadata[key] = md
    return md


__all__ = [
    "CONF_PREFIX",
    "CatalogConfig",
    "catalog_config",
    "executor_io",
    "executor_metadata",
    "session_conf",
    "table_name",
]
