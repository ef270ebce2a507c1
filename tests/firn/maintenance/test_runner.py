"""The local runner's progress callback: one call as a batch starts, one per finished unit;
work units' repr() without their credentials."""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path

import pytest

from firn.io.pyarrow_io import PyArrowFileIO
from firn.maintenance.runner import LocalRunner, UnitResult, WorkUnit, make_unit


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


def test_a_unit_carries_credentials_but_never_prints_them(tmp_path: Path) -> None:
    # A unit must carry the FileIO properties (it runs elsewhere from its JSON alone), so its
    # repr() is what must not show them (issue 18).
    io = PyArrowFileIO({"s3.secret-access-key": "UNITSECRET-5", "s3.region": "eu-west-1"})
    unit = make_unit("echo", io=io, metadata_location=str(tmp_path / "m.json"), payload={"n": 1})
    assert unit["io"]["s3.secret-access-key"] == "UNITSECRET-5"
    assert json.loads(json.dumps(unit))["io"]["s3.secret-access-key"] == "UNITSECRET-5"
    assert pickle.loads(pickle.dumps(unit)) == unit
    for text in (repr(unit), str(unit), f"{unit}", repr([unit])):
        assert "UNITSECRET-5" not in text and "'s3.secret-access-key': '***'" in text
        assert "eu-west-1" in text
