"""Whether Spark's Python workers can import Firn, found out once per Spark application.

PySpark starts its Python workers with ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``),
falling back to ``python3`` on the PATH: a script run as ``.venv/bin/python job.py`` without
the venv activated gets workers that have never heard of Firn, and the first read fails deep
inside a task with ``ModuleNotFoundError: No module named 'firn'`` wrapped in a
``SQLSTATE: 38000`` error. :func:`check_workers` runs one one-row task that imports ``firn``
and reports which interpreter ran it, so :func:`firn.spark.register` can fail at once with one
message that names the interpreter and the fix.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firn.errors import Unsupported

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The probe is compiled here as source in a namespace of its own, so that Spark pickles it by
# value: a function of this module would be pickled by reference, and unpickling it on a
# worker that cannot import firn fails before the probe could say which Python it is.
_PROBE_SOURCE = """
def probe(rows):
    import sys
    try:
        import firn.spark.source  # what the data source's workers import first
        error = ""
    except BaseException as e:  # report, never raise: the driver words the error
        error = f"{type(e).__name__}: {e}"
    yield (sys.executable, sys.version.split()[0], error)
"""


def _make_probe() -> Callable[[Iterable[Any]], Iterable[tuple[str, str, str]]]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(_PROBE_SOURCE, "<firn worker probe>", "exec"), namespace)
    probe: Callable[[Iterable[Any]], Iterable[tuple[str, str, str]]] = namespace["probe"]
    return probe


@dataclass(frozen=True, slots=True)
class WorkerPython:
    """What a Python worker reported: its interpreter, version and import error ("" if none)."""

    executable: str
    version: str
    error: str


class WorkersCannotImportFirn(Unsupported):
    """Spark's Python workers run an interpreter that cannot import Firn (a setup this
    Spark cannot run Firn in, as it stands)."""


_checked: dict[str, WorkerPython] = {}
_lock = threading.Lock()


def _fix_message(worker: WorkerPython | None, detail: str) -> str:
    here = sys.executable
    who = (
        f"Spark's Python workers run {worker.executable} (Python {worker.version}), which cannot import firn"
        if worker is not None
        else "Spark's Python workers could not run Firn's import check"
    )
    return (
        f"{who}: {detail}. Start Spark with the interpreter that has Firn installed: set "
        f"PYSPARK_PYTHON={here} in the environment before the SparkSession is created (or "
        f"spark.pyspark.python={here} in its conf); on a cluster whose nodes lack Firn, ship it with "
        "firn.spark.package() or firn.spark.pack_venv()."
    )


def check_workers(spark: SparkSession) -> WorkerPython:
    """Run the import probe on one worker once per Spark application (cached by application
    id) and return what it reported; :class:`WorkersCannotImportFirn` when the worker cannot
    import Firn or cannot run at all."""
    sc = spark.sparkContext
    key = str(sc.applicationId)
    with _lock:
        cached = _checked.get(key)
    if cached is not None:
        return cached
    try:
        rows = sc.parallelize([0], 1).mapPartitions(_make_probe()).collect()
    except Exception as e:  # the worker could not start or unpickle: name the cause, not a trace
        first = next((line for line in str(e).splitlines() if "Error" in line), str(e).splitlines()[0])
        raise WorkersCannotImportFirn(_fix_message(None, first.strip())) from e
    worker = WorkerPython(*rows[0])
    if worker.error:
        raise WorkersCannotImportFirn(_fix_message(worker, worker.error))
    with _lock:
        _checked[key] = worker
    return worker


__all__ = ["WorkerPython", "WorkersCannotImportFirn", "check_workers"]
