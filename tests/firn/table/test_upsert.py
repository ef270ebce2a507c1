"""table.upsert(): update matching rows, insert the rest, in one snapshot."""

from __future__ import annotations

import pyarrow as pa
import pytest

from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog
from firn.core.actions.upsert import UpsertResult
from firn.errors import ValidationConflict, ValidationError
from firn.spec.schema import Schema
from firn.spec.snapshots import Operation
from firn.spec.types import DOUBLE, LONG, STRING, NestedField
from firn.table.table import Table
from tests.fixtures.catalogs import make_memory_catalog
from tests.fixtures.row_deletes import live_deletes, make_table, rows

MODES = [
    pytest.param(2, "copy-on-write", id="v2-cow"),
    pytest.param(2, "merge-on-read", id="v2-mor"),
    pytest.param(3, "copy-on-write", id="v3-cow"),
    pytest.param(3, "merge-on-read", id="v3-mor"),
]


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return make_memory_catalog()


def _table(catalog: InMemoryCatalog, version: int, mode: str) -> Table:
    t = make_table(catalog, version, properties={"write.merge.mode": mode})
    t.append(rows([0, 1, 2, 3, 4, None]))
    t.append(rows([5, 6, 7, 8, 9], "us"))
    return t


def _contents(table: Table) -> list[tuple[int | None, str | None, str | None]]:
    got = [(r["id"], r["region"], r["name"]) for r in table.to_arrow().to_pylist()]
    return sorted(got, key=lambda r: (r[0] is None, r[0] or 0, r[2] or ""))


def _source(ids: list[int | None], names: list[str], region: str = "eu") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "region": [region] * len(ids), "name": names})


@pytest.mark.parametrize(("version", "mode"), MODES)
def test_updates_and_inserts(catalog: InMemoryCatalog, version: int, mode: str) -> None:
    t = _table(catalog, version, mode)
    source = _source([1, 2, 7, 20, None], ["n1", "two", "seven", "twenty", "nobody"])
    result = t.upsert(source, join_cols=["id"])
    # 1 is unchanged (skipped); 2 and 7 change; 20 and the null key are inserted.
    assert result == UpsertResult(rows_updated=2, rows_inserted=2)
    assert _contents(t) == [
        (0, "eu", "n0"),
        (1, "eu", "n1"),
        (2, "eu", "two"),
        (3, "eu", "n3"),
        (4, "eu", "n4"),
        (5, "us", "n5"),
        (6, "us", "n6"),
        (7, "eu", "seven"),
        (8, "us", "n8"),
        (9, "us", "n9"),
        (20, "eu", "twenty"),
        (None, "eu", "nNone"),  # an existing null key never matches...
        (None, "eu", "nobody"),  # ...and a null source key is inserted
    ]
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.operation is Operation.OVERWRITE
    assert len(t.snapshots()) == 3  # one snapshot for the whole upsert
    assert bool(live_deletes(t)) is (mode == "merge-on-read")


@pytest.mark.parametrize(("version", "mode"), MODES)
def test_updating_every_row_of_a_file_removes_it(catalog: InMemoryCatalog, version: int, mode: str) -> None:
    t = _table(catalog, version, mode)
    source = _source([5, 6, 7, 8, 9], ["a", "b", "c", "d", "e"], region="us")
    assert t.upsert(source, join_cols=["id"]) == UpsertResult(5, 0)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.properties["deleted-data-files"] == "1"
    assert [r[2] for r in _contents(t) if r[1] == "us"] == ["a", "b", "c", "d", "e"]


def test_nothing_changed_commits_nothing(catalog: InMemoryCatalog) -> None:
    t = _table(catalog, 3, "merge-on-read")
    before = t.current_snapshot()
    assert t.upsert(_source([1, 2], ["n1", "n2"]), join_cols=["id"]) == UpsertResult(0, 0)
    assert t.current_snapshot() == before
    # Without skipping, identical rows are rewritten and counted.
    assert t.upsert(
        _source([1, 2], ["n1", "n2"]), join_cols=["id"], skip_unchanged_rows=False
    ) == UpsertResult(2, 0)
    assert len(t.scan(filter="id in (1, 2)").to_arrow()) == 2


def test_duplicate_keys_are_rejected(catalog: InMemoryCatalog) -> None:
    t = _table(catalog, 3, "merge-on-read")
    with pytest.raises(ValidationError, match="duplicate key"):
        t.upsert(_source([1, 2, 1], ["a", "b", "c"]), join_cols=["id"])
    # Null keys never match, so they are not duplicates of each other.
    assert t.upsert(_source([None, None], ["x", "y"]), join_cols=["id"]) == UpsertResult(0, 2)


def test_multi_column_keys(catalog: InMemoryCatalog) -> None:
    t = _table(catalog, 2, "merge-on-read")
    # (5, "eu") does not exist (5 is in "us"): an insert; (5, "us") is an update.
    source = pa.concat_tables([_source([5], ["eu5"]), _source([5], ["us5"], region="us")])
    assert t.upsert(source, join_cols=["id", "region"]) == UpsertResult(1, 1)
    assert [r for r in _contents(t) if r[0] == 5] == [(5, "eu", "eu5"), (5, "us", "us5")]


