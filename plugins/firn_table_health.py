"""Airflow loads this plugins-folder module and registers the plugin class it finds here.

The view itself lives in the installed provider (``firn_airflow.health_view``) so it is typed,
tested and versioned with Firn; copy this file into any Airflow deployment's plugins folder.
"""

from firn_airflow.health_view.plugin import FirnTableHealthPlugin

__all__ = ["FirnTableHealthPlugin"]
