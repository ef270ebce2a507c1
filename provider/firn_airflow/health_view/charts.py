"""Chart data for the health view: aligned series in the layout uPlot draws.

Each chart has one x axis (seconds since the epoch) and up to two series: a line from the
snapshot summaries (every commit, exact totals) and points from health measurements (the
``health`` dicts of maintenance asset events, plus the health measured now). Small files and
deletion vectors exist only as measurements: snapshot summaries carry no such totals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChartSpec:
    """A chart: which snapshot-history key draws its line and which health field its points."""

    id: str
    title: str
    summary_key: str | None
    summary_label: str
    health_key: str


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("snapshots", "Snapshots", "snapshots", "snapshots in metadata", "snapshots"),
    ChartSpec("data_files", "Data files", "data_files", "total-data-files", "data_files"),
    ChartSpec("small_files", "Small files", None, "", "small_files"),
    ChartSpec(
        "deletes",
        "Delete files and deletion vectors",
        "delete_files",
        "total-delete-files",
        "deletion_vectors",
    ),
    ChartSpec("root_entries", "Root manifest entries (V4)", "root_entries", "root-entries", "root_entries"),
)


def _measurements(
    events: Sequence[Mapping[str, Any]], now: Mapping[str, Any] | None
) -> list[tuple[int, Mapping[str, Any]]]:
    points = [(int(e["timestamp_ms"]), e["health"]) for e in events if isinstance(e.get("health"), Mapping)]
    if now is not None and "measured_at_ms" in now:
        points.append((int(now["measured_at_ms"]), now))
    return points


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def build_charts(
    history: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    health_now: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """One dict per chart: ``id``, ``title``, ``x`` (seconds) and ``series`` (``label``,
    ``kind`` ``line``/``points``, ``values`` aligned with ``x``, ``None`` where absent)."""
    measured = _measurements(events, health_now)
    charts = []
    for spec in CHARTS:
        line: dict[int, float | int] = {}
        if spec.summary_key is not None:
            for entry in history:
                value = _number(entry.get(spec.summary_key))
                if value is not None:
                    line[int(entry["timestamp_ms"])] = value
        points: dict[int, float | int] = {}
        for ts, health in measured:
            value = _number(health.get(spec.health_key))
            if value is not None:
                points[ts] = value
        xs = sorted(set(line) | set(points))
        series = []
        if line:
            series.append({"label": spec.summary_label, "kind": "line", "values": [line.get(x) for x in xs]})
        if points:
            series.append(
                {
                    "label": f"{spec.health_key} (measured)",
                    "kind": "points",
                    "values": [points.get(x) for x in xs],
                }
            )
        charts.append({"id": spec.id, "title": spec.title, "x": [x / 1000 for x in xs], "series": series})
    return charts


__all__ = ["CHARTS", "ChartSpec", "build_charts"]
