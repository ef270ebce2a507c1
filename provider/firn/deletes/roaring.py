"""Roaring bitmap "portable" serialization: the 32-bit format and its 64-bit extension.

This module knows bytes, not row positions. :mod:`firn.deletes.bitmap` builds on it.

Layout (RoaringFormatSpec, "General layout"; all integers little-endian):

* cookie ``12346`` followed by a u32 container count (no run containers), or cookie
  ``12347 | (count - 1) << 16`` followed by a run-flag bitset of ``ceil(count / 8)`` bytes;
* ``count`` descriptive pairs ``(u16 key, u16 cardinality - 1)``;
* ``count`` u32 offsets (relative to the start of the bitmap), present unless the run cookie is
  used with fewer than 4 containers;
* the containers: array (cardinality <= 4096, sorted u16 values), bitset (8192 bytes) or run
  (u16 number of runs, then ``(u16 start, u16 length - 1)`` pairs).

The 64-bit extension ("Extension for 64-bit implementations") used by Iceberg deletion
vectors (Puffin spec, ``deletion-vector-v1``) is a u64 bitmap count, then for each 32-bit
bitmap a u32 key (the high 32 bits of the positions) followed by the 32-bit bitmap.

**Canonical form.** The format allows several encodings of one set. Firn always writes the one
Iceberg Java writes for positions set one at a time followed by ``runLengthEncode()``
(``BitmapPositionDeleteIndex.serialize``): a container is an array when it holds at most 4096
values and a bitset otherwise, and becomes a run container only when that is *strictly*
smaller. CRoaring's ``run_optimize`` makes the same choice for array and bitset containers, but
keeps a run container (e.g. one created by ``add_range``) when its size *ties* the array size,
so :func:`serialize_bitmap32` re-encodes those few containers. The output is therefore a pure
function of the set, which makes Java's golden files reproducible byte for byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from firn.errors import InvalidMetadata

# RoaringFormatSpec constants.
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX_CARDINALITY = 4096
BITSET_CONTAINER_BYTES = 8192
MAX_CONTAINERS = 1 << 16

# Iceberg Java (RoaringPositionBitmap): keys are non-negative Java ints and the bitmap array
# length must fit in an int, so the largest key is Integer.MAX_VALUE - 1 and the largest
# position is toPosition(Integer.MAX_VALUE - 1, Integer.MIN_VALUE).
MAX_KEY = (1 << 31) - 2
MAX_POSITION = (MAX_KEY << 32) | 0x8000_0000
# Java RoaringPositionBitmap.readBitmapCount: the count must fit in a non-negative int.
MAX_BITMAP_COUNT = (1 << 31) - 1

# Java writes every key in 0..max (empty bitmaps fill gaps). A position with a huge key would
# make that padding explode (12 bytes per empty bitmap), so gaps longer than this are left
# out; readers must accept sparse keys (Java's and the spec's reader rules allow it).
MAX_DENSE_GAP = 1 << 16

EMPTY_BITMAP32 = struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, 0)

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_U16 = struct.Struct("<H")


@dataclass(frozen=True, slots=True)
class Bitmap32Layout:
    """Where each container of one serialized 32-bit bitmap lives (parallel numpy arrays)."""

    keys: npt.NDArray[np.uint16]
    cardinalities: npt.NDArray[np.int64]
    is_run: npt.NDArray[np.bool_]
    # Number of runs of each run container (0 for array and bitset containers).
    runs: npt.NDArray[np.int64]
    # Byte offsets of each container's payload in the parsed buffer, and its size.
    starts: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    # Offset just past the bitmap in the parsed buffer.
    end: int


def _truncated(location: str, what: str, pos: int) -> InvalidMetadata:
    return InvalidMetadata(f"{what}: roaring bitmap truncated at byte {pos}", location=location)


def parse_bitmap32(buf: bytes, pos: int, end: int, *, location: str, what: str) -> Bitmap32Layout:
    """Parse the header of the 32-bit portable bitmap at ``buf[pos:end]`` and size its containers.

    Only the structure is checked here (cookie, counts, bounds); container contents are
    validated by CRoaring when the bitmap is deserialized. Raises ``InvalidMetadata`` naming
    ``location`` and ``what`` (e.g. "deletion vector at offset 4, key 0").
    """
    if pos + 4 > end:
        raise _truncated(location, what, pos)
    (cookie,) = _U32.unpack_from(buf, pos)
    if cookie & 0xFFFF == SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        pos += 4
        flag_bytes = (count + 7) // 8
        if pos + flag_bytes > end:
            raise _truncated(location, what, pos)
        flags = np.frombuffer(buf, dtype=np.uint8, count=flag_bytes, offset=pos)
        is_run = np.unpackbits(flags, bitorder="little")[:count].astype(np.bool_)
        pos += flag_bytes
        has_offsets = count >= NO_OFFSET_THRESHOLD
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        if pos + 8 > end:
            raise _truncated(location, what, pos)
        (count,) = _U32.unpack_from(buf, pos + 4)
        if count > MAX_CONTAINERS:
            raise InvalidMetadata(
                f"{what}: roaring bitmap claims {count} containers, more than {MAX_CONTAINERS}",
                location=location,
            )
        pos += 8
        is_run = np.zeros(count, dtype=np.bool_)
        has_offsets = True
    else:
        raise InvalidMetadata(
            f"{what}: unknown roaring bitmap cookie 0x{cookie:08x} at byte {pos}", location=location
        )

    header_bytes = 4 * count + (4 * count if has_offsets else 0)
    if pos + header_bytes > end:
        raise _truncated(location, what, pos)
    descriptive = np.frombuffer(buf, dtype="<u2", count=2 * count, offset=pos)
    keys = descriptive[0::2].astype(np.uint16)
    cards = descriptive[1::2].astype(np.int64) + 1
    # The offset header is redundant with the sizes; like Java and CRoaring we walk the
    # containers sequentially instead of trusting it.
    pos += header_bytes

    sizes = np.where(cards <= ARRAY_MAX_CARDINALITY, 2 * cards, BITSET_CONTAINER_BYTES)
    runs = np.zeros(count, dtype=np.int64)
    run_indexes = np.flatnonzero(is_run)
    if run_indexes.size:
        # A run container's size depends on its run count, stored at its first byte, so the
        # run containers are sized one by one; everything else was sized above.
        sizes[run_indexes] = 0
        prefix = np.concatenate(([0], np.cumsum(sizes)))
        extra = 0
        for i in run_indexes.tolist():
            at = pos + int(prefix[i]) + extra
            if at + 2 > end:
                raise _truncated(location, what, at)
            (n_runs,) = _U16.unpack_from(buf, at)
            runs[i] = n_runs
            size = 2 + 4 * n_runs
            sizes[i] = size
            extra += size
    starts = pos + np.concatenate(([0], np.cumsum(sizes)[:-1])) if count else np.zeros(0, np.int64)
    bitmap_end = pos + int(sizes.sum())
    if bitmap_end > end:
        raise _truncated(location, what, end)
    return Bitmap32Layout(
        keys=keys,
        cardinalities=cards,
        is_run=is_run,
        runs=runs,
        starts=starts.astype(np.int64),
        sizes=sizes.astype(np.int64),
        end=bitmap_end,
    )


def _assemble(
    keys: npt.NDArray[np.uint16],
    cardinalities: npt.NDArray[np.int64],
    is_run: npt.NDArray[np.bool_],
    payloads: list[bytes],
) -> bytes:
    """Write header and containers in the portable layout (see the module docstring)."""
    count = len(payloads)
    if count == 0:
        return EMPTY_BITMAP32
    has_run = bool(is_run.any())
    parts: list[bytes] = []
    if has_run:
        parts.append(_U32.pack(SERIAL_COOKIE | ((count - 1) << 16)))
        parts.append(np.packbits(is_run, bitorder="little").tobytes())
    else:
        parts.append(struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, count))
    descriptive = np.empty(2 * count, dtype="<u2")
    descriptive[0::2] = keys
    descriptive[1::2] = cardinalities - 1
    parts.append(descriptive.tobytes())
    if not has_run or count >= NO_OFFSET_THRESHOLD:
        header_size = sum(len(p) for p in parts) + 4 * count
        sizes = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=count)
        offsets = header_size + np.cumsum(sizes) - sizes
        parts.append(offsets.astype("<u4").tobytes())
    parts.extend(payloads)
    return b"".join(parts)


def _canonical_is_run(
    cardinalities: npt.NDArray[np.int64], runs: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Java's runOptimize choice: a run container only when strictly smaller than the alternative."""
    plain_size = np.where(cardinalities <= ARRAY_MAX_CARDINALITY, 2 * cardinalities, BITSET_CONTAINER_BYTES)
    result: npt.NDArray[np.bool_] = (2 + 4 * runs) < plain_size
    return result


