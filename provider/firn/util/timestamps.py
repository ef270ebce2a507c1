"""Points in time as users give them (datetimes, dates, ISO-8601 text, epoch milliseconds)."""

from __future__ import annotations

import datetime as dt

from firn.errors import ValidationError

TimestampLike = dt.datetime | dt.date | int | float | str


def to_timestamp_ms(value: TimestampLike) -> int:
    """Epoch milliseconds of ``value``: epoch milliseconds pass through, a naive datetime is
    taken as UTC, a date is its midnight UTC, and text is ISO-8601."""
    if isinstance(value, bool):
        raise ValidationError(f"invalid timestamp {value!r}")
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"invalid timestamp {value!r}; use ISO-8601 or epoch milliseconds"
            ) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp() * 1000)
    raise ValidationError(f"invalid timestamp {value!r}")


__all__ = ["TimestampLike", "to_timestamp_ms"]
