"""Vectorized partition transforms over Arrow arrays (the write path's hot loop).

Each kernel reads the Arrow buffers as numpy views (no per-row Python objects), computes in
numpy, and rebuilds an Arrow array with the input's nulls. Semantics are exactly those of the
scalar :meth:`Transform.apply` (spec "Partition Transforms"); the tests check one against the
other on random data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from firn.errors import ValidationError
from firn.spec import datetimes as dts
from firn.spec.murmur3 import hash_binaries, hash_longs
from firn.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from firn.util.arrow_chunks import single_array

# Unit of each temporal type's internal value: days, microseconds or nanoseconds.
DAYS, MICROS, NANOS = "D", "us", "ns"
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_INT_TYPES = (IntegerType, LongType)


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A single contiguous, non-dictionary, non-extension array."""
    arr = single_array(values)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def null_mask(arr: pa.Array) -> npt.NDArray[np.bool_] | None:
    """Boolean numpy mask of the null slots, or None when there are none."""
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def from_numpy(
    values: npt.NDArray[Any], nulls: npt.NDArray[np.bool_] | None, arrow_type: pa.DataType
) -> pa.Array:
    """An Arrow array of ``arrow_type`` over ``values`` with ``nulls`` masked out."""
    arr = pa.array(values, mask=nulls)
    return arr if arr.type == arrow_type else arr.view(arrow_type)


def _buffer_view(arr: pa.Array, dtype: Any, width: int = 1) -> npt.NDArray[Any]:
    """The values buffer of a fixed-width array as numpy, honouring the slice offset."""
    n = len(arr)
    buf = arr.buffers()[1]
    if n == 0 or buf is None:
        return np.zeros(0, dtype=dtype)
    count = (arr.offset + n) * width
    return np.frombuffer(buf, dtype=dtype, count=count)[arr.offset * width :]


def int64_values(arr: pa.Array) -> npt.NDArray[np.int64]:
    """Integer (or temporal) storage values widened to int64; null slots hold garbage."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        width = t.bit_width // 8
        kind = "u" if pa.types.is_unsigned_integer(t) else "i"
        return _buffer_view(arr, np.dtype(f"<{kind}{width}")).astype(np.int64, copy=False)
    raise ValidationError(f"expected an integer or temporal Arrow array, got {t}")


def _convert_units(values: npt.NDArray[np.int64], have: int, want: int) -> npt.NDArray[np.int64]:
    # Both in units per second; coarsening floors (the transforms' pre-epoch semantics).
    if have == want:
        return values
    if want > have:
        return values * (want // have)
    return np.floor_divide(values, have // want)


def temporal_values(arr: pa.Array, unit: str) -> npt.NDArray[np.int64]:
    """Values of a date/time/timestamp (or raw integer) array in ``unit`` (``D``, ``us``, ``ns``)."""
    t = arr.type
    raw = int64_values(arr)
    if pa.types.is_integer(t):
        return raw  # already the internal representation
    if pa.types.is_date32(t):
        have_days, per_second = True, 0
    elif pa.types.is_date64(t):
        raw, have_days, per_second = np.floor_divide(raw, 86_400_000), True, 0
    elif pa.types.is_timestamp(t) or pa.types.is_time(t):
        have_days, per_second = False, _PER_SECOND[t.unit]
    else:
        raise ValidationError(f"expected a date, time or timestamp Arrow array, got {t}")
    if unit == DAYS:
        return raw if have_days else np.floor_divide(raw, 86_400 * per_second)
    want = _PER_SECOND[unit]
    if have_days:
        return raw * (86_400 * want)
    return _convert_units(raw, per_second, want)


def source_unit(source: IcebergType) -> str:
    """The unit of ``source``'s internal temporal value."""
    if isinstance(source, DateType):
        return DAYS
    if isinstance(source, TimestampNanoType | TimestamptzNanoType):
        return NANOS
    return MICROS


# --- time transforms -----------------------------------------------------------------------


