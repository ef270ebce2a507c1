"""The PySpark job of ``firn_downstream_on_commit``: fold a source range into an aggregate, once.

Submitted by the DAG with ``spark-submit`` (the Firn catalog comes from the Spark conf
``spark.firn.catalog.*``, set by the operator from the Airflow connection)::

    spark-submit aggregate_events.py --source demo.events --target demo.events_by_kind
        [--to-snapshot-id <id from the commit event>]

The target holds, per ``(kind, region)``, the number of live events and their total amount
in cents. Each run (``firn.table.downstream``):

1. reads the last source snapshot the target recorded (``firn.source.demo.events.snapshot-id``
   in the target's snapshot summaries) and plans the range (recorded, end]; ``end`` is the
   event's snapshot when given, else the source's current one. An empty range (a retry or a
   duplicate event after the work was committed) and a range of ``replace`` commits only
   (compaction, DV rewrites, flushes: no row changed) are skipped;
2. reads the range's changelog on Spark (``firn.spark.read_changes``: inserts count +1,
   deletes -1, so the source's late deletes are folded in) and aggregates it there;
3. adds that delta to the target's rows and overwrites the target in one commit whose summary
   records the range's end. A concurrent run that got there first makes the commit fail with
   ``ValidationConflict`` and this run reports the range as already processed.

The target then always equals :func:`recompute` of the source at the recorded snapshot. The
job prints one JSON line (``AGGREGATE {...}``) that the operator returns as XCom.
``--crash-after-commit`` kills the driver with SIGKILL right after the commit, before that line
(tests use it to check a retry after such a crash).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from firn.catalog.base import Catalog
from firn.errors import AlreadyExists, ValidationConflict
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField, StringType
from firn.table.downstream import Increment, commit_increment, plan_increment
from firn.table.table import Table

TARGET_SCHEMA = Schema(
    NestedField(1, "kind", StringType()),
    NestedField(2, "region", StringType()),
    NestedField(3, "events", LongType(), required=True),
    NestedField(4, "amount_cents", LongType(), required=True),
)
KEYS = ("kind", "region")
ARROW_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string()),
        pa.field("region", pa.string()),
        pa.field("events", pa.int64(), nullable=False),
        pa.field("amount_cents", pa.int64(), nullable=False),
    ]
)
Key = tuple[str | None, str | None]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="aggregate_events", description=__doc__.splitlines()[0])
    p.add_argument("--source", required=True)
    p.add_argument("--target", required=True)
    p.add_argument(
        "--to-snapshot-id",
        default="current",
        help="end of the range (the commit event's snapshot); 'current': the source's current snapshot",
    )
    p.add_argument("--crash-after-commit", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    raw = args.to_snapshot_id.strip()
    try:
        args.to_snapshot_id = None if raw in ("", "None", "current") else int(raw)
    except ValueError:
        p.error(f"--to-snapshot-id must be a snapshot id, got {raw!r}")
    return args


def ensure_target(catalog: Catalog, name: str) -> Table:
    """The target table, created (format 2, unpartitioned: it is small) on the first run."""
    namespace = name.rpartition(".")[0]
    if not catalog.namespace_exists(namespace):
        with contextlib.suppress(AlreadyExists):
            catalog.create_namespace(namespace)
    if not catalog.table_exists(name):
        with contextlib.suppress(AlreadyExists):
            catalog.create_table(name, TARGET_SCHEMA, properties={"format-version": "2"})
    return catalog.load_table(name)


def _cents(amount: float | None) -> int:
    return 0 if amount is None else round(amount * 100)


def to_rows(totals: Mapping[Key, tuple[int, int]]) -> pa.Table:
    """The aggregate as Arrow, sorted by key, without the keys whose events went to zero."""
    live = sorted(
        ((k, v) for k, v in totals.items() if v[0] != 0), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")
    )
    return pa.Table.from_pylist(
        [{"kind": k[0], "region": k[1], "events": v[0], "amount_cents": v[1]} for k, v in live],
        schema=ARROW_SCHEMA,
    )


def recompute(rows: pa.Table) -> pa.Table:
    """The aggregate computed from scratch over the source's rows (what the target must equal)."""
    totals: dict[Key, tuple[int, int]] = {}
    for r in rows.select(["kind", "region", "amount"]).to_pylist():
        key = (r["kind"], r["region"])
        n, cents = totals.get(key, (0, 0))
        totals[key] = (n + 1, cents + _cents(r["amount"]))
    return to_rows(totals)


