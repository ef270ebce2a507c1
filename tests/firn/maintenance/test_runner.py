"""The local runner's progress callback: one call as a batch starts, one per finished unit."""

from __future__ import annotations

import threading

import pytest

from firn.maintenance.runner import LocalRunner, UnitResult, WorkUnit


def _double(unit: WorkUnit) -> UnitResult:
    return {"n": unit["n"] * 2}


@pytest.mark.parametrize("workers", [1, 4])
def test_progress_reports_every_unit_and_results_keep_their_order(workers: int) -> None:
    calls: list[tuple[int, int]] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            calls.append((done, total))

    runner = LocalRunner(max_workers=workers, progress=progress)
    units = [{"n": i} for i in range(10)]
    assert runner.map(_double, units) == [{"n": 2 * i} for i in range(10)]
    assert calls[0] == (0, 10) and calls[-1] == (10, 10)
    assert sorted(d for d, _ in calls) == list(range(11)) and {t for _, t in calls} == {10}
    runner.map(_double, [])
    assert calls[-1] == (0, 0)  # an empty batch still announces itself


def test_a_failing_unit_fails_the_map() -> None:
    def boom(unit: WorkUnit) -> UnitResult:
        raise RuntimeError(f"unit {unit['n']} failed")

    with pytest.raises(RuntimeError, match="unit"):
        LocalRunner(max_workers=2, progress=lambda d, t: None).map(boom, [{"n": 1}, {"n": 2}])
