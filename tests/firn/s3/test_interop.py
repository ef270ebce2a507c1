"""Other ways in to an ``s3://`` warehouse: the REST server (``firn.rest.app``) serving a SQL
catalog whose warehouse is in the bucket, and PyIceberg reading Firn's v2/v3 tables there
through its own FileIO (one SQLite catalog shared by both)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.spec.table_metadata import TableMetadata
from tests.fixtures.rest import running_server
from tests.fixtures.row_deletes import ids, make_table, rows
from tests.fixtures.s3 import S3Server
from tests.fixtures.s3_tables import MOR, objects


def test_rest_server_with_an_s3_warehouse_vends_the_storage_settings(
    tmp_path: Path, s3_warehouse: str, s3_server: S3Server
) -> None:
    served = SqlCatalog(
        "served",
        f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_warehouse,
        properties=s3_server.properties(),
    )
    vended: list[str] = []

    def table_config(
        ident: tuple[str, ...], metadata: TableMetadata, mechanisms: object
    ) -> Mapping[str, str]:
        # What a deployment vends with each loaded table: where and how to reach its files.
        vended.append(".".join(ident))
        return s3_server.properties()

    with running_server(served, table_config=table_config) as server:
        client = server.client()  # no s3.* of its own: the server's config reaches the bucket
        client.create_namespace("db")
        t = client.create_table(
            "db.t",
            pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string())]),
            properties=MOR,
        )
        assert t.location == f"{s3_warehouse}/db/t" and t.format_version == 2  # REST tables: v2
        t.append(rows([1, 2, 3]))
        t.delete("id = 2")  # a position delete file in the bucket, committed through the server
        assert ids(client.load_table("db.t")) == [1, 3]
        assert vended and all(name == "db.t" for name in vended)
        # The server's own catalog sees the same table and files.
        local = served.load_table("db.t")
        assert ids(local) == [1, 3] and local.metadata_location == client.load_table("db.t").metadata_location
        assert any(o.endswith(".parquet") for o in objects(local))
        client.drop_table("db.t", purge=True)
        assert objects(local) == set()
        client.close()
    served.close()


@pytest.mark.interop
@pytest.mark.parametrize("version", [2, 3])
def test_pyiceberg_reads_a_firn_table_on_s3_through_its_own_file_io(
    s3_catalog: SqlCatalog, tmp_path: Path, s3_warehouse: str, s3_server: S3Server, version: int
) -> None:
    pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
    t = make_table(s3_catalog, version, partitioned=True, properties=MOR)
    first = t.append(rows(range(6)))
    t.append(rows([10, 11], region="us"))
    t.delete("id in (1, 4)")  # position deletes (v2) or deletion vectors (v3)
    py = pyiceberg_sql.SqlCatalog(
        s3_catalog.name,
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_warehouse,
        **{
            "s3.endpoint": s3_server.endpoint,
            "s3.access-key-id": s3_server.access_key_id,
            "s3.secret-access-key": s3_server.secret_access_key,
            "s3.region": s3_server.region,
            "s3.force-virtual-addressing": "false",
        },
    )
    loaded = py.load_table("db.t")
    assert type(loaded.io).__module__.startswith("pyiceberg.io")  # PyIceberg's FileIO, not Firn's
    got = sorted(loaded.scan().to_arrow().column("id").to_pylist())
    assert got == ids(t) == [0, 2, 3, 5, 10, 11]
    old = sorted(loaded.scan(snapshot_id=first.snapshot_id).to_arrow().column("id").to_pylist())
    assert old == list(range(6))
