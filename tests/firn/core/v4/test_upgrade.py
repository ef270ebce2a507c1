"""Upgrading v2/v3 tables to V4 (seed 004 "Upgrade"): reads identical before and after; the
first V4 commit turns manifest-list entries into root entries pointing at the legacy Avro
manifests; manifest DVs can apply to those legacy manifests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import firn
from firn.manifests.v4_io import read_v4_manifest

from .support import Labels, commit_change, dv_for

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.timestamp("us"))])


def _rows(t: firn.table.table.Table, **scan: object) -> list[tuple[object, ...]]:  # type: ignore[name-defined]
    table = t.scan(**scan).to_arrow()
    return sorted(zip(*(table[c].to_pylist() for c in table.column_names)))


def _legacy_table(tmp_path: Path, version: str) -> firn.table.table.Table:  # type: ignore[name-defined]
    cat = firn.load_catalog(f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        partition_spec=[("region", "identity"), ("ts", "day")],
        properties={"format-version": version},
    )
    for i in range(3):
        t.append(
            pa.table(
                {
                    "id": [i * 10 + j for j in range(4)],
                    "region": ["eu", "us", "eu", "ap"],
                    "ts": [dt.datetime(2024, 1, 1 + j) for j in range(4)],
                },
                schema=SCHEMA,
            )
        )
    t.delete("id = 21")
    return t


@pytest.mark.parametrize("version", ["2", "3"])
def test_upgrade_keeps_reads_identical_and_first_commit_converts(tmp_path: Path, version: str) -> None:
    t = _legacy_table(tmp_path, version)
    before = _rows(t)
    history = [s.snapshot_id for s in t.snapshots()]
    t.upgrade(format_version=4)
    assert t.format_version == 4
    # Nothing rewritten yet: the current snapshot still has its manifest list.
    assert t.current_snapshot().manifest_list is not None
    assert _rows(t) == before
    assert _rows(t, filter="region = 'eu' and id > 5") == [r for r in before if r[1] == "eu" and r[0] > 5]

    new = pa.table({"id": [100], "region": ["eu"], "ts": [dt.datetime(2024, 2, 1)]}, schema=SCHEMA)
    t.append(new)
    snap = t.current_snapshot()
    assert snap.root_manifest is not None and snap.manifest_list is None
    root = read_v4_manifest(t.io, snap.root_manifest).to_pylist()
    legacy = [r for r in root if r["content_type"] == 3]
    assert legacy and all(r["file_format"] == "avro" for r in legacy)
    assert all(r["version_info"]["status"] == 0 for r in legacy)  # converting is no data change
    added = [r for r in root if r["content_type"] == 0]
    assert [r["version_info"]["status"] for r in added] == [1]
    assert _rows(t) == sorted([*before, (100, "eu", dt.datetime(2024, 2, 1))])
    # Time travel to pre-upgrade snapshots still reads their manifest lists.
    for sid in history:
        assert t.scan(snapshot_id=sid).to_arrow().num_rows > 0


@pytest.mark.parametrize("version", ["2", "3"])
def test_manifest_dv_applies_to_a_legacy_manifest_and_flush_rewrites_it(tmp_path: Path, version: str) -> None:
    t = _legacy_table(tmp_path, version)
    t.upgrade(format_version=4)
    before = _rows(t)
    t.delete("region = 'ap'")  # whole files inside legacy Avro manifests
    snap = t.current_snapshot()
    root = read_v4_manifest(t.io, snap.root_manifest).to_pylist()
    mdvs = [r for r in root if r["content_type"] == 5 and r["version_info"]["status"] == 1]
    assert mdvs, "removing files from a legacy manifest must add manifest DVs, not rewrite it"
    targets = {r["referenced_file"] for r in mdvs}
    assert all(loc.endswith(".avro") for loc in targets)
    expected = [r for r in before if r[1] != "ap"]
    assert _rows(t) == expected
    (change,) = t.changes(t.metadata.snapshot_log[-2].snapshot_id)
    assert sorted(f.record_count for f in change.removed_data_files) == [1, 1, 1]
    result = t.maintenance.flush_root(force=True).run()
    assert result.manifest_dvs_folded == len(mdvs)
    root = read_v4_manifest(t.io, t.current_snapshot().root_manifest).to_pylist()
    assert not [r for r in root if r["content_type"] == 5]
    assert _rows(t) == expected


def test_upgrade_with_deletion_vectors_reads_identically(tmp_path: Path) -> None:
    t = _legacy_table(tmp_path, "3")
    lb = Labels()
    task = next(iter(t.scan(filter="id = 0").plan_files()))
    dv = dv_for(t, lb, task.file, [0], "DV")
    commit_change(t, add_deletes=[dv])
    before = _rows(t)
    assert (0, "eu", dt.datetime(2024, 1, 1)) not in before
    t.upgrade(format_version=4)
    assert _rows(t) == before
    t.append(pa.table({"id": [7], "region": ["us"], "ts": [dt.datetime(2024, 3, 1)]}, schema=SCHEMA))
    assert _rows(t) == sorted([*before, (7, "us", dt.datetime(2024, 3, 1))])
    t.maintenance.flush_root(force=True).run()
    assert _rows(t) == sorted([*before, (7, "us", dt.datetime(2024, 3, 1))])


def test_upgrade_cannot_downgrade(tmp_path: Path) -> None:
    t = _legacy_table(tmp_path, "2")
    t.upgrade(format_version=4)
    with pytest.raises(firn.errors.ValidationError, match="downgrade"):
        t.upgrade(format_version=3)
