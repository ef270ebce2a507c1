"""Firn: Apache Iceberg tables (format v1-v4) in Python.

Start with :func:`load_catalog`::

    import firn
    catalog = firn.load_catalog("sqlite:///warehouse/catalog.db", warehouse="warehouse")
    table = catalog.load_table("db.events")
    table.scan(filter=firn.col("id") > 5).to_arrow()
"""

from firn.catalog import load_catalog
from firn.errors import FirnError
from firn.expressions import col, parse
from firn.util.version import __version__

__all__ = ["FirnError", "__version__", "col", "load_catalog", "parse"]
