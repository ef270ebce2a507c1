"""Shared helpers for the benchmarks in ``bench/`` (not a benchmark itself).

Most benchmarks run Firn and a peer in one process and print medians, ratios and the issue's
target next to them; nothing here asserts timings. Two conventions every script follows:

* Sides that are timed against each other run in a different order each round
  (:func:`round_order`), so neither always runs first, warm, or right after the other.
* Every target is judged through :func:`verdict`, and the script's last line is the one
  :func:`final_verdict` prints: ``VERDICT: MET (n/n targets met)``, ``VERDICT: MISSED (k/n
  targets met)``, or ``VERDICT: REPORT ONLY (<why>)`` for a script without a target.
  ``tests/test_bench_smoke.py`` requires that line from every script.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"  # gitignored; cached generated tables live here


def quiet_peers() -> None:
    """Silence PyIceberg's per-call warnings (they would dominate the output, not the timings)."""
    warnings.filterwarnings("ignore")
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)


@contextlib.contextmanager
def workdir(name: str, keep: bool = False) -> Iterator[Path]:
    """A fresh temporary directory for one benchmark run (removed afterwards unless ``keep``)."""
    path = Path(tempfile.mkdtemp(prefix=f"firn-bench-{name}-"))
    try:
        yield path
    finally:
        if keep:
            print(f"(kept {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def firn_catalog(root: Path, name: str = "firn") -> Any:
    """A Firn SQL catalog on SQLite with a local warehouse, namespace ``db`` created."""
    import firn

    catalog = firn.load_catalog(f"sqlite:///{root}/{name}.db", warehouse=str(root / f"{name}-warehouse"))
    with contextlib.suppress(Exception):
        catalog.create_namespace("db")
    return catalog


def pyiceberg_catalog(root: Path, name: str = "pyiceberg") -> Any:
    """A PyIceberg ``SqlCatalog`` on SQLite with a local warehouse, namespace ``db`` created."""
    from pyiceberg.catalog.sql import SqlCatalog

    (root / f"{name}-warehouse").mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(name, uri=f"sqlite:///{root}/{name}.db", warehouse=f"file://{root}/{name}-warehouse")
    with contextlib.suppress(Exception):
        catalog.create_namespace("db")
    return catalog


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


_judged: list[bool] = []  # every target this process judged, for final_verdict


def verdict(met: bool) -> str:
    """``MET`` or ``MISSED`` for a line stating a target; counted in the final verdict."""
    _judged.append(bool(met))
    return "MET" if met else "MISSED"


def final_verdict(report_only: str | None = None) -> str:
    """Print (and return) the script's closing verdict line over every :func:`verdict` it
    made; ``report_only`` (the reason) for a script that judges no target."""
    if report_only is not None:
        if _judged:
            raise AssertionError("a report-only benchmark judged a target")
        line = f"VERDICT: REPORT ONLY ({report_only})"
    elif not _judged:
        raise AssertionError("the benchmark judged no target; say why with report_only")
    else:
        met = sum(_judged)
        line = f"VERDICT: {'MET' if met == len(_judged) else 'MISSED'} ({met}/{len(_judged)} targets met)"
    print(f"\n{line}", flush=True)
    return line


def round_order(sides: Sequence[T], round_index: int) -> list[T]:
    """The sides in the order to run them in round ``round_index``: rotated by one each round
    (two sides swap every round), so every side takes every position equally often over a
    multiple of ``len(sides)`` rounds."""
    k = round_index % len(sides) if sides else 0
    return [*sides[k:], *sides[:k]]


def files_under(path: Path) -> dict[str, int]:
    """Relative path -> size in bytes of every file below ``path``."""
    out: dict[str, int] = {}
    if not path.exists():
        return out
    for dirpath, _dirs, names in os.walk(path):
        for n in names:
            p = Path(dirpath) / n
            out[str(p.relative_to(path))] = p.stat().st_size
    return out


def new_files(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {p: s for p, s in after.items() if p not in before}


def spark_session(master: str = "local[2]") -> Any:
    """A quiet local SparkSession for the Spark benchmarks (UI off, UTC, this interpreter for
    the Python workers), with the ``firn`` data source registered."""
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession

    import firn.spark

    spark = (
        SparkSession.builder.master(master)
        .appName("firn-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    firn.spark.register(spark)
    return spark


def local_path(uri: str) -> Path:
    """A ``file://`` URI or plain path as a local path."""
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


__all__ = [
    "CACHE_DIR",
    "files_under",
    "final_verdict",
    "firn_catalog",
    "local_path",
    "median",
    "ms",
    "new_files",
    "pyiceberg_catalog",
    "quiet_peers",
    "round_order",
    "spark_session",
    "timed",
    "verdict",
    "workdir",
]
