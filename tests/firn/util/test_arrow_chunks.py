"""Chunked Arrow to one array / NumPy: every chunk count, nulls, struct children."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from firn.util.arrow_chunks import bool_np, single_array, struct_child_np


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([1, 2, 3]),
        pa.chunked_array([[1, 2, 3]]),
        pa.chunked_array([[1], [], [2, 3]]),
    ],
)
def test_single_array_keeps_the_values(arr: pa.Array | pa.ChunkedArray) -> None:
    out = single_array(arr)
    assert isinstance(out, pa.Array) and out.to_pylist() == [1, 2, 3]


def test_single_array_of_no_chunks_is_empty_and_typed() -> None:
    out = single_array(pa.chunked_array([], pa.int32()))
    assert isinstance(out, pa.Array) and len(out) == 0 and out.type == pa.int32()


def test_single_chunk_is_not_copied() -> None:
    chunk = pa.array([1, 2, 3], pa.int64())
    out = single_array(pa.chunked_array([chunk]))
    assert out.buffers()[1].address == chunk.buffers()[1].address
    assert single_array(chunk) is chunk


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([True, None, False]),
        pa.chunked_array([[True], [None, False]]),
    ],
)
def test_bool_np_reads_nulls_as_false(arr: pa.Array | pa.ChunkedArray) -> None:
    out = bool_np(arr)
    assert out.dtype == np.bool_ and out.tolist() == [True, False, False]
    assert bool_np(pa.chunked_array([], pa.bool_())).tolist() == []


def test_struct_child_np_per_chunk() -> None:
    t = pa.struct([("status", pa.int32()), ("snapshot_id", pa.int64())])
    col = pa.chunked_array(
        [pa.array([{"status": 1, "snapshot_id": 5}], t), pa.array([{"status": 2, "snapshot_id": None}], t)]
    )
    assert struct_child_np(col, 0, np.int32).tolist() == [1, 2]
    empty = struct_child_np(pa.chunked_array([], t), 0, np.int32)
    assert empty.dtype == np.int32 and len(empty) == 0
