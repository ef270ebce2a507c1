"""Spark compaction: ``rewrite_data_files`` through ``SparkRunner`` on local[2] vs the local
runner and vs a bare pyarrow copy of the same files.

Issue 12 ("Speed"): 2,000 small files of 5,000 rows each; print rows/s of the Spark-run
compaction against the local runner and a bare pyarrow copy, with the fixed cost (session
start, planning) apart from the per-row cost.

Setup: a v2 table whose ``--files`` data files of ``--rows-per-file`` rows each are written
by ``firn.core.writer.write_data_files`` and committed in one append. Then, on the same table
state (the current snapshot is rolled back to it between runs):

* pyarrow copy: read every data file with ``pyarrow.parquet`` and write the rows again as
  one Parquet file per 512 MiB of Arrow data (no Iceberg metadata, one thread of Python
  calls): the floor for moving bytes;
* local runner: ``table.maintenance.rewrite_data_files().plan()`` then ``execute`` with the
  thread-pool runner;
* Spark runner: the same, with ``firn.spark.SparkRunner`` on a local[2] session.

Fixed costs are printed apart: Spark session start (once per job), planning (per run), the
round trip of an empty one-unit Spark job; the per-row cost is (execute time, less that round
trip for the Spark runner) / rows, execute being the work units plus the commit. The
three sides take turns, ``--runs`` rounds with the order rotated by one each round (medians
printed), the table rolled back to the same snapshot after every compaction.

``--max-group-bytes`` lowers ``max-file-group-size-bytes`` so the plan has several groups (work
units), which the Spark runner runs as parallel tasks.

Run: ``.venv/bin/python bench/bench_spark_compaction.py [--files N] [--rows-per-file N] [--runs N]
[--max-group-bytes N] [--quick]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import firn
from _harness import final_verdict, local_path, median, round_order, spark_session, workdir
from firn.core.writer import write_data_files
from firn.maintenance import LocalRunner
from firn.spark import SparkRunner

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


def _echo(unit: dict[str, Any]) -> dict[str, Any]:
    return unit


def job_round_trip(runner: Any, runs: int = 3) -> float:
    """Median seconds of a one-unit Spark job that does nothing: the fixed cost of every
    ``SparkRunner.map`` (scheduling, task launch, a warm Python worker)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        runner.map(_echo, [{"kind": "echo"}])
        times.append(time.perf_counter() - start)
    return median(times)


def compact(table: Any, runner: Any, options: dict[str, Any]) -> tuple[float, float, Any]:
    """(planning seconds, execute seconds, result)."""
    start = time.perf_counter()
    plan = table.maintenance.rewrite_data_files(**options).plan()
    planned = time.perf_counter()
    result = plan.execute(table, runner)
    return planned - start, time.perf_counter() - planned, result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--rows-per-file", type=int, default=5000)
    p.add_argument("--runs", type=int, default=3, help="runs of each runner (medians printed)")
    p.add_argument(
        "--max-group-bytes",
        type=int,
        default=None,
        help="rewrite_data_files' max-file-group-size-bytes (default Iceberg's 100 GB: one group here)",
    )
    p.add_argument("--quick", action="store_true", help="a smoke run: 40 files of 500 rows, 1 run")
    args = p.parse_args()
    if args.quick:
        args.files, args.rows_per_file, args.runs = 40, 500, 1
    rows = args.files * args.rows_per_file
    options = {} if args.max_group_bytes is None else {"max-file-group-size-bytes": args.max_group_bytes}
    with workdir("spark-compaction") as root:
        catalog = firn.load_catalog(f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
        t0 = time.perf_counter()
        table = build(catalog, args.files, args.rows_per_file)
        start_snapshot = table.current_snapshot().snapshot_id
        paths = [t.file.file_path for t in table.scan().plan_files()]
        print(
            f"table: {args.files:,} files of {args.rows_per_file:,} rows ({rows:,} rows), built in {time.perf_counter() - t0:.1f} s"
        )
        t0 = time.perf_counter()
        spark = spark_session()
        session_s = time.perf_counter() - t0
        runs: dict[str, list[tuple[float, float]]] = {"local runner": [], "Spark runner": []}
        copies: list[float] = []
        try:
            runners = {"local runner": LocalRunner(), "Spark runner": SparkRunner(spark)}
            for i in range(args.runs):  # the order rotates every round
                for name in round_order(["pyarrow copy", *runners], i):
                    if name == "pyarrow copy":
                        out = root / f"copy-{i}"
                        out.mkdir()
                        copies.append(pyarrow_copy(paths, out))
                        continue
                    plan_s, exec_s, result = compact(table, runners[name], options)
                    runs[name].append((plan_s, exec_s))
                    if i == 0:
                        print(f"  {name}: {result}")
                    table.manage_snapshots().rollback_to(start_snapshot).commit()
                    table.refresh()
            round_trip = job_round_trip(runners["Spark runner"])
        finally:
            spark.stop()
    print(f"\ncompacting {args.files:,} files of {args.rows_per_file:,} rows ({rows:,} rows)")
    print(f"  fixed: Spark session start {session_s:.1f} s (once per spark-submit)")
    print(f"  fixed: Spark job round trip {round_trip:.2f} s (once per runner call; an empty unit)")
    spark_runs = [e for _, e in runs["Spark runner"]]
    if len(spark_runs) > 1:
        cold = spark_runs[0] - median(spark_runs[1:])
        print(f"  fixed: first Spark run's extra {cold:.2f} s (Python workers starting, importing Firn)")
    copy_s = median(copies)
    print(
        f"  pyarrow copy (floor)   {copy_s:8.2f} s   {rows / copy_s / 1e6:6.2f} M rows/s   "
        f"runs: {', '.join(f'{t:.2f}' for t in copies)}"
    )
    results = {name: (median([p for p, _ in ts]), median([e for _, e in ts])) for name, ts in runs.items()}
    for name, (plan_s, exec_s) in results.items():
        print(
            f"  {name:14s} planning {plan_s:6.2f} s (fixed)   execute {exec_s:8.2f} s   "
            f"{rows / exec_s / 1e6:6.2f} M rows/s   "
            f"{(exec_s - (round_trip if name == 'Spark runner' else 0)) / rows * 1e6:6.2f} us/row   "
            f"execute runs: {', '.join(f'{e:.2f}' for _, e in runs[name])}"
        )
    spark_exec = results["Spark runner"][1]
    print(
        f"\nratio Spark runner / local runner (rows/s) = {results['local runner'][1] / spark_exec:.2f}x; "
        f"Spark runner / pyarrow copy = {copy_s / spark_exec:.2f}x (context, no target)"
    )


if __name__ == "__main__":
    main()
    final_verdict(report_only="issue 12 asks for rows/s and fixed costs, reported above; no target")
