"""The 32-bit hash behind the bucket transform (spec Appendix B), scalar and vectorized.

Murmur3 x86 32-bit, seed 0. Scalars go through ``mmh3`` (C). Arrays go through numpy
``uint32`` arithmetic, where overflow wraps exactly like the 32-bit C implementation, so
bucketing millions of rows never loops in Python.

Per-type input bytes (Appendix B): int, long, date, time and timestamps are hashed as an
8-byte little-endian long — ``int`` is *widened* first (note 1), and nanosecond timestamps
are floored to microseconds (note 3); decimals hash the minimal two's-complement big-endian
bytes of the unscaled value (note 2); uuids their 16 big-endian bytes (note 4); strings their
UTF-8 bytes; fixed and binary their raw bytes.
"""

from __future__ import annotations

import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import mmh3
import numpy as np
import numpy.typing as npt

from firn.errors import Unsupported, ValidationError
from firn.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_FIVE = np.uint32(5)
_LONG = struct.Struct("<q")
# Longest value hashed by the block-parallel kernel; longer ones go to mmh3 one by one, so a
# single huge value cannot turn into thousands of tiny numpy steps.
_MAX_VECTOR_BYTES = 256


def hash_bytes(data: bytes) -> int:
    """Signed 32-bit murmur3 (x86, seed 0) of ``data``."""
    return int(mmh3.hash(data, 0, signed=True))


def hash_long(value: int) -> int:
    """Appendix B ``hashLong``: the 8-byte little-endian two's complement of ``value``."""
    return hash_bytes(_LONG.pack(value))


def min_twos_complement(unscaled: int) -> bytes:
    """Shortest big-endian two's-complement bytes of ``unscaled`` (Java ``BigInteger.toByteArray``)."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def decimal_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``; raises if digits would be lost."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValidationError(f"decimal value {value} is not finite")
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        magnitude *= 10**shift
    else:
        magnitude, rest = divmod(magnitude, 10**-shift)
        if rest:
            raise ValidationError(f"decimal value {value} has more than {scale} fractional digits")
    return -magnitude if sign else magnitude


def _canonical_double_bits(value: float) -> int:
    # Appendix B note 5: NaN canonicalized to 0x7ff8000000000000, -0.0 to 0.0.
    if math.isnan(value):
        return 0x7FF8000000000000
    if value == 0.0:
        value = 0.0
    return int(_LONG.unpack(struct.pack("<d", value))[0])


def hash_value(t: IcebergType, value: Any) -> int | None:
    """Appendix B hash of an internal-representation ``value`` of type ``t`` (None for null).

    Also covers boolean, float and double, which are not bucket sources but have specified
    hashes; ``unknown`` always hashes to None.
    """
    if value is None or isinstance(t, UnknownType):
        return None
    if isinstance(t, IntegerType | LongType | DateType | TimeType | TimestampType | TimestamptzType):
        return hash_long(value)
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return hash_long(value // 1000)
    if isinstance(t, StringType):
        return hash_bytes(value.encode("utf-8"))
    if isinstance(t, BinaryType | FixedType):
        return hash_bytes(bytes(value))
    if isinstance(t, UUIDType):
        return hash_bytes(value.bytes if isinstance(value, uuid.UUID) else bytes(value))
    if isinstance(t, DecimalType):
        return hash_bytes(min_twos_complement(decimal_unscaled(value, t.scale)))
    if isinstance(t, BooleanType):
        return hash_long(1 if value else 0)
    if isinstance(t, FloatType | DoubleType):
        return hash_long(_canonical_double_bits(float(value)))
    raise Unsupported(f"no 32-bit hash is defined for values of type {t}")


# --- vectorized ----------------------------------------------------------------------------


def _rotl(x: npt.NDArray[np.uint32], r: int) -> npt.NDArray[np.uint32]:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k(k: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    return _rotl(k * _C1, 15) * _C2


def _mix_h(h: npt.NDArray[np.uint32], k: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    return _rotl(h ^ _mix_k(k), 13) * _FIVE + _N


def _fmix(h: npt.NDArray[np.uint32], length: npt.NDArray[np.uint32] | np.uint32) -> npt.NDArray[np.int32]:
    h = h ^ length
    h = h ^ (h >> np.uint32(16))
    h = h * _F1
    h = h ^ (h >> np.uint32(13))
    h = h * _F2
    h = h ^ (h >> np.uint32(16))
    return h.view(np.int32)


def hash_longs(values: npt.NDArray[Any]) -> npt.NDArray[np.int32]:
    """Vectorized :func:`hash_long` over an integer array (values widened to int64)."""
    v = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    # An 8-byte input is exactly two 4-byte little-endian blocks and no tail.
    low = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (v >> np.uint64(32)).astype(np.uint32)
    h = _mix_h(_mix_h(np.zeros(len(v), dtype=np.uint32), low), high)
    return _fmix(h, np.uint32(8))


def hash_binaries(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.int32]:
    """Hash the byte ranges ``data[starts[i] : starts[i] + lengths[i]]`` for every ``i``.

    Rows are processed block-parallel: sorted by block count (descending), block ``j`` of
    every row long enough is mixed in one numpy step over a prefix of the sorted rows.
    """
    n = len(starts)
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out
    starts = starts.astype(np.int64, copy=False)
    lengths = lengths.astype(np.int64, copy=False)
    long_rows = np.flatnonzero(lengths > _MAX_VECTOR_BYTES)
    for i in long_rows.tolist():
        s = int(starts[i])
        out[i] = hash_bytes(data[s : s + int(lengths[i])].tobytes())
    rows = np.flatnonzero(lengths <= _MAX_VECTOR_BYTES) if len(long_rows) else np.arange(n)
    if len(rows) == 0:
        return out
    # Pad by 3 bytes so every (unaligned) 4-byte window inside a value can be read as one
    # little-endian uint32 through a stride-1 view.
    padded = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(3, dtype=np.uint8)])
    words = np.ndarray(shape=(len(padded) - 3,), dtype="<u4", buffer=padded.data, strides=(1,))
    nblocks = lengths[rows] // 4
    order = np.argsort(-nblocks, kind="stable")
    sorted_rows = rows[order]
    s_starts = starts[sorted_rows]
    s_lengths = lengths[sorted_rows]
    s_blocks = nblocks[order]
    h = np.zeros(len(sorted_rows), dtype=np.uint32)
    # active[j] = number of rows with more than j blocks: a prefix of the sorted rows.
    max_blocks = int(s_blocks[0])
    active = len(s_blocks) - np.searchsorted(s_blocks[::-1], np.arange(max_blocks), side="right")
    for j in range(max_blocks):
        c = int(active[j])
        h[:c] = _mix_h(h[:c], words[s_starts[:c] + 4 * j].astype(np.uint32))
    rem = s_lengths & 3
    tailed = np.flatnonzero(rem)
    if len(tailed):
        # The tail (1 to 3 bytes) is mixed into h without the rotate/multiply step.
        tail_pos = s_starts[tailed] + 4 * s_blocks[tailed]
        mask = ((np.uint64(1) << (8 * rem[tailed]).astype(np.uint64)) - np.uint64(1)).astype(np.uint32)
        k = words[tail_pos].astype(np.uint32) & mask
        h[tailed] ^= _mix_k(k)
    out[sorted_rows] = _fmix(h, s_lengths.astype(np.uint32))
    return out


__all__ = [
    "decimal_unscaled",
    "hash_binaries",
    "hash_bytes",
    "hash_long",
    "hash_longs",
    "hash_value",
    "min_twos_complement",
]
