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


def test_damaged_record_count_allocates_only_what_the_deletes_need() -> None:
    """record_count comes from the manifest; a damaged one (2**48 rows) must not size a mask."""
    f = PositionDeleteFilter(PositionBitmap.from_positions([3, 7]), 2**48)
    keep = f.keep_mask(pa.array(np.arange(0, 12, dtype=np.int64)))
    assert keep is not None and np.nonzero(~keep)[0].tolist() == [3, 7]
    keep = f.keep_mask(pa.array([1, 3, 9, 11], pa.int64()))  # gathered, reaching past the last delete
    assert keep is not None and keep.tolist() == [True, False, True, True]
    assert f.keep_mask(pa.array(np.arange(8, 10_000, dtype=np.int64))) is None  # all past the last delete


def test_mask_grows_past_the_cap_by_the_rows_read(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import firn.deletes.apply as apply

    monkeypatch.setattr(apply, "_INITIAL_MASK_CAP", 4)
    f = PositionDeleteFilter(PositionBitmap.from_positions([2, 5, 20]), 30)
    seen = []
    for start in range(0, 30, 3):
        keep = f.keep_mask(pa.array(np.arange(start, start + 3, dtype=np.int64)))
        if keep is not None:
            seen.extend(start + i for i, k in enumerate(keep) if not k)
    assert seen == [2, 5, 20]
