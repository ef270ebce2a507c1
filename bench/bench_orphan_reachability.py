"""remove_orphan_files reachability over 1,000 v2 manifests, next to PyIceberg reading the same
manifests' entries in the same process.

    .venv/bin/python bench/bench_orphan_reachability.py [--manifests 1000] [--files 5] [--repeats 5]

The table: ``--manifests`` appends of ``--files`` data files each (one per partition) with manifest
merging off, then history expired to one snapshot, so its manifest list holds 1,000 manifests
of 5 entries (a table written by many small appends). Firn's side is the reachability walk of
``remove_orphan_files`` (manifest list, then every manifest read for paths only with a
projected fastavro reader schema, in parallel threads). PyIceberg's side reads the entries of
the same manifests through its API (``ManifestFile.fetch_manifest_entry``, its fastest path to
every entry; ``table.inspect.files()`` also decodes the metrics). Both sides alternate and
start cold (Firn's manifest caches cleared). Prints entries/s and the Firn/PyIceberg ratio
against the issue's target (>= 1.5x). The table is cached in bench/.cache/.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (
    CACHE_DIR,
    final_verdict,
    firn_catalog,
    median,
    ms,
    quiet_peers,
    round_order,
    verdict,
    workdir,
)

TARGET = 1.5
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.string()), ("v", pa.float64())])


def _build(root: Path, manifests: int, files: int) -> None:
    catalog = firn_catalog(root)
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_spec=[("part", "identity")],
        properties={"format-version": "2", "commit.manifest-merge.enabled": "false"},
    )
    done = 0
    while done < manifests:
        with t.transaction() as tx:
            for _ in range(min(50, manifests - done)):
                ids = list(range(done * files, (done + 1) * files))
                tx.append(
                    pa.table(
                        {"id": ids, "part": [f"p{k}" for k in range(files)], "v": [float(i) for i in ids]},
                        schema=SCHEMA,
                    )
                )
                done += 1
    t.maintenance.expire_snapshots(older_than=int(time.time() * 1000) + 1000, retain_last=1).run()
    catalog.close()


def _prepared(base: Path, manifests: int, files: int) -> Path:
    path = base / f"orphans-v2-{manifests}x{files}"
    if not (path / "done").exists():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        started = time.perf_counter()
        _build(path, manifests, files)
        (path / "done").write_text("ok")
        print(f"built a v2 table of {manifests} manifests in {time.perf_counter() - started:.0f} s")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifests", type=int, default=1000)
    ap.add_argument("--files", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 manifests, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.manifests, args.repeats = 60, 1
    quiet_peers()

    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    from firn.maintenance.reachability import reachable, read_trees
    from firn.manifests.cache import clear_caches

    with workdir("orphans") as tmp:
        root = _prepared(tmp if args.quick else CACHE_DIR, args.manifests, args.files)
        catalog = firn_catalog(root)
        table = catalog.load_table("db.t")
        snap = table.current_snapshot()
        assert snap is not None and len(table.snapshots()) == 1
        py_catalog = PySqlCatalog(
            catalog.name, uri=f"sqlite:///{root}/firn.db", warehouse=f"file://{root}/firn-warehouse"
        )
        py_table = py_catalog.load_table("db.t")
        py_io = py_table.io

        def firn_walk() -> int:
            clear_caches()
            md = table.metadata
            files = reachable(table.io, md, read_trees(table.io, md, list(md.snapshots)))
            return len(files.kind("data_files"))

        def pyiceberg_read() -> int:
            n = 0
            for m in py_table.current_snapshot().manifests(py_io):
                n += len(m.fetch_manifest_entry(py_io, discard_deleted=False))
            return n

        firn_t, py_t = [], []
        entries = 0
        sides = [(firn_walk, firn_t), (pyiceberg_read, py_t)]
        for run in range(args.repeats):  # who goes first swaps every round
            counted = {}
            for side, times in round_order(sides, run):
                start = time.perf_counter()
                counted[side] = side()
                times.append(time.perf_counter() - start)
            entries, py_entries = counted[firn_walk], counted[pyiceberg_read]
            assert py_entries == entries, (py_entries, entries)
        f, p = median(firn_t), median(py_t)
        print(
            f"{args.manifests} v2 manifests, {entries} entries, median of {args.repeats} "
            "(alternating, who goes first swapping each round; cold)"
        )
        print(f"  Firn reachability walk     {ms(f):>12}  {entries / f:>10,.0f} entries/s")
        print(f"  PyIceberg manifest entries {ms(p):>12}  {entries / p:>10,.0f} entries/s")
        ratio = p / f
        print(
            f"Firn/PyIceberg entries/s ratio {ratio:.2f}x (target >= {TARGET}x): {verdict(ratio >= TARGET)}"
        )
        catalog.close()


if __name__ == "__main__":
    main()
    final_verdict()
