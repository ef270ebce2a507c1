"""``FirnMaintenanceOperator``: run whatever ``table.maintenance.recommend()`` says is due."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk.exceptions import AirflowSkipException

from firn.errors import ValidationError
from firn.maintenance import registry
from firn.maintenance.recommend import run_in_turn
from firn_airflow.constants import EVENT_HEALTH, EVENT_OPERATION, EVENT_RESULT
from firn_airflow.operators.base import FirnMaintenanceBaseOperator, Work
from firn_airflow.operators.lineage import maintenance_lineage
from firn_airflow.operators.options import merge_options

if TYPE_CHECKING:
    from firn.maintenance.base import MaintenancePlan, MaintenanceResult
    from firn.maintenance.recommend import Recommendation
    from firn.table.table import Table

# The name this operator's asset events and results carry.
MAINTENANCE = "maintenance"


def operation_name(name: str) -> str:
    """An operation by its ``table.maintenance`` name or short name (``compact``, ``expire``)."""
    spec = registry.spec(name)
    if not spec.nightly:
        known = ", ".join([*registry.nightly_order(), *registry.short_names()])
        raise ValidationError(f"unknown maintenance operation {name!r}; known: {known}")
    return spec.name


class FirnMaintenanceOperator(FirnMaintenanceBaseOperator):
    """Run the maintenance ``table.maintenance.recommend()`` lists, in its (nightly) order, each
    with its recommended options; skip cleanly when nothing is due.

    :param operations: consider only these operations (names as in ``recommend()`` or the short
        ``compact`` / ``expire`` / ...); default all.
    :param operation_options: per-operation options over the recommended ones, keyed by
        operation, e.g. ``{"rewrite_data_files": {"min-input-files": 2}}`` (templated).

    Every other argument is the base operator's; ``skip_if_not_recommended`` is implied. The
    return value is ``{"table", "operations", "results", "recommendations"}``; the asset event
    has one entry per run (``result["results"]``) and their totals (files and bytes rewritten,
    added, deleted). Runs stop at the first failure, which fails the task.
    """

    OPERATION = MAINTENANCE
    template_fields: Sequence[str] = (*FirnMaintenanceBaseOperator.template_fields, "operation_options")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **FirnMaintenanceBaseOperator.template_fields_renderers,
        "operation_options": "json",
    }

    def __init__(
        self,
        *,
        operations: Sequence[str] | None = None,
        operation_options: Mapping[str, Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        if "options" in kwargs:
            raise ValidationError(
                "FirnMaintenanceOperator runs several operations: pass operation_options keyed by "
                "operation, e.g. {'rewrite_data_files': {'min-input-files': 2}}"
            )
        super().__init__(**kwargs)
        self.operation_options = operation_options
        if isinstance(operations, str):
            operations = [operations]
        self.operations = tuple(operation_name(o) for o in operations) if operations is not None else None
        self._recommendations: list[Recommendation] = []
        self._satisfied: list[str] = []

    def work(self, table: Table) -> Work:
        per_operation = self._per_operation_options()
        recommendations = table.maintenance.recommend()
        self._recommendations = self._considered(recommendations)
        if not self._recommendations:
            listed = ", ".join(r.operation for r in recommendations) or "nothing"
            raise AirflowSkipException(
                f"no maintenance of {table.name} is due: recommend() lists {listed}"
                + (f" (considered: {', '.join(self.operations)})" if self.operations is not None else "")
            )
        for r in self._recommendations:
            self.log.info("%s on %s is recommended: %s", r.operation, table.name, r.reason)
        return [
            (
                r.operation,
                merge_options(
                    where=f"{r.operation} on {table.name}",
                    recommended=r.options,
                    given=per_operation.get(r.operation),
                ),
            )
            for r in self._recommendations
        ]

    def run_work(
        self,
        work: Work,
        table: Table,
        run: Callable[[str, dict[str, Any]], MaintenanceResult | MaintenancePlan[Any]],
    ) -> list[MaintenanceResult | MaintenancePlan[Any]]:
        """The recommended steps in turn, each asked again before it runs (the CLI's
        ``maintain recommend --run`` logic, :func:`firn.maintenance.recommend.run_in_turn`): a
        step an earlier one made unnecessary is left out and logged, one still due runs with
        the options recommended now (under ``operation_options``)."""
        if self.plan_only:  # a dry run plans the list as it stands: nothing ran in between
            return super().run_work(work, table, run)
        per_operation = self._per_operation_options()

        def recommend_again() -> list[Recommendation]:
            table.refresh()
            return self._considered(table.maintenance.recommend())

        def run_one(r: Recommendation) -> MaintenanceResult | MaintenancePlan[Any]:
            table.refresh()
            options = merge_options(
                where=f"{r.operation} on {table.name}",
                recommended=r.options,
                given=per_operation.get(r.operation),
            )
            return run(r.operation, options)

        typed, satisfied = run_in_turn(self._recommendations, recommend_again, run_one)
        self._satisfied = satisfied
        for operation in satisfied:
            self.log.info(
                "%s on %s is no longer recommended: an earlier operation did its work; not run",
                operation,
                table.name,
            )
        return typed

    def _considered(self, recommendations: Sequence[Recommendation]) -> list[Recommendation]:
        return [r for r in recommendations if self.operations is None or r.operation in self.operations]

    def _per_operation_options(self) -> dict[str, Any]:
        given = self.operation_options or {}
        if not isinstance(given, Mapping):
            raise ValidationError(
                "FirnMaintenanceOperator operation_options are keyed by operation, e.g. "
                f"{{'rewrite_data_files': {{'min-input-files': 2}}}}; got {type(given).__name__}"
            )
        return {operation_name(str(k)): v for k, v in given.items()}

    def xcom_value(self, table: str, results: list[dict[str, Any]]) -> Any:
        return {
            "table": table,
            "operations": [r.get("operation") for r in results],
            "results": results,
            "recommendations": [r.to_dict() for r in self._recommendations],
            "satisfied": list(self._satisfied),
        }

    def event_extra(self, results: list[dict[str, Any]], health: dict[str, Any]) -> dict[str, Any]:
        operations = [str(r.get("operation")) for r in results]
        summary = {
            "operation": MAINTENANCE,
            "operations": operations,
            "results": results,
            **maintenance_lineage(results).totals(),
        }
        return {EVENT_OPERATION: ",".join(operations), EVENT_RESULT: summary, EVENT_HEALTH: health}


__all__ = ["MAINTENANCE", "FirnMaintenanceOperator", "operation_name"]
