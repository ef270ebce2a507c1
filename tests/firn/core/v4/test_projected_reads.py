"""Projected leaf reads: planning reads leaves without the stats it does not filter on, and
plans exactly what full reads plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import firn.core.v4.planning as planning
from firn.core.planning import FileScanTask
from firn.core.v4.reader import manifest_refs, root_table
from firn.manifests.v4_io import clear_v4_cache, read_v4_manifest
from firn.table.table import Table

from .support import Labels, commit_append, commit_change, data_files, dv_for, new_table, set_props


def _table(tmp_path: Path) -> tuple[Table, Labels]:
    """Three data leaves, one entry removed by a manifest DV, a DV at the root and a delete leaf."""
    t, lb = new_table(tmp_path), Labels()
    set_props(t, **{"commit.root.max-added-files": "2"})
    leaves = [data_files(t, lb, [f"D{k}_{i}" for i in range(4)], start_id=k * 100) for k in range(3)]
    for files in leaves:
        commit_append(t, files)
    commit_change(t, remove=[leaves[1][2]])
    commit_change(t, add_deletes=[dv_for(t, lb, leaves[0][1], [0], "DV1")])
    dvs = [dv_for(t, lb, leaves[2][i], [0], f"DVL{i}") for i in range(3)]
    commit_change(t, add_deletes=dvs)
    return t, lb


def _key(task: FileScanTask) -> tuple[Any, ...]:
    return (
        task.file.file_path,
        task.file.record_count,
        task.data_sequence_number,
        sorted(d.file_path for d in task.delete_files),
        str(task.residual),
        task.origin,
    )


@pytest.mark.parametrize("row_filter", [None, "id >= 100 and id < 250", "name = 'D2_3'"])
def test_projected_plan_equals_full_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str | None
) -> None:
    t, _ = _table(tmp_path)
    scan: dict[str, Any] = {"filter": row_filter} if row_filter else {}
    clear_v4_cache()
    projected = sorted(_key(x) for x in t.scan(**scan).plan_files())
    clear_v4_cache()
    projected_rows = sorted(t.scan(**scan).to_arrow()["id"].to_pylist())
    monkeypatch.setattr(planning, "_leaf_columns", lambda layout, bound: None)
    clear_v4_cache()
    full = sorted(_key(x) for x in t.scan(**scan).plan_files())
    clear_v4_cache()
    assert projected == full
    assert projected  # the filters all select something
    assert projected_rows == sorted(t.scan(**scan).to_arrow()["id"].to_pylist())


def test_projected_read_returns_requested_and_validated_columns(tmp_path: Path) -> None:
    t, _ = _table(tmp_path)
    root = root_table(t.io, t.metadata, t.current_snapshot())
    leaf = next(r for r in manifest_refs(root) if r.file_format.value == "parquet")
    clear_v4_cache()
    part = read_v4_manifest(t.io, leaf.location, expected="data", columns=["location", "content_stats.c1"])
    assert "content_stats" in part.column_names
    assert part.schema.field("content_stats").type.num_fields == 1
    assert {"content_type", "version_info", "location"} <= set(part.column_names)
    assert "manifest_stats" not in part.column_names
    # A full read in the cache serves every projection.
    full = read_v4_manifest(t.io, leaf.location, expected="data")
    assert read_v4_manifest(t.io, leaf.location, expected="data", columns=["location"]) is full
    # Paths the file lacks are skipped, not errors.
    assert (
        read_v4_manifest(
            t.io, leaf.location, expected="data", columns=["nope", "content_stats.c99"], use_cache=False
        ).num_rows
        == full.num_rows
    )


def test_roots_favour_write_speed_and_leaves_size(tmp_path: Path) -> None:
    """Every commit rewrites the root (Snappy); a leaf is written once and read by every
    planning (zstd). Both read back through the same reader."""
    import pyarrow.parquet as pq

    t, _ = _table(tmp_path)

    def codec(location: str) -> str:
        with t.io.new_input(location).open_arrow() as f:
            return str(pq.ParquetFile(f).metadata.row_group(0).column(0).compression)

    snap = t.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root_codec = codec(snap.root_manifest)
    leaves = [
        r for r in manifest_refs(root_table(t.io, t.metadata, snap)) if r.location != snap.root_manifest
    ]
    assert leaves
    leaf_codecs = {codec(r.location) for r in leaves}
    assert root_codec == "SNAPPY"
    assert leaf_codecs == {"ZSTD"}
    clear_v4_cache()
    assert (
        read_v4_manifest(t.io, snap.root_manifest, expected="root").num_rows
        == root_table(t.io, t.metadata, snap).num_rows
    )


def test_batched_leaf_read_tolerates_an_empty_trailing_leaf(tmp_path: Path) -> None:
    """A leaf with no entries (a foreign writer's, or one whose entries all moved) at the end
    of the batch: first-row-id inheritance must not index past the batch."""
    import dataclasses

    from firn.core.v4.reader import read_leaves_batched
    from firn.manifests.v4_io import write_v4_manifest

    t, _ = _table(tmp_path)
    snap = t.current_snapshot()
    assert snap is not None
    refs = [r for r in manifest_refs(root_table(t.io, t.metadata, snap)) if r.content.name == "DATA_MANIFEST"]
    clear_v4_cache()
    before = read_leaves_batched(t.io, t.metadata, refs)
    empty = read_v4_manifest(t.io, refs[0].location).slice(0, 0)
    location = refs[0].location.replace(".parquet", "-empty.parquet")
    write_v4_manifest(t.io, location, empty, "data")
    empty_ref = dataclasses.replace(refs[-1], location=location, record_count=0, row=refs[-1].row + 1)
    after = read_leaves_batched(t.io, t.metadata, [*refs, empty_ref])
    assert after.table.num_rows == before.table.num_rows
    assert after.table.column("first_row_id").to_pylist() == before.table.column("first_row_id").to_pylist()
