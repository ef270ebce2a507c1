"""Calendar arithmetic and ISO text for integer dates and times."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from firn.spec import datetimes as dts

_PY_DAYS = st.integers(min_value=-719162, max_value=2932896)  # datetime.date's range


@given(_PY_DAYS)
def test_civil_from_days_matches_datetime(days: int) -> None:
    d = dt.date(1970, 1, 1) + dt.timedelta(days=days)
    assert dts.civil_from_days(days) == (d.year, d.month, d.day)
    assert dts.days_from_civil(d.year, d.month, d.day) == days
    assert dts.format_date(days) == d.isoformat()
    assert dts.parse_date(d.isoformat()) == days


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_civil_round_trip_beyond_datetime(days: int) -> None:
    assert dts.days_from_civil(*dts.civil_from_days(days)) == days


@given(st.lists(st.integers(min_value=-(10**9), max_value=10**9), max_size=30))
def test_numpy_civil_matches_scalar(days: list[int]) -> None:
    years, months = dts.civil_from_days_np(np.array(days, dtype=np.int64))
    assert list(zip(years.tolist(), months.tolist())) == [dts.civil_from_days(d)[:2] for d in days]


@pytest.mark.parametrize(
    ("days", "year", "month"),
    [(0, 0, 0), (-1, -1, -1), (-365, -1, -12), (-366, -2, -13), (17486, 47, 574), (31, 0, 1)],
)
def test_year_and_month_floor(days: int, year: int, month: int) -> None:
    assert dts.years_from_days(days) == year
    assert dts.months_from_days(days) == month


@pytest.mark.parametrize(
    ("micros", "iso", "java"),
    [
        (0, "00:00:00", "00:00"),
        (81068000000, "22:31:08", "22:31:08"),
        (81060000000, "22:31:00", "22:31"),
        (81068100000, "22:31:08.1", "22:31:08.100"),
        (81068123400, "22:31:08.1234", "22:31:08.123400"),
        (86_399_999_999, "23:59:59.999999", "23:59:59.999999"),
    ],
)
def test_time_text(micros: int, iso: str, java: str) -> None:
    assert dts.format_time(micros) == iso
    assert dts.java_local_time(micros) == java
    assert dts.parse_time_nanos(iso) == micros * 1000


@pytest.mark.parametrize(
    ("year", "text"), [(2017, "2017"), (42, "0042"), (0, "0000"), (10000, "+10000"), (-1, "-0001")]
)
def test_format_year(year: int, text: str) -> None:
    assert dts.format_year(year) == text


def test_timestamp_text() -> None:
    assert dts.format_timestamp(-1, utc=False) == "1969-12-31T23:59:59.999999"
    assert dts.format_timestamp(0, utc=True) == "1970-01-01T00:00:00+00:00"
    assert dts.format_timestamp_nanos(1, utc=False) == "1970-01-01T00:00:00.000000001"
    far = dts.days_from_civil(12345, 6, 7) * dts.MICROS_PER_DAY
    assert dts.format_timestamp(far, utc=False) == "+12345-06-07T00:00:00"
    assert dts.parse_timestamp_nanos("+12345-06-07T00:00:00") == (far * 1000, None)


@pytest.mark.parametrize(
    ("text", "nanos", "offset"),
    [
        ("2017-11-16T22:31:08", 1510871468 * 10**9, None),
        ("2017-11-16 22:31:08.5Z", 1510871468_500_000_000, 0),
        ("2017-11-16T14:31:08-08:00", 1510871468 * 10**9, -28800),
        ("2017-11-16T23:31:08+0100", 1510871468 * 10**9, 3600),
        ("2017-11-16T23:31:08+01", 1510871468 * 10**9, 3600),
        ("2017-11-16", 1510790400 * 10**9, None),
    ],
)
def test_parse_timestamp(text: str, nanos: int, offset: int | None) -> None:
    assert dts.parse_timestamp_nanos(text) == (nanos, offset)


@pytest.mark.parametrize(
    "text",
    [
        "2017-11-16T22:31:08+25:00",
        "2017-02-29",
        "2017-11-16T22:60",
        "yesterday",
        "2017-11-16T22:31:08.1234567890",
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        dts.parse_timestamp_nanos(text)
