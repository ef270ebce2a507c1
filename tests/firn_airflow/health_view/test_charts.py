"""Chart series: summary lines and measured points on one aligned x axis."""

from __future__ import annotations

import pytest

from firn_airflow.health_view.charts import CHARTS, build_charts

pytestmark = pytest.mark.airflow


def test_lines_from_summaries_points_from_measurements_aligned() -> None:
    history = [
        {"timestamp_ms": 1_000, "snapshots": 1, "data_files": 1, "delete_files": 0, "root_entries": 1},
        {"timestamp_ms": 3_000, "snapshots": 2, "data_files": 2, "delete_files": 1, "root_entries": 3},
    ]
    events = [
        {
            "timestamp_ms": 2_000,
            "health": {"snapshots": 1, "data_files": 1, "small_files": 1, "deletion_vectors": 0},
        },
        {"timestamp_ms": 2_500, "health": None},  # an event without health adds nothing
    ]
    now = {"measured_at_ms": 4_000, "snapshots": 2, "data_files": 2, "small_files": 2, "deletion_vectors": 1}
    charts = {c["id"]: c for c in build_charts(history, events, now)}
    assert list(charts) == [spec.id for spec in CHARTS]

    data_files = charts["data_files"]
    assert data_files["x"] == [1.0, 2.0, 3.0, 4.0]
    line, points = data_files["series"]
    assert line == {"label": "total-data-files", "kind": "line", "values": [1, None, 2, None]}
    assert points == {"label": "data_files (measured)", "kind": "points", "values": [None, 1, None, 2]}

    (small,) = charts["small_files"]["series"]
    assert small["kind"] == "points"
    assert charts["small_files"]["x"] == [2.0, 4.0] and small["values"] == [1, 2]

    deletes = charts["deletes"]["series"]
    assert [s["label"] for s in deletes] == ["total-delete-files", "deletion_vectors (measured)"]
    # No root_entries measured (not V4 in the health dicts): the line alone.
    assert [s["kind"] for s in charts["root_entries"]["series"]] == ["line"]


def test_a_table_without_snapshots_or_events_has_empty_charts() -> None:
    charts = build_charts([], [], None)
    assert all(c["x"] == [] and c["series"] == [] for c in charts)
    # A health value of the wrong type (a string, a bool) is not plotted.
    charts = build_charts([], [], {"measured_at_ms": 5, "small_files": "7", "data_files": True})
    assert all(c["series"] == [] for c in charts)