def test_when_matched_and_not_matched_flags(catalog: InMemoryCatalog) -> None:
    t = _table(catalog, 3, "copy-on-write")
    source = _source([1, 30], ["changed", "new"])
    assert t.upsert(source, join_cols=["id"], when_matched_update_all=False) == UpsertResult(0, 1)
    assert [r[2] for r in _contents(t) if r[0] in (1, 30)] == ["n1", "new"]
    source = _source([1, 31], ["changed", "new"])
    assert t.upsert(source, join_cols=["id"], when_not_matched_insert_all=False) == UpsertResult(1, 0)
    assert [r[2] for r in _contents(t) if r[0] in (1, 31)] == ["changed"]


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_lineage(catalog: InMemoryCatalog, mode: str) -> None:
    t = _table(catalog, 3, mode)
    cols = ["id", "name", "_row_id", "_last_updated_sequence_number"]

    def lineage() -> dict[object, tuple[int, int]]:
        return {
            (r["id"], r["name"]): (r["_row_id"], r["_last_updated_sequence_number"])
            for r in t.scan(columns=cols).to_arrow().to_pylist()
        }

    before = lineage()
    t.upsert(_source([2, 40], ["two", "forty"]), join_cols=["id"])
    after = lineage()
    snap = t.current_snapshot()
    assert snap is not None
    # Spec "Row Lineage": the updated row keeps its id and gets this commit's sequence number.
    assert after[(2, "two")] == (before[(2, "n2")][0], snap.sequence_number)
    new_id, new_seq = after[(40, "forty")]
    assert new_seq == snap.sequence_number
    assert new_id not in {v[0] for v in before.values()}
    # Everything else is untouched, even rows a copy-on-write rewrite moved.
    for key, value in before.items():
        if key != (2, "n2"):
            assert after[key] == value
    assert len({v[0] for v in after.values()}) == len(after)


def test_join_cols_default_to_identifier_fields(catalog: InMemoryCatalog) -> None:
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "score", DOUBLE, required=False),
        identifier_field_ids=[1],
    )
    t = catalog.create_table("db.keyed", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "score": [float("nan"), 1.0]}))
    # NaN equals NaN when deciding whether a row changed.
    result = t.upsert(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "score": [float("nan"), 2.0, None]}))
    assert result == UpsertResult(1, 1)
    no_keys = make_table(catalog, 2, name="nokeys")
    with pytest.raises(ValidationError, match="identifier fields"):
        no_keys.upsert(_source([1], ["a"]))
    with pytest.raises(ValidationError, match="nope"):
        no_keys.upsert(_source([1], ["a"]), join_cols=["nope"])


def test_types_and_input_validation(catalog: InMemoryCatalog) -> None:
    t = _table(catalog, 3, "merge-on-read")
    with pytest.raises(ValidationError, match="pyarrow Table"):
        t.upsert([{"id": 1}], join_cols=["id"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not in the table schema"):
        t.upsert(pa.table({"id": [1], "extra": [1]}), join_cols=["id"])
    assert t.upsert(_source([], []), join_cols=["id"]) == UpsertResult(0, 0)
    schema = Schema(NestedField(1, "k", STRING, required=False), NestedField(2, "v", LONG, required=False))
    s = catalog.create_table("db.strings", schema, properties={"format-version": "3"})
    s.append(pa.table({"k": ["a", "b"], "v": pa.array([1, 2], pa.int64())}))
    assert s.upsert(
        pa.table({"k": ["b", "c"], "v": pa.array([3, 4], pa.int64())}), join_cols=["k"]
    ) == UpsertResult(1, 1)
    assert sorted((r["k"], r["v"]) for r in s.to_arrow().to_pylist()) == [("a", 1), ("b", 3), ("c", 4)]


def test_concurrent_insert_of_a_matching_key_conflicts(sqlite_catalog: SqlCatalog) -> None:
    first = make_table(sqlite_catalog, 3, properties={"write.merge.mode": "merge-on-read"})
    first.append(rows(range(10)))
    second = sqlite_catalog.load_table("db.t")
    first.append(rows([50]))  # a concurrent writer inserts key 50
    # Serializable (the default write.merge.isolation-level): inserting 50 again would duplicate it.
    with pytest.raises(ValidationConflict, match="serializable"):
        second.upsert(rows([3, 50], name="x"), join_cols=["id"])
    second.refresh()
    assert second.upsert(rows([3, 50], name="x"), join_cols=["id"]) == UpsertResult(2, 0)
    assert sorted(r["id"] for r in second.to_arrow().to_pylist()) == [*range(10), 50]


def test_upsert_into_an_empty_table_inserts(catalog: InMemoryCatalog) -> None:
    t = make_table(catalog, 3, properties={"write.merge.mode": "merge-on-read"})
    assert t.upsert(_source([1, 2], ["a", "b"]), join_cols=["id"]) == UpsertResult(0, 2)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary.operation is Operation.APPEND
    assert _contents(t) == [(1, "eu", "a"), (2, "eu", "b")]
