"""Chunked Arrow data to one contiguous Arrow array or NumPy array (the one set of these helpers).

A table column is a ``ChunkedArray`` with any number of chunks (none for an empty table read
from a file, one after ``combine_chunks``, one per batch after a concat). Kernels that need a
single array, and NumPy code, go through these helpers, which copy only when there are several
chunks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def single_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``arr`` as one contiguous array: an array as it is, a chunked array's only chunk, its
    chunks combined, or an empty array of its type when it has none."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return arr.chunk(0)
        return arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    return arr


def bool_np(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array as a NumPy ``bool`` array; nulls read as False."""
    return np.asarray(single_array(arr).to_numpy(zero_copy_only=False), dtype=bool)


def struct_child_np(col: pa.ChunkedArray, index: int, dtype: type[np.generic]) -> np.ndarray:
    """Child ``index`` of a struct column as one NumPy array, taken chunk by chunk (no struct
    is combined). The caller guarantees the child has no nulls."""
    if col.num_chunks == 0:
        return np.zeros(0, dtype=dtype)
    parts = [c.field(index).to_numpy(zero_copy_only=False) for c in col.chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


__all__ = ["bool_np", "single_array", "struct_child_np"]
