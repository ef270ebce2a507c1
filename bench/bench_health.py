"""Issue 11 item 6: ``table.health()`` on a 10,000-file v2 table and a V4 table, as a sensor
polling it every 30 s would call it.

    .venv/bin/python bench/bench_health.py [--files 10000] [--polls 30] [--quick]

Both tables get ``--files`` synthetic data files (stats on four columns, as in
``bench_v4_planning.py``; health never opens data files, so they need not exist) in commits of
100 files: the v2 table's manifests are merged by the writer as usual, the V4 table's root is
flushed by the writer into leaves of about 400 entries. ``write.target-file-size-bytes`` is
64 KB, so part of the files count as small.

Measured, each as the median over ``--polls`` calls:

* **first call**: ``load_table()`` + ``health()`` on a freshly opened catalog with cold caches
  (what a newly started sensor process pays, besides connecting to the catalog);
* **poll, unchanged**: ``catalog.load_table()`` + ``health()`` with nothing new committed;
* **poll after a commit**: one 100-file append between polls (a new manifest list and
  manifest, or a new root), with the caches the writer filled in this process dropped, so the
  poll reads what a separate sensor process would;
* **v2 poll after a manifest merge**: the writer merged every manifest into one (by default
  it does so once the table has 100 manifests), so the poll decodes all entries once more.

Peer: PyIceberg 0.12 has no health call; the closest is what a user would write with it,
``table.inspect.data_files()`` and counting small files, run on the same v2 table (registered
in a PyIceberg catalog) after the same commits.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from typing import Any

from _harness import final_verdict, firn_catalog, median, ms, pyiceberg_catalog, quiet_peers, verdict, workdir
from bench_v4_planning import SCHEMA, make_files

TARGET_MS = 50.0
PER_COMMIT = 100
TARGET_FILE_SIZE = 64 * 1024


def drop_caches() -> None:
    """Forget everything this process cached about manifests (a fresh sensor process)."""
    from firn.maintenance.health import clear_health_cache
    from firn.manifests.cache import clear_caches
    from firn.manifests.v4_io import clear_v4_cache

    clear_caches()
    clear_v4_cache()
    clear_health_cache()


def drop_writer_caches() -> None:
    """Forget what the writer put in this process's caches (the new manifest list or root),
    which a sensor in another process would not have; health's own summaries stay."""
    from firn.manifests.cache import clear_caches
    from firn.manifests.v4_io import clear_v4_cache

    clear_caches()
    clear_v4_cache()


def append_files(table: Any, commit: int, rng: random.Random) -> None:
    from firn.core.actions.append import AppendFiles
    from firn.core.transaction import Transaction

    files = make_files(table.location, commit, PER_COMMIT, rng)
    Transaction(table).add_action(AppendFiles(files)).commit()


def build(catalog: Any, name: str, version: int, commits: int) -> Any:
    table = catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        properties={"format-version": str(version), "write.target-file-size-bytes": str(TARGET_FILE_SIZE)},
    )
    rng = random.Random(version)
    for c in range(commits):
        append_files(table, c, rng)
    return table


