"""``make demo`` (``python -m firn.demo``): a partitioned v2 table, a few appends, time travel.

Creates ``./warehouse`` with a SQLite catalog at ``./warehouse/catalog.db``, (re)creates the
table ``demo.events`` partitioned by ``region`` (identity) and ``ts`` (day), appends four
batches of events, deletes one region's rows, and prints a short summary: every snapshot
with its rows and files, and a time-travel scan back to the first append. Running it again
starts over with a fresh table, so it always prints the same shape of output.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import pyarrow as pa

import firn
from firn.catalog.base import Catalog
from firn.catalog.base_catalog import BaseCatalog
from firn.table.table import Table

TABLE = "demo.events"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.float64()),
    ]
)
REGIONS = ("eu", "us", "ap")


def batch(day: int, start: int, count: int) -> pa.Table:
    """``count`` events on 2024-06-(1 + day), ids from ``start``, spread over the regions."""
    base = dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(days=day)
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": [REGIONS[i % len(REGIONS)] for i in ids],
            "ts": pa.array([base + dt.timedelta(minutes=7 * i) for i in ids], pa.timestamp("us", tz="UTC")),
            "amount": [round(1.5 * i, 2) for i in ids],
        },
        schema=SCHEMA,
    )


def fresh_table(catalog: Catalog) -> Table:
    """Drop ``demo.events`` (with its files) if a previous run left it, and create it anew."""
    if not catalog.namespace_exists("demo"):
        catalog.create_namespace("demo")
    if catalog.table_exists(TABLE):
        catalog.drop_table(TABLE, purge=True)
    return catalog.create_table(
        TABLE,
        SCHEMA,
        partition_spec=[("region", "identity"), ("ts", "day")],
        properties={"format-version": "2"},
    )


def run(warehouse: Path) -> None:
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = firn.load_catalog(f"sqlite:///{warehouse / 'catalog.db'}", warehouse=str(warehouse))
    try:
        table = fresh_table(catalog)
        print(f"Created {table.name} (format v{table.format_version}) at {table.location}")
        print(f"  partitioned by: {', '.join(f'{f.name} ({f.transform})' for f in table.spec().fields)}")

        first = table.append(batch(0, 0, 30))
        table.append(batch(1, 30, 25))
        table.append(batch(1, 55, 20))
        table.append(batch(2, 75, 25))
        table.delete("region = 'ap' and amount > 100")
        if first is None:  # pragma: no cover - the batch is never empty
            raise RuntimeError("the first append committed nothing")

        print(f"\nSnapshots ({len(table.snapshots())}):")
        print(f"  {'snapshot id':>20}  {'operation':<9} {'rows':>5} {'files':>5}  committed at")
        for snap in table.snapshots():
            at = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, tz=dt.UTC)
            rows = snap.summary.get("total-records", "?")
            files = snap.summary.get("total-data-files", "?")
            when = at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            print(f"  {snap.snapshot_id:>20}  {snap.summary.operation.value:<9} {rows:>5} {files:>5}  {when}")

        current = table.scan().to_arrow()
        by_region = {r: current.column("region").to_pylist().count(r) for r in REGIONS}
        print(
            f"\nNow: {current.num_rows} rows in {len(table.scan().plan_files())} data files; per region {by_region}"
        )

        eu_day2 = table.scan(filter="region = 'eu' and ts >= '2024-06-02T00:00:00+00:00'")
        print(
            f"Filter region = 'eu' and ts >= 2024-06-02: {eu_day2.count()} rows, "
            f"{len(eu_day2.plan_files())} of {len(table.scan().plan_files())} files planned"
        )

        old = table.scan(snapshot_id=first.snapshot_id).to_arrow()
        ids = old.column("id").to_pylist()
        print(f"\nTime travel to the first append (snapshot {first.snapshot_id}):")
        print(f"  {old.num_rows} rows, ids {min(ids)}..{max(ids)}")
        as_of = table.scan(as_of=first.timestamp_ms).count()
        print(f"  as_of its commit time ({first.timestamp_ms} ms): {as_of} rows")
        print(f"\nCatalog: {warehouse / 'catalog.db'}; metadata: {table.metadata_location}")
    finally:
        if isinstance(catalog, BaseCatalog):  # the SQL catalog holds a connection pool
            catalog.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m firn.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default="warehouse", help="warehouse directory (default ./warehouse)")
    args = parser.parse_args(argv)
    run(Path(args.warehouse).resolve())


if __name__ == "__main__":
    main()
