"""Throughput of Firn's v1-v3 Avro manifest reader next to PyIceberg's, on the same file in the
same run, for the full read and the projected reads that health and reachability make.

    .venv/bin/python bench/bench_manifest_avro.py [--entries 10000] [--repeats 5] [--quick]

A v2 manifest with 10 long stats columns, an identity + bucket partition, written by Firn
(deflate, like Java). Sides, timed in rotating order each round (median entries/second):

* **firn full**: ``read_manifest`` — every field decoded into ``ManifestEntry``/``DataFile``;
* **firn health**: ``read_entry_columns`` of the fields ``table.health()`` reads (content,
  format, record count, size);
* **firn paths**: ``read_manifest_paths``, what expiry and orphan removal read (status,
  snapshot id, content, path, format, size);
* **pyiceberg**: ``ManifestFile.fetch_manifest_entry`` — PyIceberg 0.12's Cython reader, which
  always decodes whole entries (it has no projected manifest read), so it is the peer of all
  three.

Target (issue 24 item 1): each Firn read >= 1.5x PyIceberg's. Firn's write throughput is
printed for reference.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

from _harness import final_verdict, median, quiet_peers, round_order, verdict
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO as FirnFileIO
from firn.maintenance.manifest_paths import read_manifest_paths
from firn.manifests import avro_schemas as ids
from firn.manifests import cache, read_manifest, write_manifest
from firn.manifests.projected import read_entry_columns
from firn.spec.content import DataFile, EntryStatus, FileContent, FileFormat, ManifestEntry
from firn.spec.partitioning import build_partition_spec
from firn.spec.schema import Schema
from firn.spec.types import LONG, STRING, NestedField

# The data_file fields table.health() projects (firn.maintenance.health._AVRO_FIELDS).
HEALTH_FIELDS = (ids.CONTENT_ID, ids.FILE_FORMAT_ID, ids.RECORD_COUNT_ID, ids.FILE_SIZE_ID)


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


TARGET_RATIO = 1.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: 300 entries, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.entries, args.repeats = 300, 1
    n = args.entries
    quiet_peers()
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
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import ManifestFile as PyManifestFile

    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/bench.avro"
        mf = write_manifest(
            fio.new_output("mem://bench.avro"),
            entries,
            spec=spec,
            schema=schema,
            format_version=2,
            snapshot_id=1,
        ).evolve(sequence_number=1, manifest_path=path)
        data = fio.new_input("mem://bench.avro").read()
        with open(path, "wb") as fh:
            fh.write(data)
        firn_io = FirnFileIO()
        ptype = spec.partition_type(schema)
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
        # Every side reads the same file from the local disk (the OS cache keeps it warm).
        sides: dict[str, Callable[[], object]] = {
            "firn full": lambda: read_manifest(firn_io.new_input(path), mf, partition_type=ptype),
            "firn health": lambda: read_entry_columns(firn_io.new_input(path), HEALTH_FIELDS),
            "firn paths": lambda: read_manifest_paths(firn_io, mf),
            "pyiceberg": lambda: pmf.fetch_manifest_entry(pio, discard_deleted=True),
        }
        # Each side must see every entry.
        assert len(read_manifest(data, mf, partition_type=ptype)) == n
        assert len(pmf.fetch_manifest_entry(pio, discard_deleted=True)) == n
        assert len(read_manifest_paths(firn_io, mf)) == n
        times: dict[str, list[float]] = {k: [] for k in sides}
        for r in range(args.repeats):
            for name in round_order(list(sides), r):
                start = time.perf_counter()
                sides[name]()
                times[name].append(time.perf_counter() - start)
    med = {k: median(v) for k, v in times.items()}
    print(
        f"manifest v2, 10 stats columns, {len(data) / n:.0f} B/entry (deflate), {n} entries, median of {args.repeats}"
    )
    print(f"  firn write     {n / write_s:>10,.0f} entries/s")
    py = med["pyiceberg"]
    print(f"  pyiceberg read {n / py:>10,.0f} entries/s  (whole entries; the peer of every Firn read)")
    for name in ("firn full", "firn health", "firn paths"):
        ratio = py / med[name]
        print(
            f"  {name:<14} {n / med[name]:>10,.0f} entries/s  {ratio:5.2f}x PyIceberg "
            f"(target >= {TARGET_RATIO}x) {verdict(ratio >= TARGET_RATIO)}"
        )


if __name__ == "__main__":
    main()
    final_verdict()
