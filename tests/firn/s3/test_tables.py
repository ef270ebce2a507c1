"""The table library on an ``s3://`` warehouse, against a real S3 API server (moto on loopback).

Each test goes through a SQLite catalog whose warehouse is ``s3://<bucket>/wh`` and whose
FileIO properties are the ones a user sets (``tests/fixtures/s3.py``): nothing but the
catalog file is written to the local disk.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.deletes.writers import write_equality_delete_files
from firn.errors import NotFound
from firn.spec.content import FileContent
from firn.spec.types import StringType
from firn.table.table import Table
from tests.fixtures.row_deletes import ids, live_deletes, make_table, rows


def listed(table: Table) -> set[str]:
    """Every object under the table's location, listed through its FileIO."""
    return {f.location for f in table.io.list_prefix(table.location)}


def referenced(table: Table) -> set[str]:
    """Data and delete files the current snapshot's scan plans."""
    out: set[str] = set()
    for task in table.scan().plan_files():
        out.add(task.file.file_path)
        out.update(d.file_path for d in task.delete_files)
    return out


def only_the_catalog_file_is_local(tmp_path: Path) -> None:
    local = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert local and all(name.startswith("catalog.db") for name in local), local


@pytest.mark.parametrize("version", [2, 3, 4])
def test_writes_deletes_scans_and_time_travel(
    s3_catalog: SqlCatalog, tmp_path: Path, s3_warehouse: str, version: int
) -> None:
    t = make_table(
        s3_catalog,
        version,
        partitioned=True,
        properties={"write.delete.mode": "merge-on-read", "write.merge.mode": "merge-on-read"},
    )
    assert t.location == f"{s3_warehouse}/db/t"
    first = t.append(rows(range(10)))
    t.append(rows(range(10, 15), region="us"))
    t.overwrite(rows([100, 101], region="us"), filter="region = 'us'")
    assert ids(t) == [*range(10), 100, 101]

    # Merge-on-read deletes: position delete files on v2, deletion vectors (Puffin) on v3+.
    t.delete("id < 2")
    kinds = {(d.content, d.file_path.endswith(".puffin")) for d in live_deletes(t)}
    assert kinds == (
        {(FileContent.POSITION_DELETES, False)} if version == 2 else {(FileContent.POSITION_DELETES, True)}
    )
    # Equality deletes through a row delta.
    [eq] = write_equality_delete_files(
        t.io, t.metadata, pa.table({"id": pa.array([5], pa.int64()), "region": ["eu"]}), ["id"]
    )
    assert eq.file_path.startswith(f"{t.location}/")
    t.row_delta().add_deletes([eq]).commit()
    assert FileContent.EQUALITY_DELETES in {d.content for d in live_deletes(t)}
    # Upsert (merge-on-read): 3 is updated, 200 inserted.
    result = t.upsert(rows([3, 200], name="u"), join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    expected = [2, 3, 4, 6, 7, 8, 9, 100, 101, 200]
    assert ids(t) == expected
    names = dict(zip(*t.scan(filter="id in (3, 4)").to_arrow().select(["id", "name"]).to_pydict().values()))
    assert names == {3: "u3", 4: "n4"}

    # Filters prune on S3 as locally; time travel by id and by timestamp.
    assert ids(t, filter="region = 'us' and id > 100") == [101]
    assert ids(t, snapshot_id=first.snapshot_id) == list(range(10))
    assert ids(t, as_of=first.timestamp_ms) == list(range(10))

    # Every file the table uses is an object under its location, and reopening from the
    # catalog reads the same rows.
    objects = listed(t)
    assert referenced(t) <= objects
    assert all(o.startswith(f"{t.location}/") for o in objects)
    assert ids(s3_catalog.load_table("db.t")) == expected
    only_the_catalog_file_is_local(tmp_path)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_schema_and_partition_evolution(s3_catalog: SqlCatalog, version: int) -> None:
    t = make_table(s3_catalog, version)
    t.append(rows([1, 2]))
    with t.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("name", "label")
    with t.update_spec() as update:
        update.add_field("region", "identity")
    t.append(
        pa.table(
            {
                "id": pa.array([3], pa.int64()),
                "region": ["us"],
                "label": ["n3"],
                "note": ["new"],
            }
        )
    )
    got = t.scan().to_arrow().sort_by("id").to_pylist()
    assert got == [
        {"id": 1, "region": "eu", "label": "n1", "note": None},
        {"id": 2, "region": "eu", "label": "n2", "note": None},
        {"id": 3, "region": "us", "label": "n3", "note": "new"},
    ]
    # The new file is in the new spec's partition directory.
    [new] = [task.file for task in t.scan(filter="id = 3").plan_files()]
    assert "/data/region=us/" in new.file_path and new.spec_id == t.spec().spec_id


def test_v4_commits_and_root_flush(s3_catalog: SqlCatalog) -> None:
    t = make_table(s3_catalog, 4)
    for i in range(5):
        t.append(rows([i]))
    assert t.health().root_data_files == 5
    result = t.maintenance.flush_root(force=True).run()
    assert result.data_files_moved == 5 and result.leaves_written >= 1
    t.refresh()
    assert t.health().root_data_files == 0
    assert ids(t) == [0, 1, 2, 3, 4]
    # A V4 commit writes one root manifest and the metadata file: no manifest list.
    snapshot = t.current_snapshot()
    assert snapshot is not None and snapshot.root_manifest is not None and snapshot.manifest_list is None
    assert snapshot.root_manifest.startswith(f"{t.location}/metadata/")


def test_purge_deletes_every_object_of_the_table(s3_catalog: SqlCatalog) -> None:
    keep = make_table(s3_catalog, 3, name="keep")
    keep.append(rows([1]))
    t = make_table(s3_catalog, 3, name="gone")
    t.append(rows([1, 2]))
    t.delete("id = 1")
    assert listed(t)
    report = s3_catalog.purge_table("db.gone")
    assert not report.failed and not report.kept
    assert listed(t) == set()
    with pytest.raises(NotFound):
        s3_catalog.load_table("db.gone")
    assert ids(s3_catalog.load_table("db.keep")) == [1]


def test_views_live_in_the_s3_warehouse(s3_catalog: SqlCatalog, s3_warehouse: str) -> None:
    s3_catalog.create_namespace("db")
    schema = pa.schema([("region", pa.string()), ("n", pa.int64())])
    view = s3_catalog.create_view(
        "db.by_region", schema, "SELECT region, count(*) AS n FROM t GROUP BY region"
    )
    assert view.metadata_location.startswith(f"{s3_warehouse}/db/by_region/metadata/")
    s3_catalog.replace_view("db.by_region", schema, "SELECT region, count(*) FROM t GROUP BY 1")
    loaded = s3_catalog.load_view("db.by_region")
    assert [v.version_id for v in loaded.versions] == [1, 2]
    assert loaded.sql_for("spark") == "SELECT region, count(*) FROM t GROUP BY 1"
    s3_catalog.drop_view("db.by_region", purge=True)
    assert not s3_catalog.view_exists("db.by_region")
