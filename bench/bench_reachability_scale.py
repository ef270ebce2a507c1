"""Issue 24 item 2: expiry and orphan planning on a v2 table and its V4 twin, time and peak memory.

    .venv/bin/python bench/bench_reachability_scale.py [--leaves 100] [--files-per-leaf 1000]
                                                       [--repeats 3] [--quick]

The tables are ``bench_v4_planning.py``'s (``--leaves`` commits of ``--files-per-leaf`` data
files each; cached in ``bench/.cache/planning-<leaves>x<files>/``): a v2 table with one Avro
manifest per commit and its V4 twin with one leaf per commit. On each, in a fresh child
process per measurement (so the peak resident set is the call's own):

* ``expire_snapshots(older_than=now, retain_last=1).plan()``: every snapshot but the newest
  expires (``--leaves`` - 1 of them);
* ``remove_orphan_files(older_than=now, force=True).plan()``: reachability of every snapshot, plus a
  listing of the table location (the synthetic data files do not exist, so the listing is
  the metadata directory).

Printed: median seconds (wall, judged; and CPU time of all threads), the peak RSS growth over the process after loading the table, and
that growth per million files tracked. Targets (issue 24 item 2): V4 within 1.0x of v2's time
for each call, and under 500 MB peak growth per million files for both formats.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _harness import CACHE_DIR, final_verdict, median, round_order, verdict

PEAK_MB_PER_MILLION_TARGET = 500.0
TIME_RATIO_TARGET = 1.0


def _child(cache: Path, table: str, call: str) -> None:
    """Run one measurement and print a JSON line (seconds, baseline and peak RSS in MB)."""
    import resource
    import time
    from datetime import UTC, datetime

    import firn

    catalog = firn.load_catalog(f"sqlite:///{cache}/firn.db", warehouse=str(cache / "firn-warehouse"))
    t = catalog.load_table(f"db.{table}")
    now = datetime.now(UTC)

    def rss_mb() -> float:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    base = rss_mb()
    cpu = time.process_time()
    start = time.perf_counter()
    if call == "expire":
        plan = t.maintenance.expire_snapshots(older_than=now, retain_last=1).plan()
        found = len(plan.expired_snapshot_ids) if hasattr(plan, "expired_snapshot_ids") else -1
    else:
        plan = t.maintenance.remove_orphan_files(older_than=now, force=True).plan()
        found = -1
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "cpu": cpu, "base_mb": base, "peak_mb": peak, "found": found}))


def _measure(cache: Path, table: str, call: str) -> dict[str, float]:
    env = {**os.environ}
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(cache), table, call],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=100)
    ap.add_argument("--files-per-leaf", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 leaves x 500 files, 1 repeat")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(Path(args.child[0]), args.child[1], args.child[2])
        return
    if args.quick:
        args.leaves, args.files_per_leaf, args.repeats = 20, 500, 1
    from bench_v4_planning import READY, build

    cache = CACHE_DIR / f"planning-{args.leaves}x{args.files_per_leaf}"
    if not (cache / READY).exists():
        build(cache, args.leaves, args.files_per_leaf)
    files = args.leaves * args.files_per_leaf
    sides = [(table, call) for call in ("expire", "orphans") for table in ("v2", "v4")]
    runs: dict[tuple[str, str], list[dict[str, float]]] = {s: [] for s in sides}
    for r in range(args.repeats):
        for side in round_order(sides, r):
            runs[side].append(_measure(cache, *side))
    print(
        f"{files:,} data files in {args.leaves} commits ({args.leaves - 1} snapshots expire); "
        f"median of {args.repeats}, one child process per run, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'call':<10} {'table':<5} {'seconds':>8} {'CPU s':>7} {'peak RSS growth':>16} {'per 1M files':>13}"
    )
    result: dict[tuple[str, str], tuple[float, float]] = {}
    for table, call in sides:
        rs = runs[(table, call)]
        secs = median([x["seconds"] for x in rs])
        cpu = median([x["cpu"] for x in rs])
        growth = median([x["peak_mb"] - x["base_mb"] for x in rs])
        per_million = growth * 1_000_000 / files
        result[(table, call)] = (secs, per_million)
        print(f"{call:<10} {table:<5} {secs:>8.2f} {cpu:>7.2f} {growth:>13.0f} MB {per_million:>10.0f} MB")
    for call in ("expire", "orphans"):
        v2_s, v2_mb = result[("v2", call)]
        v4_s, v4_mb = result[("v4", call)]
        ratio = v4_s / v2_s
        print(
            f"{call}: V4/v2 time {ratio:.2f}x (target <= {TIME_RATIO_TARGET}x) {verdict(ratio <= TIME_RATIO_TARGET)}; "
            f"peak per 1M files v2 {v2_mb:.0f} MB, V4 {v4_mb:.0f} MB (target < {PEAK_MB_PER_MILLION_TARGET:.0f}) "
            f"{verdict(max(v2_mb, v4_mb) < PEAK_MB_PER_MILLION_TARGET)}"
        )


if __name__ == "__main__":
    main()
    if "--child" not in sys.argv:
        final_verdict()
