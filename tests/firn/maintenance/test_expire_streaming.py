"""Incremental expiry reads expired snapshots in batches and V4 removals from the root's paths
alone; the result is the reachable strategy's, whatever the batch size."""

from __future__ import annotations

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.trees import snapshot_changes
from firn.maintenance import expire_files, reachability
from firn.maintenance.expire_files import _incremental, _reachable, linear_history
from firn.maintenance.reachability import FileSet, content_kind, read_tree, removed_by

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def _batch(start: int, n: int = 10) -> pa.Table:
    return pa.table({"id": range(start, start + n), "g": ["a", "b"] * (n // 2)}, schema=SCHEMA)


def _v4_history(catalog: SqlCatalog) -> object:
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    t = catalog.create_table(
        "db.s",
        schema=SCHEMA,
        partition_spec=[("g", "identity")],
        properties={"format-version": "4", "write.delete.mode": "merge-on-read"},
    )
    for i in range(6):
        t.append(_batch(10 * i))
    t.maintenance.flush_root(force=True).run()  # files move into leaves
    t.delete("g = 'a' and id < 20")  # whole files out of leaves: manifest DVs
    t.delete("id = 31")  # a DV
    t.append(_batch(2000))
    t.delete("g = 'b' and id < 40")  # more manifest DVs replacing earlier ones
    t.append(_batch(3000))
    return t


@pytest.mark.parametrize("batch", [1, 2, 16])
def test_batched_incremental_equals_reachable(
    sqlite_catalog: SqlCatalog, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expire_files, "INCREMENTAL_BATCH", batch)
    t = _v4_history(sqlite_catalog)
    md = t.metadata  # type: ignore[attr-defined]
    for keep in (1, 2, 4):
        chain = linear_history(
            md, frozenset(s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id)[keep:])
        )
        assert chain is not None
        expired = frozenset(s.snapshot_id for s in chain[keep:])
        incremental = _incremental(t.io, md, chain, keep).files  # type: ignore[attr-defined]
        reachable = _reachable(t.io, md, expired).files  # type: ignore[attr-defined]
        assert {k: set(v) for k, v in incremental.items()} == {k: set(v) for k, v in reachable.items()}
    assert any(incremental.values())


def test_v4_removed_by_equals_snapshot_changes(sqlite_catalog: SqlCatalog) -> None:
    """The root-only removal read gives exactly the removals snapshot_changes decodes."""
    t = _v4_history(sqlite_catalog)
    md = t.metadata  # type: ignore[attr-defined]
    removing = 0
    for s in md.snapshots:
        expected = FileSet()
        changes = snapshot_changes(t.io, md, s)  # type: ignore[attr-defined]
        for f in (*changes.removed_data_files, *changes.removed_delete_files):
            expected.add(content_kind(int(f.content), f.file_format.value), f.file_path, f.file_size_in_bytes)
        got = removed_by(t.io, md, read_tree(t.io, md, s))  # type: ignore[attr-defined]
        assert got.files == expected.files
        removing += bool(expected.count())
    assert removing >= 2  # the manifest-DV deletes and the DV delete remove files


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_streaming_reachability_equals_the_whole_walk(
    sqlite_catalog: SqlCatalog, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Orphan removal's streamed walk reaches exactly the files the all-trees walk does,
    whatever the batch sizes (manifest DVs intersected across the roots that list a leaf)."""
    monkeypatch.setattr(reachability, "STREAM_TREES", batch)
    monkeypatch.setattr(reachability, "STREAM_MANIFESTS", batch)
    t = _v4_history(sqlite_catalog)
    md = t.metadata  # type: ignore[attr-defined]
    snapshots = list(md.snapshots)
    whole = reachability.reachable(t.io, md, reachability.read_trees(t.io, md, snapshots))  # type: ignore[attr-defined]
    streamed = reachability.reachable_streaming(t.io, md, snapshots)  # type: ignore[attr-defined]
    assert streamed.files == whole.files
    assert streamed.count() > 20
    # A subset of the history too (what a branch-only walk would see).
    part = snapshots[: len(snapshots) // 2]
    assert (
        reachability.reachable_streaming(t.io, md, part).files  # type: ignore[attr-defined]
        == reachability.reachable(t.io, md, reachability.read_trees(t.io, md, part)).files  # type: ignore[attr-defined]
    )
