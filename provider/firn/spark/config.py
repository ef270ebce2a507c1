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
import os
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
from firn.util.secrets import masked_repr

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONF_PREFIX = "spark.firn.catalog."
# A driver's catalog from its environment, under the Spark conf and over it: how callers such
# as the Airflow operators pass secrets (a URI with a password, s3.* keys) without putting them
# on a command line, which every user of the machine sees and spark-submit wrappers log.
# In client and local deploy mode spark-submit hands its environment to the driver.
ENV_CATALOG_URI = "FIRN_CATALOG_URI"
ENV_CATALOG_WAREHOUSE = "FIRN_CATALOG_WAREHOUSE"
ENV_CATALOG_PROPERTIES = "FIRN_CATALOG_PROPERTIES"
OPTION_CATALOG = "catalog"
OPTION_WAREHOUSE = "warehouse"
OPTION_PROPERTY_PREFIX = "catalog."
CATALOG_NAME_PROPERTY = "name"
DEFAULT_CATALOG_NAME = "default"


@dataclass(frozen=True)
class CatalogConfig:
    """How to open the catalog: its URI, warehouse and properties (picklable, no connections)."""

    __repr__ = masked_repr  # the URI and properties may hold credentials

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


def environment_options(environ: Mapping[str, str]) -> dict[str, str]:
    """Catalog settings from ``FIRN_CATALOG_*`` variables, as data source options (``catalog``,
    ``warehouse``, ``catalog.<property>``). A malformed ``FIRN_CATALOG_PROPERTIES`` is a
    ``ValidationError`` naming the variable (its value may be secret, so it is not shown)."""
    options: dict[str, str] = {}
    raw = environ.get(ENV_CATALOG_PROPERTIES, "").strip()
    if raw:
        try:
            props = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValidationError(
                f"{ENV_CATALOG_PROPERTIES} must be a JSON object of catalog properties "
                f"({e.msg} at position {e.pos})"
            ) from None
        if not isinstance(props, dict) or not all(
            isinstance(v, str | int | float | bool) for v in props.values()
        ):
            raise ValidationError(
                f"{ENV_CATALOG_PROPERTIES} must be a JSON object of string, number or boolean values"
            )
        for key, value in props.items():
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            options[f"catalog.{key}"] = text
    uri = environ.get(ENV_CATALOG_URI, "").strip()
    if uri:
        options["catalog"] = uri
    warehouse = environ.get(ENV_CATALOG_WAREHOUSE, "").strip()
    if warehouse:
        options["warehouse"] = warehouse
    return options


def driver_conf(spark: SparkSession, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The session's ``spark.firn.*`` conf with the driver's ``FIRN_CATALOG_*`` environment
    (:func:`environment_options`) over it: what :func:`firn.spark.register` captures and what
    driver-side helpers resolve their catalog from."""
    conf = session_conf(spark)
    for key, value in environment_options(os.environ if environ is None else environ).items():
        if key == OPTION_CATALOG:
            conf[CONF_PREFIX + "uri"] = value
        elif key == OPTION_WAREHOUSE:
            conf[CONF_PREFIX + "warehouse"] = value
        else:
            conf[CONF_PREFIX + key[len(OPTION_PROPERTY_PREFIX) :]] = value
    return conf


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
    return CatalogConfig.resolve(options, driver_conf(spark))


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
    "ENV_CATALOG_PROPERTIES",
    "ENV_CATALOG_URI",
    "ENV_CATALOG_WAREHOUSE",
    "CatalogConfig",
    "catalog_config",
    "driver_conf",
    "environment_options",
    "executor_io",
    "executor_metadata",
    "session_conf",
    "table_name",
]
