"""``entry_locations()``: where every table and view of a catalog lives, for the safety rules."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.base_catalog import BaseCatalog, location_of_metadata_file
from firn.catalog.memory import InMemoryCatalog
from firn.catalog.sql import SqlCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture(params=["sql", "memory"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> BaseCatalog:
    if request.param == "sql":
        return SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    return InMemoryCatalog("c")


def test_every_table_and_view_with_its_location(catalog: BaseCatalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    u = catalog.create_table("db.u", SCHEMA, properties={"write.metadata.path": f"{t.location}x/meta"})
    v = catalog.create_view("db.v", SCHEMA, "select 1")  # type: ignore[attr-defined]
    found = {(e.identifier, e.kind): e.location for e in catalog.entry_locations()}
    assert found == {
        (("db", "t"), "table"): t.location,
        (("db", "u"), "table"): u.location,
        (("db", "v"), "view"): v.metadata.location,
    }


def test_location_of_metadata_file() -> None:
    assert location_of_metadata_file("/wh/db/t/metadata/00001-x.metadata.json") == "/wh/db/t"
    assert location_of_metadata_file("s3://b/t/metadata/v1.metadata.json") == "s3://b/t"
    assert location_of_metadata_file("/wh/db/t/meta/00001-x.metadata.json") is None
