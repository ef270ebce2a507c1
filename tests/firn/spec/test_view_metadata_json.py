"""View metadata JSON: the spec's Appendix A round trip, Java's layout, seed 002, bad input.

"Byte-equivalent" for JSON here means: parse the document, serialize it with Firn, and get
exactly the text of the document re-printed by a canonical JSON printer (``json.dumps`` with
``indent=2``) — same keys, same key order, same values and types, nothing added or dropped.
The raw bytes of the spec's example cannot be the yardstick: its whitespace is inconsistent
(``"view-uuid": `` beside ``"format-version" : ``), so no printer reproduces it. Metadata
that Firn wrote itself round-trips byte for byte (see tests/firn/views/test_seed_002.py).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from firn.errors import InvalidMetadata, Unsupported
from firn.spec.types import DateType, IntegerType
from firn.spec.view_metadata import SQLViewRepresentation, UnknownViewRepresentation
from firn.spec.view_metadata_json import (
    view_metadata_from_json,
    view_metadata_to_dict,
    view_metadata_to_gzip,
    view_metadata_to_json,
)
from tests.fixtures.view_examples import (
    SEED_002_STEP_3,
    SEED_002_STEP_4,
    SPEC_APPENDIX_A_CREATE,
    SPEC_APPENDIX_A_REPLACE,
    java_layout_metadata,
    strip_seed_annotations,
)

FILE = "s3://bucket/wh/db.db/v/metadata/00001-x.metadata.json"


def _canonical(text: str) -> str:
    return json.dumps(json.loads(text), indent=2, ensure_ascii=False)


@pytest.mark.parametrize(
    "example", [SPEC_APPENDIX_A_CREATE, SPEC_APPENDIX_A_REPLACE], ids=["create", "replace"]
)
def test_spec_appendix_a_round_trips_byte_equivalent(example: str) -> None:
    md = view_metadata_from_json(example, location=FILE)
    assert view_metadata_to_json(md, indent=2) == _canonical(example)
    # Compact output (what files hold) is the same document.
    assert json.loads(view_metadata_to_json(md)) == json.loads(example)


def test_spec_appendix_a_content() -> None:
    md = view_metadata_from_json(SPEC_APPENDIX_A_REPLACE)
    assert md.view_uuid == "fa6506c3-7681-40c8-86dc-e36561f83385"
    assert md.format_version == 1
    assert md.location == "s3://bucket/warehouse/default.db/event_agg"
    assert md.current_version_id == 2
    assert dict(md.properties) == {"comment": "Daily event counts"}
    v1, v2 = md.versions
    assert (v1.version_id, v1.timestamp_ms, v2.timestamp_ms) == (1, 1573518431292, 1573518981593)
    assert v2.default_catalog == "prod" and v2.default_namespace == ("default",)
    assert dict(v2.summary) == {"engine-name": "Spark", "engine-version": "3.3.2"}
    assert v2.representations == (
        SQLViewRepresentation(
            "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM prod.default.events\nGROUP BY 2", "spark"
        ),
    )
    # The column aliases and the comment are the schema's field names and doc (spec).
    schema = md.schema()
    assert [(f.field_id, f.name, f.field_type, f.required, f.doc) for f in schema.fields] == [
        (1, "event_count", IntegerType(), False, "Count of events"),
        (2, "event_date", DateType(), False, None),
    ]
    assert [(e.timestamp_ms, e.version_id) for e in md.version_log] == [
        (1573518431292, 1),
        (1573518981593, 2),
    ]


def test_java_layout_reads_and_rewrites_in_spec_order() -> None:
    text = java_layout_metadata("s3://bucket/test/location")
    md = view_metadata_from_json(text)
    assert md.current_version.sql_for("SPARK") == SQLViewRepresentation("select 1 x, 2 y, 3 z", "spark")
    assert md.current_version.default_namespace == ()
    assert md.schema().find_field(2).doc == "comment"  # type: ignore[union-attr]
    out = view_metadata_to_dict(md)
    # Java's obsolete current-schema-id is not part of the spec and is not written back.
    expected = json.loads(text)
    del expected["current-schema-id"]
    assert out == expected
    assert list(out) == [
        "view-uuid",
        "format-version",
        "location",
        "current-version-id",
        "properties",
        "versions",
        "schemas",
        "version-log",
    ]
    assert list(out["versions"][0]) == [
        "version-id",
        "timestamp-ms",
        "schema-id",
        "default-catalog",
        "default-namespace",
        "summary",
        "representations",
    ]
    assert view_metadata_from_json(view_metadata_to_json(md)) == md


def test_gzip_round_trip_and_detection() -> None:
    md = view_metadata_from_json(SPEC_APPENDIX_A_CREATE)
    data = view_metadata_to_gzip(md)
    assert data[:2] == b"\x1f\x8b"
    assert view_metadata_from_json(data, location=FILE) == md
    assert gzip.decompress(data).decode() == view_metadata_to_json(md)


def test_unknown_representation_is_kept() -> None:
    doc = json.loads(SPEC_APPENDIX_A_CREATE)
    extra = {"type": "substrait", "plan": {"rel": [1, 2]}, "dialect-ish": "x"}
    doc["versions"][0]["representations"].append(extra)
    md = view_metadata_from_json(json.dumps(doc))
    reps = md.current_version.representations
    assert isinstance(reps[1], UnknownViewRepresentation) and reps[1].type == "substrait"
    assert md.current_version.dialects == ("spark",)
    assert view_metadata_to_dict(md)["versions"][0]["representations"][1] == extra


def test_two_sql_of_one_dialect_are_readable() -> None:
    # Java's parser reads them (older writers produced them); only new versions are refused.
    doc = json.loads(SPEC_APPENDIX_A_CREATE)
    doc["versions"][0]["representations"].append({"type": "sql", "sql": "SELECT 2", "dialect": "SPARK"})
    md = view_metadata_from_json(json.dumps(doc))
    assert md.current_version.dialects == ("spark",)
    assert md.current_version.sql_for("spark").sql.startswith("SELECT\n")  # type: ignore[union-attr]


# -- seed 002 ---------------------------------------------------------------------------------
def test_seed_002_draft_example_is_refused_with_a_clear_error() -> None:
    """Seed 002 is an early draft of the view spec; its appendix example is annotated prose,
    not JSON, and even stripped of the annotations its layout lacks what the released format
    version 1 requires (``view-uuid``; a version's ``schema-id`` and ``default-namespace``)."""
    with pytest.raises(InvalidMetadata, match=rf"{FILE}: view metadata is not valid JSON"):
        view_metadata_from_json(SEED_002_STEP_3, location=FILE)
    stripped = strip_seed_annotations(SEED_002_STEP_3)
    assert json.loads(stripped)["format-version"] == 1
    with pytest.raises(
        InvalidMetadata, match=rf"^{FILE}: view metadata is missing required field 'view-uuid'"
    ):
        view_metadata_from_json(stripped, location=FILE)
    doc = json.loads(stripped)
    doc["view-uuid"] = "fa6506c3-7681-40c8-86dc-e36561f83385"
    with pytest.raises(InvalidMetadata, match="view version 1 is missing required field 'default-namespace'"):
        view_metadata_from_json(json.dumps(doc), location=FILE)
    # The step-4 example does not balance its brackets (the representations list of version 2
    # is never closed), so it stays invalid JSON after stripping.
    with pytest.raises(json.JSONDecodeError):
        json.loads(strip_seed_annotations(SEED_002_STEP_4))
    with pytest.raises(InvalidMetadata, match="not valid JSON"):
        view_metadata_from_json(strip_seed_annotations(SEED_002_STEP_4), location=FILE)


# -- bad input ----------------------------------------------------------------------------------
def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SPEC_APPENDIX_A_REPLACE)
    return doc


