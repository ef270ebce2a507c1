"""V4 reliability with real processes on a real SQLite catalog: concurrent small commits all
land; a writer killed between writing its root manifest and the catalog swap leaves the table
at its previous state, readable, and writable.

The concurrent writers start at a barrier after their imports and table loads, and the test
checks that they raced (``tests/fixtures/races.py``): retried commits and two writers'
commits in flight at once. A serial run fails."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn
from tests.fixtures.races import TimedCommit, assert_raced, timed_commit

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32())])
WRITERS = 4
COMMITS = 12


def _catalog(tmp: str) -> firn.catalog.Catalog:  # type: ignore[name-defined]
    return firn.load_catalog(f"sqlite:///{tmp}/catalog.db", warehouse=f"{tmp}/wh")


def _writer(tmp: str, writer: int, barrier: Any, results: Any) -> None:
    """A child process: COMMITS single-row appends once every writer is ready; reports them."""
    table = _catalog(tmp).load_table("db.t")
    barrier.wait(timeout=120)
    made: list[TimedCommit] = []
    for i in range(COMMITS):
        row = pa.table({"id": [writer * 1000 + i], "writer": [writer]}, schema=SCHEMA)
        made.append(timed_commit(writer, lambda tx, row=row: tx.append(row), table))
    results.put(made)


@pytest.mark.parametrize(
    "props",
    [
        {},
        # A writer flush every few commits: writers race each other's flushes, and a retried
        # commit must flush (or not) against the root it lands on.
        {"commit.root.max-data-files": "2", "commit.root.writer-flush-factor": "2"},
    ],
    ids=["defaults", "writer-flushes"],
)
def test_concurrent_small_commits_from_four_processes_all_land(tmp_path: Path, props: dict[str, str]) -> None:
    cat = _catalog(str(tmp_path))
    cat.create_namespace("db")
    cat.create_table("db.t", schema=SCHEMA, properties=props)  # V4 by default
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, barrier, results)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    commits: list[TimedCommit] = []
    reports = 0
    deadline = time.monotonic() + 300
    try:
        while reports < WRITERS:  # drained before join: a child with queued data cannot exit
            try:
                commits += results.get(timeout=1)
                reports += 1
            except queue.Empty:
                crashed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    pytest.fail(f"writers crashed or hung (exit codes {[p.exitcode for p in procs]})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert_raced(commits)
    t = cat.load_table("db.t")
    assert t.format_version == 4
    ids = sorted(t.scan().to_arrow()["id"].to_pylist())
    assert ids == sorted(w * 1000 + i for w in range(WRITERS) for i in range(COMMITS))
    # One linear chain of WRITERS * COMMITS snapshots, each adding exactly one file.
    chain = t.metadata.ancestors_of(t.metadata.current_snapshot_id)
    assert len(chain) == WRITERS * COMMITS == len(t.snapshots())
    assert {s.snapshot_id for s in chain} == {c.snapshot_id for c in commits}  # every reported commit
    assert all(s.summary.get("added-data-files") == "1" for s in chain)
    assert all(s.root_manifest is not None for s in chain)
    flushes = sum(1 for s in chain if s.summary.get("root-flushed-entries"))
    assert (flushes > 0) == bool(props)


CRASHER = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow as pa
    import firn
    tmp = sys.argv[1]
    cat = firn.load_catalog(f"sqlite:///{tmp}/catalog.db", warehouse=f"{tmp}/wh")
    table = cat.load_table("db.t")

    def die(*args, **kwargs):
        # The root manifest and metadata file are written; the swap never happens.
        os.kill(os.getpid(), signal.SIGKILL)

    cat.swap_metadata_location = die
    table.catalog = cat
    table.append(pa.table({"id": [999], "writer": [9]}, schema=pa.schema([("id", pa.int64()), ("writer", pa.int32())])))
    """
)


def test_writer_killed_between_root_write_and_swap_leaves_previous_state(tmp_path: Path) -> None:
    cat = _catalog(str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    t.append(pa.table({"id": [1, 2], "writer": [0, 0]}, schema=SCHEMA))
    before_location = cat.load_table("db.t").metadata_location
    meta_dir = Path(t.location) / "metadata"
    files_before = set(os.listdir(meta_dir))

    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr

    new_files = set(os.listdir(meta_dir)) - files_before
    assert any(f.startswith("root-") for f in new_files), "the writer died after writing its root manifest"
    reloaded = cat.load_table("db.t")
    assert reloaded.metadata_location == before_location
    assert sorted(reloaded.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    # The orphaned root is not referenced, and the table keeps working.
    reloaded.append(pa.table({"id": [3], "writer": [0]}, schema=SCHEMA))
    assert sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]


@pytest.mark.parametrize("corruption", ["truncate", "garbage", "wrong-kind"])
def test_corrupt_root_manifest_is_reported_with_its_location(tmp_path: Path, corruption: str) -> None:
    from firn.errors import InvalidMetadata
    from firn.manifests.v4_io import clear_v4_cache

    cat = _catalog(str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    t.append(pa.table({"id": [1], "writer": [0]}, schema=SCHEMA))
    root = t.current_snapshot().root_manifest
    assert root is not None
    data = Path(root).read_bytes()
    if corruption == "truncate":
        Path(root).write_bytes(data[: len(data) // 2])
    elif corruption == "garbage":
        Path(root).write_bytes(b"not parquet at all")
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(root)
        with pq.ParquetWriter(root, table.schema) as w:
            w.write_table(table)
            w.add_key_value_metadata({"format-version": "4", "content": "data"})
    clear_v4_cache()
    with pytest.raises(InvalidMetadata, match=Path(root).name):
        t.scan().to_arrow()


def test_leaf_holding_a_manifest_entry_violates_the_two_level_tree(tmp_path: Path) -> None:
    from firn.errors import InvalidMetadata
    from firn.manifests.v4_io import validate_entries

    cat = _catalog(str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", schema=SCHEMA, properties={"commit.root.max-added-files": "0"})
    t.append(pa.table({"id": [1], "writer": [0]}, schema=SCHEMA))
    import pyarrow.parquet as pq

    root = pq.read_table(t.current_snapshot().root_manifest)
    # The root holds a data manifest entry; as a *leaf* that would be a third tree level.
    with pytest.raises(InvalidMetadata, match="two levels"):
        validate_entries(root, "data", "leaf.parquet")
