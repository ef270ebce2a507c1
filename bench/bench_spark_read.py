"""Spark read: ``firn.spark.read`` and the ``firn`` data source vs ``spark.read.parquet``, local[2].

Issue 12 ("Speed"): reading a table through Firn on Spark must reach at least 0.8x the rows/s
of Spark's own Parquet reader on the same data files (no deletes).

Setup: a v2 table (no partitioning, no deletes) of ``--rows`` rows in ``--files`` appends,
written by Firn into a temporary warehouse. Every side reads every column of every row into
Spark's ``noop`` sink (the whole scan runs, nothing is written):

* ``firn.spark.read``: Firn plans the scan on the driver (table load, planning, one footer
  read per data file) and hands the delete-free files to Spark's own Parquet reader;
* ``firn data source``: ``spark.read.format("firn")``, rows decoded in Python workers and
  handed to Spark as Arrow batches;
* ``spark.read.parquet`` on the table's data file paths (the target's reference);
* ``python source floor``: for context, a Python data source yielding the same number of rows
  from Arrow batches already in memory (no file I/O, no decoding), i.e. what any Python data
  source pays to hand Arrow data to Spark.

Each timing runs from making the DataFrame (``firn.spark.read``'s planning and footer reads,
``spark.read.parquet``'s file listing) to the end of the write. The sides take turns,
``--runs`` rounds after one warm-up each, the order rotated by one every round (each side
runs first, second, ... equally often over a multiple of four rounds); medians, each side's ratio of medians to
``spark.read.parquet`` and each run pair's ratio (a side's run against the ``spark.read.parquet``
run next to it) are printed with the target. Session start is not timed; ``firn.spark.read``'s
driver-side planning is also timed alone.

Run: ``.venv/bin/python bench/bench_spark_read.py [--rows N] [--files N] [--runs N] [--quick]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import firn
import firn.spark
from _harness import final_verdict, median, round_order, spark_session, verdict, workdir
from firn.catalog.base import Catalog

TARGET = 0.8


def make_rows(start: int, count: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    regions = np.array(["eu", "us", "ap", "sa", "af"])
    return pa.table(
        {
            "id": ids,
            "region": pa.array(regions[rng.integers(0, len(regions), count)]),
            "amount": rng.random(count) * 1000,
            "qty": rng.integers(0, 1000, count).astype(np.int32),
            "ts": pa.array(1_700_000_000_000_000 + ids * 1_000_000, pa.timestamp("us", tz="UTC")),
            "note": pa.array(np.char.add("note-", (ids % 9973).astype(str))),
        }
    )


def build(catalog: Catalog, rows: int, files: int) -> Any:
    catalog.create_namespace("db")
    schema = make_rows(0, 1, np.random.default_rng(0)).schema
    table = catalog.create_table("db.t", schema, properties={"format-version": "2"})
    rng = np.random.default_rng(7)
    per = rows // files
    for i in range(files):
        table.append(make_rows(i * per, per, rng))
    return table


def register_floor(spark: Any) -> None:
    """Register ``firn_bench_floor``: ``rows`` rows of :func:`make_rows` over ``parts`` partitions,
    built once per partition in memory and yielded as Arrow batches."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):
        def __init__(self, rows: int, parts: int) -> None:
            self.rows, self.parts = rows, parts

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition: InputPartition) -> Any:
            per = self.rows // self.parts
            batch_rows = 131_072
            data = make_rows(0, min(per, batch_rows), np.random.default_rng(1))
            fields = [pa.field(f.name, f.type, f.name != "id") for f in data.schema]
            batch = data.cast(pa.schema(fields)).combine_chunks().to_batches()[0]
            for start in range(0, per, batch_rows):
                yield batch.slice(0, min(batch_rows, per - start))

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "firn_bench_floor"

        def schema(self) -> str:
            return "id bigint not null, region string, amount double, qty int, ts timestamp, note string"

        def reader(self, schema: Any) -> FloorReader:
            return FloorReader(int(self.options["rows"]), int(self.options["parts"]))

    spark.dataSource.register(FloorSource)


