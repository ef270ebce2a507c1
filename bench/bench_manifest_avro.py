"""Throughput of Firn's v1-v3 Avro manifest writer and reader, next to PyIceberg's reader.

    .venv/bin/python bench/bench_manifest_avro.py [--entries 3000] [--repeats 5]

A v2 manifest with 10 long stats columns, an identity + bucket partition, written and read
in memory; prints median entries/second for Firn write, Firn read and PyIceberg read of the
same file, and the Firn/PyIceberg read ratio. Anchors: notes perf §1c/§4a (fastavro ~18k
reads/s, 5-6k writes/s on the reference VM; PyIceberg's Cython reader 25-35k/s).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from _harness import final_verdict
from firn.io.memory import InMemoryFileIO
from firn.manifests import cache, read_manifest, write_manifest
from firn.spec.content import DataFile, EntryStatus, FileContent, FileFormat, ManifestEntry
from firn.spec.partitioning import build_partition_spec
from firn.spec.schema import Schema
from firn.spec.types import LONG, STRING, NestedField


def _entries(n: int) -> list[ManifestEntry]:
    out = []
    for i in range(n):
        stats = {c: 100 for c in range(1, 11)}
        bounds = {c: (i + c).to_bytes(8, "little", signed=True) for c in range(1, 11)}
        f = DataFile(
            FileContent.DATA,
            f"s3://bucket/warehouse/db/t/data/{i:08d}.parquet",
            FileFormat.PARQUET,
            (f"r{i % 5}", i % 16),
            1000 + i,
            50_000 + i,
            0,
            stats,
            stats,
            {c: 0 for c in range(1, 11)},
            None,
            bounds,
            bounds,
        )
        out.append(ManifestEntry(EntryStatus.ADDED, 1, None, None, f))
    return out


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: 300 entries, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.entries, args.repeats = 300, 1
    n = args.entries
    cache.configure_caches(enabled=False)
    fio = InMemoryFileIO()
    schema = Schema(*(NestedField(i, f"c{i}", LONG) for i in range(1, 11)), NestedField(11, "region", STRING))
    spec = build_partition_spec(schema, [("region", "identity"), ("c1", "bucket[16]")])
    entries = _entries(n)
    counter = iter(range(1_000_000))

    def write() -> None:
        write_manifest(
            fio.new_output(f"mem://m{next(counter)}.avro"),
            entries,
            spec=spec,
            schema=schema,
            format_version=2,
            snapshot_id=1,
        )

    write_s = _median_seconds(write, args.repeats)
    mf = write_manifest(
        fio.new_output("mem://bench.avro"), entries, spec=spec, schema=schema, format_version=2, snapshot_id=1
    ).evolve(sequence_number=1)
    data = fio.new_input("mem://bench.avro").read()
    ptype = spec.partition_type(schema)
    read_s = _median_seconds(lambda: read_manifest(data, mf, partition_type=ptype), args.repeats)
    print(
        f"manifest v2, 10 stats columns, {len(data) / n:.0f} B/entry, {n} entries, median of {args.repeats}"
    )
    print(f"  firn write     {n / write_s:>10,.0f} entries/s")
    print(f"  firn read      {n / read_s:>10,.0f} entries/s")
    try:
        import tempfile

        from pyiceberg.io.pyarrow import PyArrowFileIO
        from pyiceberg.manifest import ManifestFile as PyManifestFile
        from pyiceberg.manifest import _manifests  # noqa: F401  # warm import
    except Exception as e:  # pragma: no cover - pyiceberg is a dev dependency
        print(f"  pyiceberg read skipped: {e}")
        return
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/bench.avro"
        with open(path, "wb") as fh:
            fh.write(data)
        pio = PyArrowFileIO()
        pmf = PyManifestFile.from_args(
            manifest_path=path,
            manifest_length=len(data),
            partition_spec_id=0,
            content=0,
            sequence_number=1,
            min_sequence_number=1,
            added_snapshot_id=1,
            added_files_count=n,
            existing_files_count=0,
            deleted_files_count=0,
            added_rows_count=0,
            existing_rows_count=0,
            deleted_rows_count=0,
        )
        py_s = _median_seconds(lambda: pmf.fetch_manifest_entry(pio, discard_deleted=True), args.repeats)
    print(f"  pyiceberg read {n / py_s:>10,.0f} entries/s")
    print(f"  firn/pyiceberg read ratio: {py_s / read_s:.2f}x")


if __name__ == "__main__":
    main()
    final_verdict(report_only="throughput next to PyIceberg and the notes' anchors; no target")
