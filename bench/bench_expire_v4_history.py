"""V4 expiry costs what it removes, not the table's history.

    .venv/bin/python bench/bench_expire_v4_history.py [--long 10000] [--short 1000] [--remove 100]

Two V4 tables of single-row appends (default properties, so writers flush their roots into
leaves as they grow), one with ``--long`` snapshots and one with ``--short``. On each,
``expire_snapshots(snapshot_ids=<the oldest --remove>)`` is timed end to end (plan, commit,
deletes), on a fresh copy of the table each repeat. The incremental cleanup opens the roots of
the expired snapshots and of the oldest retained one, and leaves only where a manifest DV
changed, so the file work is the same for both tables; what still grows with history is the
metadata JSON the commit rewrites and the retention walk over the snapshot list (both
metadata-only). The tables are cached in bench/.cache/ (building 10,000 commits takes minutes).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import CACHE_DIR, final_verdict, firn_catalog, median, ms, timed, verdict, workdir

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
PER_TRANSACTION = 100  # snapshots per commit while building (one metadata JSON per 100)


def _build(root: Path, snapshots: int) -> None:
    catalog = firn_catalog(root)
    t = catalog.create_table("db.t", schema=SCHEMA)
    done = 0
    while done < snapshots:
        with t.transaction() as tx:
            for _ in range(min(PER_TRANSACTION, snapshots - done)):
                tx.append(pa.table({"id": [done], "v": [f"row {done}"]}, schema=SCHEMA))
                done += 1
    catalog.close()


def _prepared(base: Path, snapshots: int) -> Path:
    """The table's directory, built once with a pristine copy beside it. Paths inside the
    metadata are absolute, so each run restores the table to the same place."""
    live, pristine = base / f"expire-v4-{snapshots}", base / f"expire-v4-{snapshots}.pristine"
    if not (pristine / "done").exists():
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(pristine, ignore_errors=True)
        live.mkdir(parents=True)
        started = time.perf_counter()
        _build(live, snapshots)
        shutil.copytree(live, pristine)
        (pristine / "done").write_text("ok")
        print(f"  built a V4 table of {snapshots} snapshots in {time.perf_counter() - started:.0f} s")
    return live


def _measure(live: Path, remove: int, repeats: int) -> tuple[float, dict[str, int], str]:
    from firn.manifests.cache import clear_caches
    from firn.manifests.v4_io import clear_v4_cache

    pristine = live.with_name(live.name + ".pristine")
    times = []
    deleted: dict[str, int] = {}
    strategy = ""
    for _ in range(repeats):
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(pristine, live)
        clear_caches()
        clear_v4_cache()
        catalog = firn_catalog(live)
        table = catalog.load_table("db.t")
        oldest = [
            s.snapshot_id for s in reversed(table.metadata.ancestors_of(table.metadata.current_snapshot_id))
        ]
        seconds, result = timed(
            lambda t=table, ids=oldest[:remove]: t.maintenance.expire_snapshots(snapshot_ids=ids).run()
        )
        times.append(seconds)
        deleted, strategy = dict(result.deleted_files), result.strategy
        assert len(result.expired_snapshot_ids) == remove
        catalog.close()
    shutil.rmtree(live, ignore_errors=True)
    return median(times), deleted, strategy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--long", type=int, default=10_000)
    ap.add_argument("--short", type=int, default=1_000)
    ap.add_argument("--remove", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: 600 vs 200 snapshots, removing 50, 1 repeat"
    )
    args = ap.parse_args()
    if args.quick:
        args.long, args.short, args.remove, args.repeats = 600, 200, 50, 1

    with workdir("expire-v4") as root:
        print(
            f"V4 tables of single-row appends; expire the oldest {args.remove} snapshots, median of {args.repeats}"
        )
        figures = {}
        for n in (args.short, args.long):
            live = _prepared(root if args.quick else CACHE_DIR, n)
            seconds, deleted, strategy = _measure(live, args.remove, args.repeats)
            figures[n] = seconds
            print(f"  {n:>6} snapshots: {ms(seconds)} ({strategy}; deleted {deleted})")
        ratio = figures[args.long] / figures[args.short]
        print(
            f"time ratio {args.long}/{args.short} snapshots = {ratio:.2f} for {args.long // args.short}x the history "
            f"(O(removed) target: well under {args.long // args.short}x; < 2x): {verdict(ratio < 2)}"
        )


if __name__ == "__main__":
    main()
    final_verdict()