def timed_noop(make: Callable[[], Any]) -> float:
    start = time.perf_counter()
    make().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


PARQUET = "spark.read.parquet"
FIRN_SIDES = ("firn.spark.read", "firn data source", "python source floor")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="a smoke run: 200,000 rows, 4 files, 1 run")
    args = p.parse_args()
    if args.quick:
        args.rows, args.files, args.runs = 200_000, 4, 1
    with workdir("spark-read") as root:
        uri = f"sqlite:///{root}/catalog.db"
        catalog = firn.load_catalog(uri, warehouse=str(root / "warehouse"))
        t0 = time.perf_counter()
        table = build(catalog, args.rows, args.files)
        paths = [f.file.file_path for f in table.scan().plan_files()]
        size = sum(f.file.file_size_in_bytes for f in table.scan().plan_files())
        print(
            f"table: {args.rows:,} rows, {len(paths)} data files, {size / 1e6:,.1f} MB "
            f"(built in {time.perf_counter() - t0:.1f} s)"
        )
        t0 = time.perf_counter()
        spark = spark_session()
        print(f"Spark session start (not in the timings): {time.perf_counter() - t0:.1f} s")
        try:
            register_floor(spark)
            # The floor splits its rows over as many partitions as the Firn scan plans.
            parts = spark.read.format("firn").option("catalog", uri).load("db.t").rdd.getNumPartitions()
            plan = firn.spark.plan_read(spark, "db.t", catalog=uri)
            assert len(plan.native_files) == len(paths) and not plan.firn_files, plan.routed
            sides: dict[str, Callable[[], Any]] = {
                "firn.spark.read": lambda: firn.spark.read(spark, "db.t", catalog=uri),
                PARQUET: lambda: spark.read.parquet(
                    *[Path(x.removeprefix("file://")).as_uri() for x in paths]
                ),
                "firn data source": lambda: spark.read.format("firn").option("catalog", uri).load("db.t"),
                "python source floor": lambda: (
                    spark.read.format("firn_bench_floor")
                    .option("rows", str(args.rows))
                    .option("parts", str(parts))
                    .load()
                ),
            }
            times: dict[str, list[float]] = {k: [] for k in sides}
            for make in sides.values():  # warm-up: JIT, Python workers, file cache
                timed_noop(make)
            for run in range(args.runs):  # rotated each round: no side always first or last
                for name in round_order(list(sides), run):
                    times[name].append(timed_noop(sides[name]))
            planning = []
            for _ in range(max(3, args.runs)):
                t0 = time.perf_counter()
                firn.spark.plan_read(spark, "db.t", catalog=uri)
                planning.append(time.perf_counter() - t0)
        finally:
            spark.stop()
    print(
        f"\nfull scan into Spark's noop sink, local[2], {args.runs} rounds, order rotated each round (median)"
    )
    print(f"  (the firn data source and the floor: {parts} input partitions each)")
    for name, ts in times.items():
        m = median(ts)
        print(
            f"  {name:20s} {m:8.2f} s   {args.rows / m / 1e6:6.2f} M rows/s   runs: {', '.join(f'{t:.2f}' for t in ts)}"
        )
    print(
        f"firn.spark.read planning alone (driver: table load, planning, {len(paths)} footers): "
        f"median {median(planning) * 1e3:.0f} ms over {len(planning)} calls"
    )
    print(f"\nratio to spark.read.parquet (rows/s), target >= {TARGET}x:")
    for name in FIRN_SIDES:
        ratio = median(times[PARQUET]) / median(times[name])
        # Each run against the spark.read.parquet run of the same round: steadier under a changing load.
        paired = [q / f for f, q in zip(times[name], times[PARQUET])]
        mark = "(context, no target)" if name == "python source floor" else verdict(ratio >= TARGET)
        print(
            f"  {name:20s} {ratio:.2f}x  {mark}   run by run: {', '.join(f'{r:.2f}x' for r in paired)}; "
            f"median {median(paired):.2f}x"
        )


if __name__ == "__main__":
    main()
    final_verdict()
