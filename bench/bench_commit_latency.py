"""Issue 2: commit latency must not grow with history — Firn v2 next to PyIceberg 0.12.

    .venv/bin/python bench/bench_commit_latency.py [--commits 500] [--window 100] [--quick]
    .venv/bin/python bench/bench_commit_latency.py --profile   # cProfile of Firn's last window

Both libraries get the same one-row Arrow table appended ``--commits`` times, each call one
commit exactly as a user makes it (``table.append(df)``, data file included): Firn to a
format-version 2 table, PyIceberg to a format-version 2 table, each through its own SQL
catalog on SQLite with a local warehouse, in the same process. They alternate commit by
commit and swap who goes first every commit, so machine noise hits both alike.

Printed: the median wall-clock latency of every block of ``--window`` commits for both, then
the median of the first and of the last window and their ratio (last/first; Firn's target is
no growth, a ratio of about 1, judged against 1.2). PyIceberg's ratio is shown for
comparison: its commit re-copies the whole metadata many times per append (notes perf §1a),
so it grows. The same medians of the process CPU time spent in each call are printed too:
on a shared machine other processes' load moves wall-clock times, much less CPU times.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa

from _harness import (
    final_verdict,
    firn_catalog,
    median,
    pyiceberg_catalog,
    quiet_peers,
    timed,
    verdict,
    workdir,
)

FLAT_TARGET = 1.2
T = TypeVar("T")


def _cpu_timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(process CPU seconds, result) of one call."""
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def _cell(wall: list[float], cpu: list[float]) -> str:
    return f"{median(wall) * 1e3:.1f} ms ({median(cpu) * 1e3:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=500, help="sequential single-row appends per library")
    ap.add_argument("--window", type=int, default=100, help="commits per median block (first vs last)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 commits, windows of 10")
    ap.add_argument("--no-pyiceberg", action="store_true", help="time Firn alone")
    ap.add_argument("--profile", action="store_true", help="cProfile Firn's appends in the last window")
    ap.add_argument("--keep", action="store_true", help="keep the temporary warehouse")
    args = ap.parse_args()
    if args.quick:
        args.commits, args.window = 60, 10
    n, w = args.commits, min(args.window, args.commits)
    if n < 1 or w < 1:
        ap.error("--commits and --window must be positive")
    with_py = not args.no_pyiceberg
    quiet_peers()

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    rows = pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}, schema=schema)
    profiler = cProfile.Profile() if args.profile else None

    with workdir("commit-latency", keep=args.keep) as root:
        firn_table = firn_catalog(root).create_table(
            "db.events", schema=schema, properties={"format-version": "2"}
        )
        py_table = pyiceberg_catalog(root).create_table("db.events", schema=schema) if with_py else None
        assert firn_table.format_version == 2
        assert py_table is None or py_table.metadata.format_version == 2

        firn_s: list[float] = []
        py_s: list[float] = []
        firn_cpu: list[float] = []
        py_cpu: list[float] = []
        peer = "PyIceberg 0.12 v2" if with_py else "no peer"
        print(f"{n:,} sequential single-row appends each: Firn v2 vs {peer} (SQLite catalogs, local FS)")
        print("medians per block of commits: wall-clock latency (CPU time of the call)\n")
        print(f"{'commits':>11} | {'Firn':>20} | {'PyIceberg':>22}")
        print("-" * 60)

        def firn_append() -> None:
            if profiler is not None and len(firn_s) >= n - w:
                profiler.enable()
                try:
                    firn_table.append(rows)
                finally:
                    profiler.disable()
            else:
                firn_table.append(rows)

        for i in range(n):
            steps = [("firn", firn_append)]
            if py_table is not None:
                steps.append(("py", lambda: py_table.append(rows)))
            if i % 2:
                steps.reverse()
            for who, fn in steps:
                cpu_seconds, (seconds, _) = _cpu_timed(lambda fn=fn: timed(fn))  # type: ignore[misc]
                (firn_s if who == "firn" else py_s).append(seconds)
                (firn_cpu if who == "firn" else py_cpu).append(cpu_seconds)
            if (i + 1) % w == 0 or i + 1 == n:
                lo = (i // w) * w
                f = _cell(firn_s[lo : i + 1], firn_cpu[lo : i + 1])
                p = _cell(py_s[lo : i + 1], py_cpu[lo : i + 1]) if py_s else "-"
                print(f"{lo + 1:>5}-{i + 1:<5} | {f:>20} | {p:>22}")
            if i % 50 == 49:
                gc.collect()  # keep collector pauses out of single samples, for both alike
                gc.freeze()  # and keep the growing history of each out of the other's collections

        first, last = f"1-{w}", f"{n - w + 1}-{n}"
        first_f, last_f = median(firn_s[:w]), median(firn_s[-w:])
        ratio = last_f / first_f
        cpu_ratio = median(firn_cpu[-w:]) / median(firn_cpu[:w])
        print()
        print(
            f"Firn      median commits {first}: {first_f * 1e3:.1f} ms; {last}: {last_f * 1e3:.1f} ms; "
            f"ratio {ratio:.2f}  (target: no growth, <= {FLAT_TARGET})  {verdict(ratio <= FLAT_TARGET)}"
        )
        print(f"          CPU-time ratio {last}/{first}: {cpu_ratio:.2f}")
        if py_s:
            first_p, last_p = median(py_s[:w]), median(py_s[-w:])
            print(
                f"PyIceberg median commits {first}: {first_p * 1e3:.1f} ms; {last}: {last_p * 1e3:.1f} ms; "
                f"ratio {last_p / first_p:.2f}  (for comparison; expected to grow)"
            )
            print(f"          CPU-time ratio {last}/{first}: {median(py_cpu[-w:]) / median(py_cpu[:w]):.2f}")
            print(f"PyIceberg/Firn over commits {last}: {last_p / last_f:.1f}x")
        snap = firn_table.current_snapshot()
        manifests = snap.summary.get("manifests-kept") if snap is not None else None
        print(
            f"(Firn after the last commit: {len(firn_table.snapshots())} snapshots, "
            f"{manifests} manifests kept by the last commit)"
        )
    if profiler is not None:
        print(f"\ncProfile of Firn's appends {n - w + 1}-{n}, by cumulative time:")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
