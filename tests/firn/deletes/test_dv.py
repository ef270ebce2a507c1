"""deletion-vector-v1 blobs: Java golden vectors, a hand-built vector, and corruption handling."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import numpy as np
import pytest

from firn.deletes import PositionBitmap, deserialize_dv, serialize_dv
from firn.deletes.dv import DV_MAGIC
from firn.errors import InvalidMetadata

LOCATION = "s3://bucket/table/data/dv-0001.puffin"

# Java core/src/test/resources/org/apache/iceberg/deletes/empty-position-index.bin
JAVA_EMPTY = bytes.fromhex("0000000c d1d33964 0000000000000000 bf18480c".replace(" ", ""))
# ... /small-alternating-values-position-index.bin: positions 1, 3, 5, 7, 9
JAVA_SMALL_ALTERNATING = bytes.fromhex(
    (
        "0000002a d1d33964 0100000000000000 00000000 3a300000 01000000 0000 0400 10000000"
        " 0100 0300 0500 0700 0900 b3fb20be"
    ).replace(" ", "")
)

KEY = 1 << 32
CONTAINER = 1 << 16


def _frame(vector: bytes) -> bytes:
    body = DV_MAGIC + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_java_empty_vector_byte_exact() -> None:
    assert serialize_dv(PositionBitmap()) == JAVA_EMPTY
    assert len(JAVA_EMPTY) == 20
    parsed = deserialize_dv(JAVA_EMPTY, location=LOCATION, expected_length=20, expected_cardinality=0)
    assert parsed.cardinality == 0
    assert parsed.to_array().tolist() == []


def test_java_small_alternating_vector_byte_exact() -> None:
    bitmap = PositionBitmap.from_positions([1, 3, 5, 7, 9])
    assert serialize_dv(bitmap) == JAVA_SMALL_ALTERNATING
    parsed = deserialize_dv(JAVA_SMALL_ALTERNATING, location=LOCATION, expected_cardinality=5)
    assert parsed.to_array().tolist() == [1, 3, 5, 7, 9]
    assert parsed == bitmap


def test_java_small_and_large_values_layout() -> None:
    # Java's small-and-large-values-position-index.bin is 56 bytes: 100, 101,
    # Integer.MAX_VALUE + 100 and + 101 (two containers of key 0, no runs).
    positions = [100, 101, 2**31 - 1 + 100, 2**31 - 1 + 101]
    blob = serialize_dv(PositionBitmap.from_positions(positions))
    assert len(blob) == 56
    vector = blob[8:-4]
    assert vector[:12] == struct.pack("<QI", 1, 0)
    assert struct.unpack_from("<II", vector, 12) == (12346, 2)
    assert deserialize_dv(blob, location=LOCATION).to_array().tolist() == positions


def test_java_all_container_types_layout() -> None:
    # The positions of Java's TestBitmapPositionDeleteIndex.testAllContainerTypesIndexSerialization
    # (ranges are end-exclusive there); its golden file is 94 bytes with cardinality 132,561.
    bitmap = PositionBitmap()
    bitmap.update([5, 7])
    bitmap.add_range(CONTAINER + 1, CONTAINER + 1000)
    bitmap.add_range(2 * CONTAINER + 1, 3 * CONTAINER - 1)
    bitmap.update([KEY + 10, KEY + 20])
    bitmap.add_range(KEY + CONTAINER + 10, KEY + CONTAINER + 500)
    bitmap.add_range(KEY + 2 * CONTAINER + 1, KEY + 3 * CONTAINER - 1)
    blob = serialize_dv(bitmap)
    assert len(blob) == 94
    assert bitmap.cardinality == 132_561
    # Key 0: run cookie with 3 containers, flags 0b110 (containers 1 and 2 are runs), no offsets.
    assert blob[16:20] == struct.pack("<I", 0)
    assert struct.unpack_from("<IB", blob, 20) == (12347 | (2 << 16), 0b110)
    assert deserialize_dv(blob, location=LOCATION, expected_cardinality=132_561) == bitmap


def _hand_built_vector() -> tuple[list[int], bytes]:
    """Keys 0 and 2 with an empty key 1 between them; array, bitset and run containers."""
    key0_array = [1, 5, 9]
    key0_bitset = [CONTAINER + v for v in range(0, 10_000, 2)]  # 5000 values, 5000 runs
    key0_run = [2 * CONTAINER + v for v in range(100, 300)]  # 200 values, one run
    key2_run = [2 * KEY + v for v in range(10)]  # 10 values, one run
    key2_array = [2 * KEY + CONTAINER + 4464]
    positions = key0_array + key0_bitset + key0_run + key2_run + key2_array

    bits = bytearray(8192)
    for v in range(0, 10_000, 2):
        bits[v // 8] |= 1 << (v % 8)
    key0 = b"".join(
        [
            struct.pack("<I", 12347 | (3 - 1) << 16),  # run cookie, 3 containers
            bytes([0b100]),  # container 2 is a run container
            struct.pack("<6H", 0, 3 - 1, 1, 5000 - 1, 2, 200 - 1),  # (key, cardinality - 1)
            # fewer than 4 containers with the run cookie: no offset header
            struct.pack("<3H", 1, 5, 9),
            bytes(bits),
            struct.pack("<3H", 1, 100, 199),  # 1 run: start 100, length - 1 = 199
        ]
    )
    key1 = struct.pack("<II", 12346, 0)  # Java writes empty bitmaps for gaps in the key range
    key2 = b"".join(
        [
            struct.pack("<I", 12347 | (2 - 1) << 16),
            bytes([0b01]),
            struct.pack("<4H", 0, 10 - 1, 1, 1 - 1),
            struct.pack("<3H", 1, 0, 9),
            struct.pack("<H", 4464),
        ]
    )
    vector = struct.pack("<Q", 3) + b"".join(
        struct.pack("<I", key) + bitmap for key, bitmap in enumerate([key0, key1, key2])
    )
    return positions, vector


def test_hand_built_vector_across_keys_and_container_types() -> None:
    positions, vector = _hand_built_vector()
    expected = _frame(vector)
    bitmap = PositionBitmap.from_positions(np.array(positions, dtype=np.int64))
    assert serialize_dv(bitmap) == expected
    parsed = deserialize_dv(expected, location=LOCATION, expected_length=len(expected))
    assert parsed.to_array().tolist() == sorted(positions)
    assert parsed.keys() == [0, 2]


def test_sparse_keys_are_accepted_on_read() -> None:
    # Java and the spec allow readers to see sparse (non-dense) keys.
    vector = (
        struct.pack("<Q", 1)
        + struct.pack("<I", 3)
        + bytes.fromhex("3a30000001000000000000001000000007 00".replace(" ", ""))
    )
    parsed = deserialize_dv(_frame(vector), location=LOCATION)
    assert parsed.to_array().tolist() == [3 * KEY + 7]
    # ... and Firn writes it back densely, like Java.
    assert serialize_dv(parsed)[8:20] == struct.pack("<QI", 4, 0)


# -- corruption ------------------------------------------------------------------------


def _corrupt(blob: bytes, index: int) -> bytes:
    data = bytearray(blob)
    data[index] ^= 0x01
    return bytes(data)


@pytest.mark.parametrize(
    ("name", "make", "needle"),
    [
        ("crc", lambda b: _corrupt(b, len(b) - 1), "CRC mismatch"),
        ("vector byte", lambda b: _corrupt(b, 30), "CRC mismatch"),
        ("magic", lambda b: _corrupt(b, 5), "bad magic"),
        ("length field", lambda b: _corrupt(b, 3), "length field"),
        ("truncated by one", lambda b: b[:-1], "length field"),
        ("truncated to half", lambda b: b[: len(b) // 2], "length field"),
        ("truncated below minimum", lambda b: b[:10], "truncated"),
        ("extra byte", lambda b: b + b"\x00", "length field"),
    ],
)
def test_corruption_raises_invalid_metadata(name: str, make: Callable[[bytes], bytes], needle: str) -> None:
    blob = serialize_dv(PositionBitmap.from_positions([1, 3, 5, 70_000, 3 * KEY]))
    bad = make(blob)
    with pytest.raises(InvalidMetadata) as info:
        deserialize_dv(bad, location=LOCATION, offset=4)
    message = str(info.value)
    assert LOCATION in message, name
    assert needle in message, name
    assert "offset 4" in message
    assert info.value.location == LOCATION


def test_expected_length_and_cardinality_checked() -> None:
    blob = JAVA_SMALL_ALTERNATING
    with pytest.raises(InvalidMetadata, match="content_size_in_bytes is 51") as info:
        deserialize_dv(blob, location=LOCATION, expected_length=51)
    assert LOCATION in str(info.value)
    with pytest.raises(InvalidMetadata, match="cardinality 5 does not match the expected 6"):
        deserialize_dv(blob, location=LOCATION, expected_cardinality=6)


def _vector_cases() -> list[tuple[str, bytes, str]]:
    one = bytes.fromhex("3a300000010000000000000010000000" + "0700")  # {7}
    empty = struct.pack("<II", 12346, 0)
    return [
        (
            "keys descending",
            struct.pack("<Q", 2) + struct.pack("<I", 2) + one + struct.pack("<I", 1) + one,
            "strictly ascending",
        ),
        (
            "duplicate key",
            struct.pack("<Q", 2) + struct.pack("<I", 0) + one + struct.pack("<I", 0) + one,
            "strictly ascending",
        ),
        ("key too large", struct.pack("<Q", 1) + struct.pack("<I", 2**31 - 1) + one, "larger than"),
        ("negative key as int", struct.pack("<Q", 1) + struct.pack("<I", 2**32 - 1) + one, "larger than"),
        ("count too large", struct.pack("<Q", 5) + struct.pack("<I", 0) + empty, "invalid bitmap count"),
        ("huge count", struct.pack("<Q", 2**63) + struct.pack("<I", 0) + empty, "invalid bitmap count"),
        (
            "bad cookie",
            struct.pack("<Q", 1) + struct.pack("<I", 0) + b"\x00\x00\x00\x00" + b"\x00" * 8,
            "cookie",
        ),
        (
            "container truncated",
            struct.pack("<Q", 1) + struct.pack("<I", 0) + one[:-1] + b"\x00" * 0,
            "truncated",
        ),
        (
            "trailing bytes",
            struct.pack("<Q", 1) + struct.pack("<I", 0) + one + b"\x00\x00\x00\x00",
            "trailing",
        ),
        (
            "unsorted array",
            struct.pack("<Q", 1)
            + struct.pack("<I", 0)
            + bytes.fromhex("3a30000001000000000001001000000009000700"),
            "invalid roaring bitmap",
        ),
    ]


@pytest.mark.parametrize(("name", "vector", "needle"), _vector_cases())
def test_malformed_vector_with_valid_crc(name: str, vector: bytes, needle: str) -> None:
    with pytest.raises(InvalidMetadata) as info:
        deserialize_dv(_frame(vector), location=LOCATION)
    assert needle in str(info.value), name
    assert LOCATION in str(info.value)
