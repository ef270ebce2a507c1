"""Issue 4 item 9c: planning a 1,000,000-file table, Firn V4 vs PyIceberg planning the v2 twin.

    .venv/bin/python bench/bench_v4_planning.py [--leaves 1000] [--files-per-leaf 1000]
                                                [--repeats 3] [--quick] [--rebuild]

The tables are synthetic (data files need not exist for planning) and cached under
``bench/.cache/planning-<leaves>x<files-per-leaf>/``, keyed by size, so reruns skip the build:

* a Firn V4 table built by ``--leaves`` commits of ``--files-per-leaf`` DataFiles each, with
  ``commit.root.max-added-files`` low enough that every commit writes one leaf manifest;
* a Firn v2 table holding the same DataFiles, one Avro manifest per commit (manifest merging
  off), registered in a PyIceberg ``SqlCatalog`` so PyIceberg 0.12 plans exactly that table.

Every data file has stats (value/null counts, bounds) for four columns; ``id`` ranges are
clustered per leaf (leaf *k* holds ids ``[k·F·R, (k+1)·F·R)``), ``category`` is random.

Measured (median of ``--repeats``), each from a cold manifest cache:

* Firn: ``scan().plan_files()`` to the columnar plan (``PlannedTasks.table``); the same call
  as PyIceberg's, ``list(scan().plan_files())``, a list of ``FileScanTask`` objects (views on
  the columnar plan whose file, deletes and residual decode when first read); and that list
  with every task's file, deletes and residual read, so every task is fully decoded;
* PyIceberg: ``list(scan().plan_files())`` (its tasks are decoded as they are built);

printed as entries/second with the PyIceberg-over-Firn ratio for each Firn number (target
>= 30x; the verdict is on the same call, ``list(scan().plan_files())``; the fully decoded
number is printed beside it with its own verdict).
Then a selective filter on ``id`` (one leaf's range): how many leaves the Firn planner opens
(counted at the manifest reader), target <= 10% of leaves.
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from _harness import (
    CACHE_DIR,
    final_verdict,
    firn_catalog,
    median,
    pyiceberg_catalog,
    quiet_peers,
    timed,
    verdict,
)

SPEEDUP_TARGET = 30.0
LEAF_FRACTION_TARGET = 0.10
ROWS_PER_FILE = 1000
CATEGORIES = 64
READY = "READY"

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
    ]
)


def _long(v: int) -> bytes:
    return struct.pack("<q", v)


def _double(v: float) -> bytes:
    return struct.pack("<d", v)


def make_files(location: str, leaf: int, per_leaf: int, rng: random.Random) -> list[Any]:
    """One leaf's synthetic DataFiles: field ids 1 id, 2 ts, 3 category, 4 value."""
    from firn.spec.content import DataFile, FileContent, FileFormat

    out = []
    ts0 = 1_700_000_000_000_000
    for j in range(per_leaf):
        g = leaf * per_leaf + j
        lo_id, hi_id = g * ROWS_PER_FILE, g * ROWS_PER_FILE + ROWS_PER_FILE - 1
        c1, c2 = sorted(rng.randrange(CATEGORIES) for _ in range(2))
        v1, v2 = sorted((rng.uniform(-1e6, 1e6), rng.uniform(-1e6, 1e6)))
        counts = {1: ROWS_PER_FILE, 2: ROWS_PER_FILE, 3: ROWS_PER_FILE, 4: ROWS_PER_FILE}
        nulls = {1: 0, 2: 0, 3: rng.randrange(3), 4: 0}
        out.append(
            DataFile(
                FileContent.DATA,
                f"{location}/data/leaf-{leaf:05d}/{g:08d}-{rng.getrandbits(64):016x}.parquet",
                FileFormat.PARQUET,
                (),
                ROWS_PER_FILE,
                40_000 + rng.randrange(20_000),
                0,
                value_counts=counts,
                null_value_counts=nulls,
                nan_value_counts={4: 0},
                lower_bounds={
                    1: _long(lo_id),
                    2: _long(ts0 + lo_id * 1_000),
                    3: f"cat-{c1:03d}".encode(),
                    4: _double(v1),
                },
                upper_bounds={
                    1: _long(hi_id),
                    2: _long(ts0 + hi_id * 1_000),
                    3: f"cat-{c2:03d}".encode(),
                    4: _double(v2),
                },
            )
        )
    return out


