"""Schema evolution through table.update_schema(): projection by field id after add, drop,
rename and promote (older files read added columns as null or their default), nested
changes, and every invalid change raising ValidationError naming the column."""

from __future__ import annotations

import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.errors import ValidationConflict, ValidationError
from firn.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.tables import LEGACY_VERSIONS, make_events_table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("f", pa.float32()),
        pa.field("price", pa.decimal128(5, 2)),
        pa.field("name", pa.string()),
        pa.field("old", pa.string()),
        pa.field("s", pa.struct([pa.field("a", pa.int32())])),
        pa.field("d", pa.date32()),
    ]
)


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _table(catalog: InMemoryCatalog, version: int) -> Table:
    table = make_events_table(catalog, version, name="evo", schema=SCHEMA, partition_spec=[("d", "month")])
    table.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int32()),
                "f": pa.array([1.5, 2.5], pa.float32()),
                "price": pa.array([1, 2], pa.decimal128(5, 2)),
                "name": ["a", "b"],
                "old": ["x", "y"],
                "s": [{"a": 1}, {"a": 2}],
                "d": pa.array([0, 40], pa.date32()),
            },
            schema=SCHEMA,
        )
    )
    return table


def _rows(table: Table, **scan: object) -> list[dict[str, object]]:
    return sorted(table.scan(**scan).to_arrow().to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_add_drop_rename_promote_reads_old_files_by_field_id(catalog: InMemoryCatalog, version: int) -> None:
    table = _table(catalog, version)
    before = table.current_snapshot()
    with table.update_schema() as update:
        update.add_column("extra", StringType())
        update.add_column("s.b", LongType())
        update.rename_column("name", "label")
        update.delete_column("old")
        update.update_column("id", LongType())
        update.update_column("f", DoubleType())
        update.update_column("price", DecimalType(9, 2))
    schema = table.schema()
    assert schema.schema_id == 1 and len(table.schemas()) == 2
    assert [f.name for f in schema.fields] == ["id", "f", "price", "label", "s", "d", "extra"]
    # Field ids never change; new ones come after last-column-id.
    assert schema.find_field("label").field_id == 4
    assert schema.find_field("extra").field_id == 9 and schema.find_field("s.b").field_id == 10
    assert table.metadata.last_column_id == 10

    table.append(
        pa.table(
            {
                "id": pa.array([3], pa.int64()),
                "f": [3.5],
                "price": pa.array([3], pa.decimal128(9, 2)),
                "label": ["c"],
                "s": [{"a": 3, "b": 30}],
                "d": pa.array([80], pa.date32()),
                "extra": ["e"],
            }
        )
    )
    got = table.scan().to_arrow()
    assert got.schema.field("id").type == pa.int64() and got.schema.field("f").type == pa.float64()
    assert got.schema.field("price").type == pa.decimal128(9, 2)
    rows = _rows(table)
    assert [(r["id"], r["f"], r["label"], r["s"], r["extra"]) for r in rows] == [
        (1, 1.5, "a", {"a": 1, "b": None}, None),
        (2, 2.5, "b", {"a": 2, "b": None}, None),
        (3, 3.5, "c", {"a": 3, "b": 30}, "e"),
    ]
    # Filters bind to the new names and promoted types, and prune old files correctly.
    assert [r["id"] for r in _rows(table, filter="label = 'b'")] == [2]
    assert [r["id"] for r in _rows(table, filter="extra is null")] == [1, 2]
    assert [r["id"] for r in _rows(table, filter="s.b > 5")] == [3]
    assert [r["id"] for r in _rows(table, filter="id > 2147483647 or id = 1")] == [1]
    # The old snapshot is read with its own schema.
    assert before is not None
    old = table.scan(snapshot_id=before.snapshot_id).to_arrow()
    assert old.schema.names == ["id", "f", "price", "name", "old", "s", "d"]
    assert sorted(old.column("old").to_pylist()) == ["x", "y"]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_re_added_column_does_not_resurrect_dropped_values(catalog: InMemoryCatalog, version: int) -> None:
    table = _table(catalog, version)
    with table.update_schema() as update:
        update.delete_column("old")
    with table.update_schema() as update:
        update.add_column("old", StringType())
    assert table.schema().find_field("old").field_id != 5
    assert [r["old"] for r in _rows(table)] == [None, None]


def test_v3_added_column_with_default_reads_it_in_old_files(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 3)
    with table.update_schema() as update:
        update.add_column("level", IntegerType(), default=7)
        update.add_column("must", StringType(), required=True, default="n/a")
    field = table.schema().find_field("level")
    assert field.initial_default == 7 and field.write_default == 7
    rows = _rows(table)
    assert [(r["level"], r["must"]) for r in rows] == [(7, "n/a"), (7, "n/a")]


@pytest.mark.parametrize("version", [1, 2])
def test_defaults_need_v3(catalog: InMemoryCatalog, version: int) -> None:
    table = _table(catalog, version)
    with pytest.raises(ValidationError, match="format version 3"):
        table.update_schema().add_column("level", IntegerType(), default=7)


def test_move_columns(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    with table.update_schema() as update:
        update.move_first("name")
        update.move_after("id", "d")
        update.move_before("s", "f")
    assert [f.name for f in table.schema().fields] == ["name", "s", "f", "price", "old", "d", "id"]
    assert table.scan().to_arrow().schema.names == ["name", "s", "f", "price", "old", "d", "id"]


def test_union_by_name_adds_missing_and_promotes(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    from firn.spec.schema import Schema

    incoming = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "new_col", DateType()),
    )
    with table.update_schema() as update:
        update.union_by_name(incoming)
    schema = table.schema()
    assert schema.find_field("id").field_type == LongType()
    assert schema.find_field("new_col").field_type == DateType()
    assert schema.find_field("old").field_type == StringType()  # nothing dropped


def test_identifier_fields(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    with table.update_schema() as update:
        update.set_identifier_fields("id")
    assert list(table.schema().identifier_field_ids) == [1]
    with pytest.raises(ValidationError, match="identifier field 'id'"):
        table.update_schema().delete_column("id")


INVALID = [
    ("int to string", lambda u: u.update_column("id", StringType()), "'id'.*not a valid type promotion"),
    ("decimal narrowing", lambda u: u.update_column("price", DecimalType(4, 2)), "price"),
    ("decimal scale", lambda u: u.update_column("price", DecimalType(9, 3)), "price"),
    ("double to float", lambda u: u.update_column("f", DoubleType()).update_column("f", FloatType()), "'f'"),
    ("nested to primitive", lambda u: u.update_column("s", StringType()), "'s'"),
    ("unknown column", lambda u: u.rename_column("nope", "x"), "nope"),
    ("add existing", lambda u: u.add_column("name", StringType()), "already exists"),
    ("add twice", lambda u: u.add_column("z", StringType()).add_column("z", StringType()), "added twice"),
    (
        "required without default",
        lambda u: u.add_column("req", StringType(), required=True),
        "without a default",
    ),
    ("make required", lambda u: u.update_column("name", required=True), "required"),
    ("rename onto another", lambda u: u.rename_column("name", "old").apply_schema(), "duplicate"),
    ("add to non-struct", lambda u: u.add_column("name.sub", StringType()), "non-struct"),
    ("delete partition source", lambda u: u.delete_column("d").apply_schema(), "partition"),
    ("delete then update", lambda u: u.delete_column("old").rename_column("old", "x"), "being deleted"),
    ("empty name", lambda u: u.rename_column("name", ""), "empty"),
]


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_changes_raise_validation_errors(catalog: InMemoryCatalog, case: tuple) -> None:  # type: ignore[type-arg]
    _, change, message = case
    table = _table(catalog, 2)
    location = table.metadata_location
    with pytest.raises(ValidationError, match=message):
        change(table.update_schema())
    assert table.metadata_location == location and len(table.schemas()) == 1


def test_date_to_timestamp_promotion_is_v3_only_and_not_for_transformed_sources(
    catalog: InMemoryCatalog,
) -> None:
    v2 = _table(catalog, 2)
    with pytest.raises(ValidationError, match="'d'"):
        v2.update_schema().update_column("d", TimestampType())
    v3 = make_events_table(catalog, 3, name="v3", schema=SCHEMA, partition_spec=[("d", "month")])
    with pytest.raises(ValidationError, match="partition field"):
        v3.update_schema().update_column("d", TimestampType())


def test_no_op_update_commits_nothing(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    location = table.metadata_location
    with table.update_schema():
        pass
    assert table.metadata_location == location


def test_concurrent_schema_change_fails_the_stale_update(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    stale = table.update_schema().add_column("a1", StringType())
    other = catalog.load_table("db.evo")
    with other.update_schema() as update:
        update.add_column("a2", StringType())
    with pytest.raises(ValidationConflict, match="changed concurrently"):
        stale.commit()
    assert catalog.load_table("db.evo").schema().find_field_or_none("a1") is None


def test_added_struct_gets_fresh_nested_ids(catalog: InMemoryCatalog) -> None:
    table = _table(catalog, 2)
    with table.update_schema() as update:
        update.add_column(
            "loc", StructType(NestedField(1, "lat", DoubleType()), NestedField(2, "lon", DoubleType()))
        )
    loc = table.schema().find_field("loc")
    assert isinstance(loc.field_type, StructType)
    ids = [f.field_id for f in loc.field_type.fields]
    assert loc.field_id == 9 and ids == [10, 11]  # after last-column-id 8, parent first
    assert [r["loc"] for r in _rows(table)] == [None, None]
