"""Location identity for confinement: normalisation refuses what cannot be a place of its own,
and containment compares by path segment (``t`` never contains ``t2``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firn.errors import ValidationError
from firn.spec.locations import (
    location_contains,
    location_key,
    locations_overlap,
    normalize_location,
)


@pytest.mark.parametrize(
    ("given_location", "expected"),
    [
        ("/a/b/", "/a/b"),
        ("/a//b/./c", "/a/b/c"),
        ("file:///a//b/./c/", "file:///a/b/c"),
        ("file:/a/b", "file:/a/b"),
        ("s3://bucket", "s3://bucket"),
        ("s3://bucket/", "s3://bucket"),
        ("s3://bucket/wh/db/t/", "s3://bucket/wh/db/t"),
    ],
)
def test_normalize_cleans(given_location: str, expected: str) -> None:
    assert normalize_location(given_location) == expected


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("rel/x", "relative"),
        (" /x", "relative"),
        ("../../relx", "relative"),
        ("/a/../b", "'..'"),
        ("/a/b/..", "'..'"),
        ("s3://b/%2e%2e/x", "'..'"),
        ("s3://b/wh/%2E%2E", "'..'"),
        ("/a\x00b", "control character"),
        ("/a\nb", "control character"),
        ("/a\ud800", "surrogate"),
        ("file:rel", "no absolute path"),
    ],
)
def test_normalize_refuses(bad: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says) as e:
        normalize_location(bad, what="table location")
    assert "table location" in str(e.value)


def test_containment_is_by_segment() -> None:
    assert location_contains("/wh/t", "/wh/t")
    assert location_contains("/wh/t", "/wh/t/data/f.parquet")
    assert not location_contains("/wh/t", "/wh/t2")
    assert not location_contains("/wh/t", "/wh/t2/data/f.parquet")
    assert not location_contains("/wh/t/data", "/wh/t")
    assert not location_contains("s3://a/wh", "s3://b/wh/t")


def test_equal_forms_of_one_place() -> None:
    assert location_key("/x/y") == location_key("file:/x/y") == location_key("file:///x/y")
    assert location_key("file://localhost/x/y") == location_key("/x/y")
    assert location_key("s3a://b/x") == location_key("s3://b/x") == location_key("S3N://b/x/")
    assert location_contains("file:/wh", "/wh/db/t/data/f.parquet")


def test_dotdot_in_a_referenced_path_resolves_before_comparing() -> None:
    # A path read from metadata is compared where it really points, not where it seems to.
    assert not location_contains("/wh/t", "/wh/t/data/../../other/f.parquet")
    assert location_contains("/wh/other", "/wh/t/data/../../other/f.parquet")


def test_query_and_fragment_characters_are_part_of_the_path() -> None:
    """Object stores and file systems take '?' and '#' as name characters: ``t#1`` is not ``t``."""
    assert location_key("s3://b/wh/t#1").segments == ("wh", "t#1")
    assert location_key("s3://b/wh/t?x=1").segments == ("wh", "t?x=1")
    assert not locations_overlap("s3://b/wh/t#1", "s3://b/wh/t")
    assert normalize_location("s3://b/wh//t#1/") == "s3://b/wh/t#1"
    assert normalize_location("file:/wh/t?x") == "file:/wh/t?x"


def test_overlap_either_way() -> None:
    assert locations_overlap("/wh/a", "/wh/a/b")
    assert locations_overlap("/wh/a/b", "/wh/a")
    assert locations_overlap("/wh/a", "file:///wh/a/")
    assert not locations_overlap("/wh/t", "/wh/t2")


_segment = st.text(alphabet=st.sampled_from([*"ab.%2eE/\\_-", "\x00", "\ud800", " "]), min_size=0, max_size=6)


@given(st.lists(_segment, min_size=1, max_size=6))
def test_a_normalised_location_below_a_root_stays_below_it(parts: list[str]) -> None:
    """Whatever text is appended below a root, a location that normalises is inside the root
    by segment comparison, and its key agrees with the normalised text."""
    raw = "/wh/ns/" + "/".join(parts)
    try:
        clean = normalize_location(raw)
    except ValidationError:
        return
    assert location_contains("/wh/ns", clean)
    assert location_key(clean) == location_key(raw)
