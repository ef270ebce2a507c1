"""Row-level deletes across implementations: PyIceberg 0.12 and Firn on one SQLite catalog.

* PyIceberg reads Firn's v2 position delete files and v3 deletion vectors (and v3 files that
  carry row-lineage columns) with the same rows as Firn and as expected.
* Firn reads position deletes written by PyIceberg. PyIceberg 0.12 cannot write merge-on-read
  deletes itself (``Table.delete`` warns "Merge on read is not yet supported, falling back to
  copy-on-write"), so the test builds them with PyIceberg's own APIs on a PyIceberg-managed v2
  table: the Parquet file with ``pyiceberg.io.pyarrow.schema_to_pyarrow`` (field ids) and
  ``data_file_statistics_from_parquet_metadata`` (metrics), the ``DataFile`` with
  ``DataFile.from_args(content=POSITION_DELETES)``, the delete manifest with PyIceberg's
  ``ManifestWriterV2`` (subclassed only to declare ``content=deletes``, which 0.12's writer
  hard-codes to data), and the snapshot through PyIceberg's ``_FastAppendFiles`` producer and
  transaction (so PyIceberg writes the manifest list and commits).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.row_deletes import data_file, live_deletes, make_table, rows

pytestmark = pytest.mark.interop

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")


@pytest.fixture
def firn(tmp_path: Path) -> Iterator[SqlCatalog]:
    catalog = make_sqlite_catalog(tmp_path, name="shared")
    yield catalog
    catalog.close()


def _pyiceberg(tmp_path: Path) -> Any:
    return pyiceberg_sql.SqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path / 'warehouse'}"
    )


def _sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = ["id", "region", "name"]
    return sorted(
        (tuple(r[c] for c in cols) for r in table.select(cols).to_pylist()),
        key=lambda r: (r[0] is None, r[0] or 0, r[1] or "", r[2] or ""),
    )


def _expected(ids: list[int], region_of: dict[int, str]) -> list[tuple[Any, ...]]:
    return [(i, region_of[i], f"n{i}") for i in sorted(ids)]


def _assert_same_everywhere(tmp_path: Path, table: Table, expected: list[tuple[Any, ...]]) -> None:
    py_rows = _sorted_rows(_pyiceberg(tmp_path).load_table("db.t").scan().to_arrow())
    firn_rows = _sorted_rows(table.scan().to_arrow())
    assert firn_rows == expected
    assert py_rows == expected


# -- PyIceberg reads Firn ----------------------------------------------------------------------------
def _populate(table: Table) -> dict[int, str]:
    table.append(pa.concat_tables([rows(range(0, 40), "eu"), rows(range(40, 70), "us")]))
    table.append(rows(range(70, 100), "eu"))
    region = {i: "us" if 40 <= i < 70 else "eu" for i in range(100)}
    return region


def test_pyiceberg_reads_firn_v2_position_deletes(firn: SqlCatalog, tmp_path: Path) -> None:
    t = make_table(firn, 2, partitioned=True, properties={"write.delete.mode": "merge-on-read"})
    region = _populate(t)
    gone = {3, 41, 42, 77}
    t.delete("id in (3, 41, 42, 77)")
    t.delete("id >= 95 or id = 10")
    gone |= {95, 96, 97, 98, 99, 10}
    # One partition-scoped file covering two data files, through row_delta.
    first, second = data_file(t, 0).file_path, data_file(t, 70).file_path
    t.row_delta().delete_rows_at(first, [20, 21, 22]).delete_rows_at(second, [0, 1]).commit()
    gone |= {20, 21, 22, 70, 71}
    deletes = live_deletes(t)
    assert all(d.file_format.value == "parquet" for d in deletes)
    assert any(d.referenced_data_file is None for d in deletes)
    _assert_same_everywhere(tmp_path, t, _expected([i for i in range(100) if i not in gone], region))


def test_pyiceberg_reads_firn_v3_deletion_vectors(firn: SqlCatalog, tmp_path: Path) -> None:
    t = make_table(
        firn,
        3,
        partitioned=True,
        properties={"write.delete.mode": "merge-on-read", "write.merge.mode": "merge-on-read"},
    )
    region = _populate(t)
    t.delete("id in (1, 2, 50, 71)")  # one Puffin with three DVs
    t.delete("id in (3, 4)")  # replaces one DV; the others stay in the shared Puffin
    t.delete("id >= 60 and id < 70")  # touches the "us" file again
    gone = {1, 2, 3, 4, 50, 71, *range(60, 70)}
    assert all(d.is_dv for d in live_deletes(t))
    _assert_same_everywhere(tmp_path, t, _expected([i for i in range(100) if i not in gone], region))
    # An upsert (DVs + new rows) reads the same as well.
    t.upsert(rows([5, 200], name="n"), join_cols=["id"])  # 5 is unchanged, 200 is new
    region[200] = "eu"
    _assert_same_everywhere(tmp_path, t, _expected([i for i in range(100) if i not in gone] + [200], region))


def test_pyiceberg_reads_files_with_row_lineage_columns(firn: SqlCatalog, tmp_path: Path) -> None:
    t = make_table(firn, 3)
    t.append(rows(range(20)))
    before = {r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()}
    t.delete("id in (4, 5)")  # copy-on-write: survivors rewritten with _row_id / seq columns
    [task] = t.scan().plan_files()
    with t.io.new_input(task.file.file_path).open_arrow() as f:
        assert {"_row_id", "_last_updated_sequence_number"} <= set(pq.read_schema(f).names)
    after = {r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()}
    assert after == {k: v for k, v in before.items() if k not in (4, 5)}
    _assert_same_everywhere(
        tmp_path, t, _expected([i for i in range(20) if i not in (4, 5)], {i: "eu" for i in range(20)})
    )


# -- Firn reads PyIceberg -------------------------------------------------------------------------------
def _commit_pyiceberg_position_deletes(py_table: Any, targets: dict[str, list[int]]) -> None:
    """Write and commit position delete files with PyIceberg's APIs (see the module docstring)."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
        schema_to_pyarrow,
    )
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestFile,
        ManifestWriterV2,
    )
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles
    from pyiceberg.types import LongType, NestedField, StringType

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    class AddDeleteFiles(_FastAppendFiles):
        def __init__(self, delete_files: list[Any], spec_id: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._delete_files = delete_files
            self._delete_spec_id = spec_id

        def _manifests(self) -> list[ManifestFile]:
            manifests = super()._manifests()
            writer = DeleteManifestWriter(
                self.spec(self._delete_spec_id),
                self.schema(),
                self.new_manifest_output(),
                self._snapshot_id,
                self._compression,
            )
            with writer:
                for f in self._delete_files:
                    writer.add(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id, data_file=f
                        )
                    )
            return [writer.to_manifest_file(), *manifests]

    pos_schema = PySchema(
        NestedField(2147483546, "file_path", StringType(), required=True),
        NestedField(2147483545, "pos", LongType(), required=True),
    )
    data_files = {task.file.file_path: task.file for task in py_table.scan().plan_files()}
    by_partition: dict[Any, dict[str, list[int]]] = {}
    for path, positions in targets.items():
        by_partition.setdefault(data_files[path].partition, {})[path] = sorted(positions)
    delete_files = []
    for n, (partition, group) in enumerate(by_partition.items()):
        paths = sorted(group)
        arrow = pa.table(
            {
                "file_path": [p for p in paths for _ in group[p]],
                "pos": pa.array([pos for p in paths for pos in group[p]], pa.int64()),
            },
            schema=schema_to_pyarrow(pos_schema),
        )
        location = f"{py_table.location()}/data/pyiceberg-{n}-deletes.parquet"
        with py_table.io.new_output(location).create() as out:
            pq.write_table(arrow, out)
        with py_table.io.new_input(location).open() as f:
            metadata = pq.read_metadata(f)
        stats = data_file_statistics_from_parquet_metadata(
            parquet_metadata=metadata,
            stats_columns=compute_statistics_plan(pos_schema, py_table.properties),
            parquet_column_mapping=parquet_path_to_id_mapping(pos_schema),
        )
        delete_files.append(
            DataFile.from_args(
                content=DataFileContent.POSITION_DELETES,
                file_path=location,
                file_format=FileFormat.PARQUET,
                partition=partition,
                file_size_in_bytes=len(py_table.io.new_input(location)),
                sort_order_id=None,
                spec_id=data_files[paths[0]].spec_id,
                equality_ids=None,
                key_metadata=None,
                **stats.to_serialized_dict(),
            )
        )
    with py_table.transaction() as tx:
        AddDeleteFiles(
            delete_files, py_table.spec().spec_id, operation=Operation.DELETE, transaction=tx, io=py_table.io
        ).commit()


