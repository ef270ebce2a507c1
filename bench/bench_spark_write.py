"""Spark write: rows written through the ``firn`` data source vs ``df.write.parquet``, local[2].

Issue 12 ("Speed"): writing 10M rows through the Firn data source (Parquet data files written
by the Spark tasks, one commit on the driver) must reach at least 0.8x the rows/s of Spark's
own Parquet writer.

Setup: one DataFrame of ``--rows`` rows generated in the JVM (``spark.range`` with a long, a
short string, a double, an int, a timestamp and a text column) over 2 partitions; both sides
compute it the same way on every run. Firn appends it to a fresh unpartitioned v2 table each
run (``mode("append")``, including the commit); Spark writes it to a fresh directory with
``df.write.parquet`` (snappy on both sides, Firn's default codec being zstd is overridden by
the table property ``write.parquet.compression-codec=snappy`` so both encode alike). The two
take turns, ``--runs`` rounds after one warm-up each, who goes first swapping every round;
medians, their ratio and the ratio of each round's pair are printed.

Run: ``.venv/bin/python bench/bench_spark_write.py [--rows N] [--runs N] [--quick]``
"""

from __future__ import annotations

import argparse
import time

import firn
from _harness import final_verdict, median, round_order, spark_session, verdict, workdir

TARGET = 0.8

COLUMNS = [
    "id",
    "element_at(array('eu', 'us', 'ap', 'sa', 'af'), cast(id % 5 as int) + 1) AS region",
    "rand(7) * 1000 AS amount",
    "cast(id % 1000 as int) AS qty",
    "timestamp_micros(1700000000000000 + id * 1000000) AS ts",
    "concat('note-', cast(id % 9973 as string)) AS note",
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 200,000 rows, 1 run")
    args = p.parse_args()
    if args.quick:
        args.rows, args.runs = 200_000, 1
    with workdir("spark-write") as root:
        uri = f"sqlite:///{root}/catalog.db"
        catalog = firn.load_catalog(uri, warehouse=str(root / "warehouse"))
        catalog.create_namespace("db")
        spark = spark_session()
        try:
            df = spark.range(0, args.rows, 1, 2).selectExpr(*COLUMNS)
            schema = df.limit(1).toArrow().schema
            counter = iter(range(1_000_000))

            def firn_write() -> float:
                name = f"db.w{next(counter)}"
                catalog.create_table(
                    name,
                    schema,
                    properties={"format-version": "2", "write.parquet.compression-codec": "snappy"},
                )
                start = time.perf_counter()
                df.write.format("firn").option("catalog", uri).mode("append").save(name)
                elapsed = time.perf_counter() - start
                assert catalog.load_table(name).scan().count() == args.rows
                return elapsed

            def parquet_write() -> float:
                target = root / f"parquet-{next(counter)}"
                start = time.perf_counter()
                df.write.option("compression", "snappy").parquet(str(target))
                return time.perf_counter() - start

            sides = {"firn data source": firn_write, "df.write.parquet": parquet_write}
            times: dict[str, list[float]] = {k: [] for k in sides}
            for fn in sides.values():
                fn()  # warm-up
            for run in range(args.runs):  # the order swaps every round
                for name in round_order(list(sides), run):
                    times[name].append(sides[name]())
        finally:
            spark.stop()
    print(
        f"\nwriting {args.rows:,} rows (6 columns, 2 Spark partitions), local[2], {args.runs} rounds, "
        "who goes first swapping each round"
    )
    for name, ts in times.items():
        m = median(ts)
        print(
            f"  {name:18s} {m:8.2f} s   {args.rows / m / 1e6:6.2f} M rows/s   runs: {', '.join(f'{t:.2f}' for t in ts)}"
        )
    ratio = median(times["df.write.parquet"]) / median(times["firn data source"])
    # Each Firn run against the Spark run of its round: steadier than the ratio of medians
    # when the machine's load changes during the benchmark.
    paired = [p / f for f, p in zip(times["firn data source"], times["df.write.parquet"])]
    print(
        f"\nratio firn / df.write.parquet (rows/s) = {ratio:.2f}x  (target >= {TARGET}x)  {verdict(ratio >= TARGET)}"
    )
    print(
        f"run by run: {', '.join(f'{r:.2f}x' for r in paired)}; median {median(paired):.2f}x  "
        f"{verdict(median(paired) >= TARGET)}"
    )


if __name__ == "__main__":
    main()
    final_verdict()