def _read(doc: object) -> None:
    view_metadata_from_json(json.dumps(doc), location=FILE)


@pytest.mark.parametrize("version", [2, 3, 0])
def test_unsupported_format_version_names_the_file(version: int) -> None:
    doc = _doc()
    doc["format-version"] = version
    with pytest.raises(Unsupported, match=rf"^{FILE}: unsupported view format version {version}"):
        _read(doc)


@pytest.mark.parametrize("value", ["1", 1.0, None, True])
def test_format_version_must_be_an_integer(value: object) -> None:
    doc = _doc()
    doc["format-version"] = value
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: .*'format-version' must be an integer"):
        _read(doc)


@pytest.mark.parametrize(
    "key",
    ["view-uuid", "format-version", "location", "schemas", "current-version-id", "versions", "version-log"],
)
def test_missing_required_field_names_field_and_file(key: str) -> None:
    doc = _doc()
    del doc[key]
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: view metadata is missing required field '{key}'"):
        _read(doc)


@pytest.mark.parametrize(
    "key", ["version-id", "timestamp-ms", "schema-id", "summary", "representations", "default-namespace"]
)
def test_missing_version_field(key: str) -> None:
    doc = _doc()
    del doc["versions"][1][key]
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: view version.* is missing required field '{key}'"):
        _read(doc)