def _plain_payload(low: npt.NDArray[np.uint16]) -> bytes:
    """Array or bitset payload for a container's sorted low 16-bit values."""
    if low.size <= ARRAY_MAX_CARDINALITY:
        return low.astype("<u2").tobytes()
    bits = np.zeros(1 << 16, dtype=np.bool_)
    bits[low] = True
    # Bitset containers are 1024 little-endian u64 words; bit i of the container is bit
    # i % 8 of byte i // 8, i.e. little-endian bit order within bytes.
    return np.packbits(bits, bitorder="little").tobytes()


def _decode_runs(payload: bytes) -> npt.NDArray[np.uint16]:
    pairs = np.frombuffer(payload, dtype="<u2", offset=2).astype(np.int64)
    starts, lengths = pairs[0::2], pairs[1::2] + 1
    total = int(lengths.sum())
    firsts = np.cumsum(lengths) - lengths
    values = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths) + np.repeat(starts, lengths)
    return values.astype(np.uint16)


def encode_bitmap32(values: npt.NDArray[np.uint32]) -> bytes:
    """The canonical portable serialization of sorted, distinct 32-bit values (numpy only).

    This is the reference encoder: :func:`serialize_bitmap32` produces the same bytes from a
    pyroaring ``BitMap`` faster. Values must be sorted ascending without duplicates.
    """
    n = int(values.size)
    if n == 0:
        return EMPTY_BITMAP32
    high = (values >> 16).astype(np.uint16)
    low = (values & 0xFFFF).astype(np.uint16)
    boundaries = np.flatnonzero(np.diff(high)) + 1
    starts = np.concatenate(([0], boundaries)).astype(np.int64)
    ends = np.concatenate((boundaries, [n])).astype(np.int64)
    run_start = np.ones(n, dtype=np.bool_)
    run_start[1:] = np.diff(low.astype(np.int32)) != 1
    run_start[starts] = True
    runs = np.add.reduceat(run_start.astype(np.int64), starts)
    cards = ends - starts
    is_run = _canonical_is_run(cards, runs)
    payloads: list[bytes] = []
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        seg = low[s:e]
        if is_run[i]:
            first = np.flatnonzero(run_start[s:e])
            last = np.concatenate((first[1:] - 1, [e - s - 1]))
            pairs = np.empty(2 * first.size, dtype="<u2")
            pairs[0::2] = seg[first]
            pairs[1::2] = seg[last] - seg[first]
            payloads.append(_U16.pack(first.size) + pairs.tobytes())
        else:
            payloads.append(_plain_payload(seg))
    return _assemble(high[starts], cards, is_run, payloads)


