"""PyIceberg 0.12 reads a table it wrote identically after each of Firn's rewrites (v2; then,
since PyIceberg writes only v1/v2, the same table upgraded to v3 by Firn, with DVs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from tests.fixtures.catalogs import make_sqlite_catalog

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


def _rows(py_catalog: Any) -> list[dict[str, Any]]:
    data = py_catalog.load_table("db.t").scan().to_arrow()
    return sorted(data.to_pylist(), key=lambda r: r["id"])


def test_pyiceberg_reads_the_same_rows_after_every_rewrite(tmp_path: Path) -> None:
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
        properties={"format-version": "2"},
    )
    for i in range(8):
        py_table.append(_batch(i * 25))
    py_table = py.load_table("db.t")
    py_table.delete("id < 10")  # PyIceberg's copy-on-write delete
    expected = _rows(py)

    firn: SqlCatalog = make_sqlite_catalog(tmp_path, name="shared")
    t = firn.load_table("db.t")
    t.set_properties({"write.delete.mode": "merge-on-read"})
    t.delete("id in (30, 77, 151)")  # v2 position delete files written by Firn
    expected = [r for r in expected if r["id"] not in (30, 77, 151)]
    assert _rows(py) == expected

    steps: list[tuple[str, dict[str, Any]]] = [
        ("rewrite_position_delete_files", {"rewrite_all": True}),
        ("rewrite_data_files", {"min_input_files": 2}),
        ("rewrite_manifests", {}),
    ]
    for name, options in steps:
        result = getattr(t.maintenance, name)(**options).run()
        assert result.snapshot_id is not None, name
        assert _rows(py) == expected, name

    t.upgrade(format_version=3)
    t.delete("id in (40, 41, 99)")  # deletion vectors
    expected = [r for r in expected if r["id"] not in (40, 41, 99)]
    assert _rows(py) == expected
    v3_steps: list[tuple[str, dict[str, Any]]] = [
        ("rewrite_deletion_vectors", {"rewrite_all": True}),
        ("rewrite_data_files", {"rewrite_all": True}),  # one file per partition is left: redo all
        ("rewrite_manifests", {}),
    ]
    for name, options in v3_steps:
        result = getattr(t.maintenance, name)(**options).run()
        assert result.snapshot_id is not None, name
        assert _rows(py) == expected, name
    firn.close()
