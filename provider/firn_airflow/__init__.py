"""Firn's Apache Airflow provider: a ``firn`` connection type, the :class:`~firn_airflow.hooks.firn.FirnHook`,
table assets (``firn://<catalog>/<namespace>/<table>``) and a table-health view for the UI.

Airflow discovers it through the ``apache_airflow_provider`` entry point
(:func:`firn_airflow.get_provider_info.get_provider_info`).
"""

from __future__ import annotations

from firn import __version__

__all__ = ["__version__"]
