"""How numbers read to a person: one formatter for bytes, counts, ratios, durations and times.

The demo, the ``firn`` CLI and the Airflow health page all print through these functions, so
one value reads the same everywhere. Times are 24-hour UTC, as Airflow shows them. Machine
output (``--json``, XCom, asset events) stays raw and never comes through here.
"""

from __future__ import annotations

import datetime as dt

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def count(n: int | None) -> str:
    """``1,234,567``; ``-`` for unknown."""
    return "-" if n is None else f"{n:,}"


def size(n: int | None) -> str:
    """Bytes in binary units with three significant figures (``1.50 MiB``, ``812 B``)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in _BYTE_UNITS:
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            if unit == "B":
                return f"{int(value):,} B"
            return f"{value:.3g} {unit}" if abs(value) >= 100 else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def ratio(x: float | None) -> str:
    """A share as a percentage with one decimal (``5.1%``); below 0.1% but above 0, ``<0.1%``."""
    if x is None:
        return "-"
    if 0 < x < 0.001:
        return "<0.1%"
    return f"{100 * x:.1f}%"


def duration(ms: int | float | None) -> str:
    """An age or a run time: ``850 ms``, ``4.2 s``, ``3 min 35 s``, ``2 h 05 min``, ``6 d 4 h``."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s"
    total = int(s)
    minutes, seconds = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def timestamp(ms: int | None) -> str:
    """A point in time, 24-hour UTC: ``2026-11-27 01:12:24 UTC``."""
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = ["count", "duration", "ratio", "size", "timestamp"]
