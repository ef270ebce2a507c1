"""The planning rules shared by the rewrites: Java's sizes, bin-packing, commit batches, job
order, and ``sort_order`` strings."""

from __future__ import annotations

import pytest

from firn.errors import Unsupported, ValidationError
from firn.maintenance.data_file_rewriter import parse_sort_order
from firn.maintenance.options import RewriteDataFilesOptions
from firn.maintenance.rewrite_planning import FileSizes, commit_batches, order_groups, pack
from firn.spec.schema import Schema
from firn.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from firn.spec.transforms import parse_transform
from firn.spec.types import LongType, NestedField, StringType, TimestamptzType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "ts", TimestamptzType()),
)


def test_sizes_default_to_javas_ratios_and_are_validated() -> None:
    s = FileSizes.resolve(RewriteDataFilesOptions(), 1000, "op")
    assert (s.target, s.min, s.max) == (1000, 750, 1800)
    assert FileSizes.resolve(RewriteDataFilesOptions(target_file_size_bytes=100), 1000, "op").max == 180
    with pytest.raises(ValidationError, match="min-file-size-bytes \\(900\\) <= target"):
        FileSizes.resolve(
            RewriteDataFilesOptions(min_file_size_bytes=900, target_file_size_bytes=800), 1000, "op"
        )
    with pytest.raises(ValidationError, match="must be positive"):
        FileSizes.resolve(RewriteDataFilesOptions(target_file_size_bytes=0), 1000, "op")


@pytest.mark.parametrize(
    ("input_bytes", "expected"),
    [
        (50, 1),  # below the target: one file
        (205, 2),  # remainder 5 spread over two files of 102.5 (< 1.1x target)
        (250, 3),  # remainder 50 is too small alone, but spreading it makes 125 (> 110): keep it
        (280, 3),  # remainder 80 > min 75: its own file
        (1000, 10),
    ],
)
def test_expected_output_files_follow_java(input_bytes: int, expected: int) -> None:
    sizes = FileSizes(target=100, min=75, max=180)
    assert sizes.expected_output_files(input_bytes) == expected


def test_pack_fills_bins_in_order_with_lookback_one() -> None:
    assert pack([3, 3, 3, 5, 1, 9, 2], lambda x: x, 6) == [[3, 3], [3], [5, 1], [9], [2]]
    assert pack([], lambda x: x, 6) == []


def test_commit_batches_and_job_order() -> None:
    assert commit_batches(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert commit_batches(list(range(2)), 10) == [[0], [1]]
    groups = [("a", 5, 1), ("b", 1, 3), ("c", 3, 2)]
    size, count = (lambda g: g[1]), (lambda g: g[2])
    assert [g[0] for g in order_groups(groups, "bytes-desc", size, count)] == ["a", "c", "b"]
    assert [g[0] for g in order_groups(groups, "files-asc", size, count)] == ["a", "c", "b"]
    assert [g[0] for g in order_groups(groups, "none", size, count)] == ["a", "b", "c"]


def test_sort_order_strings_parse_as_iceberg_writes_them() -> None:
    order = parse_sort_order(SCHEMA, "id DESC NULLS LAST, name")
    assert order.fields == (
        SortField(1, parse_transform("identity"), SortDirection.DESC, NullOrder.NULLS_LAST),
        SortField(2, parse_transform("identity"), SortDirection.ASC, NullOrder.NULLS_FIRST),
    )
    assert parse_sort_order(SCHEMA, "id desc").fields[0].null_order is NullOrder.NULLS_LAST
    transformed = parse_sort_order(SCHEMA, "days(ts) ASC NULLS LAST, bucket(16, id), truncate(name, 4)")
    assert [str(f.transform) for f in transformed.fields] == ["day", "bucket[16]", "truncate[4]"]
    # An order the table already has keeps its id; a new one gets an unused id.
    existing = SortOrder(3, order.fields)
    assert parse_sort_order(SCHEMA, "id DESC NULLS LAST, name", existing=[existing]).order_id == 3
    assert parse_sort_order(SCHEMA, "name", existing=[existing]).order_id == 4


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("zorder(id, name)", Unsupported, "zorder"),
        ("nope DESC", ValidationError, "unknown column 'nope'"),
        ("bucket(id)", ValidationError, "one integer argument"),
        ("id,", ValidationError, "cannot parse"),
        ("sqrt(id)", ValidationError, "unknown transform"),
    ],
)
def test_bad_sort_orders_are_clear_errors(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_sort_order(SCHEMA, text)