def days_array(source: IcebergType, arr: pa.Array) -> npt.NDArray[np.int64]:
    """Days since the epoch of every value, floored before the epoch."""
    values = temporal_values(arr, source_unit(source))
    if isinstance(source, DateType):
        return values
    return np.floor_divide(values, _per_day(source))


def _per_day(source: IcebergType) -> int:
    return dts.NANOS_PER_DAY if source_unit(source) == NANOS else dts.MICROS_PER_DAY


def year_array(source: IcebergType, arr: pa.Array) -> pa.Array:
    """``year`` transform: years since 1970 (int32)."""
    year, _ = dts.civil_from_days_np(days_array(source, arr))
    return from_numpy((year - dts.EPOCH_YEAR).astype(np.int32), null_mask(arr), pa.int32())


def month_array(source: IcebergType, arr: pa.Array) -> pa.Array:
    """``month`` transform: months since 1970-01 (int32)."""
    year, month = dts.civil_from_days_np(days_array(source, arr))
    months = (year - dts.EPOCH_YEAR) * 12 + month - 1
    return from_numpy(months.astype(np.int32), null_mask(arr), pa.int32())


def day_array(source: IcebergType, arr: pa.Array) -> pa.Array:
    """``day`` transform: days since 1970-01-01 (date32)."""
    return from_numpy(days_array(source, arr).astype(np.int32), null_mask(arr), pa.date32())


def hour_array(source: IcebergType, arr: pa.Array) -> pa.Array:
    """``hour`` transform: hours since the epoch (int32)."""
    per_hour = dts.NANOS_PER_HOUR if source_unit(source) == NANOS else dts.MICROS_PER_HOUR
    hours = np.floor_divide(temporal_values(arr, source_unit(source)), per_hour)
    return from_numpy(hours.astype(np.int32), null_mask(arr), pa.int32())


# --- bucket --------------------------------------------------------------------------------


