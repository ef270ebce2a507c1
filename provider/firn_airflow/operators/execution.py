"""Where a maintenance operation runs (``execution``): in the Airflow worker (``worker``) or as a
spark-submit job (``spark``, :mod:`firn_airflow.hooks.spark_job`), or ``auto``: chosen by the
work the operation's plan holds (:class:`firn.maintenance.base.PlanWork`), never by the
table's size. (A library ``Runner`` is where an operation's work units run; ``execution`` is
where the whole operation's driver runs.)

``auto`` plans in the worker (planning reads metadata only) and submits to Spark when the plan

* reads and rewrites more than ``spark-min-bytes`` of data and delete files (default 1 GiB,
  about two target-size data files; below it a worker rewrites in seconds), or
* rewrites more than ``spark-min-metadata-bytes`` of manifests (default 256 MiB), or
* deletes more than ``spark-min-delete-files`` files (default 100,000),

and runs it in the worker otherwise: a metadata-only plan (a root flush, an expiry that frees
few files, a rewrite of small manifests) never pays a spark-submit (a JVM start, ~20-30 s).
Each threshold is, first found wins: the operator's argument (``spark_min_bytes``,
``spark_min_metadata_bytes``, ``spark_min_delete_files``), the table property
``firn.execution.spark-min-bytes`` / ``firn.execution.spark-min-metadata-bytes`` /
``firn.execution.spark-min-delete-files``, the default.

Both produce the same JSON: the operation's ``result.to_dict()`` (the Spark job writes
exactly that into its result file), or for a dry run the plan's ``to_dict()`` with
``"dry_run": true`` and its human-readable ``description``. A dry run only plans, which reads
metadata and needs no Spark, so it always plans in the worker, as the job's ``--dry-run`` would
on its driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from firn.errors import ValidationError
from firn.maintenance.base import PlanWork, dry_run_entry

if TYPE_CHECKING:
    from firn.table.table import Table

Execution = Literal["spark", "worker", "auto"]
EXECUTIONS: tuple[str, ...] = ("spark", "worker", "auto")
# The ``auto`` thresholds (see the module docstring): table properties and defaults.
PROPERTY_SPARK_MIN_BYTES = "firn.execution.spark-min-bytes"
PROPERTY_SPARK_MIN_METADATA_BYTES = "firn.execution.spark-min-metadata-bytes"
PROPERTY_SPARK_MIN_DELETE_FILES = "firn.execution.spark-min-delete-files"
DEFAULT_SPARK_MIN_BYTES = 1 << 30
DEFAULT_SPARK_MIN_METADATA_BYTES = 256 << 20
DEFAULT_SPARK_MIN_DELETE_FILES = 100_000


@dataclass(frozen=True)
class AutoThresholds:
    """Above any of these, ``auto`` submits the plan to Spark (see the module docstring)."""

    spark_min_bytes: int = DEFAULT_SPARK_MIN_BYTES
    spark_min_metadata_bytes: int = DEFAULT_SPARK_MIN_METADATA_BYTES
    spark_min_delete_files: int = DEFAULT_SPARK_MIN_DELETE_FILES

    @classmethod
    def resolve(cls, given: Mapping[str, object], properties: Mapping[str, str]) -> AutoThresholds:
        """Each threshold from ``given`` (the operator's arguments by field name; None: not
        given), else the table's ``properties``, else the default. A value that is not a whole
        number >= 0 is a ValidationError naming where it came from."""
        values: dict[str, int] = {}
        for name, prop in _PROPERTIES.items():
            value = given.get(name)
            if value is not None:
                values[name] = _count(value, name)
            elif prop in properties:
                values[name] = _count(properties[prop], f"table property {prop}")
        return cls(**values)

    def choose(self, work: PlanWork) -> tuple[Literal["spark", "worker"], str]:
        """Where the plan's ``work`` runs, and why (one phrase for the task log)."""
        over = [
            f"{what} {value:,} > {limit:,} ({name})"
            for what, value, limit, name in (
                ("data bytes to rewrite", work.data_bytes, self.spark_min_bytes, "spark_min_bytes"),
                (
                    "manifest bytes to rewrite",
                    work.metadata_bytes,
                    self.spark_min_metadata_bytes,
                    "spark_min_metadata_bytes",
                ),
                (
                    "files to delete",
                    work.files_to_delete,
                    self.spark_min_delete_files,
                    "spark_min_delete_files",
                ),
            )
            if value > limit
        ]
        if over:
            return "spark", "the plan holds " + "; ".join(over)
        return "worker", (
            f"the plan holds {work.data_bytes:,} data bytes, {work.metadata_bytes:,} manifest bytes "
            f"to rewrite and {work.files_to_delete:,} files to delete, none above its Spark threshold"
        )


_PROPERTIES = {
    "spark_min_bytes": PROPERTY_SPARK_MIN_BYTES,
    "spark_min_metadata_bytes": PROPERTY_SPARK_MIN_METADATA_BYTES,
    "spark_min_delete_files": PROPERTY_SPARK_MIN_DELETE_FILES,
}


def _count(value: object, where: str) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{where} must be a whole number, got {value!r}")
    if value < 0:
        raise ValidationError(f"{where} must be >= 0, got {value}")
    return value


def check_execution(execution: object) -> str:
    """``execution`` if it is one of :data:`EXECUTIONS`, else a ValidationError naming them."""
    if execution not in EXECUTIONS:
        raise ValidationError(f"execution must be one of {list(EXECUTIONS)}, got {execution!r}")
    return str(execution)


def choose_execution(
    execution: str, work: PlanWork | None, thresholds: AutoThresholds
) -> tuple[Literal["spark", "worker"], str]:
    """Where to run, and why: ``spark`` and ``worker`` as asked; ``auto`` by the plan's
    ``work`` against ``thresholds`` (:meth:`AutoThresholds.choose`)."""
    if execution == "spark":
        return "spark", "execution='spark'"
    if execution == "worker":
        return "worker", "execution='worker'"
    if work is None:
        raise ValidationError("execution='auto' needs the operation's plan")
    return thresholds.choose(work)


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
    "DEFAULT_SPARK_MIN_DELETE_FILES",
    "DEFAULT_SPARK_MIN_METADATA_BYTES",
    "PROPERTY_SPARK_MIN_BYTES",
    "PROPERTY_SPARK_MIN_DELETE_FILES",
    "PROPERTY_SPARK_MIN_METADATA_BYTES",
    "AutoThresholds",
    "EXECUTIONS",
    "Execution",
    "check_execution",
    "choose_execution",
    "operation_for",
    "plan_entry",
    "run_in_worker",
]
