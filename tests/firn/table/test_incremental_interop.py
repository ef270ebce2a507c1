"""Incremental and changelog reads of tables other writers laid out, checked against brute-force
diffs of full scans (``tests.fixtures.changelog``) for every range of their history:

* tables PyIceberg 0.12 wrote (v1 and v2: appends, copy-on-write overwrites and deletes, fast
  and merged manifests), with PyIceberg's own full scans as the oracle;
* a v2 table in the layouts Iceberg Java's engines write, built with Firn's file writers and
  the commit actions the way those engines commit: merge appends (``MergeAppend``, manifests
  merged every commit), Spark merge-on-read deletes (one partition-scoped position delete
  file covering several data files, ``write.delete.granularity=partition``), Flink upserts
  (equality deletes and the new rows in one commit), a Spark copy-on-write ``MERGE`` rewrite
  of files that carry position deletes, and a position delete rewrite (``replace``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.deletes.writers import write_equality_delete_files, write_position_delete_files
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.changelog import History, changelog_rows, net_rows, row_tuples

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string()), pa.field("v", pa.string())]
)


@pytest.fixture
def firn(tmp_path: Path) -> Iterator[SqlCatalog]:
    catalog = make_sqlite_catalog(tmp_path, name="shared")
    yield catalog
    catalog.close()


def _pyiceberg(tmp_path: Path) -> Any:
    return pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )


def _rows(ids: list[int], tag: str = "a") -> pa.Table:
    regions = ["eu", "us", "ap"]
    return pa.table(
        {"id": ids, "region": [regions[i % 3] for i in ids], "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA
    )


def _check_every_range(table: Table, history: History) -> int:
    """Every range of the current history against the oracle; returns how many were checked."""
    chain = list(reversed(table.metadata.ancestors_of(table.metadata.current_snapshot_id)))
    starts: list[int | None] = [None, *(s.snapshot_id for s in chain)]
    checked = 0
    for i, start in enumerate(starts):
        for end in chain[i:]:
            where = f"({start}, {end.snapshot_id}]"
            appended = table.scan(from_snapshot_id=start, to_snapshot_id=end.snapshot_id).to_arrow()
            expected = history.expected_appends(start, end.snapshot_id)
            assert sorted(row_tuples(appended)) == sorted(expected.elements()), where
            log = table.changelog(from_snapshot_id=start, to_snapshot_id=end.snapshot_id).to_arrow()
            assert changelog_rows(log) == history.expected_changelog(start, end.snapshot_id), where
            net = table.changelog(from_snapshot_id=start, to_snapshot_id=end.snapshot_id, net_changes=True)
            assert net_rows(net.to_arrow()) == history.expected_net(start, end.snapshot_id), where
            checked += 1
    return checked


@pytest.mark.parametrize(("version", "merge"), [(1, "false"), (2, "false"), (2, "true")])
def test_pyiceberg_written_tables(firn: SqlCatalog, tmp_path: Path, version: int, merge: str) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    py = _pyiceberg(tmp_path)
    py.create_namespace("db")
    py_table = py.create_table(
        "db.t",
        schema=Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "region", StringType(), required=False),
            NestedField(3, "v", StringType(), required=False),
        ),
        partition_spec=PartitionSpec(
            PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region")
        ),
        properties={
            "format-version": str(version),
            "commit.manifest-merge.enabled": merge,
            "commit.manifest.min-count-to-merge": "2",
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py_table.append(_rows(list(range(12))))
        py_table.append(_rows(list(range(20, 26))))
        py_table.overwrite(_rows([30, 33], "o"), overwrite_filter="region == 'eu'")
        py_table.delete("id in (1, 22)")  # copy-on-write: files rewritten without the rows
        py_table.append(_rows([40, 41, 42]))
    py_table = py.load_table("db.t")

    def read(snapshot_id: int) -> pa.Table:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return py_table.scan(snapshot_id=snapshot_id).to_arrow()

    table = firn.load_table("db.t")
    history = History(read=read)  # PyIceberg's own reads are the oracle
    history.record(table)
    ops = [s.summary.operation.value for s in table.snapshots()]
    assert "append" in ops and ("overwrite" in ops or "delete" in ops), ops
    assert _check_every_range(table, history) == len(ops) * (len(ops) + 1) // 2
    # The copy-on-write delete reads as the two rows it removed: the rows its rewrite carried
    # into new files cancel out.
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id is not None
    delete = table.metadata.snapshot(head.parent_snapshot_id)
    assert delete.parent_snapshot_id is not None
    log = table.changelog(from_snapshot_id=delete.parent_snapshot_id, to_snapshot_id=delete.snapshot_id)
    assert sorted((t, r[0]) for (_, t, _, r) in changelog_rows(log.to_arrow())) == [
        ("DELETE", 1),
        ("DELETE", 22),
    ]


def test_java_engine_layouts_v2(firn: SqlCatalog) -> None:
    firn.create_namespace("db")
    t = firn.create_table(
        "db.t",
        schema=SCHEMA,
        partition_spec=[("region", "identity")],
        properties={
            "format-version": "2",
            # Java's MergeAppend, merging as soon as two manifests exist.
            "commit.manifest-merge.enabled": "true",
            "commit.manifest.min-count-to-merge": "2",
        },
    )
    history = History()
    for k in range(3):
        t.append(_rows(list(range(10 * k, 10 * k + 9))))
        history.record(t)

    # Spark merge-on-read DELETE: one position delete file per partition, covering every data
    # file of the partition that lost rows (here the three "eu" files).
    eu = [task.file for task in t.scan(filter="region = 'eu'").plan_files()]
    assert len(eu) == 3
    deletes = write_position_delete_files(t.io, t.metadata, [(f, [0]) for f in eu])
    assert len(deletes) == 1 and deletes[0].referenced_data_file is None
    t.row_delta().add_deletes(deletes).commit()
    history.record(t)

    # Flink upsert: equality deletes on the key and the new rows, in one commit.
    eq = write_equality_delete_files(t.io, t.metadata, _rows([1, 4, 11]), ["id"])
    t.row_delta().add_deletes(eq).add_rows(_rows([1, 4, 11], "flink")).commit()
    history.record(t)

    # Spark copy-on-write MERGE (updates 13 and 16, inserts 50), then a copy-on-write DELETE of
    # a row in an "eu" file that the partition-scoped position delete file also covers.
    t.set_properties({"write.update.mode": "copy-on-write", "write.merge.mode": "copy-on-write"})
    t.upsert(_rows([13, 16, 50], "merge"), ["id"])
    history.record(t)
    t.set_properties({"write.delete.mode": "copy-on-write"})
    t.delete("id = 3")
    history.record(t)

    # Maintenance as Java's procedures run it: position delete rewrite, compaction.
    t.maintenance.rewrite_position_delete_files(rewrite_all=True, min_input_files=1).run()
    history.record(t)
    t.append(_rows([60, 61]))
    history.record(t)
    t.maintenance.rewrite_data_files(rewrite_all=True).run()
    history.record(t)

    ops = [s.summary.operation.value for s in t.snapshots()]
    assert ops.count("replace") == 2 and ops.count("delete") >= 1 and ops.count("overwrite") >= 2, ops
    assert _check_every_range(t, history) == len(ops) * (len(ops) + 1) // 2