def measure(root: Any, name: str, version: int, commits: int, polls: int) -> dict[str, Any]:
    import firn

    uri = f"sqlite:///{root}/firn.db"
    writer = firn_catalog(root)
    started = time.perf_counter()
    table = build(writer, name, version, commits)
    built_s = time.perf_counter() - started
    ident = f"db.{name}"

    first, first_cpu = [], []
    for _ in range(max(3, polls // 5)):
        drop_caches()
        fresh = firn.load_catalog(uri, warehouse=str(root / "firn-warehouse"))  # connecting: not timed
        c0 = time.process_time()
        t0 = time.perf_counter()
        h = fresh.load_table(ident).health()
        first.append(time.perf_counter() - t0)
        first_cpu.append(time.process_time() - c0)
    peer = pyiceberg_peer(root, table, polls) if version == 2 else None

    # The sensor: its own catalog (so a new metadata file is parsed as another process would).
    sensor = firn.load_catalog(uri, warehouse=str(root / "firn-warehouse"))
    unchanged, health_only = [], []
    for _ in range(polls):
        t0 = time.perf_counter()
        t = sensor.load_table(ident)
        t1 = time.perf_counter()
        t.health()
        t2 = time.perf_counter()
        unchanged.append(t2 - t0)
        health_only.append(t2 - t1)
    after_commit = []
    rng = random.Random(99)
    for p in range(polls):
        append_files(table, commits + p, rng)
        drop_writer_caches()
        t0 = time.perf_counter()
        last = sensor.load_table(ident).health()
        after_commit.append(time.perf_counter() - t0)
    assert last.data_files == (commits + polls) * PER_COMMIT, last
    # v2 writers merge small manifests into one on commit (commit.manifest.min-count-to-merge,
    # default 100): the poll after such a commit reads the whole merged manifest once.
    merge = None
    if version == 2:
        table.refresh().set_properties({"commit.manifest.min-count-to-merge": "2"})
        append_files(table, commits + polls, rng)
        drop_writer_caches()
        t0 = time.perf_counter()
        merged = sensor.load_table(ident).health()
        merge = time.perf_counter() - t0
        assert merged.manifests == 1, merged
    return {
        "merge": merge,
        "health": h,
        "built_s": built_s,
        "first": median(first),
        "first_cpu": median(first_cpu),
        "unchanged": median(unchanged),
        "health_only": median(health_only),
        "after_commit": median(after_commit),
        "after_commit_max": max(after_commit),
        "peer": peer,
    }


def pyiceberg_peer(root: Any, table: Any, polls: int) -> float:
    """The same metrics with PyIceberg: inspect.data_files() and count the small files."""
    import pyarrow.compute as pc

    py = pyiceberg_catalog(root).register_table(("db", "v2peer"), table.metadata_location)
    threshold = int(0.75 * TARGET_FILE_SIZE)

    def health() -> int:
        files = py.inspect.data_files()
        return int(pc.sum(pc.less(files.column("file_size_in_bytes"), threshold)).as_py() or 0)

    times = []
    for _ in range(max(3, polls // 5)):
        t0 = time.perf_counter()
        health()
        times.append(time.perf_counter() - t0)
    return median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000, help="data files per table")
    ap.add_argument("--polls", type=int, default=30, help="calls per measurement")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1,000 files, 5 polls")
    ap.add_argument("--keep", action="store_true", help="keep the temporary warehouse")
    args = ap.parse_args()
    if args.quick:
        args.files, args.polls = 1_000, 5
    quiet_peers()
    commits = max(1, args.files // PER_COMMIT)
    with workdir("health", keep=args.keep) as root:
        results = {
            "v2": measure(root, "v2", 2, commits, args.polls),
            "V4": measure(root, "v4", 4, commits, args.polls),
        }

    n = commits * PER_COMMIT
    print(f"table.health() on tables of {n:,} data files ({commits} commits of {PER_COMMIT}); medians")
    print("(first call on the table as built; polls after a commit add 100 files each)")
    print(
        f"{'':<4} {'first call':>11} {'poll, unchanged':>16} {'(health only)':>14} {'poll after commit':>18}  shape"
    )
    for label, r in results.items():
        h = r["health"]
        shape = f"{h.manifests} manifests" + (
            f", root {h.root_entries} entries" if h.root_entries is not None else ""
        )
        print(
            f"{label:<4} {ms(r['first']):>11} {ms(r['unchanged']):>16} {ms(r['health_only']):>14} "
            f"{ms(r['after_commit']):>18}  {shape}; {h.small_files:,} of {h.data_files:,} files small"
        )
    peer = results["v2"]["peer"]
    print(
        f"PyIceberg 0.12 inspect.data_files() + small-file count on the v2 table as built: {ms(peer)} "
        f"per call; ratio to Firn's first call {peer / results['v2']['first']:.1f}x, "
        f"to a poll after a commit {peer / results['v2']['after_commit']:.0f}x"
    )
    r2 = results["v2"]
    print(
        f"v2 poll right after the writer merged every manifest into one ({r2['health'].data_files + (args.polls + 1) * PER_COMMIT:,} "
        f"entries; by default once per ~100 commits): {ms(r2['merge'])}"
    )
    for label, r in results.items():
        worst = max(r["unchanged"], r["after_commit"])
        print(
            f"{label}: poll median {ms(worst)} (max after a commit {ms(r['after_commit_max'])}; "
            f"target < {TARGET_MS:.0f} ms) {verdict(worst * 1000 < TARGET_MS)}"
        )
    # A process that starts cold (a sensor poke in a fresh process) pays the first call.
    for label, r in results.items():
        print(
            f"{label}: first call, cold caches {ms(r['first'])} (CPU time {ms(r['first_cpu'])}; "
            f"load average {os.getloadavg()[0]:.1f}) (target < {TARGET_MS:.0f} ms) "
            f"{verdict(r['first'] * 1000 < TARGET_MS)}"
        )
    return 0


if __name__ == "__main__":
    status = main()
    final_verdict()
    raise SystemExit(status)
