"""Portable roaring bytes: canonical form, agreement with CRoaring, header parsing."""

from __future__ import annotations

import array

import numpy as np
import pytest
from pyroaring import BitMap, BitMap64

from firn.deletes import PositionBitmap
from firn.deletes.roaring import (
    EMPTY_BITMAP32,
    encode_bitmap32,
    parse_bitmap32,
    serialize_bitmap32,
)
from firn.errors import InvalidMetadata


def _random_set(rng: np.random.Generator) -> np.ndarray:
    """Sorted distinct uint32 values mixing sparse, dense and run-heavy containers."""
    parts = []
    for container in rng.choice(40, size=int(rng.integers(1, 12)), replace=False):
        base = int(container) << 16
        kind = int(rng.integers(0, 5))
        if kind == 0:  # sparse: array
            parts.append(base + rng.choice(1 << 16, int(rng.integers(1, 4097)), replace=False))
        elif kind == 1:  # dense: bitset
            parts.append(base + rng.choice(1 << 16, int(rng.integers(4097, 40_000)), replace=False))
        else:
            # Runs: many short, many long, or a few short ones, where run and array sizes tie
            # (c values in n runs with 2c == 2 + 4n or close) and Java keeps the array.
            count = int(rng.integers(1, 3000)) if kind != 4 else int(rng.integers(1, 7))
            starts = np.sort(rng.choice(1 << 12, count, replace=False)) * 16
            lengths = rng.integers(1, {2: 5, 3: 400, 4: 4}[kind], starts.size)
            values = np.concatenate([np.arange(s, min(s + n, 1 << 16)) for s, n in zip(starts, lengths)])
            parts.append(base + values)
    return np.unique(np.concatenate(parts)).astype(np.uint32)


@pytest.mark.parametrize("seed", range(16))
def test_fast_serializer_equals_reference_encoder(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = _random_set(rng)
    reference = encode_bitmap32(values)
    # Built value by value (arrays and bitsets), as Java's DV writer does ...
    buffer = array.array("I", values.tobytes())
    assert serialize_bitmap32(BitMap(buffer)) == reference
    # ... and from ranges (CRoaring run containers): still the same bytes.
    ranged = BitMap()
    breaks = np.flatnonzero(np.diff(values.astype(np.int64)) != 1) + 1
    for run in np.split(values, breaks):
        ranged.add_range(int(run[0]), int(run[-1]) + 1)
    assert serialize_bitmap32(ranged) == reference
    # CRoaring deserializes the canonical bytes to the same set.
    assert BitMap.deserialize(reference) == BitMap(buffer)
    layout = parse_bitmap32(reference, 0, len(reference), location="mem", what="test")
    assert layout.end == len(reference)
    assert int(layout.cardinalities.sum()) == values.size


@pytest.mark.parametrize("seed", range(10))
def test_matches_pyroaring_bitmap64_when_keys_are_dense(seed: int) -> None:
    # The notes: BitMap64.serialize() is the Iceberg vector layout. With dense keys (no gap
    # to pad) and no run/array ties, Firn's bytes and CRoaring's must be identical.
    rng = np.random.default_rng(seed)
    positions = rng.choice(3 << 32, 50_000, replace=False).astype(np.uint64)
    positions = np.concatenate([positions, np.array([1, (1 << 32) + 1, (2 << 32) + 1], dtype=np.uint64)])
    reference = BitMap64(positions.tolist())
    reference.run_optimize()
    assert PositionBitmap.from_positions(positions).serialize() == reference.serialize()


def test_empty_and_offsets() -> None:
    assert encode_bitmap32(np.zeros(0, dtype=np.uint32)) == EMPTY_BITMAP32 == BitMap().serialize()
    # Four or more containers with runs carry the offset header; fewer do not.
    four_runs = np.concatenate([np.arange(k << 16, (k << 16) + 10) for k in range(4)]).astype(np.uint32)
    assert (
        encode_bitmap32(four_runs)
        == serialize_bitmap32(BitMap(four_runs.tolist()))
        == BitMap(four_runs.tolist()).serialize()
    )


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x3a\x30", "truncated"),
        (b"\x3a\x30\x00\x00\x01\x00\x01\x00", "more than 65536"),
        (b"\x3a\x30\x00\x00\x02\x00\x00\x00" + b"\x00" * 8, "truncated"),
        (b"\x3b\x30\x00\x00", "truncated"),
        (b"\x3b\x30\x00\x00\x01\x00\x00\x00\x00", "truncated"),
        (b"\x39\x30\x00\x00\x00\x00\x00\x00", "cookie"),
    ],
)
def test_parse_errors(data: bytes, needle: str) -> None:
    with pytest.raises(InvalidMetadata, match=needle) as info:
        parse_bitmap32(data, 0, len(data), location="s3://x/f.puffin", what="vector")
    assert "s3://x/f.puffin" in str(info.value)


def test_tied_run_containers_are_rewritten_to_arrays() -> None:
    bitmap = BitMap()
    bitmap.add_range(100, 103)  # 3 values, 1 run: 6 B either way -> array
    bitmap.add_range((1 << 16) + 5, (1 << 16) + 105)  # 100 values, 1 run -> run
    bitmap.add_range((2 << 16) + 0, (2 << 16) + 2)  # 2 + 3 values in 2 runs: 10 B either way -> array
    bitmap.add_range((2 << 16) + 10, (2 << 16) + 13)
    bitmap.add((4 << 16) + 1)
    values = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    data = serialize_bitmap32(bitmap)
    assert data == encode_bitmap32(values)
    layout = parse_bitmap32(data, 0, len(data), location="mem", what="test")
    assert layout.is_run.tolist() == [False, True, False, False]
    assert BitMap.deserialize(data) == bitmap
