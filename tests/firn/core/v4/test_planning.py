"""V4 planning: pruning by aggregated stats at the root and file stats in leaves, manifest DVs
as masks, affinity between data and delete manifests, delete matching by sequence numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn.manifests.v4_io as v4_io
from firn.manifests.v4_io import clear_v4_cache, read_v4_manifest
from firn.spec.content import FileContent

from .support import (
    SCHEMA,
    Labels,
    commit_append,
    commit_change,
    data_files,
    dv_for,
    ids,
    new_table,
    set_props,
)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Locations of leaf manifests read from storage (cache cleared first)."""
    clear_v4_cache()
    seen: list[str] = []
    real = v4_io.read_v4_manifest

    def spy(io: Any, location: str, **kw: Any) -> Any:
        if kw.get("expected") in ("data", "delete"):
            seen.append(location)
        return real(io, location, **kw)

    import firn.core.v4.reader as state

    monkeypatch.setattr(state, "read_v4_manifest", spy)
    return seen


def _clustered(tmp_path: Path, leaves: int = 10, per_leaf: int = 20):  # type: ignore[no-untyped-def]
    t, lb = new_table(tmp_path), Labels()
    set_props(t, **{"commit.root.max-added-files": "0"})
    for leaf in range(leaves):
        names = [f"D{leaf}_{i}" for i in range(per_leaf)]
        commit_append(t, data_files(t, lb, names, start_id=leaf * 1000))
    return t, lb


def test_selective_filter_opens_only_matching_leaves(tmp_path: Path, opened: list[str]) -> None:
    t, _ = _clustered(tmp_path)
    clear_v4_cache()
    opened.clear()
    tasks = t.scan(filter="id >= 3000 and id < 3005").plan_files()
    assert len(opened) == 1  # aggregated stats prune the other nine leaves at the root
    assert sorted(task.file.record_count for task in tasks) == [1] * 5
    assert ids(t, filter="id >= 3000 and id < 3005") == [3000, 3001, 3002, 3003, 3004]
    opened.clear()
    clear_v4_cache()
    assert len(t.scan().plan_files()) == 200
    assert len(opened) == 10


def test_manifest_dv_masks_leaf_entries_in_planning(tmp_path: Path) -> None:
    t, _ = _clustered(tmp_path, leaves=2, per_leaf=5)
    tasks = list(t.scan(filter="id < 1000").plan_files())
    victim = tasks[2].file
    commit_change(t, remove=[victim])
    planned = {task.file.file_path for task in t.scan().plan_files()}
    assert victim.file_path not in planned and len(planned) == 9
    # Origins let the next removal target the leaf directly.
    task = next(iter(t.scan(filter="id = 1001").plan_files()))
    assert task.origin is not None and task.origin[0].endswith("-m-data.parquet") and task.origin[1] == 1
    commit_change(t, remove=[task.file])
    assert 1001 not in ids(t)


def test_flush_affiliates_delete_manifests_and_planning_reads_them_with_their_data(
    tmp_path: Path, opened: list[str]
) -> None:
    t, lb = new_table(tmp_path), Labels()
    low = data_files(t, lb, [f"L{i}" for i in range(5)], start_id=0)
    high = data_files(t, lb, [f"H{i}" for i in range(5)], start_id=1000)
    commit_append(t, low)
    t.maintenance.flush_root(force=True).run()  # leaf for the low ids
    commit_append(t, high)
    dvs = [dv_for(t, lb, f, [0], f"DV{f.file_path[-12:]}") for f in (low[0], high[0])]
    commit_change(t, add_deletes=dvs)
    assert ids(t) == [1, 2, 3, 4, 1001, 1002, 1003, 1004]
    t.maintenance.flush_root(force=True).run()
    root = read_v4_manifest(t.io, t.current_snapshot().root_manifest).to_pylist()
    data_manifests = {r["location"] for r in root if r["content_type"] == FileContent.DATA_MANIFEST}
    delete_manifests = [r for r in root if r["content_type"] == FileContent.DELETE_MANIFEST]
    assert len(data_manifests) == 2 and len(delete_manifests) == 2
    # Each DV went to a delete manifest affiliated with the data manifest of its data file.
    assert {r["referenced_file"] for r in delete_manifests} == data_manifests
    assert ids(t) == [1, 2, 3, 4, 1001, 1002, 1003, 1004]
    clear_v4_cache()
    opened.clear()
    assert ids(t, filter="id >= 1000") == [1001, 1002, 1003, 1004]
    # One data manifest and its affiliated delete manifest: the other pair is never opened.
    assert len(opened) == 2


