"""PyIceberg 0.12 reads a table it wrote identically after each of Firn's maintenance operations:
its current rows and every snapshot still in the metadata (time travel).

The tables are v1 and v2 tables PyIceberg created and appended to (it writes no v3), then the
v2 table upgraded to v3 by Firn, so the v3 operations run on deletion vectors. Each runs
through one SQLite catalog shared by both libraries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import local, remove_orphans, soon_ms

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def _batch(start: int, n: int = 25) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "region": [("eu", "us", None)[i % 3] for i in ids],
            "amount": [i * 0.5 for i in ids],
            "ts": pa.array(
                [1_700_000_000_000_000 + i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC")
            ),
        },
        schema=SCHEMA,
    )


def _rows(py_table: Any, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    scan = py_table.scan() if snapshot_id is None else py_table.scan(snapshot_id=snapshot_id)
    return sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])


class _Reader:
    """What PyIceberg reads: the rows of each snapshot as first seen, checked again after each
    operation for every snapshot still in the metadata."""

    def __init__(self, py: Any) -> None:
        self.py = py
        self.seen: dict[int, list[dict[str, Any]]] = {}

    def record(self) -> None:
        """Remember how PyIceberg reads every snapshot now (after a writer's commits)."""
        table = self.py.load_table("db.t")
        for snap in table.snapshots():
            self.seen.setdefault(snap.snapshot_id, _rows(table, snap.snapshot_id))

    def check(self, expected: list[dict[str, Any]], step: str) -> None:
        table = self.py.load_table("db.t")
        assert _rows(table) == expected, step
        current = table.current_snapshot().snapshot_id
        for snap in table.snapshots():
            sid = snap.snapshot_id
            if sid not in self.seen:
                # A snapshot this step committed reads as the table does now.
                assert sid == current, f"{step}: unexpected new snapshot {sid}"
                self.seen[sid] = expected
            assert _rows(table, sid) == self.seen[sid], f"{step}: snapshot {sid}"


def _operations(t: Table, version: int) -> list[tuple[str, dict[str, Any]]]:
    deletes = (
        [("rewrite_deletion_vectors", {"rewrite_all": True, "min_input_files": 1})]
        if version >= 3
        else [("rewrite_position_delete_files", {"rewrite_all": True, "min_input_files": 1})]
        if version == 2
        else []
    )
    return [
        *deletes,
        ("rewrite_data_files", {"min_input_files": 2} if version < 3 else {"rewrite_all": True}),
        ("rewrite_manifests", {}),
        ("expire_snapshots", {"older_than": soon_ms(), "retain_last": 3}),
        ("remove_orphan_files", {"older_than": soon_ms(), "force": True, "dry_run": False}),
    ]


def _run_all(t: Table, version: int, reader: _Reader, expected: list[dict[str, Any]]) -> None:
    stray = Path(local(t.location)) / "data" / f"stray-v{version}.parquet"
    stray.write_bytes(b"left by a crashed writer")
    for name, options in _operations(t, version):
        if name == "remove_orphan_files":
            result = remove_orphans(t, **options)  # recorded, then deleted
            assert f"file://{stray}" in result.deleted_file_locations and not stray.exists()
            reader.check(expected, f"v{version} {name}")
            t.refresh()
            continue
        result = getattr(t.maintenance, name)(**options).run()
        if name == "expire_snapshots":
            assert result.expired_snapshot_ids, name
        else:
            assert result.snapshot_id is not None, name
        reader.check(expected, f"v{version} {name}")
        t.refresh()


@pytest.mark.parametrize("version", [1, 2])
def test_pyiceberg_reads_identically_after_every_operation(tmp_path: Path, version: int) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

    py = pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )
    py.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType(), required=False),
        NestedField(3, "amount", DoubleType(), required=False),
        NestedField(4, "ts", TimestamptzType(), required=False),
    )
    py_table = py.create_table(
        "db.t",
        schema=schema,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")),
        properties={"format-version": str(version)},
    )
    for i in range(8):
        py_table.append(_batch(i * 25))
    py.load_table("db.t").delete("id < 10")  # PyIceberg's copy-on-write delete
    reader = _Reader(py)
    reader.record()
    expected = _rows(py.load_table("db.t"))

    firn: SqlCatalog = make_sqlite_catalog(tmp_path, name="shared")
    t = firn.load_table("db.t")
    if version >= 2:
        t.set_properties({"write.delete.mode": "merge-on-read"})
    t.delete("id in (30, 77, 151)")  # v2: position delete files; v1: copy-on-write
    expected = [r for r in expected if r["id"] not in (30, 77, 151)]
    reader.check(expected, "after Firn's delete")
    reader.record()
    _run_all(t, version, reader, expected)

    if version == 2:
        t.upgrade(format_version=3)
        t.delete("id in (40, 41, 99)")  # deletion vectors
        expected = [r for r in expected if r["id"] not in (40, 41, 99)]
        reader.check(expected, "v3 deletes")
        reader.record()
        _run_all(t, 3, reader, expected)
    else:
        # PyIceberg keeps writing to its v1 table after Firn's maintenance.
        py.load_table("db.t").append(_batch(1000, 5))
        assert [r["id"] for r in _rows(py.load_table("db.t"))][-5:] == list(range(1000, 1005))
    firn.close()
