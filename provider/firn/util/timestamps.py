"""Points in time as users give them (datetimes, dates, ISO-8601 text, epoch milliseconds).

One converter for every place that takes a time from a user: scans and refs (``as_of``),
maintenance options (``older_than``), the Spark reader and the Airflow sensors and operators.
Callers differ only in what a time without a zone means: time travel reads it as UTC, while a
maintenance cut-off refuses it, since which instant it names would depend on the machine.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
from typing import Literal

from firn.errors import ValidationError

TimestampLike = dt.datetime | dt.date | int | float | str


def to_timestamp_ms(
    value: object, *, what: str = "timestamp", naive: Literal["utc", "refuse"] = "utc"
) -> int:
    """Epoch milliseconds of ``value``: an int (or finite float, truncated) of epoch
    milliseconds, the same as digits in text, ISO-8601 text, a datetime, or a date (its
    midnight UTC). A datetime or text without a zone, or a date, is taken as UTC, or refused
    with ``naive="refuse"``. Anything else is a ``ValidationError`` that starts with ``what``."""
    if isinstance(value, bool):
        raise _type_error(what, value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _type_error(what, value)
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"{what} must be epoch milliseconds or an ISO-8601 time, got {value!r}"
            ) from None
        if parsed.tzinfo is None and naive == "refuse":
            raise ValidationError(f"{what} needs a time with an offset (2024-01-02T00:00:00Z), got {value!r}")
        value = parsed
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            if naive == "refuse":
                raise ValidationError(
                    f"{what} needs a timezone-aware datetime, got naive {value.isoformat()}"
                )
            value = value.replace(tzinfo=dt.UTC)
        # Integer arithmetic (a float of seconds can land a millisecond early), through the UTC
        # time tuple: datetime subclasses such as Airflow's pendulum DateTime get their own
        # subtraction and timestamp() wrong in places.
        return calendar.timegm(value.utctimetuple()) * 1000 + value.microsecond // 1000
    if isinstance(value, dt.date) and naive == "utc":  # a date has no zone either
        return calendar.timegm(value.timetuple()) * 1000
    raise _type_error(what, value)


def _type_error(what: str, value: object) -> ValidationError:
    return ValidationError(
        f"{what} must be a timezone-aware datetime, epoch milliseconds or ISO-8601 text, got {value!r}"
    )


__all__ = ["TimestampLike", "to_timestamp_ms"]
