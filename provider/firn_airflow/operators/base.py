"""What every Firn maintenance operator does around its operation.

A run, in order:

1. open the catalog of ``firn_conn_id`` (the lease owner is labelled with this task instance,
   so a refused run sees which Airflow task holds the table) and load the rendered ``table``;
2. decide what to run (:meth:`FirnMaintenanceBaseOperator.work`): the operator's operation with
   its options, or nothing (``AirflowSkipException`` with the reason) when
   ``skip_if_not_recommended`` is set and ``table.maintenance.recommend()`` does not name it;
3. unless it is a dry run, check the table's maintenance lease: held means skip, wait or fail
   (``on_lease_held``); the operation takes the lease itself, and a ``LeaseHeld`` it raises
   (a run that started in between) is handled the same way;
4. run it where ``execution`` says (:mod:`firn_airflow.operators.execution`);
5. return the typed result's ``to_dict()`` (XCom) and record it, with the table's health after
   the run, as the table asset's event (:mod:`firn_airflow.operators.outlets`); OpenLineage
   gets the files and bytes rewritten (:mod:`firn_airflow.operators.lineage`).

Errors are one clear task error: a Firn error naming the table, connection or Spark job,
raised without the chain of causes behind it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowSkipException

from firn.catalog.lease import LEASE_OWNER_LABEL, lease_held_error
from firn.errors import FirnError, LeaseHeld, ValidationError
from firn.maintenance.base import MaintenancePlan, MaintenanceResult, dry_run_entry
from firn.maintenance.run_record import GroupRunResult, GroupsFailed
from firn_airflow.assets import firn_asset
from firn_airflow.constants import DEFAULT_CONN_ID, EVENT_HEALTH, EVENT_OPERATION, EVENT_RESULT
from firn_airflow.hooks.firn import FirnHook
from firn_airflow.hooks.spark_job import SparkSettings
from firn_airflow.operators.execution import AutoThresholds, check_execution, choose_execution
from firn_airflow.operators.lineage import (
    MaintenanceLineage,
    dataset_identity,
    deletion_summary,
    maintenance_lineage,
    openlineage_facets,
)
from firn_airflow.operators.options import merge_options
from firn_airflow.operators.outlets import default_outlets, publish_event

if TYPE_CHECKING:
    from airflow.sdk import Context

    from firn.catalog.base import Catalog
    from firn.table.table import Table

LEASE_POLICIES = ("skip", "wait", "fail")
DEFAULT_LEASE_WAIT_TIMEOUT_S = 3600.0
DEFAULT_LEASE_POLL_INTERVAL_S = 10.0

T = TypeVar("T")

# What a run does: (operation, options) pairs, e.g. [("rewrite_data_files", {"min-input-files": 2})].
Work = list[tuple[str, dict[str, Any]]]


def _entry(value: MaintenanceResult | MaintenancePlan[Any]) -> dict[str, Any]:
    """A typed result (or a dry run's plan) as the JSON XCom and the asset event carry."""
    if isinstance(value, MaintenanceResult):
        out: dict[str, Any] = json.loads(json.dumps(value.to_dict()))
        return out
    return dry_run_entry(value)


def owner_label(context: Mapping[str, Any]) -> str:
    """``airflow <dag>.<task>[<map index>] <run id>``: who holds a lease this task takes."""
    ti = context.get("ti")
    if ti is None:
        return "airflow"
    index = getattr(ti, "map_index", -1)
    mapped = f"[{index}]" if isinstance(index, int) and index >= 0 else ""
    return f"airflow {ti.dag_id}.{ti.task_id}{mapped} {ti.run_id}"


class FirnMaintenanceBaseOperator(BaseOperator):
    """Base of the Firn maintenance operators (see the module docstring for what a run does).

    :param table: the table, ``"db.events"`` (templated).
    :param firn_conn_id: the Firn connection (default ``firn_default``).
    :param options: the operation's options by Iceberg name, hyphenated or with underscores
        (templated), e.g. ``{"min-input-files": 2}``.
    :param execution: where the operation runs: ``"spark"`` (spark-submit, default),
        ``"worker"`` (in the Airflow worker) or ``"auto"``: by the work the operation's plan
        holds (:mod:`firn_airflow.operators.execution`), so metadata-only work stays in the
        worker.
    :param spark_min_bytes: ``auto`` submits to Spark above this many bytes of data and delete
        files to rewrite (default: table property ``firn.execution.spark-min-bytes``, else
        1 GiB; templated, e.g. ``"{{ params.spark_min_bytes }}"``).
    :param spark_min_metadata_bytes: ... above this many bytes of manifests to rewrite
        (default: ``firn.execution.spark-min-metadata-bytes``, else 256 MiB; templated).
    :param spark_min_delete_files: ... above this many files to delete (default:
        ``firn.execution.spark-min-delete-files``, else 100,000; templated).
    :param spark: how to submit to Spark (templated): a
        :class:`~firn_airflow.hooks.spark_job.SparkSettings` or a dict of its fields --
        ``conn_id`` (the Spark connection, must exist; default ``spark_default``), ``conf``,
        ``py_files`` (e.g. a zip of Firn from ``firn.spark.package()``), ``archives``,
        ``executor_cores``, ``executor_memory``, ``num_executors``, ``total_executor_cores``,
        ``driver_memory``, ``env_vars`` (the catalog settings are added to them,
        ``FIRN_CATALOG_*``, never to the command line) and ``result_dir`` (where the job
        writes its result when the driver is not in this worker, cluster deploy mode).
    :param dry_run: only plan; the return value is the plan (no lease, no Spark, no commit).
        A dry run changes nothing, so it declares no outlet by default: no asset event, no
        DAG triggered by one.
    :param skip_if_not_recommended: skip cleanly unless ``table.maintenance.recommend()``
        names this operation; when it does, its recommended options are the defaults beneath
        ``options``.
    :param on_lease_held: ``"skip"`` (default), ``"wait"`` (until the lease is free, at most
        ``lease_wait_timeout`` seconds, polling every ``lease_poll_interval``) or ``"fail"``.
    """

    # The ``table.maintenance`` operation (``firn.maintenance.operations``) this operator runs.
    OPERATION: ClassVar[str] = ""

    template_fields: Sequence[str] = (
        "table",
        "options",
        "spark_min_bytes",
        "spark_min_metadata_bytes",
        "spark_min_delete_files",
        "spark",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"options": "json", "spark": "json"}
    ui_color = "#dbeef7"

    def __init__(
        self,
        *,
        table: str,
        firn_conn_id: str = DEFAULT_CONN_ID,
        options: dict[str, Any] | None = None,
        execution: str = "spark",
        spark_min_bytes: int | str | None = None,
        spark_min_metadata_bytes: int | str | None = None,
        spark_min_delete_files: int | str | None = None,
        spark: SparkSettings | Mapping[str, Any] | None = None,
        dry_run: bool = False,
        skip_if_not_recommended: bool = False,
        on_lease_held: str = "skip",
        lease_wait_timeout: float = DEFAULT_LEASE_WAIT_TIMEOUT_S,
        lease_poll_interval: float = DEFAULT_LEASE_POLL_INTERVAL_S,
        **kwargs: Any,
    ) -> None:
        if not kwargs.get("outlets") and not dry_run:
            kwargs["outlets"] = default_outlets(firn_conn_id, table)
        super().__init__(**kwargs)
        # Wrong choices fail when the DAG is parsed, not at 3 a.m.
        check_execution(execution)
        if on_lease_held not in LEASE_POLICIES:
            raise ValidationError(
                f"on_lease_held must be one of {list(LEASE_POLICIES)}, got {on_lease_held!r}"
            )
        if lease_wait_timeout < 0 or lease_poll_interval <= 0:
            raise ValidationError("lease_wait_timeout must be >= 0 and lease_poll_interval > 0 (seconds)")
        self.table = table
        self.firn_conn_id = firn_conn_id
        self.options = options
        self.execution = execution
        self.spark_min_bytes = spark_min_bytes
        self.spark_min_metadata_bytes = spark_min_metadata_bytes
        self.spark_min_delete_files = spark_min_delete_files
        # A dict (JSON, so templated and serialized like any argument) of SparkSettings' fields.
        self.spark = dataclasses.asdict(spark) if isinstance(spark, SparkSettings) else spark
        # ``BaseOperator.dry_run()`` is a method (render templates only): keep the flag apart.
        self.plan_only = dry_run
        self.skip_if_not_recommended = skip_if_not_recommended
        self.on_lease_held = on_lease_held
        self.lease_wait_timeout = lease_wait_timeout
        self.lease_poll_interval = lease_poll_interval
        self._hook: FirnHook | None = None
        self._lineage: MaintenanceLineage | None = None
        self._table_name: str | None = None
        self._table_location: str | None = None
        self._results: list[dict[str, Any]] | None = None

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """``Op.partial(...).expand(table=[...])``: outlets are declared when the DAG is parsed,
        before the tables are known, so a mapped task reports through the connection's asset
        alias (see :mod:`firn_airflow.operators.outlets`)."""
        if not kwargs.get("outlets") and not kwargs.get("dry_run"):
            kwargs["outlets"] = default_outlets(
                kwargs.get("firn_conn_id", DEFAULT_CONN_ID), kwargs.get("table")
            )
        return super().partial(**kwargs)

    # -- what to run (subclasses) -----------------------------------------------------------------
    def explicit_options(self) -> dict[str, object]:
        """The operator's own option arguments by keyword name (``older_than=``, ...)."""
        return {}

    def skip_reason(self, table: Table) -> str | None:
        """Why this operation does not apply to ``table`` at all (None: it does)."""
        return None

    def work(self, table: Table) -> Work:
        """The operation and options to run; ``AirflowSkipException`` when there is none."""
        recommended: dict[str, Any] | None = None
        if self.skip_if_not_recommended:
            recommendations = table.maintenance.recommend()
            match = [r for r in recommendations if r.operation == self.OPERATION]
            if not match:
                listed = ", ".join(r.operation for r in recommendations) or "nothing"
                raise AirflowSkipException(
                    f"{self.OPERATION} on {table.name} is not recommended now "
                    f"(recommend() lists {listed}); skipped (skip_if_not_recommended=True)"
                )
            self.log.info("%s on %s is recommended: %s", self.OPERATION, table.name, match[0].reason)
            recommended = dict(match[0].options)
        options = merge_options(
            where=f"{self.OPERATION} on {table.name}",
            recommended=recommended,
            given=self.options,
            explicit=self.explicit_options(),
        )
        return [(self.OPERATION, options)]

    def run_work(
        self,
        work: Work,
        table: Table,
        run: Callable[[str, dict[str, Any]], MaintenanceResult | MaintenancePlan[Any]],
    ) -> list[MaintenanceResult | MaintenancePlan[Any]]:
        """Run each ``(operation, options)`` of ``work`` in order through ``run``, on the table
        as the previous step left it."""
        typed: list[MaintenanceResult | MaintenancePlan[Any]] = []
        for operation, options in work:
            table.refresh()
            typed.append(run(operation, options))
        return typed

    def xcom_value(self, table: str, results: list[dict[str, Any]]) -> Any:
        """The task's return value: the result (or plan) as JSON."""
        return results[0]

    def event_extra(self, results: list[dict[str, Any]], health: dict[str, Any]) -> dict[str, Any]:
        """The asset event's ``extra``: operation, result, health after the run."""
        result = results[0]
        return {
            EVENT_OPERATION: result.get("operation", self.OPERATION),
            EVENT_RESULT: result,
            EVENT_HEALTH: health,
        }

    # -- running --------------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        try:
            return self._execute(context)
        except FirnError as e:
            # One clear task error: the Firn error names the table or connection; the causes
            # it was raised from would only repeat it, wrapped.
            raise e from None

    def _rendered_table(self) -> str:
        table = self.table
        if not isinstance(table, str) or not table.strip():
            raise ValidationError(f"table must be a table name such as 'db.events', got {table!r}")
        return table.strip()

    def _thresholds(self, properties: Mapping[str, str]) -> AutoThresholds:
        """The ``auto`` thresholds: the (rendered) arguments, else the table's properties."""
        given = {
            "spark_min_bytes": self.spark_min_bytes,
            "spark_min_metadata_bytes": self.spark_min_metadata_bytes,
            "spark_min_delete_files": self.spark_min_delete_files,
        }
        # A template that rendered to nothing (an unset param) gives way to the table's value.
        return AutoThresholds.resolve({k: (None if v == "" else v) for k, v in given.items()}, properties)

    def _execute(self, context: Context) -> Any:
        table_name = self._table_name = self._rendered_table()
        hook = self._hook = FirnHook(
            self.firn_conn_id, catalog_properties={LEASE_OWNER_LABEL: owner_label(context)}
        )
        try:
            table = hook.load_table(table_name)
            catalog = hook.get_catalog()
            self._table_location = table.location  # OpenLineage names the table by it
            reason = self.skip_reason(table)
            if reason is not None:
                raise AirflowSkipException(reason)
            work = self.work(table)
            deadline = time.monotonic() + self.lease_wait_timeout
            if not self.plan_only:
                self._check_lease(catalog, table_name, work[0][0], deadline)
            typed = self.run_work(
                work,
                table,
                lambda operation, options: self._run_one(hook, table, operation, options, deadline, context),
            )
            table.refresh()
            health = table.health().to_dict()
        finally:
            hook.close()
        # Dicts from here on: XCom, the asset event and the task log take JSON.
        results = [_entry(r) for r in typed]
        self._results = results
        self._lineage = maintenance_lineage(r for r in typed if isinstance(r, MaintenanceResult))
        outlet_events = context.get("outlet_events")  # absent when called outside a task run
        if outlet_events is not None and not publish_event(
            outlet_events,
            self.outlets,
            firn_asset(self.firn_conn_id, table_name),
            self.event_extra(results, health),
        ):
            self.log.info("no outlet carries the event of %s (outlets: %s)", table_name, self.outlets)
        return self.xcom_value(table_name, results)

    def _run_one(
        self,
        hook: FirnHook,
        table: Table,
        operation: str,
        options: dict[str, Any],
        deadline: float,
        context: Context,
    ) -> MaintenanceResult | MaintenancePlan[Any]:
        name = table.name
        spark = self._spark_settings()
        plan: MaintenancePlan[Any] | None = None
        if self.execution == "auto" and not self.plan_only:
            # Decide by the plan's work (planning reads metadata only); a run in this worker
            # then executes this plan rather than planning again.
            plan = table.maintenance.operation(operation, options).plan()
        where, why = choose_execution(
            self.execution,
            plan.work() if plan is not None else None,
            self._thresholds(table.properties) if plan is not None else AutoThresholds(),
        )
        # The plan is used once: a retry after waiting for the lease plans again.
        fresh = [plan] if plan is not None and where == "worker" else []
        if self.plan_only:
            self.log.info("Planning %s on %s (dry run) with options %s", operation, name, options)
        elif where == "worker":
            self.log.info(
                "Running %s on %s in this worker (%s) with options %s", operation, name, why, options
            )
        else:
            self.log.info(
                "Submitting %s on %s to Spark (connection %r; %s) with options %s",
                operation,
                name,
                spark.conn_id,
                why,
                options,
            )
        try:
            result = self._run_with_lease(
                hook, table, operation, options, where, fresh, spark, deadline, context
            )
        except GroupsFailed as e:
            # The groups that did commit are in the task log; the task fails, and its retry
            # plans again: the committed groups' files are replaced, so only the rest remain.
            self._log_result(operation, name, e.result)
            raise
        if isinstance(result, MaintenanceResult):
            self._log_result(operation, name, result)
        return result

    def _log_result(self, operation: str, name: str, result: MaintenanceResult) -> None:
        self.log.info("%s on %s: %s", operation, name, result.to_dict())
        if isinstance(result, GroupRunResult):
            for line in result.group_report():
                self.log.info("%s on %s: %s", operation, name, line)
        summary = deletion_summary(result.to_dict())
        if summary is not None:
            self.log.info("%s on %s: %s", operation, name, summary)

    def _run_with_lease(
        self,
        hook: FirnHook,
        table: Table,
        operation: str,
        options: dict[str, Any],
        where: Literal["worker", "spark"],
        fresh: list[MaintenancePlan[Any]],
        spark: SparkSettings,
        deadline: float,
        context: Context,
    ) -> MaintenanceResult | MaintenancePlan[Any]:
        name = table.name
        return self._with_lease_policy(
            lambda: hook.run_operation(
                table,
                operation,
                options,
                execution=where,
                dry_run=self.plan_only,
                plan=fresh.pop() if fresh else None,
                spark=spark,
                context=context,
                log=self.log,
            ),
            hook.get_catalog(),
            name,
            deadline,
        )

    def _spark_settings(self) -> SparkSettings:
        """The ``spark`` argument (rendered) as :class:`SparkSettings`."""
        value: object = self.spark
        if value is None:
            return SparkSettings()
        if isinstance(value, SparkSettings):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError(
                f"spark must be SparkSettings or a dict of its fields, got {type(value).__name__}"
            )
        known = {f.name for f in dataclasses.fields(SparkSettings)}
        unknown = sorted(set(map(str, value)) - known)
        if unknown:
            raise ValidationError(
                f"spark has no setting {unknown[0]!r}; settings: {', '.join(sorted(known))}"
            )
        return SparkSettings(**{str(k): v for k, v in value.items()})

    # -- the maintenance lease ----------------------------------------------------------------------
    def _check_lease(self, catalog: Catalog, table: str, operation: str, deadline: float) -> None:
        holder = catalog.maintenance_lease_holder(table)
        if holder is not None:
            self._lease_held(
                lease_held_error(holder, operation, int(time.time() * 1000)), catalog, table, deadline
            )

    def _with_lease_policy(self, fn: Callable[[], T], catalog: Catalog, table: str, deadline: float) -> T:
        while True:
            try:
                return fn()
            except LeaseHeld as e:  # another run took the lease after the check
                self._lease_held(e, catalog, table, deadline)

    def _lease_held(self, error: LeaseHeld, catalog: Catalog, table: str, deadline: float) -> None:
        """Apply ``on_lease_held``: raise (skip or fail), or return once the lease is free."""
        if self.on_lease_held == "skip":
            raise AirflowSkipException(f"{error}; skipped (on_lease_held='skip')")
        if self.on_lease_held == "fail":
            raise error
        self.log.info(
            "%s; waiting for it (on_lease_held='wait', at most %.0f s)", error, self.lease_wait_timeout
        )
        while catalog.maintenance_lease_holder(table) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LeaseHeld(
                    f"{error}; still held after waiting {self.lease_wait_timeout:.0f} s (on_lease_held='wait')",
                    holder=error.holder,
                    operation=error.operation,
                    expires_at_ms=error.expires_at_ms,
                )
            time.sleep(min(self.lease_poll_interval, left))
        self.log.info("The maintenance lease on %s is free", table)

    def on_kill(self) -> None:
        """Stop the Spark job this task submitted (a run in the worker stops with the task)."""
        if self._hook is not None:
            self._hook.kill()

    # -- lineage ------------------------------------------------------------------------------------
    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage input/output statistics: the files, bytes and rows rewritten and written
        (needs the OpenLineage provider; called by it)."""
        if self._results is None or self._table_name is None or self._table_location is None:
            return None
        identity = dataset_identity(self.firn_conn_id, self._table_name, self._table_location)
        return openlineage_facets(identity, self._lineage or maintenance_lineage(self._results))


__all__ = ["LEASE_POLICIES", "FirnMaintenanceBaseOperator", "Work", "owner_label"]