def test_firn_reads_position_deletes_written_by_pyiceberg(firn: SqlCatalog, tmp_path: Path) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    py = _pyiceberg(tmp_path)
    py.create_namespace("db")
    py_table = py.create_table(
        "db.t",
        PySchema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "region", StringType(), required=False),
            NestedField(3, "name", StringType(), required=False),
        ),
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")),
        properties={"format-version": "2"},
    )
    region = {i: "us" if 40 <= i < 70 else "eu" for i in range(100)}
    py_table.append(pa.concat_tables([rows(range(0, 40), "eu"), rows(range(40, 70), "us")]))
    py_table.append(rows(range(70, 100), "eu"))
    # Positions equal ids minus the file's first id, files being written in order.
    files = {task.file.file_path: task.file for task in py_table.scan().plan_files()}
    first_id = {}
    for path in files:
        with py_table.io.new_input(path).open() as f:
            first_id[path] = pq.read_table(f, columns=["id"]).column("id")[0].as_py()
    wanted = {1, 5, 39, 45, 69, 70, 99}
    targets: dict[str, list[int]] = {}
    for path, start in first_id.items():
        count = files[path].record_count
        targets[path] = [i - start for i in sorted(wanted) if start <= i < start + count]
    _commit_pyiceberg_position_deletes(py_table, {p: v for p, v in targets.items() if v})

    t = firn.load_table("db.t")
    expected = _expected([i for i in range(100) if i not in wanted], region)
    assert _sorted_rows(py.load_table("db.t").scan().to_arrow()) == expected
    assert _sorted_rows(t.scan().to_arrow()) == expected
    assert t.scan().count() == 100 - len(wanted)
    # And a PyIceberg copy-on-write delete on top reads the same in Firn.
    py.load_table("db.t").delete("id = 50")
    t.refresh()
    expected = [r for r in expected if r[0] != 50]
    assert _sorted_rows(t.scan().to_arrow()) == expected
    assert _sorted_rows(py.load_table("db.t").scan().to_arrow()) == expected
