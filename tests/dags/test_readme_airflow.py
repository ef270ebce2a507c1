"""The README's Airflow example (fenced ```python airflow```) defines the DAGs it says it does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.airflow


def test_readme_airflow_example_defines_its_dags(airflow_home: Path) -> None:
    blocks = re.findall(r"```python airflow\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    namespace: dict[str, Any] = {"__name__": "readme_airflow"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    nightly, on_growth = namespace["nightly"], namespace["on_growth"]
    steps = [
        "rewrite_deletion_vectors",
        "rewrite_data_files",
        "flush_root",
        "rewrite_manifests",
        "expire_snapshots",
        "remove_orphan_files",
    ]
    assert [t.task_id for t in nightly.topological_sort()] == [f"maintain_db_events.{s}" for s in steps]
    assert [t.task_id for t in on_growth.topological_sort()] == ["root_grew", "flush"]
    nightly.validate()
    on_growth.validate()
