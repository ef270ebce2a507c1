"""Hooks: :class:`~firn_airflow.hooks.firn.FirnHook`."""