def build(cache: Path, leaves: int, per_leaf: int) -> None:
    """Build both tables into ``cache`` (a fresh directory)."""
    from firn.core.actions.append import AppendFiles
    from firn.core.transaction import Transaction
    from firn.manifests.v4_io import clear_v4_cache

    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    catalog = firn_catalog(cache)
    v4 = catalog.create_table(
        "db.v4",
        schema=SCHEMA,
        properties={
            "format-version": "4",
            # Every commit's files go to a new leaf (appends above this go through a leaf).
            "commit.root.max-added-files": "0",
        },
    )
    v2 = catalog.create_table(
        "db.v2",
        schema=SCHEMA,
        properties={"format-version": "2", "commit.manifest-merge.enabled": "false"},
    )
    rng = random.Random(4)
    print(f"building {leaves:,} commits x {per_leaf:,} files into {cache} (once; cached) ...", flush=True)
    for leaf in range(leaves):
        files = make_files(v4.location, leaf, per_leaf, rng)
        Transaction(v4).add_action(AppendFiles(files)).commit()
        Transaction(v2).add_action(AppendFiles(files)).commit()
        if leaf % 50 == 49:
            clear_v4_cache()
            print(f"  {leaf + 1:,}/{leaves:,} commits", flush=True)
    pyiceberg_catalog(cache).register_table(("db", "v2"), v2.metadata_location)
    (cache / READY).write_text(f"{leaves} {per_leaf}\n")


def firn_plan(table: Any, row_filter: Any = None) -> tuple[float, float, float, int]:
    """Cumulative seconds: to the columnar plan, to the list of tasks, to every task decoded;
    and the number of files."""
    from firn.manifests import cache as avro_cache
    from firn.manifests.v4_io import clear_v4_cache

    clear_v4_cache()
    avro_cache.clear_caches()
    gc.collect()
    scan = table.scan(filter=row_filter) if row_filter is not None else table.scan()
    planning, plan = timed(scan.plan_files)
    listing, tasks = timed(lambda: list(plan))
    decoding, _ = timed(lambda: decode_all(tasks))
    return planning, planning + listing, planning + listing + decoding, len(tasks)


def decode_all(tasks: list[Any]) -> int:
    """Read every task's file, deletes and residual (each task fully decoded). Nothing is
    kept: a list of 100,000 result tuples would set off the garbage collector's full passes
    over every task and file, a cost of the benchmark's own containers, not of decoding (the
    object floor below is measured with the collector off)."""
    n = 0
    for t in tasks:
        if t.file is not None and t.delete_files is not None:
            n += t.residual is not None
    return n


def py_plan(table: Any, row_filter: Any = None) -> tuple[float, int]:
    gc.collect()
    scan = table.scan(row_filter=row_filter) if row_filter is not None else table.scan()
    seconds, tasks = timed(lambda: list(scan.plan_files()))
    return seconds, len(tasks)


def object_floor(n: int) -> float:
    """Seconds to construct ``n`` minimal DataFile + FileScanTask pairs with Firn's fastest
    builders (collector off, as Firn's materialization runs)."""
    from firn.core.planning import make_file_scan_task
    from firn.spec.content import FileContent, FileFormat, make_data_file

    paths = [f"s3://bucket/t/data/{i:08d}.parquet" for i in range(n)]
    gc.collect()
    gc.disable()
    try:
        seconds, tasks = timed(
            lambda: [
                make_file_scan_task(
                    make_data_file(FileContent.DATA, p, FileFormat.PARQUET, (), 1000, 50_000, 0), 1
                )
                for p in paths
            ]
        )
    finally:
        gc.enable()
    del tasks
    return seconds


