"""Operator arguments to operation options: Iceberg names either way, points in time as epoch ms."""

from __future__ import annotations

import datetime as dt

import pendulum
import pytest

from firn.errors import ValidationError
from firn_airflow.operators.options import merge_options, normalize_options, timestamp_ms

MS = int(dt.datetime(2024, 1, 6, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2024, 1, 6, tzinfo=dt.UTC),
        pendulum.datetime(2024, 1, 6, tz="UTC"),
        str(pendulum.datetime(2024, 1, 6, tz="UTC")),  # what {{ data_interval_end }} renders to
        "2024-01-06T00:00:00Z",
        "2024-01-06T01:00:00+01:00",
        MS,
        str(MS),
    ],
)
def test_points_in_time_become_epoch_milliseconds(value: object) -> None:
    assert timestamp_ms("older-than", value) == MS
    assert merge_options(where="x", explicit={"older_than": value}) == {"older-than": MS}


def test_naive_or_malformed_times_are_refused() -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        timestamp_ms("older-than", dt.datetime(2024, 1, 6))
    with pytest.raises(ValidationError, match="epoch milliseconds or an ISO-8601 time"):
        timestamp_ms("older-than", "last tuesday")


def test_names_are_hyphenated_and_layers_merge() -> None:
    assert normalize_options({"min_input_files": 2, "partial_progress_enabled": "true"}, where="x") == {
        "min-input-files": 2,
        "partial-progress-enabled": "true",
    }
    merged = merge_options(
        where="expire on db.t",
        recommended={"retain-last": 1000, "older-than": MS},
        given={"retain_last": 5},
        explicit={"older_than": None, "retain_last": ""},  # not given
    )
    assert merged == {"retain-last": 5, "older-than": MS}
    assert normalize_options(None, where="x") == {}
    assert normalize_options({"when": dt.date(2024, 1, 6)}, where="x") == {"when": "2024-01-06"}


def test_conflicts_and_bad_values_name_the_option() -> None:
    with pytest.raises(ValidationError, match="'retain-last' is given both as retain_last= and in options"):
        merge_options(where="x", given={"retain-last": 1}, explicit={"retain_last": 2})
    with pytest.raises(ValidationError, match="option 'min-input-files' is given twice"):
        normalize_options({"min-input-files": 1, "min_input_files": 2}, where="x")
    with pytest.raises(ValidationError, match=r"compact on db\.t: options must be a dict"):
        normalize_options(["min-input-files"], where="compact on db.t")
    with pytest.raises(ValidationError, match="option 'where' must be JSON"):
        normalize_options({"where": object()}, where="x")
