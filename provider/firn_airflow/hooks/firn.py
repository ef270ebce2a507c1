"""The Firn hook: a Firn catalog built from an Airflow connection of type ``firn``
(:mod:`firn_airflow.hooks.connection` reads and checks the connection), its tables, and the
maintenance operations run on them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from firn.errors import FirnError
from firn_airflow.constants import CONN_TYPE, DEFAULT_CONN_ID, HOOK_NAME
from firn_airflow.errors import FirnConnectionNotFound
from firn_airflow.hooks.connection import FirnConnectionConfig, catalog_config, with_context

if TYPE_CHECKING:
    import logging

    from airflow.sdk import Context

    from firn.catalog.base import Catalog
    from firn.maintenance.base import MaintenancePlan, MaintenanceResult
    from firn.table.table import Table
    from firn_airflow.hooks.spark_job import SparkMaintenanceJob, SparkSettings


class FirnHook(BaseHook):
    """Opens the Firn catalog that a ``firn`` connection describes, loads its tables and runs
    maintenance operations on them, in this worker or on Spark (:meth:`run_operation`).

    :param firn_conn_id: the Airflow connection id (default ``firn_default``).
    :param catalog_properties: catalog properties added to the connection's for this hook's
        catalog and its Spark jobs (the operators label the lease owner with the task).
    """

    conn_name_attr = "firn_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = HOOK_NAME

    def __init__(
        self,
        firn_conn_id: str = DEFAULT_CONN_ID,
        *,
        catalog_properties: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.firn_conn_id = firn_conn_id
        self.catalog_properties = dict(catalog_properties or {})
        self._config: FirnConnectionConfig | None = None
        self._catalog: Catalog | None = None
        self._spark_job: SparkMaintenanceJob | None = None

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
            if self.catalog_properties:
                config = dataclasses.replace(
                    config, properties={**config.properties, **self.catalog_properties}
                )
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

    # -- maintenance --------------------------------------------------------------------------------
    def run_operation(
        self,
        table: Table,
        operation: str,
        options: Mapping[str, Any],
        *,
        execution: Literal["worker", "spark"] = "worker",
        dry_run: bool = False,
        plan: MaintenancePlan[Any] | None = None,
        spark: SparkSettings | None = None,
        context: Context | None = None,
        log: logging.Logger | Any = None,
    ) -> MaintenanceResult | MaintenancePlan[Any]:
        """Run ``operation`` (a registry name or short name) with ``options`` (Iceberg's names)
        on ``table`` and return its typed result: in this worker, or as a spark-submit job of
        ``firn.spark.job`` (``spark``: the submission settings; the result comes back as JSON
        and is rebuilt through ``firn.maintenance.registry``). Options are checked here, before
        anything runs anywhere. ``dry_run`` only plans, in this worker, and returns the plan.
        ``plan``: a plan of this operation already made on ``table`` (``execution="auto"``
        decides by it); a run in this worker executes it instead of planning again."""
        from firn.maintenance import registry

        op = table.maintenance.operation(operation, options)
        if dry_run:
            return op.plan()
        if execution == "worker":
            result: MaintenanceResult = op.run() if plan is None else plan.execute(op.table, None)
            return result
        from firn_airflow.hooks.spark_job import SparkMaintenanceJob, SparkSettings

        job = self._spark_job = SparkMaintenanceJob(
            spark or SparkSettings(), self.get_config(), extra_properties=self.catalog_properties, log=log
        )
        entry = job.run(registry.spec(operation).name, table.name, options, context)
        return registry.result_from_dict(entry)

    def kill(self) -> None:
        """Stop the Spark job :meth:`run_operation` submitted, if any (a run in this worker
        stops with the task process)."""
        if self._spark_job is not None:
            self._spark_job.kill()

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
