"""The README's Spark examples (blocks fenced ```python spark``` ) run as written, in order, on
the test session's SparkSession (``getOrCreate`` returns it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[3] / "README.md"

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_readme_spark_examples_run(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python spark\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme_spark"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    events = namespace["events"].refresh()
    ids = sorted(events.scan().to_arrow().column("id").to_pylist())
    assert ids == list(range(10, 110))
    assert namespace["old"].count() == 100 and namespace["us_ids"].count() == 25  # pinned before the delete
    assert namespace["spark"] is spark
