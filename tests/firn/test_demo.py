"""``make demo``: the demo builds its warehouse, prints its summary, and can run again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import firn
from firn.demo import run


def test_demo_runs_twice_and_reports_time_travel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = tmp_path / "warehouse"
    for _ in range(2):  # re-running starts over with a fresh table
        run(warehouse)
        out = capsys.readouterr().out
        assert "Snapshots (5):" in out
        assert re.search(r"append\s+30\s+3\s", out) and re.search(r"overwrite\s+89\s+11\s", out)
        assert "Now: 89 rows in 11 data files" in out
        assert "Time travel to the first append" in out and "30 rows, ids 0..29" in out
    catalog = firn.load_catalog(f"sqlite:///{warehouse / 'catalog.db'}", warehouse=str(warehouse))
    table = catalog.load_table("demo.events")
    assert table.format_version == 2 and len(table.snapshots()) == 5
    assert table.scan().count() == 89
    catalog.close()
