"""Incremental append scans (``table.scan(from_snapshot_id=..., to_snapshot_id=...)``): the rows
the range's ``append`` snapshots added, as appended; other operations contribute nothing; the
scan's filters, columns and limits work as on a full scan; planning reads only the metadata
the range's appends wrote (V4: their roots and new leaves)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.deletes.writers import write_equality_delete_files
from firn.errors import ValidationError
from firn.spec.snapshots import Snapshot
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.changelog import counting_view

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32()), pa.field("v", pa.string())]
)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    c = make_sqlite_catalog(tmp_path)
    c.create_namespace("db")
    yield c
    c.close()


def _table(catalog: SqlCatalog, version: int, **properties: str) -> Table:
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_spec=[("part", "identity")],
        properties={"format-version": str(version), **properties},
    )


def _rows(ids: list[int], tag: str = "a") -> pa.Table:
    return pa.table({"id": ids, "part": [i % 3 for i in ids], "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _append(t: Table, ids: list[int], tag: str = "a") -> Snapshot:
    snap = t.append(_rows(ids, tag))
    assert snap is not None
    return snap


def _ids(t: Table, **scan: object) -> list[int]:
    return sorted(t.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_rows_appended_between_two_snapshots(catalog: SqlCatalog, version: int) -> None:
    t = _table(catalog, version)
    a = _append(t, [0, 1, 2])
    b = _append(t, [3, 4])
    c = _append(t, [5])
    assert _ids(t, from_snapshot_id=a.snapshot_id) == [3, 4, 5]
    assert _ids(t, from_snapshot_id=a.snapshot_id, to_snapshot_id=b.snapshot_id) == [3, 4]
    assert _ids(t, to_snapshot_id=b.snapshot_id) == [0, 1, 2, 3, 4]
    assert _ids(t, from_snapshot_id=c.snapshot_id) == []
    assert _ids(t, from_timestamp=a.timestamp_ms - 1, to_timestamp=c.timestamp_ms) == [0, 1, 2, 3, 4, 5]
    scan = t.scan(from_snapshot_id=a.snapshot_id)
    assert scan.is_incremental and scan.range is not None
    assert scan.range.snapshot_ids == (b.snapshot_id, c.snapshot_id)
    assert scan.snapshot == t.current_snapshot()
    assert not t.scan().is_incremental


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_only_append_snapshots_contribute(catalog: SqlCatalog, version: int, mode: str) -> None:
    t = _table(
        catalog, version, **{"write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode}
    )
    start = _append(t, [0, 1, 2, 3, 4, 5])
    _append(t, [10, 11, 12])
    t.delete("id in (1, 11)")  # delete (MoR) or overwrite (CoW)
    t.upsert(_rows([2, 20], "b"), ["id"])  # overwrite: an update and an insert
    t.overwrite(_rows([30]), "part = 0")  # overwrite
    files = write_equality_delete_files(t.io, t.metadata, _rows([4]), ["id"])
    t.row_delta().add_deletes(files).commit()  # delete
    t.maintenance.rewrite_data_files(rewrite_all=True).run()  # replace
    if version >= 4:
        t.maintenance.flush_root(force=True).run()  # replace
    _append(t, [40, 41])
    span = t.scan(from_snapshot_id=start.snapshot_id).range
    assert span is not None
    ops = [s.summary.operation.value for s in span.snapshots]
    assert ops.count("append") == 2 and "replace" in ops and "overwrite" in ops
    # Rows as appended: 11 was deleted later and 12 moved by compaction, still they are listed
    # once; the upsert's and the overwrite's inserts (20, 30) are not appends.
    assert _ids(t, from_snapshot_id=start.snapshot_id) == [10, 11, 12, 40, 41]


@pytest.mark.parametrize("version", [2, 4])
def test_filters_columns_count_and_limit(catalog: SqlCatalog, version: int) -> None:
    t = _table(catalog, version)
    a = _append(t, list(range(6)))
    _append(t, list(range(6, 12)))
    _append(t, list(range(12, 18)))
    scan = t.scan(from_snapshot_id=a.snapshot_id, filter="part = 1 and id > 7")
    assert len(scan.plan_files()) == 2  # one file of partition 1 per append
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [10, 13, 16]
    assert scan.count() == 3
    got = t.scan(from_snapshot_id=a.snapshot_id, columns=["v", "_file"], filter="id = 7").to_arrow()
    assert got.column_names == ["v", "_file"]
    assert got.column("v").to_pylist() == ["a7"]
    assert got.column("_file")[0].as_py().endswith(".parquet")
    assert t.scan(from_snapshot_id=a.snapshot_id).count() == 12
    assert t.scan(from_snapshot_id=a.snapshot_id, limit=5).to_arrow().num_rows == 5
    with pytest.raises(ValidationError, match="cannot be combined with snapshot_id, ref or as_of"):
        t.scan(from_snapshot_id=a.snapshot_id, snapshot_id=a.snapshot_id)
    with pytest.raises(ValidationError, match="cannot be combined"):
        t.scan(to_timestamp=a.timestamp_ms, ref="main")


def test_schema_is_the_end_snapshots_when_the_end_is_given(catalog: SqlCatalog) -> None:
    t = _table(catalog, 2)
    a = _append(t, [0])
    b = _append(t, [1])
    with t.update_schema() as u:
        u.add_column("extra", StringType())
    c = t.append(
        pa.table(
            {"id": [2], "part": [2], "v": ["c"], "extra": ["x"]},
            schema=SCHEMA.append(pa.field("extra", pa.string())),
        )
    )
    assert c is not None
    current = t.scan(from_snapshot_id=a.snapshot_id).to_arrow()
    assert current.column_names == ["id", "part", "v", "extra"]
    assert sorted(zip(current.column("id").to_pylist(), current.column("extra").to_pylist())) == [
        (1, None),
        (2, "x"),
    ]
    at_b = t.scan(from_snapshot_id=a.snapshot_id, to_snapshot_id=b.snapshot_id).to_arrow()
    assert at_b.column_names == ["id", "part", "v"]


def test_v4_planning_reads_only_the_roots_and_leaves_the_range_wrote(catalog: SqlCatalog) -> None:
    # Every commit writes its files into a new leaf (commit.root.max-added-files = 0).
    t = _table(catalog, 4, **{"commit.root.max-added-files": "0"})
    snaps = [_append(t, list(range(10 * k, 10 * k + 10))) for k in range(6)]
    view, io = counting_view(t)
    assert len(view.scan().plan_files()) == 18  # 6 commits x 3 partitions
    full = set(io.opened)
    view, io = counting_view(t)
    tasks = view.scan(from_snapshot_id=snaps[-2].snapshot_id).plan_files()
    assert sorted(x.file.record_count for x in tasks) == [3, 3, 4]
    head = t.current_snapshot()
    assert head is not None and head.root_manifest is not None
    # The new commit's root and its one new leaf; the full plan opened all six leaves.
    assert io.opened[0] == head.root_manifest and len(io.opened) == 2
    assert len(full) == 7 and set(io.opened) <= full
    # A small commit into the root alone: planning it opens that root only.
    t.remove_properties("commit.root.max-added-files")
    before = t.current_snapshot()
    assert before is not None
    _append(t, [100])
    view, io = counting_view(t)
    assert [x.file.record_count for x in view.scan(from_snapshot_id=before.snapshot_id).plan_files()] == [1]
    assert io.opened == [t.current_snapshot().root_manifest]  # type: ignore[union-attr]


def test_v2_planning_reads_only_the_manifests_the_range_wrote(catalog: SqlCatalog) -> None:
    t = _table(catalog, 2, **{"commit.manifest-merge.enabled": "false"})
    snaps = [_append(t, [k]) for k in range(5)]
    view, io = counting_view(t)
    assert _ids(view, from_snapshot_id=snaps[-2].snapshot_id) == [4]
    head = t.current_snapshot()
    assert head is not None
    # The manifest list of the one snapshot read, and the one manifest it added.
    assert io.opened[0] == head.manifest_list and len(io.opened) == 2
