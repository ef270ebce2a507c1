"""Reading through deletion vectors: ``scan().to_arrow()`` with 10% of rows deleted vs none.

Issue 3 ("Speed"): a v3 table of 1,000,000 rows with 10% of its rows deleted by DVs must read
through ``to_arrow()`` in no more than 1.5x the time of the same data without deletes.

Setup: a v3 table in a local SQLite catalog and warehouse (a temporary directory), written by
``--files`` appends; then one merge-on-read ``row_delta`` deletes ``--fraction`` of each
file's rows at uniformly random positions (one DV per data file, all in one Puffin file).
"Without deletes" is the snapshot before the row delta (time travel): exactly the same data
files, no delete files. Both scans run alternately in one process, ``--runs`` times each after
a warm-up, which one goes first swapping every run; the medians and their ratio are printed
next to the target.

Run: ``.venv/bin/python bench/bench_dv_read.py [--rows N] [--files N] [--runs N]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from _harness import final_verdict, round_order, verdict
from firn.catalog.sql import SqlCatalog
from firn.spec.schema import Schema
from firn.spec.types import DOUBLE, LONG, STRING, TIMESTAMPTZ, NestedField

TARGET_RATIO = 1.5

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "category", STRING),
    NestedField(3, "amount", DOUBLE),
    NestedField(4, "ts", TIMESTAMPTZ),
    NestedField(5, "note", STRING),
)


def make_rows(start: int, count: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    categories = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    return pa.table(
        {
            "id": ids,
            "category": pa.array(categories[rng.integers(0, len(categories), count)]),
            "amount": rng.random(count) * 1000,
            "ts": pa.array(1_700_000_000_000_000 + ids * 1_000_000, pa.timestamp("us", tz="UTC")),
            "note": pa.array([f"note-{i % 9973}" for i in range(start, start + count)]),
        }
    )


def timed(fn: Callable[[], pa.Table]) -> tuple[float, int]:
    start = time.perf_counter()
    rows = fn().num_rows
    return time.perf_counter() - start, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the table")
    parser.add_argument("--files", type=int, default=4, help="data files (one append each)")
    parser.add_argument("--fraction", type=float, default=0.1, help="fraction of rows deleted")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per scan (median reported)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 50,000 rows, 3 runs")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.runs = 50_000, 3

    rng = np.random.default_rng(42)
    with tempfile.TemporaryDirectory() as tmp:
        catalog = SqlCatalog(
            "bench", f"sqlite:///{Path(tmp) / 'catalog.db'}", warehouse=str(Path(tmp) / "warehouse")
        )
        catalog.create_namespace("bench")
        table = catalog.create_table(
            "bench.dv_read",
            SCHEMA,
            properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
        )
        per_file = args.rows // args.files
        for i in range(args.files):
            count = per_file if i < args.files - 1 else args.rows - per_file * (args.files - 1)
            table.append(make_rows(i * per_file, count, rng))
        before = table.current_snapshot()
        assert before is not None

        delta = table.row_delta()
        deleted = 0
        for task in table.scan().plan_files():
            n = task.file.record_count
            positions = np.sort(rng.choice(n, size=round(n * args.fraction), replace=False))
            delta.delete_rows_at(task.file.file_path, positions)
            deleted += len(positions)
        delta.commit()
        dv_count = sum(len(t.delete_files) for t in table.scan().plan_files())

        def with_deletes() -> pa.Table:
            return table.scan().to_arrow()

        def without_deletes() -> pa.Table:
            return table.scan(snapshot_id=before.snapshot_id).to_arrow()

        # Warm-up (page cache, manifest cache), and a correctness check.
        assert timed(with_deletes)[1] == args.rows - deleted
        assert timed(without_deletes)[1] == args.rows
        plain: list[float] = []
        dv: list[float] = []
        sides = [(plain, without_deletes), (dv, with_deletes)]
        for run in range(args.runs):  # the order swaps every run
            for times, scan in round_order(sides, run):
                times.append(timed(scan)[0])
        catalog.close()

    plain_ms = statistics.median(plain) * 1000
    dv_ms = statistics.median(dv) * 1000
    ratio = dv_ms / plain_ms
    print(
        f"v3 table: {args.rows:,} rows in {args.files} data files; {deleted:,} rows "
        f"({args.fraction:.0%}) deleted by {dv_count} DVs; median of {args.runs} runs"
    )
    print(f"  scan().to_arrow() without deletes : {plain_ms:8.1f} ms")
    print(f"  scan().to_arrow() with DVs        : {dv_ms:8.1f} ms")
    print(f"  ratio {ratio:.2f}x (target <= {TARGET_RATIO}x): {verdict(ratio <= TARGET_RATIO)}")
    return 0


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
