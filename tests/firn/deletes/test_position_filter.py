"""PositionDeleteFilter: per-batch keep-masks from one data file's deleted positions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from firn.deletes.apply import PositionDeleteFilter
from firn.deletes.bitmap import PositionBitmap


def test_contiguous_and_gathered_batches() -> None:
    f = PositionDeleteFilter(PositionBitmap.from_positions([1, 5, 9]), 10)
    keep = f.keep_mask(pa.array(np.arange(0, 6, dtype=np.int64)))
    assert keep is not None and keep.tolist() == [True, False, True, True, True, False]
    # A row filter left gaps: positions are gathered.
    keep = f.keep_mask(pa.chunked_array([pa.array([2, 5, 7, 9], pa.int64())]))
    assert keep is not None and keep.tolist() == [True, False, True, False]
    # Nothing deleted in this batch: no mask at all.
    assert f.keep_mask(pa.array([6, 7, 8], pa.int64())) is None
    assert f.keep_mask(pa.array([], pa.int64())) is None


def test_record_count_understated() -> None:
    f = PositionDeleteFilter(PositionBitmap.from_positions([12]), 10)
    keep = f.keep_mask(pa.array(np.arange(10, 14, dtype=np.int64)))
    assert keep is not None and keep.tolist() == [True, True, False, True]
