"""Every benchmark script runs end to end in its ``--quick`` mode and ends with its verdict.

Timings are not asserted (the full runs and their figures are in bench/README.md). What is:
the script exits 0, and its last line is the verdict ``bench/_harness.py``'s
``final_verdict`` prints over every target it judged: ``VERDICT: MET (n/n targets met)`` or
``VERDICT: MISSED (k/n targets met)`` with at least one target, or ``VERDICT: REPORT ONLY
(<why>)`` for the scripts listed in :data:`REPORT_ONLY` (and only those). A script that stops
judging its target, or prints no verdict, fails here. Every script is also documented in
bench/README.md.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))
# Scripts whose issue set no target: they report figures and say so in their verdict line.
REPORT_ONLY = {"bench_spark_compaction.py"}

JUDGED = re.compile(r"VERDICT: (MET|MISSED) \((\d+)/(\d+) targets met\)")
REPORTED = re.compile(r"VERDICT: REPORT ONLY \(.+\)")


def test_every_script_is_documented_and_the_report_only_list_is_current() -> None:
    readme = (BENCH / "README.md").read_text()
    undocumented = [s for s in SCRIPTS if s not in readme]
    assert undocumented == [], f"bench scripts missing from bench/README.md: {undocumented}"
    assert set(SCRIPTS) >= REPORT_ONLY, REPORT_ONLY - set(SCRIPTS)


def _check_verdict(script: str, stdout: str) -> None:
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert lines, f"{script} printed nothing"
    last = lines[-1].strip()
    if script in REPORT_ONLY:
        assert REPORTED.fullmatch(last), f"{script} must end with a REPORT ONLY verdict, ended with {last!r}"
        return
    match = JUDGED.fullmatch(last)
    assert match, f"{script} must end with a verdict line (VERDICT: MET/MISSED ...), ended with {last!r}"
    met, judged = int(match.group(2)), int(match.group(3))
    assert judged >= 1 and 0 <= met <= judged
    assert (match.group(1) == "MET") == (met == judged)
    # Each judged target was printed with its own MET/MISSED on a line above the verdict.
    assert sum(len(re.findall(r"\b(?:MET|MISSED)\b", line)) for line in lines[:-1]) >= judged


@pytest.mark.parametrize(
    ("script", "stdout", "ok"),
    [
        ("bench_x.py", "target <= 2 s: MET\n\nVERDICT: MET (1/1 targets met)\n", True),
        ("bench_x.py", "a: MET\nb: MISSED\nVERDICT: MISSED (1/2 targets met)", True),
        ("bench_x.py", "ratio 1.2x\n", False),  # no verdict at all
        ("bench_x.py", "VERDICT: MET (0/0 targets met)", False),  # judged nothing
        ("bench_x.py", "VERDICT: MET (1/2 targets met)", False),  # inconsistent
        ("bench_x.py", "VERDICT: MET (1/1 targets met)", False),  # the target's line is missing
        ("bench_x.py", "VERDICT: REPORT ONLY (no target)", False),  # not a report-only script
        ("bench_spark_compaction.py", "VERDICT: REPORT ONLY (no target)", True),
        ("bench_spark_compaction.py", "x: MET\nVERDICT: MET (1/1 targets met)", False),
    ],
)
def test_the_verdict_check_can_fail(script: str, stdout: str, ok: bool) -> None:
    if ok:
        _check_verdict(script, stdout)
    else:
        with pytest.raises(AssertionError):
            _check_verdict(script, stdout)


@pytest.mark.slow
@pytest.mark.timeout(900)  # past the script's own 600 s limit below, which then names it
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
    _check_verdict(script, done.stdout)
