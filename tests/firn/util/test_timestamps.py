"""The one converter of user-given points in time to epoch milliseconds."""

from __future__ import annotations

import datetime as dt

import pendulum
import pytest

from firn.errors import ValidationError
from firn.util.timestamps import to_timestamp_ms

MS = 1_714_521_600_123  # 2024-05-01T00:00:00.123Z


@pytest.mark.parametrize(
    "value",
    [
        MS,
        float(MS) + 0.9,  # truncated, as time.time() * 1000 is
        str(MS),
        f" {MS} ",
        "2024-05-01T00:00:00.123Z",
        "2024-05-01 02:00:00.123+02:00",
        dt.datetime(2024, 5, 1, 0, 0, 0, 123_456, tzinfo=dt.UTC),
        dt.datetime(2024, 4, 30, 19, 0, 0, 123_999, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        pendulum.datetime(2024, 5, 1, 2, 0, 0, 123_000, tz="Europe/Berlin"),  # Airflow's DateTime
    ],
)
def test_every_form_of_one_instant(value: object) -> None:
    assert to_timestamp_ms(value) == MS
    assert to_timestamp_ms(value, naive="refuse") == MS


def test_before_the_epoch_is_exact() -> None:
    assert to_timestamp_ms(dt.datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=dt.UTC)) == -500


def test_zoneless_times_are_utc_or_refused() -> None:
    assert to_timestamp_ms(dt.datetime(2024, 5, 1)) == MS - 123
    assert to_timestamp_ms("2024-05-01T00:00:00") == MS - 123
    assert to_timestamp_ms(dt.date(2024, 5, 1)) == MS - 123
    with pytest.raises(ValidationError, match=r"^cut-off needs a timezone-aware datetime, got naive"):
        to_timestamp_ms(dt.datetime(2024, 5, 1), what="cut-off", naive="refuse")
    with pytest.raises(ValidationError, match=r"^cut-off needs a time with an offset"):
        to_timestamp_ms("2024-05-01T00:00:00", what="cut-off", naive="refuse")
    with pytest.raises(ValidationError, match=r"^cut-off must be a timezone-aware datetime"):
        to_timestamp_ms(dt.date(2024, 5, 1), what="cut-off", naive="refuse")


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), [1], "last tuesday", ""])
def test_anything_else_is_one_clear_error(value: object) -> None:
    with pytest.raises(ValidationError, match=r"^as_of "):
        to_timestamp_ms(value, what="as_of")
