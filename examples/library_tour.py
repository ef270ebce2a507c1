"""A tour of the Firn library (``python examples/library_tour.py``): a partitioned v2 table, then the same events in a
V4 table committed one small file at a time.

Creates ``./warehouse`` with a SQLite catalog at ``./warehouse/catalog.db``, (re)creates the
table ``tour.events`` (format v2) partitioned by ``region`` (identity) and ``ts`` (day),
appends four batches of events, deletes one region's rows, and prints a short summary: every
snapshot with its rows and files, and a time-travel scan back to the first append.

Then ``tour.events_v4`` (format-version 4, the default): the same batches as small commits,
printing the metadata files and bytes each writes (a root manifest plus the metadata file);
a merge-on-read delete (deletion vectors in the root); the changes per snapshot, read from
the roots; and a root flush — planned (dry run), committed — with the table read before and
after to show nothing changed. Running it again starts over with fresh tables, so it always
prints the same shape of output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import firn
from firn.catalog.base import Catalog
from firn.catalog.base_catalog import BaseCatalog
from firn.spec import properties as P
from firn.spec import summary as S
from firn.spec.properties import RowLevelMode
from firn.table.table import Table

TABLE = "tour.events"
TABLE_V4 = "tour.events_v4"
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


def fresh_table(catalog: Catalog, name: str = TABLE, **properties: str) -> Table:
    """Drop ``name`` (with its files) if a previous run left it, and create it anew."""
    if not catalog.namespace_exists("tour"):
        catalog.create_namespace("tour")
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    return catalog.create_table(
        name,
        SCHEMA,
        partition_spec=[("region", "identity"), ("ts", "day")],
        properties=properties or {P.FORMAT_VERSION: "2"},
    )


def metadata_files(table: Table) -> dict[str, int]:
    """Files under the table's ``metadata/`` directory, with their sizes."""
    root = Path(table.location.removeprefix("file://")) / "metadata"
    return {str(p): p.stat().st_size for p in root.rglob("*") if p.is_file()} if root.exists() else {}


def run_v4(catalog: Catalog) -> None:
    table = fresh_table(
        catalog, TABLE_V4, **{P.FORMAT_VERSION: "4", P.DELETE_MODE: RowLevelMode.MERGE_ON_READ.value}
    )
    print(f"\nCreated {table.name} (format v{table.format_version}): the same events, one small commit each")
    print(f"  {'commit':<38} {'metadata files':>14} {'bytes':>7}  names")

    def commit(label: str, fn: Callable[[], object]) -> None:
        before = metadata_files(table)
        fn()
        new = {p: n for p, n in metadata_files(table).items() if p not in before}
        kinds = sorted("root manifest" if "/root-" in p else "metadata JSON" for p in new)
        print(f"  {label:<38} {len(new):>14} {sum(new.values()):>7}  {', '.join(kinds)}")

    for day, start, count in ((0, 0, 30), (1, 30, 25), (1, 55, 20), (2, 75, 25)):
        commit(
            f"append {count} events (day {day + 1})",
            functools.partial(table.append, batch(day, start, count)),
        )
    commit("delete region = 'ap' and amount > 100", lambda: table.delete("region = 'ap' and amount > 100"))

    print("\nChanges per snapshot, read from the roots (table.changes):")
    for ch in table.changes(None):
        print(
            f"  {ch.snapshot_id:>20}  {ch.operation:<9} +{len(ch.added_data_files)} data files "
            f"-{len(ch.removed_data_files)}, +{len(ch.added_dvs)} DVs"
        )

    before = table.scan().to_arrow().sort_by("id")
    flush = table.maintenance.flush_root(force=True)
    plan = flush.plan()
    print(
        f"\nRoot flush, dry run: {plan.root_data_files} data files and {plan.root_delete_files} "
        f"DVs in the root would move into leaf manifests"
    )
    result = flush.run()
    after = table.scan().to_arrow().sort_by("id")
    flushed = table.current_snapshot()
    root_entries = flushed.summary.get(S.ROOT_ENTRIES) if flushed is not None else "?"
    print(
        f"Root flush, committed: {result.data_files_moved} data files and {result.delete_files_moved} "
        f"DVs moved into {result.leaves_written} leaves ({result.bytes_written:,} bytes); "
        f"the root now has {root_entries} entries"
    )
    same = "identical" if before.equals(after) else "DIFFERENT"
    print(f"Read before and after the flush: {before.num_rows} rows vs {after.num_rows} rows, {same}")


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
            rows = snap.summary.get(S.TOTAL_RECORDS, "?")
            files = snap.summary.get(S.TOTAL_DATA_FILES, "?")
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

        run_v4(catalog)
        print(f"\nCatalog: {warehouse / 'catalog.db'}; warehouse: {warehouse}")
    finally:
        if isinstance(catalog, BaseCatalog):  # the SQL catalog holds a connection pool
            catalog.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python examples/library_tour.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--warehouse", default="warehouse", help="warehouse directory (default ./warehouse)")
    args = parser.parse_args(argv)
    run(Path(args.warehouse).resolve())


if __name__ == "__main__":
    main()
