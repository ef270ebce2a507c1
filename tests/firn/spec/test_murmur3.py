"""The murmur3 kernels agree with mmh3 (the C reference) on every input shape."""

from __future__ import annotations

import struct

import mmh3
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from firn.spec.murmur3 import hash_binaries, hash_bytes, hash_long, hash_longs, min_twos_complement


def test_scalar_hashes() -> None:
    assert hash_long(34) == 2017239379  # Appendix B
    assert hash_bytes(b"iceberg") == 1210000089
    assert hash_bytes(b"") == 0


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=50))
def test_hash_longs_matches_mmh3(values: list[int]) -> None:
    got = hash_longs(np.array(values, dtype=np.int64))
    assert got.dtype == np.int32
    assert got.tolist() == [mmh3.hash(struct.pack("<q", v), 0, signed=True) for v in values]


def test_hash_longs_widens_int32() -> None:
    assert hash_longs(np.array([34, -1], dtype=np.int32)).tolist() == [hash_long(34), hash_long(-1)]


def _flatten(values: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if values else lengths
    return np.frombuffer(b"".join(values), dtype=np.uint8), starts, lengths


@given(st.lists(st.binary(max_size=70), max_size=40))
def test_hash_binaries_matches_mmh3(values: list[bytes]) -> None:
    assert hash_binaries(*_flatten(values)).tolist() == [mmh3.hash(v, 0, signed=True) for v in values]


def test_hash_binaries_long_values_and_every_tail_length() -> None:
    rng = np.random.default_rng(3)
    values = [rng.bytes(n) for n in [0, 1, 2, 3, 4, 5, 6, 7, 8, 255, 256, 257, 1000, 70_000]]
    assert hash_binaries(*_flatten(values)).tolist() == [mmh3.hash(v, 0, signed=True) for v in values]


def test_hash_binaries_with_gaps_and_overlaps() -> None:
    data = np.frombuffer(b"xxicebergyy", dtype=np.uint8)
    starts = np.array([2, 2, 0, 10], dtype=np.int64)
    lengths = np.array([7, 3, 0, 1], dtype=np.int64)
    expected = [mmh3.hash(b, 0, signed=True) for b in (b"iceberg", b"ice", b"", b"y")]
    assert hash_binaries(data, starts, lengths).tolist() == expected


@given(st.integers(min_value=-(2**130), max_value=2**130))
def test_min_twos_complement(value: int) -> None:
    raw = min_twos_complement(value)
    assert int.from_bytes(raw, "big", signed=True) == value
    # Minimal: dropping the first byte would change the value.
    if len(raw) > 1:
        assert int.from_bytes(raw[1:], "big", signed=True) != value
