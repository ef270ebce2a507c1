"""Committing data files written elsewhere (Spark tasks): ``append_files``, ``overwrite_files``,
``replace_partitions`` — what they add and remove, their conflict validation, and cleanup."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.writer import write_data_files
from firn.errors import FirnError, ValidationConflict, ValidationError
from firn.spec.content import DataFile
from firn.spec.properties import IsolationLevel
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.row_deletes import make_table, rows


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def _written(table: Table, data: pa.Table) -> list[DataFile]:
    return write_data_files(table.io, table.metadata, data)


def _rows(table: Table) -> list[tuple[Any, Any]]:
    out = table.scan(columns=["id", "region"]).to_arrow().to_pylist()
    return sorted((r["id"], r["region"]) for r in out)


def _exists(table: Table, path: str) -> bool:
    return table.io.new_input(path).exists()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_append_files_adds_written_files_in_one_append(catalog: SqlCatalog, version: int) -> None:
    table = make_table(catalog, version, partitioned=True)
    table.append(rows([1, 2]))
    files = _written(table, pa.concat_tables([rows([3], "eu"), rows([4], "us")]))
    assert len(files) == 2
    with table.transaction() as tx:
        tx.append_files(files)
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.operation.value == "append"
    assert snap.summary.get("added-data-files") == "2"
    assert _rows(table) == [(1, "eu"), (2, "eu"), (3, "eu"), (4, "us")]


def test_append_files_without_files_commits_nothing(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2)
    table.append(rows([1]))
    before = table.metadata_location
    result = table.transaction().append_files([]).commit()
    assert result.snapshot is None and table.metadata_location == before


def test_append_files_refuses_delete_files_and_duplicates(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 3)
    files = _written(table, rows([1]))
    with pytest.raises(ValidationError, match="given twice"):
        table.transaction().append_files([files[0], files[0]])
    with pytest.raises(ValidationError, match="data files only"):
        table.transaction().append_files([files[0].evolve(content=files[0].content.__class__(1))])


@pytest.mark.parametrize("delete_on_failure", [True, False])
def test_a_failed_commit_deletes_the_files_only_when_asked(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, delete_on_failure: bool
) -> None:
    table = make_table(catalog, 2)
    files = _written(table, rows([1, 2]))

    def fail(*args: Any, **kwargs: Any) -> None:
        raise FirnError("catalog exploded")

    monkeypatch.setattr(catalog, "swap_metadata_location", fail)
    with pytest.raises(FirnError, match="catalog exploded"):
        table.transaction().append_files(files, delete_on_failure=delete_on_failure).commit()
    assert _exists(table, files[0].file_path) is not delete_on_failure


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_overwrite_files_replaces_every_row(catalog: SqlCatalog, version: int) -> None:
    table = make_table(catalog, version, partitioned=True)
    table.append(pa.concat_tables([rows([1, 2], "eu"), rows([3], "us")]))
    files = _written(table, rows([10], "ap"))
    table.transaction().overwrite_files(files).commit()
    assert _rows(table) == [(10, "ap")]
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.operation.value == "overwrite"


def test_overwrite_files_with_a_filter_keeps_the_other_rows(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2)
    table.append(rows([1, 2, 3]))
    files = _written(table, rows([20]))
    table.transaction().overwrite_files(files, "id >= 2").commit()
    assert _rows(table) == [(1, "eu"), (20, "eu")]


def test_overwrite_files_with_no_files_truncates(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 3)
    table.append(rows([1, 2]))
    table.transaction().overwrite_files([]).commit()
    assert _rows(table) == []


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_replace_partitions_replaces_only_the_written_partitions(catalog: SqlCatalog, version: int) -> None:
    table = make_table(catalog, version, partitioned=True)
    table.append(pa.concat_tables([rows([1, 2], "eu"), rows([3], "us"), rows([4], "ap")]))
    files = _written(table, pa.concat_tables([rows([10], "eu"), rows([11], "us")]))
    table.transaction().replace_partitions(files).commit()
    assert _rows(table) == [(4, "ap"), (10, "eu"), (11, "us")]
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get("replace-partitions") == "true"
    assert snap.summary.get("deleted-data-files") == "2"


def test_replace_partitions_of_a_null_partition(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(pa.concat_tables([rows([1], None), rows([2], "eu")]))
    table.transaction().replace_partitions(_written(table, rows([5], None))).commit()
    assert _rows(table) == [(2, "eu"), (5, None)]


def test_replace_partitions_on_an_unpartitioned_table_replaces_everything(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2)
    table.append(rows([1, 2]))
    table.transaction().replace_partitions(_written(table, rows([7]))).commit()
    assert _rows(table) == [(7, "eu")]


def test_replace_partitions_without_files_is_a_noop(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(rows([1]))
    before = table.metadata_location
    assert table.transaction().replace_partitions([]).commit().snapshot is None
    assert table.metadata_location == before


@pytest.mark.parametrize("version", [2, 3])
def test_replace_partitions_removes_the_deletes_of_replaced_files(catalog: SqlCatalog, version: int) -> None:
    table = make_table(catalog, version, partitioned=True, properties={"write.delete.mode": "merge-on-read"})
    table.append(pa.concat_tables([rows([1, 2], "eu"), rows([3, 4], "us")]))
    table.delete("id = 1 or id = 3")
    assert _rows(table) == [(2, "eu"), (4, "us")]
    table.transaction().replace_partitions(_written(table, rows([9], "eu"))).commit()
    assert _rows(table) == [(4, "us"), (9, "eu")]
    live_deletes = {d.file_path for t in table.scan().plan_files() for d in t.delete_files}
    eu_tasks = [t for t in table.scan().plan_files() if t.file.partition == ("eu",)]
    assert all(not t.delete_files for t in eu_tasks) and live_deletes  # us keeps its delete
    snap = table.current_snapshot()
    assert snap is not None and snap.summary.get("removed-delete-files") == "1"


def _concurrent_append(catalog: SqlCatalog, data: pa.Table) -> None:
    catalog.load_table("db.t").append(data)


def test_replace_partitions_serializable_rejects_concurrent_data_in_a_replaced_partition(
    catalog: SqlCatalog,
) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(rows([1], "eu"))
    planned = table.transaction().replace_partitions(_written(table, rows([9], "eu")))
    _concurrent_append(catalog, rows([2], "eu"))
    with pytest.raises(ValidationConflict, match="serializable"):
        planned.commit()


def test_replace_partitions_serializable_allows_concurrent_data_elsewhere(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(rows([1], "eu"))
    planned = table.transaction().replace_partitions(_written(table, rows([9], "eu")))
    _concurrent_append(catalog, rows([2], "us"))
    planned.commit()
    assert _rows(catalog.load_table("db.t")) == [(2, "us"), (9, "eu")]


def test_replace_partitions_snapshot_isolation_keeps_concurrent_data(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(rows([1], "eu"))
    planned = table.transaction().replace_partitions(
        _written(table, rows([9], "eu")), isolation_level=IsolationLevel.SNAPSHOT
    )
    _concurrent_append(catalog, rows([2], "eu"))
    planned.commit()
    assert _rows(catalog.load_table("db.t")) == [(2, "eu"), (9, "eu")]


def test_replace_partitions_rejects_a_concurrent_removal_of_a_replaced_file(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    table.append(rows([1, 2], "eu"))
    planned = table.transaction().replace_partitions(
        _written(table, rows([9], "eu")), isolation_level=IsolationLevel.SNAPSHOT
    )
    catalog.load_table("db.t").delete("region = 'eu'")
    with pytest.raises(ValidationConflict, match="already removed"):
        planned.commit()


def test_replace_partitions_refuses_an_unknown_spec(catalog: SqlCatalog) -> None:
    table = make_table(catalog, 2, partitioned=True)
    files = _written(table, rows([1]))
    with pytest.raises(ValidationError, match="partition spec 7"):
        table.transaction().replace_partitions([files[0].evolve(spec_id=7)])
