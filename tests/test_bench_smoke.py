"""Every benchmark script runs end to end in its ``--quick`` mode (timings are not asserted;
the full runs and their figures are in bench/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 9


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_quick_run(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    # Each prints a comparison or a verdict line next to its target.
    assert any(word in done.stdout for word in ("MET", "MISSED", "target", "ratio", "within")), done.stdout[
        -2000:
    ]
