"""One presentation of health (issue 20 item 7): the formatters the demo, the CLI and the
health page share, and recommendations in each interface's syntax."""

from __future__ import annotations

import pytest

from firn.maintenance import Estimate, Recommendation
from firn.maintenance.present import (
    estimate_sentence,
    health_label,
    health_rows,
    health_value,
    options_text,
    recommendation_lines,
)
from firn.maintenance.remove_orphan_files import DRY_RUN_HINT_CLI, DRY_RUN_HINT_PYTHON
from firn.util import present


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "-"),
        (850, "850 ms"),
        (4_200, "4.2 s"),
        (215_000, "3 min 35 s"),
        (7_500_000, "2 h 05 min"),
        (5 * 86_400_000 + 4 * 3_600_000, "5 d 4 h"),
    ],
)
def test_durations(ms: int | None, text: str) -> None:
    assert present.duration(ms) == text


def test_bytes_counts_ratios_and_times() -> None:
    assert present.size(812) == "812 B" and present.size(1536) == "1.50 KiB"
    assert present.size(512 * 1024 * 1024) == "512 MiB" and present.size(None) == "-"
    assert present.count(1_234_567) == "1,234,567"
    assert (
        present.ratio(0.0268) == "2.7%" and present.ratio(0.0004) == "<0.1%" and present.ratio(0.0) == "0.0%"
    )
    # 24-hour UTC, as Airflow shows times: 13:05, not 1:05 PM.
    assert present.timestamp(1_795_698_300_000) == "2026-11-26 13:05:00 UTC"


def test_health_fields_read_by_their_kind() -> None:
    assert health_label("oldest_snapshot_age_ms") == "oldest snapshot age"
    assert health_value("oldest_snapshot_age_ms", 270_998) == "4 min 30 s"
    assert health_value("last_commit_ms", 1_795_698_300_000) == "2026-11-26 13:05:00 UTC"
    assert health_value("delete_ratio", 0.0268) == "2.7%"
    assert health_value("data_bytes", 3 * 1024**3) == "3.00 GiB"
    # Result fields read the same way: sizes wherever "bytes" is a word, run times as durations.
    assert health_value("bytes_written", 3181) == "3.11 KiB" == health_value("rewritten_bytes_count", 3181)
    assert health_value("duration_ms", 26) == "26 ms" and health_value("expired_snapshot_id", 7) == "7"
    assert health_value("snapshot_id", 8_123_456_789_012_345_678) == "8123456789012345678"
    assert health_value("small_files", 12_000) == "12,000" and health_value("root_entries", None) == "-"
    rows = dict(health_rows({"table": "db.t", "measured_at_ms": 0, "delete_ratio": 0.5}))
    assert rows == {"table": "db.t", "measured at": "1970-01-01 00:00:00 UTC", "delete ratio": "50.0%"}


def test_estimates_are_sentences() -> None:
    e = Estimate(files_removed=31, bytes=100 * 1024 * 1024, planning_entries_saved=31)
    assert estimate_sentence(e) == (
        "The table tracks about 31 fewer files; it rewrites or deletes up to 100 MiB; "
        "every scan plan reads about 31 fewer metadata entries."
    )
    assert estimate_sentence(e.__dict__) == estimate_sentence(e)
    assert estimate_sentence(Estimate()) == "Health cannot tell what this run gains."
    assert estimate_sentence(Estimate(files_removed=1, planning_entries_saved=1)) == (
        "The table tracks about 1 fewer file; every scan plan reads about 1 fewer metadata entry."
    )


def test_options_in_the_syntax_of_each_interface() -> None:
    options = {"delete-file-threshold": 1, "remove-dangling-deletes": True}
    assert options_text(options, "cli") == "-o delete-file-threshold=1 -o remove-dangling-deletes=true"
    assert options_text(options, "python") == "delete_file_threshold=1, remove_dangling_deletes=True"
    r = Recommendation(operation="rewrite_data_files", reason="why", options=options)
    cli = recommendation_lines([r], "cli")
    assert cli[0] == "1. rewrite_data_files -o delete-file-threshold=1 -o remove-dangling-deletes=true"
    assert recommendation_lines([r], "python")[0] == (
        "1. table.maintenance.rewrite_data_files(delete_file_threshold=1, remove_dangling_deletes=True)"
    )
    assert cli[1:] == ["   why: why", "   gain: Health cannot tell what this run gains."]
    # The orphan dry-run message: Python's spelling in the library, the CLI's in the CLI.
    assert DRY_RUN_HINT_PYTHON == "pass delete=True" and "-o dry-run=false" in DRY_RUN_HINT_CLI
