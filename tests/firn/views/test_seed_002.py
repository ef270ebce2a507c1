"""Seed 002's appendix example, reproduced with Firn in the released view format.

Seed 002 is an early draft of the view spec. Its appendix runs::

    CREATE TABLE base_tab(c1 int, c2 varchar);
    INSERT INTO base_tab VALUES (1,'one'), (2,'two');
    CREATE VIEW common_view AS SELECT * FROM base_tab;                        -- step 3 (presto)
    CREATE OR REPLACE VIEW common_view AS SELECT count(*) AS my_cnt FROM base_tab;  -- step 4 (spark)

and shows the metadata after steps 3 and 4 in the draft's layout, which cannot be read as
released format version 1 (tests/firn/spec/test_view_metadata_json.py shows why). Here the same
two operations run through Firn, and the files it writes are compared, exactly and in key
order, with the draft's documents moved to the released layout:

* ``view-uuid`` is added (the draft has none; a fixed UUID here);
* the representation's ``schema-id``, ``default-catalog`` and ``default-namespace`` move to the
  version, and ``current-schema-id`` goes (the current version's ``schema-id`` says it);
* ``parent-version-id`` goes; the summary's ``engineVersion: presto-350`` becomes
  ``engine-name: presto`` / ``engine-version: 350`` (``operation`` is kept: a summary may hold
  any string pair);
* schema ids are 0 and 1 where the draft has 1 and 2: Firn assigns ids as Iceberg Java does,
  from 0 (field ids 0 and 1 are the draft's own);
* step 4 drops the presto dialect, which the released spec refuses unless the view property
  ``replace.drop-dialect.allowed`` is true, so the replace sets it.

The last test derives the expected documents from the seed's own text by exactly these moves.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from firn.errors import ValidationError
from firn.io.memory import InMemoryFileIO
from firn.spec.schema import Schema
from firn.spec.types import IntegerType, LongType, NestedField, StringType
from firn.spec.view_metadata import ViewMetadata
from firn.spec.view_metadata_json import view_metadata_from_json, view_metadata_to_json
from firn.spec.view_properties import METADATA_COMPRESSION, REPLACE_DROP_DIALECT_ALLOWED
from firn.views import (
    new_view_metadata,
    new_view_metadata_location,
    read_view_metadata,
    replace_view_version,
    sql_representations,
    write_view_metadata,
)
from tests.fixtures.view_examples import SEED_002_STEP_3, SEED_002_STEP_4, strip_seed_annotations

UUID = "1b4b8c6a-3f3c-4bd4-9a43-2bd6f3f3a0c5"
LOCATION = "s3n://my_company/my/warehouse/anorwood.db/common_view"
STEP_3_MS = 1573518431292
STEP_4_MS = 1573518440265
STEP_3_SQL = "SELECT *\nFROM\n  base_tab\n"
STEP_4_SQL = 'SELECT "count"(*) my_cnt\nFROM\n  base_tab\n'

STEP_3_VERSION: dict[str, Any] = {
    "version-id": 1,
    "timestamp-ms": STEP_3_MS,
    "schema-id": 0,
    "default-catalog": "iceberg",
    "default-namespace": ["anorwood"],
    "summary": {"operation": "create", "engine-name": "presto", "engine-version": "350"},
    "representations": [{"type": "sql", "sql": STEP_3_SQL, "dialect": "presto"}],
}
STEP_3_SCHEMA: dict[str, Any] = {
    "schema-id": 0,
    "type": "struct",
    "fields": [
        {"id": 0, "name": "c1", "required": False, "type": "int", "doc": ""},
        {"id": 1, "name": "c2", "required": False, "type": "string", "doc": ""},
    ],
}
EXPECTED_STEP_3: dict[str, Any] = {
    "view-uuid": UUID,
    "format-version": 1,
    "location": LOCATION,
    "current-version-id": 1,
    "properties": {"comment": "View captures all the data from the table"},
    "versions": [STEP_3_VERSION],
    "schemas": [STEP_3_SCHEMA],
    "version-log": [{"timestamp-ms": STEP_3_MS, "version-id": 1}],
}
EXPECTED_STEP_4: dict[str, Any] = {
    "view-uuid": UUID,
    "format-version": 1,
    "location": LOCATION,
    "current-version-id": 2,
    "properties": {
        "comment": "View captures count of the data from the table",
        "replace.drop-dialect.allowed": "true",
    },
    "versions": [
        STEP_3_VERSION,
        {
            "version-id": 2,
            "timestamp-ms": STEP_4_MS,
            "schema-id": 1,
            "default-catalog": "iceberg",
            "default-namespace": ["anorwood"],
            "summary": {"operation": "replace", "engine-name": "spark", "engine-version": "2.4.4"},
            "representations": [{"type": "sql", "sql": STEP_4_SQL, "dialect": "spark"}],
        },
    ],
    "schemas": [
        STEP_3_SCHEMA,
        {
            "schema-id": 1,
            "type": "struct",
            "fields": [{"id": 0, "name": "my_cnt", "required": False, "type": "long", "doc": ""}],
        },
    ],
    "version-log": [
        {"timestamp-ms": STEP_3_MS, "version-id": 1},
        {"timestamp-ms": STEP_4_MS, "version-id": 2},
    ],
}


def _step_3() -> ViewMetadata:
    schema = Schema(NestedField(0, "c1", IntegerType(), doc=""), NestedField(1, "c2", StringType(), doc=""))
    return new_view_metadata(
        schema,
        sql_representations(STEP_3_SQL, "presto"),
        location=LOCATION,
        default_namespace=("anorwood",),
        default_catalog="iceberg",
        properties={"comment": "View captures all the data from the table"},
        summary={"operation": "create", "engine-name": "presto", "engine-version": "350"},
        timestamp_ms=STEP_3_MS,
        view_uuid=UUID,
    )


def _step_4(base: ViewMetadata, **properties: str) -> ViewMetadata:
    md, _ = replace_view_version(
        base,
        Schema(NestedField(0, "my_cnt", LongType(), doc="")),
        sql_representations(STEP_4_SQL, "spark"),
        default_namespace=("anorwood",),
        default_catalog="iceberg",
        properties={"comment": "View captures count of the data from the table", **properties},
        summary={"operation": "replace", "engine-name": "spark", "engine-version": "2.4.4"},
        timestamp_ms=STEP_4_MS,
    )
    return md


def test_step_3_create() -> None:
    assert view_metadata_to_json(_step_3(), indent=2) == json.dumps(EXPECTED_STEP_3, indent=2)


def test_step_4_replace_needs_drop_dialect_allowed() -> None:
    with pytest.raises(ValidationError, match=r"would drop SQL dialect\(s\) \['presto'\]"):
        _step_4(_step_3())
    md = _step_4(_step_3(), **{REPLACE_DROP_DIALECT_ALLOWED: "true"})
    assert view_metadata_to_json(md, indent=2) == json.dumps(EXPECTED_STEP_4, indent=2)


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_files_round_trip_byte_for_byte(codec: str) -> None:
    io = InMemoryFileIO()
    step_3 = _step_3()  # no codec property: gzip, Java's default for views
    step_4 = _step_4(step_3, **{REPLACE_DROP_DIALECT_ALLOWED: "true", METADATA_COMPRESSION: codec})
    first = new_view_metadata_location(step_3, None)
    second = new_view_metadata_location(step_4, first)
    assert first.startswith(f"{LOCATION}/metadata/00000-") and first.endswith(".gz.metadata.json")
    assert second.startswith(f"{LOCATION}/metadata/00001-")
    assert second.endswith(".gz.metadata.json") == (codec == "gzip")
    for md, location in ((step_3, first), (step_4, second)):
        write_view_metadata(io, md, location)
        assert read_view_metadata(io, location) == md
        raw = io.new_input(location).read()
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        assert (raw[:2] == b"\x1f\x8b") == location.endswith(".gz.metadata.json")
        # The file's content is exactly the re-serialization of its parse.
        assert view_metadata_to_json(view_metadata_from_json(raw)).encode() == text
    expected = dict(EXPECTED_STEP_4)
    expected["properties"] = {**EXPECTED_STEP_4["properties"], METADATA_COMPRESSION: codec}
    assert json.loads(view_metadata_to_json(read_view_metadata(io, second))) == expected


# -- the expected documents are the seed's, moved to the released layout ----------------------
def _released_layout(draft: dict[str, Any]) -> dict[str, Any]:
    """Seed 002's draft document in the released format, by exactly the moves the module
    docstring lists (schema ids from 0: the draft's minus one)."""
    versions = []
    for v in draft["versions"]:
        (rep,) = v["representations"]
        engine, _, engine_version = v["summary"]["engineVersion"].partition("-")
        versions.append(
            {
                "version-id": v["version-id"],
                "timestamp-ms": v["timestamp-ms"],
                "schema-id": rep["schema-id"] - 1,
                "default-catalog": rep["default-catalog"],
                "default-namespace": rep["default-namespace"],
                "summary": {
                    "operation": v["summary"]["operation"],
                    "engine-name": engine,
                    "engine-version": engine_version,
                },
                "representations": [{"type": rep["type"], "sql": rep["sql"], "dialect": rep["dialect"]}],
            }
        )
    return {
        "view-uuid": UUID,
        "format-version": draft["format-version"],
        "location": draft["location"],
        "current-version-id": draft["current-version-id"],
        "properties": draft["properties"],
        "versions": versions,
        "schemas": [{**schema, "schema-id": schema["schema-id"] - 1} for schema in draft["schemas"]],
        "version-log": draft["version-log"],
    }


def test_the_expected_documents_are_the_seed_moved_to_the_released_layout() -> None:
    step_3 = json.loads(strip_seed_annotations(SEED_002_STEP_3))
    assert _released_layout(step_3) == EXPECTED_STEP_3
    # The seed's step-4 document never closes version 2's representations list: closed here.
    unclosed = '      "default-namespace" : [ "anorwood" ]\n    },\n  } ],'
    assert SEED_002_STEP_4.count(unclosed) == 1
    step_4 = json.loads(
        strip_seed_annotations(
            SEED_002_STEP_4.replace(unclosed, '      "default-namespace" : [ "anorwood" ]\n    } ]\n  } ],')
        )
    )
    assert step_4["versions"][0].pop("properties") == {}  # the draft's per-version properties
    expected = json.loads(json.dumps(EXPECTED_STEP_4))
    del expected["properties"][REPLACE_DROP_DIALECT_ALLOWED]  # what Firn needs to drop presto
    assert _released_layout(step_4) == expected