def count_leaf_reads(fn: Callable[[], object]) -> set[str]:
    """The leaf manifests read (not served from cache) while ``fn`` runs."""
    import firn.core.v4.reader as state

    opened: set[str] = set()
    original = state.read_v4_manifest

    def counting(io: Any, location: str, **kw: Any) -> pa.Table:
        if kw.get("expected") != "root":
            opened.add(location)
        return original(io, location, **kw)

    state.read_v4_manifest = counting  # type: ignore[assignment]
    try:
        fn()
    finally:
        state.read_v4_manifest = original  # type: ignore[assignment]
    return opened


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=1000, help="commits = leaf manifests (v2: manifests)")
    ap.add_argument("--files-per-leaf", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per planner (median)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 leaves x 500 files, 1 repeat")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached tables")
    args = ap.parse_args()
    if args.quick:
        args.leaves, args.files_per_leaf, args.repeats = 20, 500, 1
    quiet_peers()
    leaves, per_leaf = args.leaves, args.files_per_leaf
    total = leaves * per_leaf

    import firn
    from firn.manifests.v4_io import clear_v4_cache

    cache = CACHE_DIR / f"planning-{leaves}x{per_leaf}"
    if args.rebuild or not (cache / READY).exists():
        build(cache, leaves, per_leaf)
    v4 = firn_catalog(cache).load_table("db.v4")
    py = pyiceberg_catalog(cache).load_table(("db", "v2"))
    print(
        f"\nPlanning {total:,} data files: Firn V4 ({leaves:,} leaves of {per_leaf:,}) vs PyIceberg "
        f"v2 ({leaves:,} Avro manifests of {per_leaf:,}); median of {args.repeats}, cold caches\n"
    )

    firn_cols: list[float] = []
    firn_list: list[float] = []
    firn_full: list[float] = []
    py_s: list[float] = []
    for r in range(args.repeats):
        # Alternate who goes first so noise hits both alike.
        order = ["firn", "py"] if r % 2 == 0 else ["py", "firn"]
        for who in order:
            if who == "firn":
                cols, listed, full, n = firn_plan(v4)
                assert n == total, f"Firn planned {n} files, expected {total}"
                firn_cols.append(cols)
                firn_list.append(listed)
                firn_full.append(full)
            else:
                seconds, n = py_plan(py)
                assert n == total, f"PyIceberg planned {n} files, expected {total}"
                py_s.append(seconds)
        print(
            f"  run {r + 1}: Firn plan {firn_cols[-1]:.2f} s, task list {firn_list[-1]:.2f} s, "
            f"decoded {firn_full[-1]:.2f} s; "
            f"PyIceberg {py_s[-1]:.2f} s",
            flush=True,
        )
    # Warm (manifests cached in memory), for reference only.
    v4.scan().plan_files()
    warm_cols, warm_plan = timed(v4.scan().plan_files)
    warm_list, warm_tasks = timed(lambda: list(warm_plan))
    warm_decode, _ = timed(lambda: [(t.file, t.delete_files) for t in warm_tasks])
    warm_full = warm_cols + warm_list + warm_decode

    fc, fl, ff, pp = median(firn_cols), median(firn_list), median(firn_full), median(py_s)
    rate = total / 1.0
    print(f"\n{'planner':<44} {'median':>9} {'entries/s':>12} {'PyIceberg/Firn':>15}")
    print(f"{'PyIceberg 0.12 list(scan().plan_files())':<44} {pp:>8.2f}s {rate / pp:>12,.0f} {'':>15}")
    print(f"{'Firn V4 plan_files() -> columnar plan':<44} {fc:>8.2f}s {rate / fc:>12,.0f} {pp / fc:>14.1f}x")
    print(f"{'Firn V4 list(scan().plan_files())':<44} {fl:>8.2f}s {rate / fl:>12,.0f} {pp / fl:>14.1f}x")
    print(f"{'Firn V4 ... + every task decoded':<44} {ff:>8.2f}s {rate / ff:>12,.0f} {pp / ff:>14.1f}x")
    print(
        f"{'  (Firn warm cache: columnar / decoded)':<44} {warm_cols:>8.2f}s {rate / warm_cols:>12,.0f}"
        f"  {warm_full:.2f}s"
    )
    print(
        f"\nspeedup, list(scan().plan_files()) on both: {pp / fl:.1f}x (target >= {SPEEDUP_TARGET:.0f}x) "
        f"{verdict(pp / fl >= SPEEDUP_TARGET)}; to the columnar plan: {pp / fc:.1f}x "
        f"{verdict(pp / fc >= SPEEDUP_TARGET)}; with every Firn task decoded: {pp / ff:.1f}x "
        f"{verdict(pp / ff >= SPEEDUP_TARGET)}"
    )

    # Context for the materialized number: the cost of the Python objects alone.
    floor = object_floor(total)
    print(
        f"(floor for any planner returning Python tasks: building {total:,} bare DataFile + "
        f"FileScanTask objects takes {floor:.2f} s here = {floor / ff:.0%} of Firn's fully decoded plan)"
    )

    # Selective filter: one leaf's id range (ids are clustered per leaf).
    target_leaf = leaves // 2
    lo = target_leaf * per_leaf * ROWS_PER_FILE + 10 * ROWS_PER_FILE
    hi = lo + 5 * ROWS_PER_FILE
    expr = firn.col("id") >= lo
    expr = expr & (firn.col("id") < hi)
    clear_v4_cache()
    result: dict[str, Any] = {}
    opened = count_leaf_reads(lambda: result.setdefault("tasks", list(v4.scan(filter=expr).plan_files())))
    sel_s, sel_n = firn_plan(v4, expr)[2:]
    py_sel_s, py_sel_n = py_plan(py, f"id >= {lo} and id < {hi}")
    frac = len(opened) / leaves
    print(
        f"\nselective filter {lo} <= id < {hi}: Firn opened {len(opened)} of {leaves:,} leaves "
        f"({frac:.1%}; target <= {LEAF_FRACTION_TARGET:.0%}) {verdict(frac <= LEAF_FRACTION_TARGET)}; "
        f"planned {len(result['tasks'])} files in {sel_s * 1e3:.0f} ms (PyIceberg: {py_sel_n} files in "
        f"{py_sel_s * 1e3:.0f} ms, opening all {leaves:,} manifests)"
    )
    assert sel_n == len(result["tasks"]) == py_sel_n
    return 0


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
