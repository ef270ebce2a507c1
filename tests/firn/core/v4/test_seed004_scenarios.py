"""Every example of seed 004 ("Iceberg Single File Commits", section "Examples"), built as
the same snapshots and checked against the same root and leaf contents.

``commit.root.max-added-files`` chooses the layout the seed's engine chose: 0 sends every
new file through a new leaf manifest, a large value keeps small changes in the root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from firn.manifests.v4_io import clear_v4_cache, read_v4_manifest

from .support import Labels, commit_append, commit_change, data_files, dv_for, ids, new_table, set_props, tree

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture
def fresh_cache() -> None:
    clear_v4_cache()


def leaf_mode(table, on: bool) -> None:  # type: ignore[no-untyped-def]
    set_props(table, **{"commit.root.max-added-files": "0" if on else "100"})


def test_appends_to_the_root_manifest(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    commit_append(t, data_files(t, lb, ["D1", "D2", "D3"]))
    s1 = tree(t, lb)
    assert s1 == {
        "root": [("M1", "ADDED")],
        "leaves": {"M1": [("D1", "ADDED"), ("D2", "ADDED"), ("D3", "ADDED")]},
    }
    leaf_mode(t, False)
    commit_append(t, data_files(t, lb, ["D4"], 4))
    assert tree(t, lb)["root"] == [("D4", "ADDED"), ("M1", "EXISTING")]
    commit_append(t, data_files(t, lb, ["D5"], 5))
    s3 = tree(t, lb)
    assert s3["root"] == [("D4", "EXISTING"), ("D5", "ADDED"), ("M1", "EXISTING")]
    # The leaf is shared, unchanged, by all three snapshots.
    assert s3["leaves"]["M1"] == s1["leaves"]["M1"]
    assert ids(t) == [0, 1, 2, 4, 5]


def test_single_file_append_writes_only_root_and_metadata(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    commit_append(t, data_files(t, lb, ["D1"]))
    (f,) = data_files(t, lb, ["D2"], 2)
    meta_dir = Path(t.location) / "metadata"
    before = set(os.listdir(meta_dir))
    commit_append(t, [f])
    new = sorted(set(os.listdir(meta_dir)) - before)
    assert len(new) == 2
    assert new[0].endswith(".metadata.json") and new[1].startswith("root-")


def test_appends_through_new_data_manifests(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    commit_append(t, data_files(t, lb, ["D1", "D2", "D3"]))
    commit_append(t, data_files(t, lb, ["D4", "D5", "D6"], 4))
    s2 = tree(t, lb)
    assert s2["root"] == [("M1", "EXISTING"), ("M2", "ADDED")]
    assert s2["leaves"]["M2"] == [("D4", "ADDED"), ("D5", "ADDED"), ("D6", "ADDED")]
    assert s2["leaves"]["M1"] == [("D1", "ADDED"), ("D2", "ADDED"), ("D3", "ADDED")]


def test_removing_a_file_from_the_root(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    d1, d2 = data_files(t, lb, ["D1", "D2"])
    commit_append(t, [d1, d2])
    commit_change(t, remove=[d1])
    assert tree(t, lb)["root"] == [("D1", "DELETED"), ("D2", "EXISTING")]
    assert ids(t) == [1]
    # DELETED entries appear only in the snapshot that deletes.
    commit_append(t, data_files(t, lb, ["D3"], 3))
    assert tree(t, lb)["root"] == [("D2", "EXISTING"), ("D3", "ADDED")]


def test_removing_a_file_from_a_leaf_adds_a_manifest_dv(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    d1, d2, d3 = data_files(t, lb, ["D1", "D2", "D3"])
    commit_append(t, [d1, d2, d3])
    leaf_before = tree(t, lb)["leaves"]["M1"]
    commit_change(t, remove=[d2])
    s2 = tree(t, lb)
    assert s2["root"] == [("M1", "EXISTING"), ("MDV(M1)", "ADDED")]
    # The leaf is not rewritten: same file, same entries.
    assert s2["leaves"] == {"M1": leaf_before}
    mdv = _root_rows(t, content_type=5)[0]
    from pyroaring import BitMap

    assert list(BitMap.deserialize(mdv["deletion_vector"]["inline_content"])) == [1]  # D2 is ordinal 1
    assert ids(t) == [0, 2]


def test_overwrite_files_in_the_root(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    (d1,) = data_files(t, lb, ["D1"])
    commit_append(t, [d1])
    (d2,) = data_files(t, lb, ["D2"], 2)
    commit_change(t, add=[d2], remove=[d1])
    assert tree(t, lb)["root"] == [("D1", "DELETED"), ("D2", "ADDED")]
    (d3,) = data_files(t, lb, ["D3"], 3)
    commit_change(t, add=[d3], remove=[d2])
    assert tree(t, lb)["root"] == [("D2", "DELETED"), ("D3", "ADDED")]
    assert ids(t) == [3]


def test_overwrite_files_in_a_leaf(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    d1, d2, d3 = data_files(t, lb, ["D1", "D2", "D3"])
    commit_append(t, [d1, d2, d3])
    leaf_mode(t, False)
    (d4,) = data_files(t, lb, ["D4"], 4)
    commit_change(t, add=[d4], remove=[d2])
    s2 = tree(t, lb)
    assert s2["root"] == [("D4", "ADDED"), ("M1", "EXISTING"), ("MDV(M1)", "ADDED")]
    assert ids(t) == [0, 2, 4]


def test_root_only_row_delta(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    (d1,) = data_files(t, lb, ["D1"])
    commit_append(t, [d1])
    (d2,) = data_files(t, lb, ["D2"], 2)
    dv1 = dv_for(t, lb, d1, [0], "DV1")
    commit_change(t, add=[d2], add_deletes=[dv1])
    assert tree(t, lb)["root"] == [("D1", "EXISTING"), ("D2", "ADDED"), ("DV1", "ADDED")]
    assert ids(t) == [2]  # D1's only row is deleted by DV1


def test_complex_row_delta_replaces_a_dv_through_a_manifest_dv(tmp_path: Path) -> None:
    # Seed labels: data manifest DM1 is "M1" here, delete manifest DVM1 is "DM1", DVM2 "DM2",
    # data manifest DM2 "M2", and the manifest DV "DV3" is "MDV(DM1)".
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    d1 = two_row_file(t, lb, "D1", 0)
    d2 = two_row_file(t, lb, "D2", 10)
    commit_append(t, [d1, d2])
    dv1, dv2 = dv_for(t, lb, d1, [0], "DV1"), dv_for(t, lb, d2, [1], "DV2")
    commit_change(t, add_deletes=[dv1, dv2])
    s1 = tree(t, lb)
    assert s1 == {
        "root": [("DM1", "ADDED"), ("M1", "EXISTING")],
        "leaves": {"M1": [("D1", "ADDED"), ("D2", "ADDED")], "DM1": [("DV1", "ADDED"), ("DV2", "ADDED")]},
    }
    assert ids(t) == [1, 10]
    # Snapshot 2: more rows of D1 deleted -> DV4 (merging DV1's positions) in a new delete
    # manifest; DV1 is removed through a manifest DV on DVM1; the updated rows go to D3 in a
    # new data manifest.
    dv4 = dv_for(t, lb, d1, [0, 1], "DV4")
    (d3,) = data_files(t, lb, ["D3"], 20)
    commit_change(t, add=[d3], add_deletes=[dv4], remove_deletes=[dv1])
    assert tree(t, lb) == {
        "root": [
            ("DM1", "EXISTING"),
            ("DM2", "ADDED"),
            ("M1", "EXISTING"),
            ("M2", "ADDED"),
            ("MDV(DM1)", "ADDED"),
        ],
        "leaves": {
            "M1": [("D1", "ADDED"), ("D2", "ADDED")],
            "DM1": [("DV1", "ADDED"), ("DV2", "ADDED")],  # not rewritten
            "M2": [("D3", "ADDED")],
            "DM2": [("DV4", "ADDED")],
        },
    }
    assert ids(t) == [10, 20]
    (ch,) = t.changes(t.metadata.snapshot_log[-2].snapshot_id)
    assert [lb.by_path[f.file_path] for f in ch.added_data_files] == ["D3"]
    assert [lb.by_path[f.file_path] for f in ch.added_delete_files] == ["DV4"]
    assert [lb.by_path[f.file_path] for f in ch.removed_delete_files] == ["DV1"]


def two_row_file(t, lb: Labels, name: str, base: int):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    from firn.core.writer import write_data_files

    from .support import SCHEMA

    (f,) = write_data_files(
        t.io, t.metadata, pa.table({"id": [base, base + 1], "name": [name, name]}, schema=SCHEMA)
    )
    lb.name(f.file_path, name)
    return f


def test_manifest_compaction_during_an_append(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    d1, d2, d3 = data_files(t, lb, ["D1", "D2", "D3"])
    commit_append(t, [d1, d2, d3])
    d4, d5, d6 = data_files(t, lb, ["D4", "D5", "D6"], 4)
    commit_append(t, [d4, d5, d6])
    commit_change(t, remove=[d1])  # DV1: M1 ordinal 0
    commit_change(t, remove=[d5])  # DV2: M2 ordinal 1
    s1 = tree(t, lb)
    assert s1["root"] == [
        ("M1", "EXISTING"),
        ("M2", "EXISTING"),
        ("MDV(M1)", "EXISTING"),
        ("MDV(M2)", "ADDED"),
    ]
    rows_before = ids(t)
    leaf_mode(t, False)
    (d7,) = data_files(t, lb, ["D7"], 7)
    commit_append(t, [d7], compact=True)
    s2 = tree(t, lb)
    assert s2["root"] == [("D7", "ADDED"), ("M3", "EXISTING")]
    assert s2["leaves"]["M3"] == [
        ("D2", "EXISTING"),
        ("D3", "EXISTING"),
        ("D4", "EXISTING"),
        ("D6", "EXISTING"),
    ]
    assert ids(t) == sorted([*rows_before, 7])
    # Compaction is not a data change: the only change of snapshot 2 is D7.
    (ch,) = t.changes(t.metadata.snapshot_log[-2].snapshot_id)
    assert [lb.by_path[f.file_path] for f in ch.added_data_files] == ["D7"]
    assert ch.removed_data_files == ()


def test_combining_an_existing_manifest_dv_with_its_target(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    d1, d2, d3 = data_files(t, lb, ["D1", "D2", "D3"])
    commit_append(t, [d1, d2, d3])
    commit_change(t, remove=[d2])
    assert tree(t, lb)["root"] == [("M1", "EXISTING"), ("MDV(M1)", "ADDED")]
    result = t.maintenance.flush_root(force=True).run()
    assert result.manifest_dvs_folded == 1 and result.leaves_written == 1
    s = tree(t, lb)
    assert s["root"] == [("M2", "EXISTING")]
    assert s["leaves"]["M2"] == [("D1", "EXISTING"), ("D3", "EXISTING")]
    assert ids(t) == [0, 2]


def test_writers_never_rewrite_a_leaf_with_a_net_change(tmp_path: Path) -> None:
    t, lb = new_table(tmp_path), Labels()
    leaf_mode(t, True)
    files = data_files(t, lb, ["D1", "D2", "D3"])
    commit_append(t, files)
    leaf_loc = _root_rows(t, content_type=3)[0]["location"]
    leaf_bytes = Path(leaf_loc).read_bytes()
    for f in files:  # even removing every file of the leaf keeps it, masked by one manifest DV
        commit_change(t, remove=[f])
    rows = _root_rows(t)
    assert [r["location"] for r in rows if r["content_type"] == 3] == [leaf_loc]
    assert Path(leaf_loc).read_bytes() == leaf_bytes
    live_mdvs = [r for r in rows if r["content_type"] == 5 and r["version_info"]["status"] != 2]
    assert len(live_mdvs) == 1 and live_mdvs[0]["record_count"] == 3
    assert ids(t) == []


def _root_rows(t, content_type=None):  # type: ignore[no-untyped-def]
    rows = read_v4_manifest(t.io, t.current_snapshot().root_manifest).to_pylist()
    return [r for r in rows if content_type is None or r["content_type"] == content_type]
