"""Firn: Apache Iceberg tables (format v1-v4) in Python."""

from firn.errors import FirnError

__version__ = "0.1.0"

__all__ = ["FirnError", "__version__"]
