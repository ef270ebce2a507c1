"""The library tour (examples/library_tour.py) builds its warehouse, prints its summary, and can run again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from examples.library_tour import run

import firn


def test_tour_runs_twice_and_reports_time_travel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = tmp_path / "warehouse"
    for _ in range(2):  # re-running starts over with a fresh table
        run(warehouse)
        out = capsys.readouterr().out
        assert "Snapshots (5):" in out
        assert re.search(r"append\s+30\s+3\s", out) and re.search(r"overwrite\s+89\s+11\s", out)
        assert "Now: 89 rows in 11 data files" in out
        assert "Time travel to the first append" in out and "30 rows, ids 0..29" in out
        # V4 part: every small commit writes exactly a root manifest and a metadata JSON.
        commits = re.findall(r"^  (append \d+ events.*|delete .*?)\s{2,}(\d+)\s+(\d+)\s+(.*)$", out, re.M)
        assert len(commits) == 5, out
        assert all(n == "2" and kinds == "metadata JSON, root manifest" for _, n, _, kinds in commits)
        assert out.count("append    +3 data files -0, +0 DVs") == 4
        assert "delete    +0 data files -1, +1 DVs" in out
        assert "Root flush, dry run: 11 data files and 1 DVs in the root" in out
        assert "11 data files and 1 DVs moved into 2 leaves" in out and "the root now has 2 entries" in out
        assert "Read before and after the flush: 89 rows vs 89 rows, identical" in out
    catalog = firn.load_catalog(f"sqlite:///{warehouse / 'catalog.db'}", warehouse=str(warehouse))
    table = catalog.load_table("tour.events")
    assert table.format_version == 2 and len(table.snapshots()) == 5
    assert table.scan().count() == 89
    v4 = catalog.load_table("tour.events_v4")
    assert v4.format_version == 4 and len(v4.snapshots()) == 6
    assert sorted(v4.scan().to_arrow()["id"].to_pylist()) == sorted(table.scan().to_arrow()["id"].to_pylist())
    catalog.close()
