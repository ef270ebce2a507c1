"""Firn's version, read once from the installed distribution's metadata."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "airflow-provider-firn"

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["DISTRIBUTION", "__version__"]
