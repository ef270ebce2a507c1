"""Bad input at the table layer: corrupt or truncated metadata JSON, Avro manifest lists and
manifests, Parquet data files; unknown format versions; missing files; illegal field ids; bad
filter strings and options. Each raises a FirnError subclass whose message names the file or
the input (invalid schema changes: test_update_schema.py; partition changes: test_update_spec.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.legacy.reader import snapshot_manifests
from firn.errors import FirnError, InvalidMetadata, NotFound, Unsupported, ValidationError
from firn.manifests.cache import clear_caches
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.tables import events, make_events_table


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    t = make_events_table(catalog, 2, partition_spec=[("region", "identity")])
    t.append(events(12))
    return t


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    # Decoded manifests are cached by location; these tests rewrite files in place.
    clear_caches()
    yield
    clear_caches()


def _metadata_json(table: Table) -> dict[str, Any]:
    return json.loads(Path(table.metadata_location).read_text())  # type: ignore[no-any-return]


def _register(catalog: SqlCatalog, directory: Path, name: str, content: str | bytes) -> Callable[[], Any]:
    # Inside the warehouse: the catalog reads no metadata file outside its places.
    assert catalog.warehouse is not None
    path = Path(catalog.warehouse) / directory.name / f"{name}.metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return lambda: catalog.register_table(f"db.{name}", str(path))


def _edit(doc: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> str:
    copy = json.loads(json.dumps(doc))
    change(copy)
    return json.dumps(copy)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        cur: Any = doc
        for p in parents:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        if value is _DELETE:
            del cur[last]
        else:
            cur[int(last) if isinstance(cur, list) else last] = value

    return change


_DELETE = object()

METADATA_CASES: list[tuple[str, Any, type[FirnError], str]] = [
    ("not-json", "this is not json", InvalidMetadata, "not valid JSON"),
    ("empty", "", InvalidMetadata, "empty"),
    ("array", "[]", InvalidMetadata, "JSON object"),
    ("truncated", None, InvalidMetadata, "not valid JSON"),
    ("gzip-garbage", b"\x1f\x8b\x08\x00garbage", InvalidMetadata, "not valid JSON"),
    ("version-5", _set("format-version", 5), Unsupported, "format version 5"),
    ("version-abc", _set("format-version", "abc"), Unsupported, "'abc'"),
    ("no-version", _set("format-version", _DELETE), InvalidMetadata, "format-version"),
    ("no-schemas", _set("schemas", _DELETE), InvalidMetadata, "'schemas'"),
    ("no-location", _set("location", _DELETE), InvalidMetadata, "'location'"),
    ("field-id-too-big", _set("schemas/0/fields/1/id", 2147483448), InvalidMetadata, "2147483448"),
    ("reserved-field-id", _set("schemas/0/fields/0/id", 2147483646), InvalidMetadata, "reserved"),
    ("duplicate-field-id", _set("schemas/0/fields/1/id", 1), InvalidMetadata, "duplicate field id 1"),
    ("unknown-type", _set("schemas/0/fields/1/type", "varchar"), InvalidMetadata, "varchar"),
    ("dangling-current-snapshot", _set("current-snapshot-id", 42), InvalidMetadata, "42"),
    ("bad-timestamp", _set("snapshots/0/timestamp-ms", "yesterday"), InvalidMetadata, "yesterday"),
    ("bad-uuid", _set("table-uuid", "not-a-uuid"), InvalidMetadata, "UUID"),
    ("bad-ref-type", _set("refs/main/type", "twig"), InvalidMetadata, "twig"),
    ("current-schema-missing", _set("current-schema-id", 9), InvalidMetadata, "current-schema-id 9"),
]


@pytest.mark.parametrize("case", METADATA_CASES, ids=[c[0] for c in METADATA_CASES])
def test_bad_metadata_json_names_the_file(
    catalog: SqlCatalog, table: Table, tmp_path: Path, case: tuple[str, Any, type[FirnError], str]
) -> None:
    name, change, error, message = case
    text = Path(table.metadata_location).read_text()
    if change is None:
        content: str | bytes = text[: len(text) // 2]
    elif callable(change):
        content = _edit(_metadata_json(table), change)
    else:
        content = change
    register = _register(catalog, tmp_path, name.replace("-", "_"), content)
    with pytest.raises(error, match=re.escape(message)) as info:
        register()
    assert f"{name.replace('-', '_')}.metadata.json" in str(info.value)
    assert not catalog.table_exists(f"db.{name.replace('-', '_')}")


def test_corrupt_current_metadata_file_fails_load_table(catalog: SqlCatalog, table: Table) -> None:
    path = Path(table.metadata_location)
    path.write_text(path.read_text()[:100])
    fresh = make_sqlite_catalog(path.parents[4])  # no cached copy of the metadata
    with pytest.raises(InvalidMetadata, match=re.escape(path.name)):
        fresh.load_table("db.events")
    path.unlink()
    with pytest.raises(NotFound, match=re.escape(path.name)):
        fresh.load_table("db.events")
    fresh.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "header-only", "bad-sync"])
@pytest.mark.parametrize("which", ["manifest-list", "manifest"])
def test_corrupt_avro_names_the_file(table: Table, which: str, damage: str) -> None:
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    path = (
        snap.manifest_list
        if which == "manifest-list"
        else snapshot_manifests(table.io, snap)[0].manifest_path
    )
    data = Path(path).read_bytes()
    damaged = {
        "truncated": data[: len(data) // 2],
        "garbage": b"garbage!" * 20,
        "empty": b"",
        "header-only": data[:64],
        "bad-sync": data[:-16] + bytes(16),
    }[damage]
    Path(path).write_bytes(damaged)
    clear_caches()
    with pytest.raises(InvalidMetadata, match=re.escape(Path(path).name)):
        table.scan().plan_files()


@pytest.mark.parametrize("which", ["manifest-list", "manifest", "data"])
def test_missing_files_raise_not_found_naming_them(table: Table, which: str) -> None:
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    if which == "manifest-list":
        path = snap.manifest_list
    elif which == "manifest":
        path = snapshot_manifests(table.io, snap)[0].manifest_path
    else:
        path = table.scan().plan_files()[0].file.file_path
    Path(path).unlink()
    clear_caches()
    with pytest.raises(NotFound, match=re.escape(path)):
        table.scan().to_arrow()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_data_file_names_the_file(table: Table, damage: str) -> None:
    path = table.scan().plan_files()[0].file.file_path
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2] if damage == "truncated" else b"x" * len(data))
    with pytest.raises(InvalidMetadata, match=re.escape(path)):
        table.scan().to_arrow()


@pytest.mark.parametrize("version", [5, 0, -1, "abc", "2.5", True])
def test_unknown_format_versions_at_create(catalog: SqlCatalog, version: object) -> None:
    catalog.create_namespace("db")
    with pytest.raises(Unsupported, match="format"):
        catalog.create_table(
            "db.t", pa.schema([("id", pa.int64())]), properties={"format-version": str(version)}
        )
    with pytest.raises(Unsupported, match="format"):
        catalog.create_table("db.t", pa.schema([("id", pa.int64())]), format_version=version)  # type: ignore[arg-type]
    assert not catalog.table_exists("db.t")


def test_illegal_field_ids_in_schemas(catalog: SqlCatalog) -> None:
    catalog.create_namespace("db")
    duplicate = Schema(NestedField(1, "a", LongType()), NestedField(1, "b", LongType()))
    with pytest.raises(ValidationError, match="duplicate field id 1"):
        catalog.create_table("db.t", duplicate, properties={"format-version": "2"})
    with pytest.raises(ValidationError, match="2147483448"):
        Schema(NestedField(2147483448, "a", LongType())).validate(2)
    with pytest.raises(ValidationError, match="duplicate field id 3"):
        Schema(NestedField(3, "a", LongType()), NestedField(3, "b", LongType())).validate(2)
    # Ids given on create are reassigned, so large ones are fine there.
    big = Schema(NestedField(2147483000, "a", LongType(), required=True))
    created = catalog.create_table("db.ok", big, properties={"format-version": "2"})
    assert created.schema().find_field("a").field_id == 1


# (filter, expected message part, whether it is a syntax error: those echo the whole input)
BAD_FILTERS = [
    ("id >", "after '>'", True),
    ("id = 1 and", "end of input", True),
    ("", "empty filter", True),
    ("id in ()", "IN list", True),
    ("(id = 1", "position", True),
    ("name like '%x'", "LIKE", True),
    ("nope = 1", "no column 'nope'", False),
    ("id = 'abc'", "column 'id' of type long: 'abc'", False),
    ("region > 5", "column 'region' of type string: 5", False),
]


@pytest.mark.parametrize("text,message,syntax", BAD_FILTERS)
def test_bad_filter_strings(table: Table, text: str, message: str, syntax: bool) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)) as info:
        table.scan(filter=text)
    if syntax:
        assert f"cannot parse filter {text!r}" in str(info.value)
    with pytest.raises(ValidationError):
        table.delete(text)
    assert len(table.snapshots()) == 1


def test_bad_scan_options(table: Table) -> None:
    with pytest.raises(ValidationError, match="filter must be"):
        table.scan(filter=42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="'nope'"):
        table.scan(columns=["nope"])
    with pytest.raises(ValidationError, match="limit"):
        table.scan(limit=-5)
    with pytest.raises(ValidationError, match="limit must be an integer"):
        table.scan(limit="5")  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as info:
        table.scan(as_of="not a time").to_arrow()
    assert "not a time" in str(info.value)


def test_bad_table_properties(catalog: SqlCatalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(ValidationError, match=r"commit\.retry\.num-retries"):
        catalog.create_table(
            "db.t",
            pa.schema([("id", pa.int64())]),
            properties={"format-version": "2", "commit.retry.num-retries": "lots"},
        )
    with pytest.raises(ValidationError, match="unknown partition transform 'squash'"):
        catalog.create_table(
            "db.t", pa.schema([("id", pa.int64())]), partition_spec=[("id", "squash")], format_version=2
        )


def test_delete_without_a_filter_is_refused(table: Table) -> None:
    # Destructive operations are safe by default: a None filter never means "every row".
    with pytest.raises(ValidationError, match="needs a filter"):
        table.delete(None)  # type: ignore[arg-type]
    assert table.scan().count() == 12 and len(table.snapshots()) == 1


def test_corrupt_gzip_metadata_is_invalid_metadata_wherever_the_damage_is(tmp_path: Path) -> None:
    """V4 writes gzip metadata by default: a flipped bit anywhere in the compressed stream is an
    InvalidMetadata naming the file, never zlib's bare error (which is not an OSError)."""
    import gzip
    import random

    from firn.spec.metadata_json import metadata_from_json

    payload = gzip.compress(
        b'{"format-version": 2, "note": "'
        + bytes(random.Random(7).randrange(65, 91) for _ in range(2000))
        + b'"}'
    )
    location = "s3://bucket/t/metadata/00001-x.gz.metadata.json"
    for pos in range(10, len(payload)):
        damaged = bytearray(payload)
        damaged[pos] ^= 0x80
        with pytest.raises(FirnError, match=re.escape(location)):
            metadata_from_json(bytes(damaged), location=location)