def _binary_parts(
    arr: pa.Array,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(data, starts, lengths)`` of a string/binary/fixed-size-binary array."""
    t = arr.type
    n = len(arr)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    bufs = arr.buffers()
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = np.frombuffer(bufs[1], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        return data, starts, np.full(n, width, dtype=np.int64)
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        offset_type: Any = np.int64
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        offset_type = np.int32
    else:
        raise ValidationError(f"expected a string or binary Arrow array, got {t}")
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0, np.uint8), empty, empty
    offsets = np.frombuffer(bufs[1], dtype=offset_type, count=arr.offset + n + 1)[arr.offset :]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets[:-1], np.diff(offsets)


def _decimal128_words(arr: pa.Array) -> npt.NDArray[np.uint8]:
    """``(n, 16)`` little-endian two's-complement bytes of a decimal128 array."""
    return _buffer_view(arr, np.uint8, 16).reshape(len(arr), 16)


def _decimal_parts(
    arr: pa.Array,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Minimal big-endian two's-complement bytes of each unscaled value (Appendix B note 2)."""
    n = len(arr)
    be = np.ascontiguousarray(_decimal128_words(arr)[:, ::-1])
    negative = be[:, 0] >= 0x80
    fill = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    # A leading byte is redundant when it is pure sign extension and the next byte's top
    # bit already carries the sign; at least one byte always remains.
    redundant = (be[:, :15] == fill[:, None]) & ((be[:, 1:] >= 0x80) == negative[:, None])
    lead = np.cumprod(redundant, axis=1).sum(axis=1).astype(np.int64)
    starts = np.arange(n, dtype=np.int64) * 16 + lead
    return be.reshape(-1), starts, 16 - lead


def _decimal_array(source: DecimalType, arr: pa.Array) -> pa.Array:
    want = pa.decimal128(source.precision, source.scale)
    return arr if arr.type == want else arr.cast(want)


def bucket_hashes(source: IcebergType, arr: pa.Array) -> npt.NDArray[np.int32]:
    """Appendix B hashes of every value of ``arr`` (null slots hold garbage)."""
    if isinstance(source, _INT_TYPES):
        return hash_longs(int64_values(arr))
    if isinstance(source, DateType | TimeType | TimestampType | TimestamptzType):
        return hash_longs(temporal_values(arr, source_unit(source)))
    if isinstance(source, TimestampNanoType | TimestamptzNanoType):
        # Appendix B note 3: hash nanosecond timestamps at microsecond precision (floored).
        return hash_longs(temporal_values(arr, MICROS))
    if isinstance(source, StringType | BinaryType | FixedType | UUIDType):
        return hash_binaries(*_binary_parts(arr))
    if isinstance(source, DecimalType):
        return hash_binaries(*_decimal_parts(_decimal_array(source, arr)))
    raise ValidationError(f"bucket cannot transform values of type {source}")


def bucket_array(source: IcebergType, arr: pa.Array, num_buckets: int) -> pa.Array:
    """``bucket[N]`` transform (int32)."""
    hashes = bucket_hashes(source, arr).astype(np.int64)
    buckets = ((hashes & 0x7FFFFFFF) % num_buckets).astype(np.int32)
    return from_numpy(buckets, null_mask(arr), pa.int32())


# --- truncate ------------------------------------------------------------------------------


def _truncate_decimal(source: DecimalType, arr: pa.Array, width: int) -> pa.Array:
    arr = _decimal_array(source, arr)
    n = len(arr)
    words = _decimal128_words(arr).view("<u8").reshape(n, 2)
    low, high = words[:, 0], words[:, 1].view(np.int64)
    if width < 2**31:
        # 128-bit floor-mod from the two 64-bit words (numpy has no int128):
        # v = high * 2**64 + low, so v mod W = (high mod W * 2**64 mod W + low mod W) mod W.
        # Every product stays below 2**62 because W < 2**31.
        w = np.uint64(width)
        two64 = np.uint64((1 << 64) % width)
        high_mod = np.mod(high, width).astype(np.uint64)
        rem = (high_mod * two64 + low % w) % w
        out = np.empty((n, 2), dtype="<u8")
        out[:, 0] = low - rem  # wraps modulo 2**64; the borrow goes to the high word
        out[:, 1] = (high - (low < rem).astype(np.int64)).view(np.uint64)
    else:
        # Widths beyond Java's int range: per-row Python integers.
        out = np.empty((n, 2), dtype="<u8")
        for i in range(n):
            v = (int(high[i]) << 64) | int(low[i])
            v -= v % width
            out[i, 0], out[i, 1] = v & (2**64 - 1), (v >> 64) & (2**64 - 1)
    nulls = null_mask(arr)
    validity = None if nulls is None else pa.array(~nulls).buffers()[1]
    return pa.Array.from_buffers(arr.type, n, [validity, pa.py_buffer(out.tobytes())])


def truncate_array(source: IcebergType, arr: pa.Array, width: int) -> pa.Array:
    """``truncate[W]`` transform; the result has the input's Arrow type."""
    if isinstance(source, _INT_TYPES):
        values = int64_values(arr)
        out = (values - np.mod(values, width)).astype(arr.type.to_pandas_dtype())
        return from_numpy(out, null_mask(arr), arr.type)
    if isinstance(source, DecimalType):
        return _truncate_decimal(source, arr, width)
    if isinstance(source, StringType):
        # utf8_slice_codeunits counts code points, as the spec requires (note 3).
        if pa.types.is_string_view(arr.type):
            arr = arr.cast(pa.string())
        return pc.utf8_slice_codeunits(arr, 0, width)
    if isinstance(source, BinaryType):
        if pa.types.is_binary_view(arr.type):
            arr = arr.cast(pa.binary())
        return pc.binary_slice(arr, 0, width)
    raise ValidationError(f"truncate cannot transform values of type {source}")


__all__ = [
    "as_array",
    "bucket_array",
    "bucket_hashes",
    "day_array",
    "from_numpy",
    "hour_array",
    "int64_values",
    "month_array",
    "null_mask",
    "temporal_values",
    "truncate_array",
    "year_array",
]
