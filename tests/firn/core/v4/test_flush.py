"""Root flush: thresholds, dry-run plans, the writer's hard cap, Puffin manifest DVs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from firn.manifests.v4_io import read_v4_manifest

from .support import SCHEMA, Labels, commit_append, commit_change, data_files, ids, new_table


def _root(t):  # type: ignore[no-untyped-def]
    return read_v4_manifest(t.io, t.current_snapshot().root_manifest).to_pylist()


def test_plan_is_a_json_dry_run_and_honours_thresholds(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path, **{"commit.root.max-data-files": "3"}), Labels()
    for i in range(3):
        commit_append(t, data_files(t, lb, [f"D{i}"], start_id=i))
    plan = t.maintenance.flush_root().plan()
    assert plan.root_data_files == 3 and not plan.move_data_files and plan.is_noop
    before = t.current_snapshot().snapshot_id
    result = t.maintenance.flush_root().run()
    assert result.snapshot_id is None and t.current_snapshot().snapshot_id == before  # no-op commits nothing
    commit_append(t, data_files(t, lb, ["D3"], start_id=3))
    plan = t.maintenance.flush_root().plan()
    assert plan.move_data_files and plan.root_data_files == 4
    assert json.loads(plan.to_json())["thresholds"]["commit.root.max-data-files"] == 3
    result = t.maintenance.flush_root().run()
    assert result.data_files_moved == 4 and result.leaves_written == 1 and result.bytes_written > 0
    root = _root(t)
    assert [(r["content_type"], r["version_info"]["status"]) for r in root] == [(3, 0)]
    assert t.current_snapshot().summary.operation.value == "replace"
    assert ids(t) == [0, 1, 2, 3]
    assert t.changes(before)[-1].added_data_files == ()  # a flush is not a data change


def test_writer_flushes_synchronously_only_above_the_hard_cap(tmp_path: Path) -> None:
    t = new_table(tmp_path, **{"commit.root.max-data-files": "2", "commit.root.writer-flush-factor": "2"})
    lb = Labels()
    counts = []
    for i in range(6):
        commit_append(t, data_files(t, lb, [f"D{i}"], start_id=i))
        root = _root(t)
        counts.append(sum(1 for r in root if r["content_type"] == 0))
    # Up to 2 x 2 = 4 root files are tolerated; the 5th commit flushes the existing four into
    # a leaf and adds its own file to the root (new files never join a flushed leaf).
    assert counts == [1, 2, 3, 4, 1, 2]
    assert ids(t) == list(range(6))


def test_default_root_caps_keep_single_file_appends_on_a_small_root(tmp_path: Path) -> None:
    # Defaults: maintenance flushes above 200 root data files, writers above 2 x 200 = 400,
    # so a table taking small appends and no maintenance keeps a root of at most 400 files.
    t = new_table(tmp_path)
    p = t.metadata.table_properties
    assert (p.root_max_data_files, p.root_max_delete_vectors, p.root_writer_flush_factor) == (200, 200, 2)
    rows = pa.table({"id": [0], "name": ["x"]}, schema=SCHEMA)
    root_files, flushed = [], []
    for _ in range(402):
        t.append(rows)
        summary = t.current_snapshot().summary
        root_files.append(int(summary.get("root-entries") or -1))
        flushed.append(summary.get("root-flushed-entries"))
    assert root_files[399] == 400 and root_files[400] == 2  # the leaf plus the 401st file
    assert root_files[401] == 3
    assert flushed[400] == "400" and flushed.count(None) == 401
    assert len(ids(t)) == 402


def test_large_manifest_dv_goes_to_puffin(tmp_path: Path) -> None:
    t, lb = (
        new_table(
            tmp_path, **{"commit.root.max-added-files": "0", "write.manifest-dv.inline-max-bytes": "0"}
        ),
        Labels(),
    )
    files = data_files(t, lb, [f"D{i}" for i in range(6)])
    commit_append(t, files)
    commit_change(t, remove=files[1:4])
    (mdv,) = [r for r in _root(t) if r["content_type"] == 5]
    assert mdv["deletion_vector"]["inline_content"] is None
    assert mdv["location"].endswith(".puffin") and mdv["record_count"] == 3
    assert ids(t) == [0, 4, 5]
    commit_change(t, remove=[files[0]])  # extending a Puffin manifest DV
    live = [r for r in _root(t) if r["content_type"] == 5 and r["version_info"]["status"] != 2]
    assert len(live) == 1 and live[0]["record_count"] == 4
    assert ids(t) == [4, 5]
    t.maintenance.flush_root(force=True).run()
    assert ids(t) == [4, 5]


def test_flush_moves_root_deletes_and_keeps_results(tmp_path: Path) -> None:
    from .support import dv_for

    t, lb = new_table(tmp_path), Labels()
    files = data_files(t, lb, ["A", "B"])
    commit_append(t, files)
    commit_change(t, add_deletes=[dv_for(t, lb, files[0], [0], "DV")])
    assert ids(t) == [1]
    plan = t.maintenance.flush_root(force=True).plan()
    assert plan.move_data_files and plan.move_delete_files
    res = t.maintenance.flush_root(force=True).run()
    assert res.data_files_moved == 2 and res.delete_files_moved == 1
    kinds = sorted(r["content_type"] for r in _root(t))
    assert kinds == [3, 4]
    assert ids(t) == [1]
