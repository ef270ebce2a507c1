"""Firn: Apache Iceberg tables (format v1-v4) in Python.

Start with :func:`load_catalog`::

    import firn
    catalog = firn.load_catalog("sqlite:///warehouse/catalog.db", warehouse="warehouse")
    table = catalog.load_table("db.events")
    table.scan(filter=firn.col("id") > 5).to_arrow()

The names below are imported on first use (PEP 562), so that ``import firn.errors`` -- what
Airflow's triggerer does, in its event loop, when it loads a Firn trigger -- does not import
the whole library (Arrow, the catalogs, the table model).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from firn.errors import FirnError

if TYPE_CHECKING:
    from firn.catalog import load_catalog
    from firn.expressions import col, parse
    from firn.util.version import __version__

# Public name -> the module that defines it.
_LAZY = {
    "load_catalog": "firn.catalog",
    "col": "firn.expressions",
    "parse": "firn.expressions",
    "__version__": "firn.util.version",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'firn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["FirnError", "__version__", "col", "load_catalog", "parse"]
