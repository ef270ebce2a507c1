"""``make_data_file`` and ``make_file_scan_task`` build the same objects as the frozen
dataclasses' own constructors, field for field, and stay in step with their fields."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from firn.core.planning import FileScanTask, make_file_scan_task
from firn.expressions import AlwaysTrue
from firn.spec.content import DataFile, FileContent, FileFormat, make_data_file

FULL: dict[str, Any] = {
    "content": FileContent.POSITION_DELETES,
    "file_path": "s3://b/t/data/x.puffin",
    "file_format": FileFormat.PUFFIN,
    "partition": (1, "eu"),
    "record_count": 7,
    "file_size_in_bytes": 1234,
    "spec_id": 3,
    "column_sizes": {1: 10},
    "value_counts": {1: 7},
    "null_value_counts": {1: 0},
    "nan_value_counts": {2: 1},
    "lower_bounds": {1: b"\x01"},
    "upper_bounds": {1: b"\x09"},
    "key_metadata": b"key",
    "split_offsets": (4, 100),
    "equality_ids": (1, 2),
    "sort_order_id": 5,
    "first_row_id": 40,
    "referenced_data_file": "s3://b/t/data/y.parquet",
    "content_offset": 4,
    "content_size_in_bytes": 44,
}


@pytest.mark.parametrize("cls,builder", [(DataFile, make_data_file), (FileScanTask, make_file_scan_task)])
def test_builder_parameters_are_the_dataclass_fields(cls: type, builder: Any) -> None:
    fields = [(f.name, f.default) for f in dataclasses.fields(cls)]
    params = [
        (p.name, dataclasses.MISSING if p.default is inspect.Parameter.empty else p.default)
        for p in inspect.signature(builder).parameters.values()
    ]
    assert params == fields


def test_make_data_file_equals_the_dataclass_constructor() -> None:
    assert set(FULL) == {f.name for f in dataclasses.fields(DataFile)}
    built = make_data_file(**FULL)
    assert type(built) is DataFile and built == DataFile(**FULL)
    assert all(getattr(built, k) == v for k, v in FULL.items())
    minimal = make_data_file(FileContent.DATA, "a.parquet", FileFormat.PARQUET, (), 1, 2)
    assert minimal == DataFile(FileContent.DATA, "a.parquet", FileFormat.PARQUET, (), 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.record_count = 8  # type: ignore[misc]
    assert built.evolve(record_count=8).record_count == 8 and built.record_count == 7


def test_make_file_scan_task_equals_the_dataclass_constructor() -> None:
    f = make_data_file(**FULL)
    args = (f, 9, (f,), AlwaysTrue(), ("root", 3))
    task = make_file_scan_task(*args)
    assert type(task) is FileScanTask and task == FileScanTask(*args)
    assert make_file_scan_task(f, 1) == FileScanTask(f, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.data_sequence_number = 2  # type: ignore[misc]
