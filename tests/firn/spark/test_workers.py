"""Spark's Python workers must be able to import Firn; ``firn.spark.register`` finds out once.

Issue 20's finding: a script run as ``.venv/bin/python job.py`` without the venv activated
leaves ``PYSPARK_PYTHON`` unset, PySpark starts its workers with another ``python3``, and
``spark.read.format("firn")`` fails inside a task (``ModuleNotFoundError`` wrapped in
``SQLSTATE: 38000``). Each test runs a real script in a fresh process with its own Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    import firn.spark

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        worker = firn.spark.check_workers(spark)
        print("OK", worker.executable)
        firn.spark.register(spark)  # checked once: the cached answer
        print("REGISTERED")
    except firn.spark.WorkersCannotImportFirn as e:
        print("REFUSED", e)
        sys.exit(3)
    finally:
        spark.stop()
    """
)


def _base_python() -> str:
    """The interpreter the venv was made from: it runs PySpark's worker (Spark puts its own
    pyspark.zip on the worker's path) but has no Firn installed."""
    for name in ("python3", f"python{sys.version_info.major}.{sys.version_info.minor}", "python"):
        candidate = Path(sys.base_prefix) / "bin" / name
        if candidate.exists():
            return str(candidate)
    pytest.fail(f"no interpreter under {sys.base_prefix}/bin")


def _run(tmp_path: Path, worker_python: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = worker_python
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.spark
@pytest.mark.slow
def test_workers_without_firn_are_refused_with_the_fix(tmp_path: Path) -> None:
    base = _base_python()
    probe = subprocess.run([base, "-c", "import firn"], capture_output=True, text=True)
    assert probe.returncode != 0, f"{base} can import firn: this test needs an interpreter without it"
    done = _run(tmp_path, base)
    assert done.returncode == 3, done.stdout + done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("REFUSED"))
    assert "cannot import firn" in line and "ModuleNotFoundError" in line
    assert f"PYSPARK_PYTHON={sys.executable}" in line  # the fix, naming this interpreter
    assert base in line or os.path.realpath(base) in line  # and the interpreter the workers ran


@pytest.mark.spark
@pytest.mark.slow
def test_workers_with_firn_pass_and_the_answer_is_cached(tmp_path: Path) -> None:
    done = _run(tmp_path, sys.executable)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "REGISTERED" in done.stdout
    ok = next(ln for ln in done.stdout.splitlines() if ln.startswith("OK"))
    assert os.path.realpath(ok.split(" ", 1)[1]) == os.path.realpath(sys.executable)
