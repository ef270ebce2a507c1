"""A streaming writer beside compaction, DV rewrite and expiry: it is never refused (issue 23).

One writer thread commits every 200 ms through its own catalog connection and one table
object, which is stale whenever maintenance committed since its last commit: it appends a
batch, and in 20% of its commits deletes (merge-on-read) 5 random rows it appended earlier.
Beside it, maintenance loops on another connection: ``rewrite_data_files``, then
``rewrite_deletion_vectors`` (v3/V4) or ``rewrite_position_delete_files`` (v2), then
``expire_snapshots``.

Pass condition: no writer commit refused, no compaction or DV-rewrite group dropped for a
conflict, the rows exactly the serial result (what the writer committed), and on v2/v3
PyIceberg reads the same rows. The default variant runs ~10 s per format; the ``slow`` one
runs 60 s as the issue asks.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.catalogs import (
    POSTGRES_URL,
    drop_postgres_catalog,
    make_postgres_catalog,
    require_postgres,
)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("payload", pa.string()),
    ]
)
INTERVAL_S = 0.2
ROWS_PER_APPEND = 20
DELETE_SHARE = 0.2
ROWS_PER_DELETE = 5


@dataclass
class WriterLog:
    commits: int = 0
    deletes: int = 0
    refused: list[str] = field(default_factory=list)
    live: set[int] = field(default_factory=set)


@dataclass
class MaintenanceLog:
    compactions: int = 0
    groups_committed: int = 0
    carried_rows: int = 0
    dropped: list[str] = field(default_factory=list)
    dv_rewrites: int = 0
    expiries: int = 0
    errors: list[str] = field(default_factory=list)


def _create(catalog: SqlCatalog, version: int) -> None:
    catalog.create_namespace("db")
    catalog.create_table(
        "db.stream",
        schema=SCHEMA,
        partition_spec=[("bucket", "identity")],
        properties={
            "format-version": str(version),
            "write.delete.mode": "merge-on-read",
            # A steady stream of commits: lost races cost time, not retries (firn.core.commit).
            "commit.retry.num-retries": "10",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "100",
        },
    )


def _writer(catalog: SqlCatalog, seconds: float, seed: int, log: WriterLog, stop: threading.Event) -> None:
    rng = random.Random(seed)
    table = catalog.load_table("db.stream")
    next_id = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stop.is_set():
        started = time.monotonic()
        try:
            if log.live and rng.random() < DELETE_SHARE:
                victims = rng.sample(sorted(log.live), min(ROWS_PER_DELETE, len(log.live)))
                table.delete(f"id in ({', '.join(map(str, victims))})")
                log.live -= set(victims)
                log.deletes += 1
            else:
                ids = list(range(next_id, next_id + ROWS_PER_APPEND))
                next_id += ROWS_PER_APPEND
                table.append(
                    pa.table(
                        {
                            "id": ids,
                            "bucket": [i % 2 for i in ids],
                            "payload": [f"p{i:08d}" * 8 for i in ids],
                        },
                        schema=SCHEMA,
                    )
                )
                log.live |= set(ids)
            log.commits += 1
        except Exception as e:  # every refusal is a failure of the test
            log.refused.append(f"{type(e).__name__}: {e}")
        time.sleep(max(0.0, INTERVAL_S - (time.monotonic() - started)))


def _maintain(table: Table, version: int, log: MaintenanceLog, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            table.refresh()
            result = table.maintenance.rewrite_data_files(
                min_input_files=2, partial_progress_enabled=True
            ).run()
            log.compactions += 1
            log.groups_committed += result.groups_committed
            log.carried_rows += result.carried_delete_rows
            log.dropped += [f"compaction group {g.partition}: {g.reason}" for g in result.failed_groups]
            table.refresh()
            if version >= 3:
                dv = table.maintenance.rewrite_deletion_vectors(rewrite_all=True).run()
            else:
                dv = table.maintenance.rewrite_position_delete_files(min_input_files=2).run()
            log.dv_rewrites += 1
            log.dropped += [f"{s.item}: {s.reason}" for s in dv.skipped if s.item.startswith("group")]
            table.refresh()
            cutoff = int(time.time() * 1000) - 2_000
            table.maintenance.expire_snapshots(older_than=cutoff, retain_last=5).run()
            log.expiries += 1
        except Exception as e:
            log.errors.append(f"{type(e).__name__}: {e}")
            time.sleep(0.1)


def _pyiceberg_ids(uri: str, catalog_name: str, warehouse: Path) -> list[int]:
    pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
    py = pyiceberg_sql.SqlCatalog(catalog_name, uri=uri, warehouse=f"file://{warehouse}")
    return sorted(
        py.load_table("db.stream").scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    )


def _stream(
    catalog: SqlCatalog, other: SqlCatalog, uri: str, warehouse: Path, version: int, seconds: float
) -> None:
    _create(catalog, version)
    writer_log, maint_log = WriterLog(), MaintenanceLog()
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(other, seconds, version, writer_log, stop))
    table = catalog.load_table("db.stream")
    maintainer = threading.Thread(target=_maintain, args=(table, version, maint_log, stop))
    writer.start()
    maintainer.start()
    writer.join(seconds + 120)
    stop.set()
    maintainer.join(300)
    assert not writer.is_alive() and not maintainer.is_alive()

    assert writer_log.refused == [], writer_log.refused[:3]
    assert maint_log.dropped == [], maint_log.dropped[:3]
    assert maint_log.errors == [], maint_log.errors[:3]
    assert writer_log.commits >= seconds * 2  # it kept its pace (5/s asked; a loaded machine halves it)
    assert writer_log.deletes >= 1
    assert maint_log.compactions >= 2 and maint_log.groups_committed >= 1
    assert maint_log.dv_rewrites >= 1 and maint_log.expiries >= 1

    print(f"v{version}: {writer_log.commits} writer commits ({writer_log.deletes} deletes), {maint_log}")
    final = catalog.load_table("db.stream")
    got = sorted(final.scan(columns=["id"]).to_arrow().column("id").to_pylist())
    assert got == sorted(writer_log.live)  # exactly the serial result: nothing lost or resurrected
    if version in (2, 3):
        assert _pyiceberg_ids(uri, catalog.name, warehouse) == got


def _sqlite(tmp_path: Path, version: int, seconds: float) -> None:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = tmp_path / "warehouse"
    catalog = SqlCatalog("stream", uri, warehouse=str(warehouse))
    other = SqlCatalog("stream", uri, warehouse=str(warehouse))
    try:
        _stream(catalog, other, uri, warehouse, version, seconds)
    finally:
        other.close()
        catalog.close()


def _postgres(tmp_path: Path, version: int, seconds: float) -> None:
    require_postgres()
    warehouse = tmp_path / "warehouse"
    catalog = make_postgres_catalog(warehouse)
    other = SqlCatalog(catalog.name, POSTGRES_URL, warehouse=str(warehouse))
    try:
        _stream(catalog, other, POSTGRES_URL, warehouse, version, seconds)
    finally:
        other.close()
        drop_postgres_catalog(catalog)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_streaming_writer_beside_maintenance_sqlite(tmp_path: Path, version: int) -> None:
    _sqlite(tmp_path, version, 10)


@pytest.mark.postgres
@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_streaming_writer_beside_maintenance_postgres(tmp_path: Path, version: int) -> None:
    _postgres(tmp_path, version, 10)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_streaming_writer_beside_maintenance_for_a_minute(
    tmp_path: Path, backend: str, version: int
) -> None:
    run: Any = _sqlite if backend == "sqlite" else _postgres
    run(tmp_path, version, 60)
