"""Spark compaction: ``rewrite_data_files`` through ``SparkRunner`` on local[2] vs the local
runner and vs a bare pyarrow copy of the same files.

Issue 12 ("Speed"): 2,000 small files of 5,000 rows each; print rows/s of the Spark-run
compaction against the local runner and a bare pyarrow copy, with the fixed cost (session
start, planning) apart from the per-row cost.

Setup: a v2 table whose ``--files`` data files of ``--rows-per-file`` rows each are written
by ``firn.core.writer.write_data_files`` and committed in one append. Then, on the same table
state (the current snapshot is rolled back to it between runs):

* pyarrow copy: read every data file with ``pyarrow.parquet`` and write the rows again as
  one Parquet file per 512 MiB of Arrow data (no Iceberg metadata): the floor for moving bytes;
* local runner: ``table.maintenance.rewrite_data_files().plan()`` then ``execute`` with the
  thread-pool runner;
* Spark runner: the same, with ``firn.spark.SparkRunner`` on a local[2] session.

Fixed costs are printed apart: Spark session start (once), planning (per run), and the
per-row cost is (execute time) / rows. ``rewrite_data_files`` is built on the maint-rewrite
branch; in a build without it the script says so and measures the pyarrow copy and the fixed
Spark cost only (the comparison runs once the branches are merged).

Run: ``.venv/bin/python bench/bench_spark_compaction.py [--files N] [--rows-per-file N] [--quick]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import firn
from _harness import local_path, spark_session, workdir
from firn.core.writer import write_data_files
from firn.maintenance import LocalRunner

TARGET_BYTES = 512 * 1024 * 1024


def make_rows(start: int, count: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "region": pa.array(np.array(["eu", "us", "ap", "sa"])[ids % 4]),
            "amount": rng.random(count) * 1000,
            "ts": pa.array(1_700_000_000_000_000 + ids * 1_000_000, pa.timestamp("us", tz="UTC")),
            "note": pa.array(np.char.add("note-", (ids % 9973).astype(str))),
        }
    )


def build(catalog: Any, files: int, per_file: int) -> Any:
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.small", make_rows(0, 1, np.random.default_rng(0)).schema, properties={"format-version": "2"}
    )
    rng = np.random.default_rng(3)
    written = []
    for i in range(files):
        written.extend(write_data_files(table.io, table.metadata, make_rows(i * per_file, per_file, rng)))
    table.transaction().append_files(written).commit()
    return table


def pyarrow_copy(paths: list[str], out_dir: Any) -> float:
    start = time.perf_counter()
    pending: list[pa.Table] = []
    size = n = 0
    for p in paths:
        t = pq.read_table(local_path(p))
        pending.append(t)
        size += t.nbytes
        if size >= TARGET_BYTES:
            pq.write_table(pa.concat_tables(pending), out_dir / f"out-{n}.parquet")
            pending, size, n = [], 0, n + 1
    if pending:
        pq.write_table(pa.concat_tables(pending), out_dir / f"out-{n}.parquet")
    return time.perf_counter() - start


def compact(table: Any, runner: Any) -> tuple[float, float, Any]:
    """(planning seconds, execute seconds, result)."""
    start = time.perf_counter()
    plan = table.maintenance.rewrite_data_files().plan()
    planned = time.perf_counter()
    result = plan.execute(table, runner)
    return planned - start, time.perf_counter() - planned, result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--rows-per-file", type=int, default=5000)
    p.add_argument("--quick", action="store_true", help="a smoke run: 40 files of 500 rows")
    args = p.parse_args()
    if args.quick:
        args.files, args.rows_per_file = 40, 500
    rows = args.files * args.rows_per_file
    with workdir("spark-compaction") as root:
        catalog = firn.load_catalog(f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
        t0 = time.perf_counter()
        table = build(catalog, args.files, args.rows_per_file)
        start_snapshot = table.current_snapshot().snapshot_id
        paths = [t.file.file_path for t in table.scan().plan_files()]
        print(
            f"table: {args.files:,} files of {args.rows_per_file:,} rows ({rows:,} rows), built in {time.perf_counter() - t0:.1f} s"
        )
        (root / "copy").mkdir()
        copy_s = pyarrow_copy(paths, root / "copy")
        t0 = time.perf_counter()
        spark = spark_session()
        session_s = time.perf_counter() - t0
        results: dict[str, tuple[float, float]] = {}
        available = hasattr(table.maintenance, "rewrite_data_files")
        try:
            if available:
                from firn.spark import SparkRunner

                for name, runner in (("local runner", LocalRunner()), ("Spark runner", SparkRunner(spark))):
                    plan_s, exec_s, result = compact(table, runner)
                    results[name] = (plan_s, exec_s)
                    print(f"  {name}: {result}")
                    table.manage_snapshots().rollback_to(start_snapshot).commit()
                    table.refresh()
        finally:
            spark.stop()
    print(f"\ncompacting {args.files:,} files of {args.rows_per_file:,} rows ({rows:,} rows)")
    print(f"  fixed: Spark session start {session_s:.1f} s (once per job)")
    print(f"  pyarrow copy (floor)   {copy_s:8.2f} s   {rows / copy_s / 1e6:6.2f} M rows/s")
    if not available:
        print(
            "  rewrite_data_files: not in this build (it comes from the maint-rewrite branch); "
            "the local-runner and Spark-runner figures are measured once merged - ratio target: "
            "report rows/s vs the local runner and the pyarrow copy"
        )
        return
    for name, (plan_s, exec_s) in results.items():
        print(
            f"  {name:14s} planning {plan_s:6.2f} s (fixed)   execute {exec_s:8.2f} s   "
            f"{rows / exec_s / 1e6:6.2f} M rows/s   {exec_s / rows * 1e6:6.2f} us/row"
        )
    spark_exec = results["Spark runner"][1]
    print(
        f"\nratio Spark runner / local runner (rows/s) = {results['local runner'][1] / spark_exec:.2f}x; "
        f"Spark runner / pyarrow copy = {copy_s / spark_exec:.2f}x (context, no target)"
    )


if __name__ == "__main__":
    main()