def fold(current: pa.Table, delta: list[dict[str, Any]]) -> pa.Table:
    """``current`` plus the delta rows (``kind``, ``region``, ``events``, ``amount_cents``)."""
    totals: dict[Key, tuple[int, int]] = {
        (r["kind"], r["region"]): (r["events"], r["amount_cents"]) for r in current.to_pylist()
    }
    for r in delta:
        key = (r["kind"], r["region"])
        n, cents = totals.get(key, (0, 0))
        totals[key] = (n + int(r["events"]), cents + int(r["amount_cents"]))
    return to_rows(totals)


def spark_delta(spark: object, source: Table, increment: Increment) -> list[dict[str, Any]]:
    """The range's changelog aggregated on Spark: +1 per inserted row, -1 per deleted one."""
    from pyspark.sql import functions as F

    import firn.spark

    changes = firn.spark.read_changes(
        spark,  # type: ignore[arg-type]
        source,
        increment.from_snapshot_id,
        increment.to_snapshot_id,
        columns=["kind", "region", "amount"],
    )
    sign = F.when(F.col("_change_type") == "DELETE", F.lit(-1)).otherwise(F.lit(1))
    cents = F.coalesce(F.round(F.col("amount") * 100).cast("long"), F.lit(0))
    grouped = changes.groupBy("kind", "region").agg(
        F.sum(sign).cast("long").alias("events"), F.sum(sign * cents).cast("long").alias("amount_cents")
    )
    return [row.asDict() for row in grouped.collect()]


def process(
    target: Table, increment: Increment, delta: list[dict[str, Any]], *, crash: bool = False
) -> dict[str, object]:
    """Fold ``delta`` (the aggregated changes of ``increment``) into ``target``, recording the
    range's end; returns the job's result."""
    result: dict[str, object] = {"status": "processed", **increment.to_dict()}
    new_rows = fold(target.scan().to_arrow(), delta)
    try:
        snapshot = commit_increment(
            target, increment, lambda tx, props: tx.overwrite(new_rows, snapshot_properties=props)
        )
    except ValidationConflict as e:
        return {**result, "status": "already-processed", "message": str(e)}
    if crash:  # a crash between the commit and its acknowledgement
        os.kill(os.getpid(), signal.SIGKILL)
    result["target_snapshot_id"] = snapshot.snapshot_id if snapshot is not None else None
    result["groups"] = new_rows.num_rows
    return result


def arrow_delta(source: Table, increment: Increment) -> list[dict[str, Any]]:
    """:func:`spark_delta` computed in this process, from ``source.changelog(...)`` (small
    ranges, and tests, need no Spark)."""
    changes = source.changelog(
        from_snapshot_id=increment.from_snapshot_id,
        to_snapshot_id=increment.to_snapshot_id,
        columns=["kind", "region", "amount"],
    ).to_arrow()
    totals: dict[Key, tuple[int, int]] = {}
    for r in changes.select(["kind", "region", "amount", "_change_type"]).to_pylist():
        sign = -1 if r["_change_type"] == "DELETE" else 1
        key = (r["kind"], r["region"])
        n, cents = totals.get(key, (0, 0))
        totals[key] = (n + sign, cents + sign * _cents(r["amount"]))
    return [{"kind": k[0], "region": k[1], "events": n, "amount_cents": c} for k, (n, c) in totals.items()]


def run(
    catalog: Catalog,
    source_name: str,
    target_name: str,
    delta: Callable[[Table, Increment], list[dict[str, Any]]],
    *,
    to_snapshot_id: int | None = None,
    crash: bool = False,
) -> dict[str, object]:
    """One run of the job against ``catalog`` (see the module docstring); ``delta`` aggregates
    the range's changes (:func:`spark_delta` or :func:`arrow_delta`)."""
    source = catalog.load_table(source_name)
    target = ensure_target(catalog, target_name)
    increment = plan_increment(source, target, to_snapshot_id=to_snapshot_id)
    if increment.is_empty:
        return {"status": "up-to-date", **increment.to_dict()}
    if increment.maintenance_only:
        return {"status": "skipped-maintenance", **increment.to_dict()}
    return process(target, increment, delta(source, increment), crash=crash)


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    import firn.spark

    args = parse_args(argv)
    started = time.monotonic()
    spark = SparkSession.builder.appName(f"firn aggregate {args.source} -> {args.target}").getOrCreate()
    try:
        firn.spark.register(spark)
        catalog = firn.spark.catalog_config(spark).load()
        try:
            result = run(
                catalog,
                args.source,
                args.target,
                lambda source, increment: spark_delta(spark, source, increment),
                to_snapshot_id=args.to_snapshot_id,
                crash=args.crash_after_commit,
            )
        finally:
            catalog.close()
        result["seconds"] = round(time.monotonic() - started, 1)
        print("AGGREGATE " + json.dumps(result, sort_keys=True))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
