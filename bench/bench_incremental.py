"""Issue 21 item 4: V4 incremental planning in O(change) — one new commit on a 1,000,000-file table.

    .venv/bin/python bench/bench_incremental.py [--leaves 1000] [--files-per-leaf 1000]
                                                [--new-files 10] [--repeats 3] [--quick] [--rebuild]

The table is ``bench_v4_planning``'s Firn V4 table (synthetic DataFiles, which need not exist
for planning: ``--leaves`` commits of ``--files-per-leaf`` files, one leaf manifest each), plus
one new small commit of ``--new-files`` files written as a writer normally does (seed 004: a
small write adds entries to the root only). It is built once and cached under
``bench/.cache/incremental-<leaves>x<files-per-leaf>-<new-files>/``.

Measured, each from cold manifest caches (median of ``--repeats``), on the current snapshot:

* full plan: ``list(table.scan().plan_files())``, every live file;
* incremental plan of the new commit: ``table.scan(from_snapshot_id=<previous>).plan_files()``;
* changelog plan of the new commit: ``table.changelog(from_snapshot_id=<previous>).plan_tasks()``;

with the manifests each opens, counted at the table's FileIO (root and leaf manifests). Verdicts:
the incremental and changelog plans open only the new commit's root (O(change): nothing that
grows with the table), and the incremental plan is at least 100x faster than the full plan.
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from _harness import CACHE_DIR, final_verdict, firn_catalog, median, quiet_peers, timed, verdict
from bench_v4_planning import SCHEMA, make_files

SPEEDUP_TARGET = 100.0
READY = "READY"
T = TypeVar("T")


class CountingIO:
    """A FileIO that counts the metadata files (manifests) opened for reading."""

    def __init__(self, io: Any) -> None:
        self._io = io
        self.opened: list[str] = []

    @property
    def properties(self) -> Mapping[str, str]:
        return self._io.properties  # type: ignore[no-any-return]

    def new_input(self, location: str) -> Any:
        if "/metadata/" in location:
            self.opened.append(location)
        return self._io.new_input(location)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._io, name)


def build(cache: Path, leaves: int, per_leaf: int, new_files: int) -> None:
    from firn.core.actions.append import AppendFiles
    from firn.core.transaction import Transaction
    from firn.manifests.v4_io import clear_v4_cache

    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    catalog = firn_catalog(cache)
    table = catalog.create_table(
        "db.v4",
        schema=SCHEMA,
        properties={"format-version": "4", "commit.root.max-added-files": "0"},
    )
    rng = random.Random(4)
    print(f"building {leaves:,} commits x {per_leaf:,} files into {cache} (once; cached) ...", flush=True)
    for leaf in range(leaves):
        Transaction(table).add_action(AppendFiles(make_files(table.location, leaf, per_leaf, rng))).commit()
        if leaf % 50 == 49:
            clear_v4_cache()
            print(f"  {leaf + 1:,}/{leaves:,} commits", flush=True)
    # The new commit: a small append as writers make it, its entries in the root.
    table.remove_properties("commit.root.max-added-files")
    files = make_files(table.location, leaves, per_leaf, rng)[:new_files]
    Transaction(table).add_action(AppendFiles(files)).commit()
    (cache / READY).write_text(f"{leaves} {per_leaf} {new_files}\n")


def counted(table: Any, fn: Callable[[Any], T]) -> tuple[float, T, list[str]]:
    """Run ``fn`` on a view of ``table`` whose FileIO counts manifest reads, caches cold."""
    from firn.manifests import cache as avro_cache
    from firn.manifests.v4_io import clear_v4_cache
    from firn.table.table import Table

    clear_v4_cache()
    avro_cache.clear_caches()
    gc.collect()
    io = CountingIO(table.io)
    view = Table(table.identifier, table.metadata, table.metadata_location, io, table.catalog)
    seconds, result = timed(lambda: fn(view))
    return seconds, result, io.opened


def kinds(opened: list[str], snapshot: Any) -> Iterator[str]:
    for location in opened:
        yield "root" if location == snapshot.root_manifest else "leaf"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=1000, help="commits = leaf manifests")
    ap.add_argument("--files-per-leaf", type=int, default=1000)
    ap.add_argument("--new-files", type=int, default=10, help="files in the new commit")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each plan (median)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 leaves x 500 files, 1 repeat")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached table")
    args = ap.parse_args()
    if args.quick:
        args.leaves, args.files_per_leaf, args.repeats = 20, 500, 1
    quiet_peers()
    leaves, per_leaf, new = args.leaves, args.files_per_leaf, args.new_files
    total = leaves * per_leaf + new

    cache = CACHE_DIR / f"incremental-{leaves}x{per_leaf}-{new}"
    if args.rebuild or not (cache / READY).exists():
        build(cache, leaves, per_leaf, new)
    table = firn_catalog(cache).load_table("db.v4")
    head = table.current_snapshot()
    assert head is not None and head.parent_snapshot_id is not None
    previous = head.parent_snapshot_id
    print(
        f"\nV4 table of {total:,} data files ({leaves:,} leaves of {per_leaf:,}, then a commit of {new} "
        f"files into the root); median of {args.repeats}, cold caches\n"
    )

    full_s: list[float] = []
    inc_s: list[float] = []
    log_s: list[float] = []
    for r in range(args.repeats):
        seconds, tasks, full_opened = counted(table, lambda t: list(t.scan().plan_files()))
        assert len(tasks) == total, f"full plan: {len(tasks)} files, expected {total}"
        full_s.append(seconds)
        seconds, tasks, inc_opened = counted(
            table, lambda t: list(t.scan(from_snapshot_id=previous).plan_files())
        )
        assert len(tasks) == new, f"incremental plan: {len(tasks)} files, expected {new}"
        inc_s.append(seconds)
        seconds, ctasks, log_opened = counted(
            table, lambda t: t.changelog(from_snapshot_id=previous).plan_tasks()
        )
        assert len(ctasks) == new, f"changelog plan: {len(ctasks)} tasks, expected {new}"
        log_s.append(seconds)
        print(
            f"  run {r + 1}: full {full_s[-1]:.3f} s, incremental {inc_s[-1] * 1e3:.1f} ms, "
            f"changelog {log_s[-1] * 1e3:.1f} ms",
            flush=True,
        )

    full, inc, log = median(full_s), median(inc_s), median(log_s)
    print(f"\n{'plan':<42} {'median':>10} {'manifests opened':>18} {'full/this':>10}")
    for name, secs, opened in (
        ("full: list(scan().plan_files())", full, full_opened),
        ("incremental: scan(from_snapshot_id=prev)", inc, inc_opened),
        ("changelog: changelog(from_snapshot_id=prev)", log, log_opened),
    ):
        shown = f"{secs:.3f} s" if secs >= 1 else f"{secs * 1e3:.1f} ms"
        print(f"{name:<42} {shown:>10} {len(opened):>18,} {full / secs:>9.0f}x")

    only_root = [head.root_manifest]
    o_change = inc_opened == only_root and log_opened == only_root
    print(
        f"\nincremental and changelog planning open only the new commit's root "
        f"(incremental: {', '.join(kinds(inc_opened, head)) or 'nothing'}; changelog: "
        f"{', '.join(kinds(log_opened, head)) or 'nothing'}; the full plan opens {len(full_opened):,}): "
        f"{verdict(o_change)}"
    )
    print(
        f"incremental planning vs a full plan: ratio {full / inc:.0f}x (target >= {SPEEDUP_TARGET:.0f}x) "
        f"{verdict(full / inc >= SPEEDUP_TARGET)}"
    )
    final_verdict()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
