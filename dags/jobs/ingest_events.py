"""The PySpark job of the ``firn_ingest_events`` DAG: small appends and late deletes.

Submitted by the DAG with ``spark-submit`` (the Firn catalog comes from the Spark conf
``spark.firn.catalog.*``, set by the operator from the Airflow connection)::

    spark-submit ingest_events.py --table demo.events --run-key <run id> [--commits 4]
        [--rows 400] [--late-delete-users 2]

Each run appends ``--commits`` micro-batches of ``--rows`` events through the ``firn`` data
source (one small commit each, the way a streaming or frequent batch pipeline writes), then
retracts the events of ``--late-delete-users`` users with a merge-on-read delete: deletion
vectors on v3 and V4 tables, position delete files on v2. Left alone, such a table gathers
small files, deletes and (V4) root entries: what the maintenance DAGs clean up.

The table is created on the first run (format V4, partitioned by day, merge-on-read deletes).
Event ids derive from ``--run-key``, so a rerun of the same DAG run appends the same ids, and
different runs do not collide. The job prints one summary line.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import zlib

from pyspark.sql import DataFrame, SparkSession

import firn.spark
from firn.errors import AlreadyExists
from firn.spec.schema import Schema
from firn.spec.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

SCHEMA = Schema(
    NestedField(1, "event_id", LongType(), required=True),
    NestedField(2, "user_id", LongType()),
    NestedField(3, "kind", StringType()),
    NestedField(4, "region", StringType()),
    NestedField(5, "ts", TimestamptzType()),
    NestedField(6, "amount", DoubleType()),
)
PARTITION_SPEC = [("ts", "day")]
PROPERTIES = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
USERS = 97
# Events of one run fall within an hour of one of three days: a few day partitions in all.
EPOCH_S = 1_717_200_000  # 2024-06-01T00:00:00Z


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ingest_events", description=__doc__.splitlines()[0])
    p.add_argument("--table", required=True)
    p.add_argument("--run-key", required=True, help="the DAG run's id: seeds ids and deletes")
    p.add_argument("--commits", type=int, default=4)
    p.add_argument("--rows", type=int, default=400)
    p.add_argument("--late-delete-users", type=int, default=2)
    args = p.parse_args(argv)
    if args.commits < 0 or args.rows <= 0 or args.late_delete_users < 0:
        p.error("--commits and --late-delete-users must be >= 0, --rows > 0")
    return args


def ensure_table(spark: SparkSession, name: str) -> None:
    """Create the namespace and table on the first run (another run may race: fine)."""
    catalog = firn.spark.catalog_config(spark).load()
    namespace = name.rpartition(".")[0]
    if not catalog.namespace_exists(namespace):
        with contextlib.suppress(AlreadyExists):
            catalog.create_namespace(namespace)
    if not catalog.table_exists(name):
        with contextlib.suppress(AlreadyExists):
            catalog.create_table(name, SCHEMA, partition_spec=PARTITION_SPEC, properties=PROPERTIES)


def batch(spark: SparkSession, first_id: int, rows: int, day: int) -> DataFrame:
    """``rows`` events with ids from ``first_id``, on 2024-06-(1 + day), in two Spark partitions."""
    start_s = EPOCH_S + day * 86_400
    return spark.range(first_id, first_id + rows, numPartitions=2).selectExpr(
        "id AS event_id",
        f"CAST(pmod(id * 31, {USERS}) AS BIGINT) AS user_id",
        "element_at(array('view', 'click', 'cart', 'buy'), CAST(pmod(id, 4) AS INT) + 1) AS kind",
        "element_at(array('eu', 'us', 'ap'), CAST(pmod(id, 3) AS INT) + 1) AS region",
        f"timestamp_seconds({start_s} + pmod(id * 7, 3600)) AS ts",
        "CAST(pmod(id * 13, 10000) AS DOUBLE) / 100 AS amount",
    )


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    spark = SparkSession.builder.appName(f"firn ingest {args.table}").getOrCreate()
    try:
        firn.spark.register(spark)
        ensure_table(spark, args.table)
        seed = zlib.crc32(args.run_key.encode())
        base = seed * 1_000_000  # below 2**63 for every crc32
        for i in range(args.commits):
            batch(spark, base + i * args.rows, args.rows, day=seed % 3).write.format("firn").mode(
                "append"
            ).save(args.table)
        deleted = 0
        if args.late_delete_users:
            users = sorted({(seed >> (5 * k)) % USERS for k in range(args.late_delete_users)})
            result = firn.spark.merge_on_read_delete(
                spark, args.table, f"user_id in ({', '.join(map(str, users))})"
            )
            deleted = result.deleted_rows
        print(
            f"ingest {args.table}: {args.commits} append(s) of {args.rows} rows, "
            f"{deleted} late-deleted rows in {time.monotonic() - started:.1f} s"
        )
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
