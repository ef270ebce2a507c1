"""``SparkRunner``: maintenance work units as Spark tasks (``firn.maintenance.runner.Runner``).

A plan is made on the driver; its JSON work units are parallelized one per Spark task, each
task runs the operation's module-level unit function (shipped by reference, so executors need
``firn`` importable: see ``firn.spark.package``), and the results come back in unit order for
the driver to commit exactly as with the local runner. Units carry the table's FileIO
properties; executors rebuild the FileIO from them (tables on an in-memory FileIO cannot run
here: their files exist only in the driver process).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from firn.maintenance.runner import UnitFunction, UnitResult, WorkUnit
from firn.spark.workers import check_workers

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _run_unit(fn: UnitFunction, text: str) -> str:
    # Units and results cross as JSON text: they must be JSON (DESIGN "Maintenance"), and
    # text keeps Spark from pickling anything but the function reference.
    return json.dumps(fn(json.loads(text)))


class SparkRunner:
    """Runs work units as Spark tasks, one task per unit, results in unit order."""

    def __init__(self, spark: SparkSession, *, job_description: str | None = None) -> None:
        self.spark = spark
        self.job_description = job_description

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]:
        if not units:
            return []
        check_workers(self.spark)  # units import firn on the workers: fail clearly if they cannot
        sc = self.spark.sparkContext
        payload = [json.dumps(u) for u in units]
        if self.job_description:
            sc.setJobDescription(self.job_description)
        try:
            out = (
                sc.parallelize(payload, numSlices=len(payload))
                .map(functools.partial(_run_unit, fn))
                .collect()
            )
        finally:
            if self.job_description:
                sc.setJobDescription(None)  # type: ignore[arg-type]
        return [json.loads(r) for r in out]

    def __repr__(self) -> str:
        return f"SparkRunner(master={self.spark.sparkContext.master!r})"


__all__ = ["SparkRunner"]
