"""Calendar arithmetic and ISO-8601 text for Firn's integer date/time representation.

Internal values are plain integers (days, µs or ns from the epoch; µs from midnight), so
everything here is integer arithmetic on the proleptic Gregorian calendar and works for the
whole int64 range, unlike :mod:`datetime` (years 1-9999 only). The day ↔ civil-date
conversion is the well-known era/day-of-era algorithm (H. Hinnant, "chrono-compatible
low-level date algorithms"); it uses floor division, so it is correct before the epoch.

Text forms follow Java's ``java.time`` formatters because Iceberg Java writes the JSON
single values (spec Appendix D) with them: ``ISO_LOCAL_DATE``, ``ISO_LOCAL_TIME`` (seconds
always, fraction with trailing zeros dropped) and ``+00:00`` for UTC timestamps.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
NANOS_PER_MICRO = 1_000
NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_HOUR = 3_600 * NANOS_PER_SECOND
NANOS_PER_DAY = 86_400 * NANOS_PER_SECOND
EPOCH_YEAR = 1970

# Days from 0000-03-01 to 1970-01-01 in the shifted (March-based) calendar.
_EPOCH_SHIFT = 719_468
_DAYS_PER_ERA = 146_097


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (no range limit)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * _DAYS_PER_ERA + doe - _EPOCH_SHIFT


def civil_from_days(days: int) -> tuple[int, int, int]:
    """``(year, month, day)`` of a day count since 1970-01-01 (no range limit)."""
    z = days + _EPOCH_SHIFT
    era = z // _DAYS_PER_ERA
    doe = z - era * _DAYS_PER_ERA
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def civil_from_days_np(
    days: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Vectorized :func:`civil_from_days` returning ``(year, month)`` arrays (int64)."""
    z = days.astype(np.int64) + _EPOCH_SHIFT
    era = np.floor_divide(z, _DAYS_PER_ERA)
    doe = z - era * _DAYS_PER_ERA
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    return year, month


def days_in_month(year: int, month: int) -> int:
    """Length of ``month`` in ``year`` (proleptic Gregorian)."""
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def years_from_days(days: int) -> int:
    """Year transform of a day count: whole years since 1970, floored before the epoch."""
    return civil_from_days(days)[0] - EPOCH_YEAR


def months_from_days(days: int) -> int:
    """Month transform of a day count: whole months since 1970-01, floored before the epoch."""
    year, month, _ = civil_from_days(days)
    return (year - EPOCH_YEAR) * 12 + month - 1


# --- formatting ----------------------------------------------------------------------------


def format_year(year: int) -> str:
    """A calendar year as java.time prints it: ``2017``, ``0042``, ``+10000``, ``-0001``."""
    # java.time prints 4-digit years plainly and others with an explicit sign ("+10000").
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"+{year}" if year > 0 else f"-{-year:04d}"


def format_date(days: int) -> str:
    """ISO local date, e.g. ``2017-11-16``."""
    y, m, d = civil_from_days(days)
    return f"{format_year(y)}-{m:02d}-{d:02d}"


def _fraction(nanos: int) -> str:
    # Java's ISO_LOCAL_TIME: fraction printed with trailing zeros removed, none when zero.
    if nanos == 0:
        return ""
    return "." + f"{nanos:09d}".rstrip("0")


def format_time_nanos(nanos_of_day: int) -> str:
    """ISO local time of nanoseconds from midnight: ``22:31:08``, ``22:31:08.000001``."""
    secs, frac = divmod(nanos_of_day, NANOS_PER_SECOND)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}{_fraction(frac)}"


def format_time(micros_of_day: int) -> str:
    """ISO local time of microseconds from midnight (Java ``DateTimeUtil.microsToIsoTime``)."""
    return format_time_nanos(micros_of_day * NANOS_PER_MICRO)


def java_local_time(micros_of_day: int) -> str:
    """Java ``LocalTime.toString()``: drops zero seconds, fraction in groups of 3 digits."""
    nanos = micros_of_day * NANOS_PER_MICRO
    secs, frac = divmod(nanos, NANOS_PER_SECOND)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    out = f"{h:02d}:{m:02d}"
    if s or frac:
        out += f":{s:02d}"
        if frac % 1_000_000 == 0:
            out += f".{frac // 1_000_000:03d}" if frac else ""
        elif frac % 1_000 == 0:
            out += f".{frac // 1_000:06d}"
        else:
            out += f".{frac:09d}"
    return out