def serialize_bitmap32(bitmap: BitMap) -> bytes:
    """The canonical portable serialization of a 32-bit bitmap (see the module docstring).

    Run-optimizes ``bitmap`` in place (its set is unchanged). Uses CRoaring's serializer and
    only re-encodes run containers that Java would have stored as arrays or bitsets.
    """
    bitmap.run_optimize()
    data = bitmap.serialize()
    if _U32.unpack_from(data, 0)[0] & 0xFFFF != SERIAL_COOKIE:
        return data  # no run containers: array/bitset choice is fixed by cardinality
    layout = parse_bitmap32(data, 0, len(data), location="<memory>", what="serialized bitmap")
    canonical_run = _canonical_is_run(layout.cardinalities, layout.runs)
    wrong = layout.is_run & ~canonical_run
    if not wrong.any():
        return data
    payloads: list[bytes] = []
    for i, (s, size) in enumerate(zip(layout.starts.tolist(), layout.sizes.tolist())):
        payload = data[s : s + size]
        if wrong[i]:
            payload = _plain_payload(_decode_runs(payload))
        payloads.append(payload)
    return _assemble(layout.keys, layout.cardinalities, layout.is_run & canonical_run, payloads)


def serialize_bitmap64(bitmaps: dict[int, BitMap]) -> bytes:
    """The 64-bit portable vector for 32-bit bitmaps keyed by the high 32 bits of positions.

    Like Java, every key from 0 to the largest non-empty key is written, empty bitmaps filling
    the gaps (only gaps longer than ``MAX_DENSE_GAP`` are skipped). An empty set is 8 bytes.
    """
    keys = sorted(k for k, bm in bitmaps.items() if bm)
    if not keys:
        return _U64.pack(0)
    parts: list[bytes] = []
    count = 0
    previous = -1
    for key in keys:
        gap = key - previous - 1
        if 0 < gap <= MAX_DENSE_GAP:
            for empty_key in range(previous + 1, key):
                parts.append(_U32.pack(empty_key))
                parts.append(EMPTY_BITMAP32)
            count += gap
        parts.append(_U32.pack(key))
        parts.append(serialize_bitmap32(bitmaps[key]))
        count += 1
        previous = key
    return _U64.pack(count) + b"".join(parts)


