"""Changelog scans (``table.changelog(...)``): inserted and deleted rows with ``_change_type``,
``_change_ordinal`` and ``_commit_snapshot_id``, for every kind of row-level change (copy-on-write
rewrites, position deletes, DVs, equality deletes, delete files removed), with carry-over rows
removed by default and net changes on request; ``replace`` commits contribute nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.changelog import ChangeKind
from firn.core.changelog_rows import cancel_carry_over, row_keys
from firn.deletes.writers import write_equality_delete_files
from firn.errors import NotFound, ValidationError
from firn.spec.snapshots import Snapshot
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.changelog import counting_view
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.row_deletes import data_file, live_deletes

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32()), pa.field("v", pa.string())]
)
MODES = ["merge-on-read", "copy-on-write"]


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path)
    c.create_namespace("db")
    yield c
    c.close()


def _table(catalog: SqlCatalog, version: int, mode: str = "merge-on-read", **properties: str) -> Table:
    modes = {"write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode}
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_spec=[("part", "identity")],
        properties={"format-version": str(version), **modes, **properties},
    )


def _rows(ids: list[int], tag: str = "a") -> pa.Table:
    return pa.table({"id": ids, "part": [i % 3 for i in ids], "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _append(t: Table, ids: list[int], tag: str = "a") -> Snapshot:
    snap = t.append(_rows(ids, tag))
    assert snap is not None
    return snap


def _head(t: Table) -> int:
    snap = t.current_snapshot()
    assert snap is not None
    return snap.snapshot_id


def _changes(t: Table, **options: Any) -> list[tuple[Any, ...]]:
    """(ordinal, type, id, v) in the changelog's own order."""
    got = t.changelog(**options).to_arrow()
    return list(
        zip(
            got.column("_change_ordinal").to_pylist(),
            got.column("_change_type").to_pylist(),
            got.column("id").to_pylist(),
            got.column("v").to_pylist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("mode", MODES)
def test_deletes_and_updates(catalog: SqlCatalog, version: int, mode: str) -> None:
    t = _table(catalog, version, mode)
    start = _append(t, list(range(9)))
    t.delete("id in (1, 4)")
    deleted_in = _head(t)
    t.upsert(_rows([2, 20], "b"), ["id"])
    updated_in = _head(t)
    got = t.changelog(from_snapshot_id=start.snapshot_id).to_arrow()
    assert got.schema.names == ["id", "part", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert [str(f.type) for f in got.schema][3:] == ["string", "int32", "int64"]
    rows = list(
        zip(
            got.column("_change_ordinal").to_pylist(),
            got.column("_change_type").to_pylist(),
            got.column("_commit_snapshot_id").to_pylist(),
            got.column("id").to_pylist(),
            got.column("v").to_pylist(),
            strict=True,
        )
    )
    # Ordered by ordinal, a snapshot's DELETEs first; the update is a DELETE plus an INSERT.
    assert [r[:2] for r in rows] == [
        (0, "DELETE"),
        (0, "DELETE"),
        (1, "DELETE"),
        (1, "INSERT"),
        (1, "INSERT"),
    ]
    assert sorted(rows) == [
        (0, "DELETE", deleted_in, 1, "a1"),
        (0, "DELETE", deleted_in, 4, "a4"),
        (1, "DELETE", updated_in, 2, "a2"),
        (1, "INSERT", updated_in, 2, "b2"),
        (1, "INSERT", updated_in, 20, "b20"),
    ]


@pytest.mark.parametrize("version", [2, 3])
def test_copy_on_write_carry_over_rows(catalog: SqlCatalog, version: int) -> None:
    t = _table(catalog, version, "copy-on-write")
    start = _append(t, [0, 3, 6, 9])  # one file (partition 0)
    t.delete("id = 3")
    assert _changes(t, from_snapshot_id=start.snapshot_id) == [(0, "DELETE", 3, "a3")]
    raw = _changes(t, from_snapshot_id=start.snapshot_id, remove_carry_over=False)
    # The rewrite removed the file (4 rows) and wrote the 3 it kept into a new one.
    assert sorted(r for r in raw if r[1] == "DELETE") == [(0, "DELETE", i, f"a{i}") for i in (0, 3, 6, 9)]
    assert sorted(r for r in raw if r[1] == "INSERT") == [(0, "INSERT", i, f"a{i}") for i in (0, 6, 9)]
    tasks = t.changelog(from_snapshot_id=start.snapshot_id).plan_tasks()
    assert sorted(x.kind.value for x in tasks) == ["added-file", "removed-file"]


@pytest.mark.parametrize("version", [3, 4])
def test_a_replaced_dv_gives_only_the_newly_deleted_rows(catalog: SqlCatalog, version: int) -> None:
    t = _table(catalog, version)
    _append(t, [0, 3, 6, 9, 12])
    t.delete("id = 3")
    first = _head(t)
    t.delete("id in (6, 9)")  # merges the file's DV into a new one, removing the old
    assert _changes(t, from_snapshot_id=first) == [(0, "DELETE", 6, "a6"), (0, "DELETE", 9, "a9")]
    (task,) = t.changelog(from_snapshot_id=first).plan_tasks()
    assert task.kind is ChangeKind.DELETES_CHANGED
    assert task.before is not None and task.after is not None
    assert [d.is_dv for d in task.before.delete_files] == [True]
    assert task.before.delete_files != task.after.delete_files


def test_v2_position_delete_files_and_removing_one_restores_rows(catalog: SqlCatalog) -> None:
    t = _table(catalog, 2)
    _append(t, [0, 3, 6, 9])
    f = data_file(t, 0)
    t.row_delta().delete_rows_at(f.file_path, [1, 2]).commit()  # ids 3 and 6
    deleted = _head(t)
    (pos_file,) = live_deletes(t)
    t.row_delta().remove_deletes([pos_file]).commit()
    assert _changes(t, from_snapshot_id=deleted) == [(0, "INSERT", 3, "a3"), (0, "INSERT", 6, "a6")]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 3, 6, 9]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_equality_deletes_with_inserts_in_one_commit(catalog: SqlCatalog, version: int) -> None:
    # A Flink-style upsert: equality deletes for the keys, the new rows in the same commit
    # (equality deletes apply only to older data, so the new rows stay).
    t = _table(catalog, version)
    start = _append(t, [0, 1, 2, 3])
    deletes = write_equality_delete_files(t.io, t.metadata, _rows([1, 2]), ["id"])
    t.row_delta().add_deletes(deletes).add_rows(_rows([1, 2], "new")).commit()
    assert sorted(_changes(t, from_snapshot_id=start.snapshot_id)) == [
        (0, "DELETE", 1, "a1"),
        (0, "DELETE", 2, "a2"),
        (0, "INSERT", 1, "new1"),
        (0, "INSERT", 2, "new2"),
    ]


@pytest.mark.parametrize("version", [2, 4])
def test_replace_commits_contribute_nothing_and_take_no_ordinal(catalog: SqlCatalog, version: int) -> None:
    t = _table(catalog, version)
    start = _append(t, [0, 1])
    _append(t, [2])
    t.maintenance.rewrite_data_files(rewrite_all=True).run()
    t.maintenance.rewrite_manifests().run()
    if version >= 4:
        t.maintenance.flush_root(force=True).run()
    t.delete("id = 0")
    assert _changes(t, from_snapshot_id=start.snapshot_id) == [(0, "INSERT", 2, "a2"), (1, "DELETE", 0, "a0")]
    scan = t.changelog(from_snapshot_id=start.snapshot_id)
    assert [s.summary.operation.value for s in scan.range.snapshots].count("replace") >= 2
    assert len(scan.range.data_changes) == 2


@pytest.mark.parametrize("mode", MODES)
def test_net_changes(catalog: SqlCatalog, mode: str) -> None:
    t = _table(catalog, 3, mode)
    start = _append(t, [0, 1])
    _append(t, [5])
    t.delete("id = 5")  # inserted and deleted within the range: no net change
    t.upsert(_rows([0], "b"), ["id"])
    t.upsert(_rows([0], "c"), ["id"])
    last = _head(t)
    net = t.changelog(from_snapshot_id=start.snapshot_id, net_changes=True).to_arrow()
    assert sorted(zip(net.column("_change_type").to_pylist(), net.column("v").to_pylist())) == [
        ("DELETE", "a0"),
        ("INSERT", "c0"),
    ]
    # Each surviving change carries the snapshot of its last occurrence.
    inserted = net.filter(pa.compute.equal(net.column("_change_type"), "INSERT"))
    assert inserted.column("_commit_snapshot_id").to_pylist() == [last]
    with pytest.raises(ValidationError, match="needs remove_carry_over=True"):
        t.changelog(net_changes=True, remove_carry_over=False)


def test_filter_and_columns(catalog: SqlCatalog) -> None:
    t = _table(catalog, 3)
    start = _append(t, list(range(9)))
    t.delete("id in (1, 2, 4)")
    assert _changes(t, from_snapshot_id=start.snapshot_id, filter="part = 1") == [
        (0, "DELETE", 1, "a1"),
        (0, "DELETE", 4, "a4"),
    ]
    got = t.changelog(from_snapshot_id=start.snapshot_id, columns=["v"]).to_arrow()
    assert got.column_names == ["v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert sorted(got.column("v").to_pylist()) == ["a1", "a2", "a4"]
    with pytest.raises(ValidationError, match="'_file' cannot be selected"):
        t.changelog(columns=["_file"])
    with pytest.raises(ValidationError, match="'_change_type' cannot be selected"):
        t.changelog(columns=["_change_type"])
    with pytest.raises(ValidationError, match="no field 'nope' in schema"):
        t.changelog(columns=["nope"])
    with pytest.raises(ValidationError, match="one string"):
        t.changelog(columns="v")  # type: ignore[arg-type]


def test_a_column_left_out_still_makes_an_update_a_change(catalog: SqlCatalog) -> None:
    t = _table(catalog, 2, "copy-on-write")
    start = _append(t, [0, 3])
    t.upsert(_rows([3], "b"), ["id"])  # only v changes
    got = t.changelog(from_snapshot_id=start.snapshot_id, columns=["id"]).to_arrow()
    assert sorted(zip(got.column("_change_type").to_pylist(), got.column("id").to_pylist())) == [
        ("DELETE", 3),
        ("INSERT", 3),
    ]


def test_expired_start(catalog: SqlCatalog) -> None:
    t = _table(catalog, 2, "copy-on-write")
    a = _append(t, [0, 3])
    b = _append(t, [1])
    t.delete("id = 3")
    c = _head(t)
    _append(t, [2])
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=3).run()
    assert t.snapshot_by_id(a.snapshot_id) is None
    # b only added files: its changes read from the expired a.
    assert _changes(t, from_snapshot_id=a.snapshot_id) == [
        (0, "INSERT", 1, "a1"),
        (1, "DELETE", 3, "a3"),
        (2, "INSERT", 2, "a2"),
    ]
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
    assert t.snapshot_by_id(b.snapshot_id) is None
    # c's DELETE is a row of the file it rewrote, which only the expired b referenced.
    with pytest.raises(NotFound, match=f"its parent {b.snapshot_id}.*has been expired.*from_snapshot_id={c}"):
        t.changelog(from_snapshot_id=b.snapshot_id).to_arrow()
    assert _changes(t, from_snapshot_id=c) == [(0, "INSERT", 2, "a2")]


def test_append_only_snapshots_plan_in_o_change_on_v4(catalog: SqlCatalog) -> None:
    t = _table(catalog, 4, **{"commit.root.max-added-files": "0"})
    for k in range(5):
        _append(t, list(range(10 * k, 10 * k + 10)))
    before = t.current_snapshot()
    assert before is not None
    _append(t, [100, 101])
    view, io = counting_view(t)
    tasks = view.changelog(from_snapshot_id=before.snapshot_id).plan_tasks()
    assert sorted(x.file.record_count for x in tasks) == [1, 1]
    head = t.current_snapshot()
    assert head is not None
    assert io.opened[0] == head.root_manifest and len(io.opened) == 2  # its root and its new leaf


def test_row_keys_compare_floats_by_bits() -> None:
    nan = float("nan")
    a = pa.table({"x": [nan, 0.0, -0.0, 1.5, 1.5], "s": [{"f": nan}, None, None, {"f": 1.0}, {"f": 1.0}]})
    keys = row_keys(a)
    assert keys[0] == row_keys(a.slice(0, 1))[0]  # NaN equals NaN
    assert keys[1] != keys[2]  # 0.0 and -0.0 differ
    deleted = a.slice(0, 4)  # NaN, 0.0, -0.0, 1.5
    inserted = pa.concat_tables([a.slice(0, 2), a.slice(4, 1), a.slice(4, 1)])  # NaN, 0.0, 1.5, 1.5
    d, i = cancel_carry_over(deleted, inserted)
    assert [str(v) for v in d.column("x").to_pylist()] == ["-0.0"]
    assert i.column("x").to_pylist() == [1.5]  # one of the two 1.5 rows is left: a multiset