def format_timestamp_nanos(nanos: int, *, utc: bool) -> str:
    """ISO local date-time of ns since the epoch; ``+00:00`` appended when ``utc``."""
    days, nanos_of_day = divmod(nanos, NANOS_PER_DAY)
    text = f"{format_date(days)}T{format_time_nanos(nanos_of_day)}"
    return text + "+00:00" if utc else text


def format_timestamp(micros: int, *, utc: bool) -> str:
    """ISO local date-time of µs since the epoch; ``+00:00`` appended when ``utc``."""
    return format_timestamp_nanos(micros * NANOS_PER_MICRO, utc=utc)


# --- parsing -------------------------------------------------------------------------------

_DATE_RE = r"([+-]?\d{4,})-(\d{2})-(\d{2})"
_TIME_RE = r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
_OFFSET_RE = r"(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)"
_DATE = re.compile(_DATE_RE + r"$")
_TIME = re.compile(_TIME_RE + r"$")
_TIMESTAMP = re.compile(_DATE_RE + r"(?:[Tt ]" + _TIME_RE + r")?" + _OFFSET_RE + r"?$")


def _civil_days(year: str, month: str, day: str) -> int:
    y, m, d = int(year), int(month), int(day)
    if not 1 <= m <= 12 or not 1 <= d <= days_in_month(y, m):
        raise ValueError(f"invalid date {year}-{month}-{day}")
    return days_from_civil(y, m, d)


def _time_nanos(hour: str, minute: str, second: str | None, fraction: str | None) -> int:
    h, m, s = int(hour), int(minute), int(second or 0)
    if h > 23 or m > 59 or s > 59:
        raise ValueError(f"invalid time {hour}:{minute}:{second}")
    frac = int((fraction or "").ljust(9, "0") or 0)
    return ((h * 60 + m) * 60 + s) * NANOS_PER_SECOND + frac


def _offset_seconds(text: str) -> int:
    if text in ("Z", "z"):
        return 0
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hh, mm, ss = int(digits[0:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    if hh > 18 or mm > 59 or ss > 59:
        raise ValueError(f"invalid zone offset {text}")
    return sign * (hh * 3600 + mm * 60 + ss)


def parse_date(text: str) -> int:
    """Days since the epoch of an ISO date ``YYYY-MM-DD``; raises ``ValueError``."""
    m = _DATE.match(text.strip())
    if m is None:
        raise ValueError(f"not an ISO-8601 date: {text!r}")
    return _civil_days(*m.groups())


def parse_time_nanos(text: str) -> int:
    """Nanoseconds from midnight of an ISO time ``HH:MM[:SS[.fffffffff]]``."""
    m = _TIME.match(text.strip())
    if m is None:
        raise ValueError(f"not an ISO-8601 time: {text!r}")
    return _time_nanos(*m.groups())


def parse_timestamp_nanos(text: str) -> tuple[int, int | None]:
    """Parse an ISO date-time (or date) into ``(ns since epoch as written, offset seconds)``.

    The returned instant is already shifted to UTC when an offset is present; the offset is
    ``None`` when the text has no zone, so callers can enforce "must (not) include a zone".
    """
    m = _TIMESTAMP.match(text.strip())
    if m is None:
        raise ValueError(f"not an ISO-8601 timestamp: {text!r}")
    year, month, day, hour, minute, second, fraction, offset = m.groups()
    nanos = _civil_days(year, month, day) * NANOS_PER_DAY
    if hour is not None:
        nanos += _time_nanos(hour, minute, second, fraction)
    if offset is None:
        return nanos, None
    seconds = _offset_seconds(offset)
    return nanos - seconds * NANOS_PER_SECOND, seconds


__all__ = [
    "EPOCH_YEAR",
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "MICROS_PER_SECOND",
    "NANOS_PER_DAY",
    "NANOS_PER_HOUR",
    "NANOS_PER_MICRO",
    "NANOS_PER_SECOND",
    "civil_from_days",
    "civil_from_days_np",
    "days_from_civil",
    "days_in_month",
    "format_date",
    "format_time",
    "format_year",
    "format_time_nanos",
    "format_timestamp",
    "format_timestamp_nanos",
    "java_local_time",
    "months_from_days",
    "parse_date",
    "parse_time_nanos",
    "parse_timestamp_nanos",
    "years_from_days",
]
