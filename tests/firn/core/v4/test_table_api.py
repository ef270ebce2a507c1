"""Every Table API operation of the core issues works on V4 tables (issue 4 item 3)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import firn
from firn.manifests.v4_io import read_v4_manifest
from firn.spec.types import StringType

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("ts", pa.timestamp("us")),
        ("v", pa.float64()),
    ]
)


@pytest.fixture
def table(tmp_path: Path) -> firn.table.table.Table:  # type: ignore[name-defined]
    cat = firn.load_catalog(f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, partition_spec=[("region", "identity"), ("ts", "day"), ("id", "bucket[4]")]
    )
    assert t.format_version == 4
    t.append(_rows(range(0, 20)))
    t.append(_rows(range(20, 40)))
    return t


def _rows(ids: range) -> pa.Table:
    regions = ["eu", "us", "ap", None]
    return pa.table(
        {
            "id": list(ids),
            "region": [regions[i % 4] for i in ids],
            "ts": [dt.datetime(2024, 1, 1 + i % 3) for i in ids],
            "v": [float(i) for i in ids],
        },
        schema=SCHEMA,
    )


def _ids(t, **scan):  # type: ignore[no-untyped-def]
    return sorted(t.scan(**scan).to_arrow()["id"].to_pylist())


def test_filters_prune_and_residuals_apply(table) -> None:  # type: ignore[no-untyped-def]
    everything = table.scan().plan_files()
    eu = table.scan(filter="region = 'eu' and id > 10").plan_files()
    assert len(eu) < len(everything)
    assert _ids(table, filter="region = 'eu' and id > 10") == [i for i in range(40) if i % 4 == 0 and i > 10]
    assert _ids(table, filter=firn.col("region").is_null()) == [i for i in range(40) if i % 4 == 3]
    assert _ids(table, filter="ts < '2024-01-02T00:00:00'") == [i for i in range(40) if i % 3 == 0]


def test_copy_on_write_and_merge_on_read_deletes(table) -> None:  # type: ignore[no-untyped-def]
    table.delete("id < 5")
    assert _ids(table) == list(range(5, 40))
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("id = 25 or id = 26")
    assert _ids(table) == [i for i in range(5, 40) if i not in (25, 26)]
    root = read_v4_manifest(table.io, table.current_snapshot().root_manifest).to_pylist()
    dvs = [r for r in root if r["content_type"] == 1 and r["version_info"]["status"] == 1]
    assert dvs and all(r["file_format"] == "puffin" for r in dvs)
    # A second merge-on-read delete on a file with a DV replaces it: one live DV per data file.
    table.delete("id = 29")
    root = read_v4_manifest(table.io, table.current_snapshot().root_manifest).to_pylist()
    live = [r["referenced_file"] for r in root if r["content_type"] == 1 and r["version_info"]["status"] != 2]
    assert len(live) == len(set(live))
    assert 29 not in _ids(table)


def test_row_delta_upsert_overwrite_and_add_files(table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = table.upsert(_rows(range(38, 42)), join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (0, 2)  # 38, 39 unchanged: skipped
    changed = _rows(range(38, 39)).set_column(3, "v", pa.array([-1.0]))
    result = table.upsert(changed, join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 0)
    assert table.scan(filter="id = 38").to_arrow()["v"].to_pylist() == [-1.0]
    table.row_delta().add_rows(_rows(range(100, 102))).commit()
    assert _ids(table, filter="id >= 100") == [100, 101]
    table.overwrite(_rows(range(200, 201)), "region = 'ap'")
    assert not [i for i in _ids(table) if i % 4 == 2 and i < 200]
    path = tmp_path / "extra.parquet"
    from firn.io.arrow_schema import schema_to_arrow

    extra = pa.table(
        {"id": [300], "region": ["eu"], "ts": [dt.datetime(2024, 1, 1)], "v": [1.0]},
        schema=schema_to_arrow(table.schema()),
    )
    pq.write_table(extra, path)
    table.add_files([str(path)])
    assert 300 in _ids(table)


def test_schema_evolution_time_travel_branches_and_changes(table) -> None:  # type: ignore[no-untyped-def]
    first = table.snapshots()[0]
    with table.update_schema() as u:
        u.add_column("note", StringType())
    new = _rows(range(50, 51)).append_column("note", pa.array(["hi"]))
    table.append(new)
    out = table.scan(columns=["id", "note"]).to_arrow()
    notes = dict(zip(out["id"].to_pylist(), out["note"].to_pylist()))
    assert notes[50] == "hi" and notes[0] is None
    assert _ids(table, snapshot_id=first.snapshot_id) == list(range(20))
    assert table.scan(snapshot_id=first.snapshot_id).to_arrow().column_names == ["id", "region", "ts", "v"]
    with table.manage_snapshots() as ms:
        ms.create_branch("dev")
    table.append(_rows(range(60, 61)).append_column("note", pa.array([None], pa.string())), branch="dev")
    assert 60 in _ids(table, ref="dev") and 60 not in _ids(table)
    main_before = table.current_snapshot().snapshot_id
    with table.manage_snapshots() as ms:
        ms.fast_forward("main", "dev")
    assert 60 in _ids(table)
    with table.manage_snapshots() as ms:
        ms.rollback_to(main_before)
    assert 60 not in _ids(table)
    changes = table.changes(first.snapshot_id, main_before)
    assert [len(c.added_data_files) > 0 for c in changes] == [True, True]
    assert sum(f.record_count for c in changes for f in c.added_data_files) == 21
