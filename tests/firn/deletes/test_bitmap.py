"""PositionBitmap: construction, numpy conversions, masks, merging."""

from __future__ import annotations

import numpy as np
import pytest

from firn.deletes import MAX_POSITION, PositionBitmap, merge_deletes
from firn.errors import ValidationError

KEY = 1 << 32


def _naive_deleted_mask(positions: set[int], num_rows: int, start: int) -> np.ndarray:
    return np.array([start + i in positions for i in range(num_rows)], dtype=np.bool_)


def test_construction_paths_agree() -> None:
    rng = np.random.default_rng(0)
    positions = np.unique(rng.integers(0, 200_000, 20_000))
    from_np = PositionBitmap.from_positions(positions)
    from_u32 = PositionBitmap.from_positions(positions.astype(np.uint32))
    from_list = PositionBitmap.from_positions(positions.tolist())
    from_iter = PositionBitmap.from_positions(int(p) for p in positions)
    one_by_one = PositionBitmap()
    for p in positions.tolist():
        one_by_one.add(p)
    assert from_np == from_u32 == from_list == from_iter == one_by_one
    assert from_np.cardinality == len(positions) == len(from_np)
    assert from_np.to_array().dtype == np.int64
    assert np.array_equal(from_np.to_array(), positions)
    assert list(from_np) == positions.tolist()


def test_ranges_and_multi_key_positions() -> None:
    bitmap = PositionBitmap.from_ranges([(10, 20), (KEY - 5, KEY + 5), (3 * KEY, 3 * KEY + 2)])
    expected = [*range(10, 20), *range(KEY - 5, KEY + 5), 3 * KEY, 3 * KEY + 1]
    assert bitmap.to_array().tolist() == expected
    assert bitmap.keys() == [0, 1, 3]
    assert bitmap.min_position() == 10 and bitmap.max_position() == 3 * KEY + 1
    assert KEY + 4 in bitmap and KEY + 5 not in bitmap and -1 not in bitmap
    assert PositionBitmap.from_positions(range(10, 20)) == PositionBitmap.from_range(10, 20)
    assert PositionBitmap.from_positions(np.array(expected, dtype=np.uint64)) == bitmap


def test_limits_are_javas() -> None:
    PositionBitmap.from_positions([MAX_POSITION])
    for bad in ([-1], [MAX_POSITION + 1], np.array([2**63 + 5], dtype=np.uint64), [2**64]):
        with pytest.raises(ValidationError):
            PositionBitmap.from_positions(bad)
    with pytest.raises(ValidationError):
        PositionBitmap().add(-3)
    with pytest.raises(ValidationError):
        PositionBitmap().add_range(MAX_POSITION, MAX_POSITION + 2)
    with pytest.raises(ValidationError):
        PositionBitmap.from_positions(np.array([1.5]))


def test_empty_bitmap() -> None:
    empty = PositionBitmap()
    assert not empty and empty.cardinality == 0
    assert empty.to_array().tolist() == []
    assert empty.max_position() is None
    assert not empty.deleted_mask(5).any()
    assert PositionBitmap.from_positions(np.zeros(0, dtype=np.int64)) == empty
    assert empty.serialize() == bytes(8)


@pytest.mark.parametrize("seed", range(5))
def test_masks_match_naive_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    num_rows = int(rng.integers(1, 300_000))
    density = float(rng.choice([0.001, 0.05, 0.1, 0.5, 0.95]))
    positions = rng.choice(num_rows, max(1, int(num_rows * density)), replace=False)
    bitmap = PositionBitmap.from_positions(positions)
    naive_set = set(positions.tolist())
    # Whole file, then a few row-group windows (including past the end of the deletes).
    windows = [(0, num_rows)] + [
        (int(s), int(rng.integers(0, 70_000))) for s in rng.integers(0, num_rows + 10, 4)
    ]
    for start, length in windows:
        deleted = bitmap.deleted_mask(length, start=start)
        assert deleted.dtype == np.bool_ and deleted.shape == (length,)
        expected = np.zeros(length, dtype=np.bool_)
        in_window = positions[(positions >= start) & (positions < start + length)] - start
        expected[in_window] = True
        assert np.array_equal(deleted, expected)
        assert np.array_equal(bitmap.keep_mask(length, start=start), ~expected)
    small = 2_000
    assert np.array_equal(
        bitmap.deleted_mask(small, start=num_rows // 3),
        _naive_deleted_mask(naive_set, small, num_rows // 3),
    )


def test_mask_across_the_32_bit_key_boundary() -> None:
    positions = [KEY - 3, KEY - 1, KEY, KEY + 2, 2 * KEY + 1]
    bitmap = PositionBitmap.from_positions(positions)
    start = KEY - 4
    mask = bitmap.deleted_mask(8, start=start)
    assert mask.tolist() == _naive_deleted_mask(set(positions), 8, start).tolist()
    assert not bitmap.deleted_mask(100).any()


def test_union_and_merge_do_not_mutate_inputs() -> None:
    earlier = PositionBitmap.from_positions([1, 2, 3, KEY + 1])
    new = PositionBitmap.from_positions([3, 4, 2 * KEY])
    merged = merge_deletes(earlier, new)
    assert merged.to_array().tolist() == [1, 2, 3, 4, KEY + 1, 2 * KEY]
    assert earlier.to_array().tolist() == [1, 2, 3, KEY + 1]
    assert new.to_array().tolist() == [3, 4, 2 * KEY]
    assert (earlier | new) == merged == earlier.union(new)
    assert merge_deletes(None, np.array([9, 8])).to_array().tolist() == [8, 9]
    assert merge_deletes(earlier, [0]).to_array().tolist() == [0, 1, 2, 3, KEY + 1]
    in_place = earlier.copy()
    in_place |= new
    assert in_place == merged
    assert earlier != merged


def test_serialization_is_independent_of_construction() -> None:
    # A range of 3 is stored by CRoaring as a run container (6 B), which ties an array of
    # 3 values; Java stores the array. Firn must write Java's bytes however it was built.
    by_range = PositionBitmap.from_range(100, 103)
    by_values = PositionBitmap.from_positions([100, 101, 102])
    assert by_range.serialize() == by_values.serialize()
    vector = by_values.serialize()
    assert vector[12:16] == bytes.fromhex("3a300000")  # no-run cookie: array container
    deserialized = PositionBitmap.deserialize(vector, location="mem")
    assert deserialized == by_values
