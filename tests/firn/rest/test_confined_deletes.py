"""Confined deletes over HTTP (issue 18 findings 2 and 4, through a real ``firn serve`` app):
the REST client knows where every entry lives, a purge requested over REST keeps another
table's files, and maintenance through the REST client skips a nested table."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

from firn.catalog.rest import RestCatalog
from firn.catalog.sql import SqlCatalog
from firn.catalog.sql_schema import TABLE_TYPE, iceberg_tables
from firn.core.create import new_table_metadata
from firn.core.metadata_io import new_metadata_location, write_metadata
from tests.fixtures.maintenance import files_on_disk, rows, soon_ms
from tests.fixtures.rest import RestServer

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _legacy_row(catalog: SqlCatalog, directory: Path, ns: str, name: str, metadata_location: str) -> None:
    """A table row as a legacy catalog let anyone write it: plain SQL, no checks (the served
    catalog is ``directory/catalog.db``, see ``make_sqlite_catalog``)."""
    engine = sa.create_engine(f"sqlite:///{directory / 'catalog.db'}")
    with engine.begin() as conn:
        conn.execute(
            sa.insert(iceberg_tables).values(
                catalog_name=catalog.name,
                table_namespace=ns,
                table_name=name,
                metadata_location=metadata_location,
                previous_metadata_location=None,
                iceberg_type=TABLE_TYPE,
            )
        )
    engine.dispose()


def test_the_rest_client_lists_where_every_entry_lives(
    served_sqlite_catalog: SqlCatalog, rest_catalog: RestCatalog
) -> None:
    served = served_sqlite_catalog
    served.create_namespace("db")
    served.create_namespace("db.inner")
    served.create_table("db.t", SCHEMA)
    served.create_table("db.inner.u", SCHEMA, location=f"{served.warehouse}/elsewhere/u")
    served.create_view("db.v", SCHEMA, "select 1")
    over_http = {(e.identifier, e.kind, e.location) for e in rest_catalog.entry_locations()}
    direct = {(e.identifier, e.kind, e.location) for e in served.entry_locations()}
    assert over_http == direct and len(direct) == 3


def test_purge_of_a_registered_copy_over_http_keeps_the_victims_files(
    served_sqlite_catalog: SqlCatalog, rest_catalog: RestCatalog, tmp_path: Path
) -> None:
    served = served_sqlite_catalog
    served.create_namespace("db")
    victim = served.create_table("db.victim", SCHEMA)
    victim.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    victim.append(pa.table({"id": [3]}, schema=SCHEMA))
    # Finding 4: the victim's current metadata registered under a new name.
    _legacy_row(served, tmp_path, "db", "copy", victim.metadata_location)
    before = files_on_disk(victim.location)
    rest_catalog.drop_table("db.copy", purge=True)  # DELETE ...?purgeRequested=true
    assert files_on_disk(victim.location) == before
    assert [r["id"] for r in rows(served.load_table("db.victim"))] == [1, 2, 3]
    assert not served.table_exists("db.copy")


def test_maintenance_through_the_rest_client_skips_a_nested_table(
    rest_server: RestServer, served_sqlite_catalog: SqlCatalog, tmp_path: Path
) -> None:
    served = served_sqlite_catalog
    served.create_namespace("db")
    a = served.create_table("db.a", SCHEMA)
    a.append(pa.table({"id": [1]}, schema=SCHEMA))
    # Finding 2: a table nested inside a's location (the 'a/b' of the finding).
    md = new_table_metadata(SCHEMA, location=f"{a.location}/b")
    nested_metadata = new_metadata_location(md, None)
    write_metadata(served.io, md, nested_metadata)
    _legacy_row(served, tmp_path, "db", "a_b", nested_metadata)
    served.load_table("db.a_b").append(pa.table({"id": [7]}, schema=SCHEMA))
    own = Path(a.location) / "data" / "stray.parquet"
    own.write_bytes(b"an orphan of a")
    old = time.time() - 5 * 24 * 3600
    for path in files_on_disk(a.location):
        os.utime(path, (old, old))
    client = rest_server.client(**{"maintenance.lease.uri": f"sqlite:///{tmp_path / 'leases.db'}"})
    try:
        table = client.load_table("db.a")
        plan = table.maintenance.remove_orphan_files(older_than=soon_ms(), force=True).plan()
        assert [o.path for o in plan.orphans] == [str(own)]
        assert plan.other_entries > 0 and any("db.a_b" in p for p in plan.other_places)
        table.set_properties({"orphans.grace": "0"})
        for _ in range(2):  # record, then delete
            result = table.maintenance.remove_orphan_files(
                older_than=soon_ms(), force=True, delete=True
            ).run()
        assert result.deleted_file_locations == (str(own),) and not own.exists()
    finally:
        client.close()
    assert [r["id"] for r in rows(served.load_table("db.a_b"))] == [7]
