"""The Firn hook: a Firn catalog built from an Airflow connection of type ``firn``
(:mod:`firn_airflow.hooks.connection` reads and checks the connection), its tables, and the
maintenance operations run on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from firn.errors import FirnError
from firn_airflow.constants import CONN_TYPE, DEFAULT_CONN_ID, HOOK_NAME
from firn_airflow.errors import FirnConnectionNotFound
from firn_airflow.hooks.connection import FirnConnectionConfig, catalog_config, with_context

if TYPE_CHECKING:
    from firn.catalog.base import Catalog
    from firn.table.table import Table


class FirnHook(BaseHook):
    """Opens the Firn catalog that a ``firn`` connection describes.

    :param firn_conn_id: the Airflow connection id (default ``firn_default``).
    """

    conn_name_attr = "firn_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = HOOK_NAME

    def __init__(self, firn_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.firn_conn_id = firn_conn_id
        self._config: FirnConnectionConfig | None = None
        self._catalog: Catalog | None = None

    # -- connection ------------------------------------------------------------------------------
    def get_config(self) -> FirnConnectionConfig:
        """The checked connection settings (cached); a missing connection is a FirnConnectionError."""
        if self._config is None:
            try:
                conn = self.get_connection(self.firn_conn_id)
            except AirflowNotFoundException:
                raise FirnConnectionNotFound(
                    f"Firn connection {self.firn_conn_id!r} is not defined: add it with "
                    f"`airflow connections add {self.firn_conn_id} --conn-type {CONN_TYPE} --conn-host <catalog URI>` "
                    f"or set AIRFLOW_CONN_{self.firn_conn_id.upper()}"
                ) from None
            self._config = catalog_config(conn)
        return self._config

    def get_catalog(self) -> Catalog:
        """The connection's Firn catalog (opened once per hook)."""
        if self._catalog is None:
            config = self.get_config()
            self._catalog = config.load()
            self.log.info(
                "Opened Firn catalog %r at %s (connection %r)",
                config.name,
                config.display_uri,
                config.conn_id,
            )
        return self._catalog

    def get_conn(self) -> Catalog:
        """Airflow's generic accessor: the catalog."""
        return self.get_catalog()

    def close(self) -> None:
        """Release the catalog's database connections."""
        if self._catalog is not None:
            close = getattr(self._catalog, "close", None)
            if close is not None:
                close()
            self._catalog = None

    # -- tables ----------------------------------------------------------------------------------
    def load_table(self, name: str) -> Table:
        """The table ``name`` (``"db.events"``); unknown or malformed names raise one FirnError."""
        catalog = self.get_catalog()
        try:
            return catalog.load_table(name)
        except FirnError as e:
            raise with_context(e, f"connection {self.firn_conn_id!r}", self._config) from e

    def list_tables(self, namespace: str) -> list[str]:
        """Names (``"db.t"``) of the tables in ``namespace``, sorted."""
        catalog = self.get_catalog()
        try:
            return sorted(".".join(ident) for ident in catalog.list_tables(namespace))
        except FirnError as e:
            raise with_context(e, f"connection {self.firn_conn_id!r}", self._config) from e

    def list_namespaces(self, parent: str = "") -> list[str]:
        """Namespaces one level below ``parent`` (top-level ones by default), as dotted names."""
        catalog = self.get_catalog()
        try:
            return [".".join(ns) for ns in catalog.list_namespaces(parent)]
        except FirnError as e:
            raise with_context(e, f"connection {self.firn_conn_id!r}", self._config) from e

    # -- connection test (the UI's "Test" button and `airflow connections test`) ---------------------
    def test_connection(self) -> tuple[bool, str]:
        """Open the catalog and list its namespaces; ``(ok, message)`` without secrets."""
        try:
            config = self.get_config()
            namespaces = self.list_namespaces()
        except Exception as e:  # every failure is a result here, shown in the UI
            text = f"{type(e).__name__}: {e}"
            return False, self._config.redact(text) if self._config is not None else text
        finally:
            self.close()
        return True, (
            f"Connected to Firn catalog {config.name!r} at {config.display_uri}: "
            f"{len(namespaces)} top-level namespace(s)"
        )


__all__ = ["FirnHook"]
