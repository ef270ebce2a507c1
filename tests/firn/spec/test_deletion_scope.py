"""DeletionScope: a table's own places minus every overlapping catalog entry's place, and the
lexical check every delete goes through (issue 18 item 3)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pytest

from firn.core.create import new_table_metadata
from firn.errors import ValidationError
from firn.spec.deletion_scope import (
    KEPT_OTHER_ENTRY,
    KEPT_OUTSIDE,
    KEPT_UNKNOWN_ENTRY,
    KEPT_UNSAFE_PATH,
    DeletionScope,
    OtherPlace,
    table_places,
)
from firn.spec.properties import ORPHANS_GRACE, TableProperties, parse_duration_ms


@dataclass(frozen=True)
class Entry:
    identifier: tuple[str, ...]
    location: str | None
    metadata_location: str = ""


def _scope(places: list[str], *entries: Entry) -> DeletionScope:
    return DeletionScope.build("db.t", places, entries, self_identifier=("db", "t"))


def test_inside_the_own_place_and_only_there() -> None:
    scope = _scope(["/wh/db/t"])
    assert scope.check("/wh/db/t/data/a.parquet") is None
    assert scope.check("file:///wh/db/t/data/a.parquet") is None  # file:/// is the same place
    assert scope.check("file:/wh/db/t/metadata/v1.json") is None
    for outside in ("/wh/db/t2/data/a.parquet", "/wh/db/a.parquet", "/etc/passwd", "s3://b/wh/db/t/x"):
        verdict = scope.check(outside)
        assert verdict is not None and verdict.kind == KEPT_OUTSIDE, outside
        assert "db.t" in verdict.reason
    # The place itself is not a file of the table.
    assert scope.check("/wh/db/t") is not None


@pytest.mark.parametrize(
    "bad",
    [
        "/wh/db/t/data/../../t2/data/a.parquet",
        "/wh/db/t/data/%2e%2e/x",
        "data/a.parquet",
        "file:data/a.parquet",
        "/wh/db/t/data/a\x00.parquet",
        "/wh/db/t/data/\ud800.parquet",
        "",
    ],
)
def test_unsafe_paths_are_kept(bad: str) -> None:
    verdict = _scope(["/wh/db/t"]).check(bad)
    assert verdict is not None and verdict.kind == KEPT_UNSAFE_PATH


def test_write_paths_are_own_places_and_their_neighbours_are_not() -> None:
    md = new_table_metadata(
        pa.schema([pa.field("id", pa.int64())]),
        location="/wh/db/t",
        properties={"write.data.path": "s3://data/t", "write.metadata.path": "/meta/t"},
    )
    assert table_places(md) == ["/wh/db/t", "s3://data/t", "/meta/t"]
    scope = DeletionScope.for_table("db.t", md)
    assert scope.check("s3a://data/t/part-0.parquet") is None  # s3a is s3
    assert scope.check("/meta/t/00001.metadata.json") is None
    assert scope.check("s3://data/t2/part-0.parquet") is not None


def test_other_entries_nested_equal_and_containing() -> None:
    scope = _scope(
        ["/wh/db/t"],
        Entry(("db", "t"), "/wh/db/t"),  # the table itself
        Entry(("db", "t", "b"), "/wh/db/t/b"),  # nested below
        Entry(("db", "t2"), "/wh/db/t2"),  # adjacent: not an overlap
        Entry(("db", "v"), "/elsewhere/v"),
    )
    assert scope.others == (OtherPlace(location="/wh/db/t/b", owner="db.t.b"),)
    assert scope.check("/wh/db/t/data/a.parquet") is None
    verdict = scope.check("/wh/db/t/b/data/a.parquet")
    assert verdict is not None and verdict.kind == KEPT_OTHER_ENTRY and "db.t.b" in verdict.reason
    assert scope.excludes("/wh/db/t/b/metadata/x") and not scope.excludes("/wh/db/t/bb/x")

    copy = _scope(["/wh/db/t"], Entry(("db", "copy"), "file:///wh/db/t"))  # a registered copy
    verdict = copy.check("/wh/db/t/data/a.parquet")
    assert verdict is not None and verdict.kind == KEPT_OTHER_ENTRY and "db.copy" in verdict.reason

    dot = _scope(["/wh/db/t"], Entry(("db", "."), "/wh/db"))  # a table at the namespace directory
    verdict = dot.check("/wh/db/t/data/a.parquet")
    assert verdict is not None and verdict.kind == KEPT_OTHER_ENTRY and "contains db.t's" in verdict.reason


def test_entries_of_unknown_location() -> None:
    # Unknown location, known metadata file: taken to live above its metadata directory.
    scope = _scope(["/wh/db/t"], Entry(("db", "u"), None, "/wh/db/t/u/meta/v1.metadata.json"))
    assert scope.others == (OtherPlace(location="/wh/db/t/u", owner="db.u"),)
    assert scope.check("/wh/db/t/u/data/x") is not None and scope.check("/wh/db/t/data/x") is None
    # Nothing known at all: nothing is deleted.
    blind = _scope(["/wh/db/t"], Entry(("db", "w"), None, ""))
    verdict = blind.check("/wh/db/t/data/x")
    assert verdict is not None and verdict.kind == KEPT_UNKNOWN_ENTRY and "db.w" in verdict.reason


def test_places_that_cannot_be_places_are_dropped() -> None:
    scope = DeletionScope.build("x", ["/", "rel/t", "/wh/../etc", "s3://bucket"])
    assert scope.places == ("s3://bucket",)
    assert scope.check("/etc/passwd") is not None
    assert scope.check("s3://bucket/t/data/a.parquet") is None


def test_json_round_trip_and_refusal() -> None:
    scope = _scope(["/wh/db/t", "s3://b/t"], Entry(("db", "n"), "/wh/db/t/n"), Entry(("db", "w"), None))
    again = DeletionScope.from_dict(json.loads(json.dumps(scope.to_dict())))
    assert again == scope and again.check("/wh/db/t/n/x") == scope.check("/wh/db/t/n/x")
    with pytest.raises(ValidationError, match="not a deletion scope"):
        DeletionScope.from_dict({"places": []})
    # A forged place that could never have been built is dropped on arrival.
    assert DeletionScope.from_dict({"owner": "x", "places": ["/", "/wh/t"]}).places == ("/wh/t",)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("1d", 86_400_000), ("36h", 129_600_000), ("90m", 5_400_000), ("600s", 600_000), ("5ms", 5), ("0", 0)],
)
def test_orphans_grace_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(ORPHANS_GRACE, text) == ms
    assert TableProperties.parse({ORPHANS_GRACE: text}).orphans_grace_ms == ms


def test_orphans_grace_default_and_refusals() -> None:
    assert TableProperties.parse({}).orphans_grace_ms == 86_400_000
    for bad in ("86400", "-1d", "1 week", "1.5d", ""):
        with pytest.raises(ValidationError, match=r"orphans\.grace"):
            TableProperties.parse({ORPHANS_GRACE: bad})
