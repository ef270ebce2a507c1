"""Issue 22 item 7: what an object store costs, S3 (moto on loopback) against local disk in one run.

    .venv/bin/python bench/bench_object_store.py [--commits 60] [--files 40] [--strays 1100] [--quick]

The same tables are built on both warehouses (SQLite catalogs; the S3 one reaches moto's
standalone S3 server, started here on 127.0.0.1, through Firn's FileIO properties as a user
sets them) and each operation is timed on both, alternating, and printed as an S3/local
ratio of medians:

* commit latency: ``append`` of one row, v2 and V4;
* planning: load the table and ``plan_files()`` cold, as a fresh process plans (the catalogs
  keep no parsed metadata, the process's manifest caches are cleared first), v2 and V4
  tables of ``--files`` appends of two files each;
* compaction: ``rewrite_data_files`` of those tables (each run on a fresh copy);
* orphan listing: ``remove_orphan_files`` dry run over the table plus ``--strays`` orphans
  (more than 1,000 objects: S3 lists them in pages of 1,000).

Requests are counted on a second pass of each operation through the test suite's counting
proxy (``tests/fixtures/s3_faults.py``), so the proxy never sits in a timed path: per
operation, by kind (GET, PUT, HEAD, LIST, BATCH-DELETE, ...). V4's single-file commit should
make fewer requests per commit than v2; the verdict line says by how many. Loopback has no
network latency, so the ratios are the floor of what a real object store costs: a real S3
request takes 10-50 ms, and the request counts carry over unchanged.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from _harness import BENCH_DIR, final_verdict, median, ms, verdict, workdir
from firn.manifests.cache import clear_caches
from firn.manifests.v4_io import clear_v4_cache

sys.path.insert(0, str(BENCH_DIR.parent))  # the test suite's S3 server and counting proxy

from tests.fixtures.s3 import S3Server, running_s3_server
from tests.fixtures.s3_faults import FaultProxy

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("region", pa.string()), ("name", pa.string())]
)


def batch(start: int, n: int = 1) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "region": ["eu" if i % 2 else "us" for i in ids], "name": [f"n{i}" for i in ids]},
        schema=SCHEMA,
    )


class Stores:
    """Three catalogs: local disk, S3 direct (timed), S3 through the counting proxy (counted).
    The two S3 catalogs share one SQLite file and one bucket: the same tables."""

    def __init__(self, root: Path, server: S3Server, proxy: FaultProxy) -> None:
        import firn

        bucket = server.create_bucket("firn-bench")
        self.proxy = proxy
        # No parsed-metadata cache: every load_table reads the metadata file, as a fresh process does.
        cold = {"metadata-cache-size": "0"}
        self.local = firn.load_catalog(f"sqlite:///{root}/local.db", warehouse=str(root / "wh"), **cold)
        uri, wh = f"sqlite:///{root}/s3.db", f"s3://{bucket}/wh"
        self.s3 = firn.load_catalog(uri, warehouse=wh, **server.properties(**cold))
        self.counted = firn.load_catalog(uri, warehouse=wh, **server.properties(proxy.endpoint, **cold))
        for c in (self.local, self.s3):
            c.create_namespace("db")

    def close(self) -> None:
        for c in (self.local, self.s3, self.counted):
            c.close()


def create(catalog: Any, name: str, version: int) -> Any:
    return catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        partition_spec=[("region", "identity")],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )


def counted(stores: Stores, fn: Callable[[], object], runs: int = 1) -> dict[str, float]:
    """Requests per run of ``fn`` (through the proxy), by kind."""
    stores.proxy.reset_log()
    for _ in range(runs):
        fn()
    return {k: v / runs for k, v in sorted(stores.proxy.summary().items())}


def alternate(
    local: Callable[[], object], s3: Callable[[], object], runs: int
) -> tuple[list[float], list[float]]:
    """Timings of ``runs`` calls of each, alternating (drift hits both)."""
    lt: list[float] = []
    st: list[float] = []
    for _ in range(runs):
        for fn, out in ((local, lt), (s3, st)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return lt, st


def show(label: str, lt: list[float], st: list[float], requests: dict[str, float]) -> dict[str, Any]:
    lm, sm = median(lt), median(st)
    total = sum(requests.values())
    kinds = ", ".join(f"{k} {v:g}" for k, v in requests.items())
    print(f"{label:<38} | {ms(lm):>10} | {ms(sm):>10} | {sm / lm:>7.1f}x | {total:>6g} ({kinds})")
    return {"label": label, "local": lm, "s3": sm, "requests": total}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commits", type=int, default=60, help="timed single-row appends per table")
    parser.add_argument("--files", type=int, default=40, help="appends (data files per region) for planning")
    parser.add_argument("--strays", type=int, default=1100, help="orphan objects for the listing")
    parser.add_argument("--runs", type=int, default=7, help="timed runs of planning and listing")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.commits, args.files, args.strays, args.runs = 6, 4, 30, 2
    load_before = os.getloadavg()

    with (
        workdir("object-store") as root,
        running_s3_server(root / "moto.log") as server,
        FaultProxy(server.endpoint) as proxy,
    ):
        stores = Stores(root, server, proxy)
        print(
            f"Object store (moto's S3 server on 127.0.0.1) vs local disk; SQLite catalogs; "
            f"load average {load_before[0]:.1f}"
        )
        print(
            f"{'operation':<38} | {'local':>10} | {'S3':>10} | {'S3/local':>8} | S3 requests per op (by kind)"
        )
        print("-" * 120)
        rows: dict[str, dict[str, Any]] = {}

        # -- commits -------------------------------------------------------------------------------
        for version, tag in ((2, "v2"), (4, "V4")):
            name = f"commits_{tag.lower()}"
            lt_, st_ = create(stores.local, name, version), create(stores.s3, name, version)
            for t in (lt_, st_):  # a parent and some history, as in bench_v4_files_per_commit
                for i in range(3):
                    t.append(batch(i))
            ids = iter(range(10_000, 10**9))
            lt, st = alternate(
                lambda t=lt_, n=ids: t.append(batch(next(n))),
                lambda t=st_, n=ids: t.append(batch(next(n))),
                args.commits,
            )
            via = stores.counted.load_table(f"db.{name}")
            req = counted(stores, lambda v=via, n=ids: v.append(batch(next(n))), runs=5)
            rows[f"commit {tag}"] = show(f"commit: append 1 row, {tag}", lt, st, req)

        # -- tables of many small files: planning, compaction ---------------------------------------
        built: dict[str, tuple[Any, Any]] = {}
        for version, tag in ((2, "v2"), (4, "V4")):
            name = f"files_{tag.lower()}"
            pair = create(stores.local, name, version), create(stores.s3, name, version)
            for i in range(args.files):
                for t in pair:
                    t.append(batch(100 * i, 10))
            built[tag] = pair

        def plan(catalog: Any, name: str) -> int:
            # Cold, as a fresh process plans (an Airflow task, a Spark driver): no manifest
            # decoded earlier in this process is reused.
            clear_caches()
            clear_v4_cache()
            return len(catalog.load_table(name).scan().plan_files())

        for tag in built:
            name = f"db.files_{tag.lower()}"
            lt, st = alternate(
                lambda n=name: plan(stores.local, n), lambda n=name: plan(stores.s3, n), args.runs
            )
            req = counted(stores, lambda n=name: plan(stores.counted, n))
            files = plan(stores.local, name)
            rows[f"plan {tag}"] = show(f"plan: load + plan_files, {tag} {files} files", lt, st, req)

        for tag in built:
            # Compaction changes its table: each timed run compacts a fresh copy (registered
            # from the built table's metadata in a scratch namespace), built the same way.
            timings: dict[str, list[float]] = {"local": [], "s3": []}
            for run in range(max(2, args.runs // 2)):
                for side, catalog in (("local", stores.local), ("s3", stores.s3)):
                    t = create(catalog, f"compact_{tag.lower()}_{run}", 2 if tag == "v2" else 4)
                    for i in range(args.files):
                        t.append(batch(100 * i, 10))
                    start = time.perf_counter()
                    t.maintenance.rewrite_data_files(min_input_files=2).run()
                    timings[side].append(time.perf_counter() - start)
            twin = create(stores.counted, f"compact_{tag.lower()}_counted", 2 if tag == "v2" else 4)
            for i in range(args.files):
                twin.append(batch(100 * i, 10))
            req = counted(stores, lambda t=twin: t.maintenance.rewrite_data_files(min_input_files=2).run())
            rows[f"compact {tag}"] = show(
                f"compaction: {2 * args.files} files -> 2, {tag}", timings["local"], timings["s3"], req
            )

        # -- orphan listing --------------------------------------------------------------------------
        lt_, st_ = built["V4"]
        for t in (lt_, st_):
            for i in range(args.strays):
                t.io.new_output(f"{t.location}/data/region=eu/stray-{i:05d}.parquet").write(b"x")
        cutoff = int(time.time() * 1000) + 5000

        def orphans(catalog: Any) -> int:
            t = catalog.load_table("db.files_v4")
            result = t.maintenance.remove_orphan_files(older_than=cutoff, force=True).run()  # a dry run
            return len(result.orphan_file_locations)

        lt, st = alternate(lambda: orphans(stores.local), lambda: orphans(stores.s3), args.runs)
        req = counted(stores, lambda: orphans(stores.counted))
        objects = sum(1 for _ in st_.io.list_prefix(st_.location))
        rows["orphans"] = show(f"orphan listing: dry run, {objects:,} objects", lt, st, req)
        stores.close()

    v2, v4 = rows["commit v2"]["requests"], rows["commit V4"]["requests"]
    load_after = os.getloadavg()
    print("-" * 120)
    print(f"load average during the run: {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end")
    print(
        f"S3 requests per commit: V4 {v4:g}, v2 {v2:g}: {v2 - v4:g} fewer per commit with V4 "
        f"(target: fewer than v2) {verdict(v4 < v2)}"
    )
    ratio = statistics.median([r["s3"] / r["local"] for r in rows.values()])
    print(f"median S3/local ratio over the operations: {ratio:.1f}x (loopback: no network latency)")
    final_verdict()
    return 0 if v4 < v2 else 1


if __name__ == "__main__":
    sys.exit(main())
