"""Firn's Apache Airflow provider: a ``firn`` connection type, the :class:`~firn_airflow.hooks.firn.FirnHook`,
table assets (``firn://<catalog>/<namespace>/<table>``) and a table-health view for the UI.

Airflow discovers it through the ``apache_airflow_provider`` entry point
(:func:`firn_airflow.get_provider_info.get_provider_info`).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# Read from the distribution's metadata rather than by importing firn: Airflow imports this
# package (through get_provider_info) in every process that discovers providers.
try:
    __version__ = version("airflow-provider-firn")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
