"""Where a maintenance operation runs (``execution``): in the Airflow worker (``worker``) or as a
spark-submit job (``spark``, :mod:`firn_airflow.hooks.spark_job`), or ``auto``: Spark for
tables whose data exceed a size, the worker for smaller ones. (A library ``Runner`` is where
an operation's work units run; ``execution`` is where the whole operation's driver runs.)

Both produce the same JSON: the operation's ``result.to_dict()`` (the Spark job writes
exactly that into its result file), or for a dry run the plan's ``to_dict()`` with
``"dry_run": true`` and its human-readable ``description``. A dry run only plans, which reads
metadata and needs no Spark, so it always plans in the worker, as the job's ``--dry-run`` would
on its driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from firn.errors import ValidationError
from firn.maintenance.base import dry_run_entry

if TYPE_CHECKING:
    from firn.maintenance.health import TableHealth
    from firn.table.table import Table

Execution = Literal["spark", "worker", "auto"]
EXECUTIONS: tuple[str, ...] = ("spark", "worker", "auto")
# "auto" runs on Spark above this many bytes of live data files (table.health().data_bytes):
# 1 GiB, about two target-size data files, below which a worker rewrites in seconds.
DEFAULT_SPARK_MIN_BYTES = 1 << 30


def check_execution(execution: object) -> str:
    """``execution`` if it is one of :data:`EXECUTIONS`, else a ValidationError naming them."""
    if execution not in EXECUTIONS:
        raise ValidationError(f"execution must be one of {list(EXECUTIONS)}, got {execution!r}")
    return str(execution)


def choose_execution(
    execution: str, health: TableHealth | None, spark_min_bytes: int
) -> Literal["spark", "worker"]:
    """Where to run: ``auto`` picks ``spark`` when the table's live data files hold more than
    ``spark_min_bytes`` bytes, ``worker`` otherwise."""
    if execution == "spark":
        return "spark"
    if execution == "worker":
        return "worker"
    if health is None:
        raise ValidationError("execution='auto' needs the table's health")
    return "spark" if health.data_bytes > spark_min_bytes else "worker"


def operation_for(table: Table, method: str, options: Mapping[str, Any]) -> Any:
    """``table.maintenance.<method>(**options)``: options are checked here (an unknown or
    malformed option is a ValidationError naming it) before anything runs anywhere."""
    return table.maintenance.operation(method, options)


def _plain(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON (lists, not tuples): what the Spark job's result file holds."""
    out: dict[str, Any] = json.loads(json.dumps(entry))
    return out


def plan_entry(table: Table, method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The dry run: the plan as JSON, marked ``dry_run`` with its description."""
    return dry_run_entry(operation_for(table, method, options).plan())


def run_in_worker(table: Table, method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Run the operation in this process (work units on a local thread pool) and commit; the
    result as JSON. ``LeaseHeld`` propagates when another run holds the table's lease."""
    result = operation_for(table, method, options).run()
    return _plain(result.to_dict())


__all__ = [
    "DEFAULT_SPARK_MIN_BYTES",
    "EXECUTIONS",
    "Execution",
    "check_execution",
    "choose_execution",
    "operation_for",
    "plan_entry",
    "run_in_worker",
]