def deserialize_bitmap64(buf: bytes, pos: int, end: int, *, location: str, what: str) -> dict[int, BitMap]:
    """Parse a 64-bit portable vector occupying exactly ``buf[pos:end]``.

    Applies Java's reader rules (``RoaringPositionBitmap.deserialize``): count within a
    non-negative int, keys strictly ascending and at most ``MAX_KEY``; sparse keys allowed.
    Empty bitmaps are dropped. Trailing bytes are an error.
    """
    if pos + 8 > end:
        raise InvalidMetadata(f"{what}: roaring vector truncated, {end - pos} bytes", location=location)
    (count,) = _U64.unpack_from(buf, pos)
    pos += 8
    # Each bitmap takes at least a 4-byte key and an 8-byte empty bitmap.
    if count > MAX_BITMAP_COUNT or count * 12 > end - pos:
        raise InvalidMetadata(
            f"{what}: invalid bitmap count {count} for a {end - pos + 8}-byte roaring vector",
            location=location,
        )
    result: dict[int, BitMap] = {}
    last_key = -1
    for _ in range(count):
        if pos + 4 > end:
            raise InvalidMetadata(f"{what}: roaring vector truncated at byte {pos}", location=location)
        (key,) = _U32.unpack_from(buf, pos)
        pos += 4
        if key > MAX_KEY:
            raise InvalidMetadata(f"{what}: bitmap key {key} is larger than {MAX_KEY}", location=location)
        if key <= last_key:
            raise InvalidMetadata(
                f"{what}: bitmap keys must be strictly ascending, got {key} after {last_key}",
                location=location,
            )
        last_key = key
        key_what = f"{what}, key {key}"
        layout = parse_bitmap32(buf, pos, end, location=location, what=key_what)
        try:
            # pyroaring reads any buffer; the stub says bytes. A view avoids copying.
            bitmap = BitMap.deserialize(memoryview(buf)[pos : layout.end])  # type: ignore[arg-type]
        except ValueError as exc:
            raise InvalidMetadata(f"{key_what}: invalid roaring bitmap: {exc}", location=location) from exc
        pos = layout.end
        if bitmap:
            result[key] = bitmap
    if pos != end:
        raise InvalidMetadata(
            f"{what}: {end - pos} unexpected trailing bytes after the roaring vector", location=location
        )
    return result


__all__ = [
    "ARRAY_MAX_CARDINALITY",
    "BITSET_CONTAINER_BYTES",
    "Bitmap32Layout",
    "EMPTY_BITMAP32",
    "MAX_KEY",
    "MAX_POSITION",
    "SERIAL_COOKIE",
    "SERIAL_COOKIE_NO_RUNCONTAINER",
    "deserialize_bitmap64",
    "encode_bitmap32",
    "parse_bitmap32",
    "serialize_bitmap32",
    "serialize_bitmap64",
]