@pytest.mark.parametrize("key", ["type", "sql", "dialect"])
def test_missing_representation_field(key: str) -> None:
    doc = _doc()
    del doc["versions"][0]["representations"][0][key]
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: view version 1 .*missing required field '{key}'"):
        _read(doc)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d.update({"current-version-id": 7}),
            r"current-version-id 7 is not among the versions \[1, 2\]",
        ),
        (
            lambda d: d["versions"][1].update({"schema-id": 9}),
            r"current version 2 has schema-id 9, which is not",
        ),
        (lambda d: d["versions"][1].update({"version-id": 1}), "two versions with one version-id"),
        (lambda d: d["schemas"].append(d["schemas"][0]), "two schemas with one schema-id"),
        (lambda d: d.update({"properties": {"comment": 5}}), "view properties must map strings to strings"),
        (lambda d: d["versions"][0].update({"summary": []}), "summary must be a JSON object"),
        (
            lambda d: d["versions"][0].update({"default-namespace": "default"}),
            "'default-namespace' must be a list",
        ),
        (lambda d: d["versions"][0].update({"default-namespace": [1]}), "must be a list of strings"),
        (
            lambda d: d["versions"][0].update({"default-catalog": 3}),
            "'default-catalog' must be a string or null",
        ),
        (lambda d: d["versions"][0].update({"timestamp-ms": "now"}), "'timestamp-ms' must be an integer"),
        (
            lambda d: d["versions"][0].update({"timestamp-ms": 1.5}),
            "'timestamp-ms' must be an integer, got 1.5",
        ),
        (
            lambda d: d["versions"][0].update({"schema-id": 1.0}),
            "view version 1: 'schema-id' must be an integer, got 1.0",
        ),
        (
            lambda d: d.update({"current-version-id": True}),
            "'current-version-id' must be an integer, got True",
        ),
        (
            lambda d: d.update({"current-version-id": 2**31}),
            r"'current-version-id' must be an integer in \[-2147483648",
        ),
        (
            lambda d: d["version-log"][0].update({"version-id": 1.5}),
            "version-log entry: 'version-id' must be an integer",
        ),
        (
            lambda d: d["schemas"][0].update({"schema-id": 1.5}),
            "schema: 'schema-id' must be an integer, got 1.5",
        ),
        (lambda d: d["schemas"][0]["fields"][0].update({"id": 1.5}), "'id' must be an integer, got 1.5"),
        (
            lambda d: d["schemas"][0]["fields"][0].update({"required": "false"}),
            "'required' must be true or false",
        ),
        (lambda d: d.update({"location": None}), "'location' must be a string"),
        (lambda d: d.update({"versions": {}}), "'versions' must be a list"),
        (
            lambda d: d["schemas"][0]["fields"][0].pop("type"),
            "schema field 'event_count' is missing required field 'type'",
        ),
        (lambda d: d["schemas"][0]["fields"][0].update({"type": "varchar"}), "varchar"),
        (lambda d: d["version-log"].append({"version-id": 1}), "version-log entry is missing required field"),
    ],
)
def test_invalid_content_names_the_file(mutate: Any, message: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(InvalidMetadata, match=message) as info:
        _read(doc)
    assert str(info.value).startswith(f"{FILE}: ")
    assert info.value.location == FILE


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"view-uuid": ', "not valid JSON"),
        (b"\x1f\x8b\x08\x00garbage", "not valid JSON"),
        (gzip.compress(SPEC_APPENDIX_A_CREATE.encode(), mtime=0)[:40], "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b'"text"', "must be a JSON object, got str"),
    ],
    ids=["empty", "truncated", "bad-gzip", "cut-gzip", "not-utf8", "list", "string"],
)
def test_corrupt_files(data: bytes, message: str) -> None:
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: .*{message}"):
        view_metadata_from_json(data, location=FILE)


def test_table_metadata_is_not_a_view() -> None:
    table = {"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://x"}
    with pytest.raises(InvalidMetadata, match=rf"^{FILE}: this is table metadata"):
        _read(table)
