"""Health and recommendations as a person reads them, the same in the demo, the CLI and the
Airflow health page (numbers through :mod:`firn.util.present`: 24-hour UTC, binary byte units,
percentages). Machine output (``to_dict`` / ``--json`` / XCom) stays raw.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from firn.maintenance.health import TableHealth
from firn.maintenance.recommend import Estimate, Recommendation
from firn.util import present

Interface = Literal["python", "cli"]

# Sizes: "data_bytes", "bytes_written", "rewritten_bytes_count".
_BYTES = re.compile(r"(^|_)bytes(_|$)")
# Fields that name rather than count: shown as they are.
_AS_IS = frozenset({"table", "snapshot_id", "format_version"})


def health_label(key: str) -> str:
    """``oldest_snapshot_age_ms`` -> ``oldest snapshot age``: the unit goes into the value."""
    return key.removesuffix("_ms").replace("_", " ")


def health_value(key: str, value: Any) -> str:
    """One field's value (of a health, or a maintenance result) read by its name: ids as they
    are, ages and run times as durations, other ``_ms`` fields as 24-hour UTC times, ratios as
    percentages, bytes in binary units, counts grouped."""
    if value is None:
        return "-"
    if key in _AS_IS or key.endswith("_id") or isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key.endswith("_age_ms") or key.endswith("duration_ms"):
        return present.duration(value)
    if key.endswith("_ms"):
        return present.timestamp(int(value))
    if key.endswith("ratio"):
        return present.ratio(float(value))
    if _BYTES.search(key):
        return present.size(int(value))
    if isinstance(value, float):
        return f"{value:,.3g}"
    return present.count(value)


def health_rows(health: TableHealth | Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, value)`` for every field of a health (a :class:`TableHealth` or its dict)."""
    data = health.to_dict() if isinstance(health, TableHealth) else dict(health)
    return [(health_label(k), health_value(k, v)) for k, v in data.items()]


def estimate_sentence(estimate: Estimate | Mapping[str, Any]) -> str:
    """What a run should gain, as a sentence (bounds are said to be bounds)."""
    e = estimate if isinstance(estimate, Estimate) else Estimate(**dict(estimate))
    parts = []
    if e.files_removed:
        files = "file" if e.files_removed == 1 else "files"
        parts.append(f"the table tracks about {present.count(e.files_removed)} fewer {files}")
    if e.bytes:
        parts.append(f"it rewrites or deletes up to {present.size(e.bytes)}")
    if e.planning_entries_saved:
        entries = "entry" if e.planning_entries_saved == 1 else "entries"
        parts.append(
            f"every scan plan reads about {present.count(e.planning_entries_saved)} fewer metadata {entries}"
        )
    if not parts:
        return "Health cannot tell what this run gains."
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def _literal(value: Any, interface: Interface) -> str:
    if interface == "cli":
        return str(value).lower() if isinstance(value, bool) else str(value)
    return repr(value)


def options_text(options: Mapping[str, Any], interface: Interface) -> str:
    """Recommended options in the syntax of ``interface``: ``-o delete-file-threshold=1`` for
    the CLI, ``delete_file_threshold=1`` for Python (and the Airflow operators' ``options``)."""
    if interface == "cli":
        return " ".join(f"-o {k}={_literal(v, 'cli')}" for k, v in options.items())
    return ", ".join(f"{k.replace('-', '_')}={_literal(v, 'python')}" for k, v in options.items())


def recommendation_lines(recommendations: list[Recommendation], interface: Interface) -> list[str]:
    """Each recommendation as a numbered paragraph: operation and options, why, what it gains."""
    out = []
    for i, r in enumerate(recommendations, 1):
        options = options_text(r.options, interface)
        head = f"{i}. {r.operation}" + (f" {options}" if interface == "cli" and options else "")
        if interface == "python":
            head = f"{i}. table.maintenance.{r.operation}({options})"
        out.append(head)
        out.append(f"   why: {r.reason}")
        out.append(f"   gain: {estimate_sentence(r.estimate)}")
    return out


__all__ = [
    "Interface",
    "estimate_sentence",
    "health_label",
    "health_rows",
    "health_value",
    "options_text",
    "recommendation_lines",
]
