"""PyIceberg reads a v2 table it wrote itself identically after Firn expired its snapshots and
removed its orphan files (one SQLite catalog shared by both, as in
tests/firn/catalog/test_pyiceberg_interop.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.maintenance import files_on_disk, local, remove_orphans, soon_ms

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

_ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("url", pa.string())])


def _rows(py_table: Any, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    scan = py_table.scan(snapshot_id=snapshot_id) if snapshot_id is not None else py_table.scan()
    return sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])


def test_pyiceberg_reads_its_table_identically_after_expiry_and_orphan_removal(tmp_path: Path) -> None:
    from pyiceberg.expressions import GreaterThanOrEqual, LessThan
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.types import LongType, NestedField, StringType

    py = pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )
    py.create_namespace("raw")
    schema = PySchema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "url", StringType(), required=False)
    )
    table = py.create_table("raw.clicks", schema, properties={"format-version": "2"})
    for i in range(5):
        table.append(pa.table({"id": [10 * i, 10 * i + 1], "url": [f"u{i}", None]}, schema=_ARROW))
    table.delete(LessThan("id", 11))  # copy-on-write in PyIceberg 0.12
    table.overwrite(
        pa.table({"id": [500], "url": ["new"]}, schema=_ARROW), overwrite_filter=GreaterThanOrEqual("id", 40)
    )
    table = py.load_table("raw.clicks")
    snapshots = [s.snapshot_id for s in table.snapshots()]
    before = {sid: _rows(table, sid) for sid in snapshots}
    current = _rows(table)

    firn_catalog = make_sqlite_catalog(tmp_path, name="shared")
    t = firn_catalog.load_table("raw.clicks")
    stray = Path(local(t.location)) / "data" / "stray.parquet"
    stray.write_bytes(b"left by a crashed writer")
    disk = files_on_disk(t.location)
    result = t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=2).run()
    assert result.expired_snapshot_ids and result.deleted_data_files_count > 0
    orphans = remove_orphans(t, older_than=soon_ms(), force=True)  # recorded, then deleted
    assert orphans.deleted_file_locations == (f"file://{stray}",)  # listed in the table's own form
    assert str(stray) in disk - files_on_disk(t.location)

    reloaded = py.load_table("raw.clicks")
    retained = [s.snapshot_id for s in reloaded.snapshots()]
    assert len(retained) == 2 and set(retained) <= set(snapshots)
    assert _rows(reloaded) == current
    for sid in retained:
        assert _rows(reloaded, sid) == before[sid]
    # PyIceberg keeps writing on top of what Firn left.
    reloaded.append(pa.table({"id": [900], "url": ["after"]}, schema=_ARROW))
    assert {r["id"] for r in _rows(py.load_table("raw.clicks"))} == {r["id"] for r in current} | {900}
    firn_catalog.close()