def test_dv_applies_only_to_data_at_or_before_its_sequence_number(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    (d1,) = data_files(t, lb, ["D1"])
    commit_append(t, [d1])
    commit_change(t, add_deletes=[dv_for(t, lb, d1, [0], "DV")])
    assert ids(t) == []
    # Re-adding the same path later (a new data sequence number) is not covered by the old DV.
    commit_change(t, remove=[d1])
    commit_append(t, [d1])
    assert ids(t) == [0]


def test_row_filter_residuals_and_columns_on_v4(tmp_path: Path) -> None:
    t, _ = _clustered(tmp_path, leaves=3, per_leaf=4)
    out = t.scan(filter="id in (1, 2002) or name = 'D1_3'", columns=["name", "_file", "_pos"]).to_arrow()
    assert sorted(out["name"].to_pylist()) == ["D0_1", "D1_3", "D2_2"]
    assert out.column_names == ["name", "_file", "_pos"]
    assert t.scan(limit=5).to_arrow().num_rows == 5
    assert t.scan(filter="id > 1000").count() == 7  # 1001-1003 and 2000-2003


def test_equality_deletes_match_by_sequence_number(tmp_path: Path) -> None:
    from firn.io.parquet import write_parquet_file
    from firn.spec.schema import Schema
    from firn.spec.types import LONG, NestedField

    t, lb = new_table(tmp_path), Labels()
    commit_append(t, data_files(t, lb, ["A", "B", "C"]))
    eq_schema = Schema(NestedField(1, "id", LONG, False))
    loc = f"{t.location}/data/eq-1.parquet"
    res = write_parquet_file(t.io, loc, pa.table({"id": [1]}), eq_schema, t.metadata.table_properties)
    eq = res.to_data_file(content=FileContent.EQUALITY_DELETES, equality_ids=[1])
    commit_change(t, add_deletes=[eq])
    assert ids(t) == [0, 2]
    # Rows added after the equality delete are not affected by it (strictly older data only).
    commit_append(t, data_files(t, lb, ["B2"], start_id=1))
    assert ids(t) == [0, 1, 2]
    _ = SCHEMA


def test_removing_one_dv_keeps_the_other_dvs_of_the_same_puffin_file(tmp_path: Path) -> None:
    import numpy as np

    from firn.deletes.bitmap import PositionBitmap
    from firn.deletes.dv import write_dv_puffin
    from firn.spec.content import DataFile, FileFormat

    t, lb = new_table(tmp_path), Labels()
    a, b = data_files(t, lb, ["A", "B"])
    commit_append(t, [a, b])
    loc = f"{t.location}/data/shared.puffin"
    written = write_dv_puffin(
        t.io.new_output(loc), [(f.file_path, PositionBitmap.from_positions(np.array([0]))) for f in (a, b)]
    )
    dvs = [
        DataFile(
            FileContent.POSITION_DELETES,
            loc,
            FileFormat.PUFFIN,
            (),
            w.cardinality,
            written.file_size_in_bytes,
            0,
            referenced_data_file=w.referenced_data_file,
            content_offset=w.offset,
            content_size_in_bytes=w.length,
        )
        for w in written.dvs
    ]
    for layout in ("root", "leaf"):
        if layout == "leaf":
            set_props(t, **{"commit.root.max-added-files": "0"})
        commit_change(t, add_deletes=dvs)
        assert ids(t) == []
        commit_change(t, remove_deletes=[dvs[0]])  # only A's DV goes away
        assert ids(t) == [0], layout
        commit_change(t, remove_deletes=[dvs[1]])
        assert ids(t) == [0, 1]
