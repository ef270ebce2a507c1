"""``SparkRunner`` runs maintenance work units as Spark tasks with the same results, in the same
order, as the local runner; every maintenance operation run through it commits what the local
runner commits.

* A unit function of this module (each data file's Parquet footer, read through the FileIO the
  unit rebuilds) checks results and their order unit by unit.
* Each operation that has work units (compaction groups, DV and position-delete rewrites,
  manifest rewrites, expiry's and orphan removal's file deletions) runs on twin tables, one
  through ``SparkRunner`` and one through ``LocalRunner``: the results (ids, timings and
  paths aside) and the tables' rows and files are the same, and the Spark side really ran
  its units as Spark tasks. ``flush_root`` (no units) commits the same too."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.maintenance.runner import (
    LocalRunner,
    UnitContext,
    UnitFunction,
    UnitResult,
    WorkUnit,
    execute_unit,
    local_io,
    make_unit,
)
from firn.spark import SparkRunner
from firn.table.table import Table
from tests.fixtures.maintenance import backdate_orphan_record, files_on_disk
from tests.fixtures.spark_tables import build_table, same_rows, spark_catalog
from tests.fixtures.tables import events

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _footer(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    path = payload["path"]
    with ctx.io.new_input(path).open_arrow() as f:
        meta = pq.ParquetFile(f).metadata
    return {
        "path": path,
        "rows": meta.num_rows,
        "row_groups": meta.num_row_groups,
        "format_version": ctx.metadata.format_version,
    }


def footer_unit(unit: WorkUnit) -> UnitResult:
    """A module-level unit function, as operations define them."""
    return execute_unit(_footer, unit)


@pytest.fixture(autouse=True)
def _ship_this_module() -> None:
    # Executors import unit functions by module name; this test module is not on their path,
    # so it travels by value (an operation's module travels by reference: firn is installed).
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _units(table: Table, io_ref: str) -> list[WorkUnit]:
    return [
        make_unit(
            "footer",
            io=table.io,
            metadata_location=table.metadata_location,
            payload={"path": t.file.file_path},
            io_ref=io_ref,
        )
        for t in table.scan().plan_files()
    ]


def test_spark_runner_matches_the_local_runner(spark: Any, tmp_path: Path) -> None:
    table = build_table(spark_catalog(tmp_path), "v3-dvs")
    with local_io(table.io) as ref:
        units = _units(table, ref)
        local = LocalRunner().map(footer_unit, units)
    remote = SparkRunner(spark, job_description="test").map(footer_unit, units)
    assert len(units) > 4
    assert remote == local
    assert [r["path"] for r in remote] == [u["payload"]["path"] for u in units]  # unit order
    assert sum(r["rows"] for r in remote) == sum(t.file.record_count for t in table.scan().plan_files())
    assert SparkRunner(spark).map(footer_unit, []) == []


def test_unit_errors_surface_on_the_driver(spark: Any, tmp_path: Path) -> None:
    table = build_table(spark_catalog(tmp_path), "v1")
    [unit] = _units(table, "unused")[:1]
    unit["payload"]["path"] = f"{table.location}/data/missing.parquet"
    with pytest.raises(Exception, match=r"missing\.parquet"):
        SparkRunner(spark).map(footer_unit, [unit])


def _flushed_twin(catalog: SqlCatalog, name: str) -> Table:
    table = build_table(catalog, "v4", name=name)
    for i in range(3):
        table.append(events(5, start=1000 + 10 * i))
    return table


def test_flush_root_through_spark_commits_what_the_local_runner_commits(spark: Any, tmp_path: Path) -> None:
    catalog = spark_catalog(tmp_path)
    a, b = _flushed_twin(catalog, "a"), _flushed_twin(catalog, "b")
    ra = a.maintenance.flush_root(force=True).run(runner=SparkRunner(spark))
    rb = b.maintenance.flush_root(force=True).run(runner=LocalRunner())

    def comparable(result: Any) -> dict[str, Any]:
        d = result.to_dict()
        return {
            k: v for k, v in d.items() if k not in ("table", "snapshot_id", "duration_ms", "bytes_written")
        }

    assert comparable(ra) == comparable(rb) and ra.data_files_moved > 0
    assert same_rows(a.refresh().scan().to_arrow(), b.refresh().scan().to_arrow())


class CountingSparkRunner(SparkRunner):
    """A ``SparkRunner`` that counts the units it ran and the Spark jobs they took."""

    def __init__(self, spark: Any) -> None:
        super().__init__(spark)
        self.units = 0
        self.jobs = 0

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]:
        tracker = self.spark.sparkContext.statusTracker()
        before = len(tracker.getJobIdsForGroup(None))
        out = super().map(fn, units)
        self.units += len(units)
        self.jobs += len(tracker.getJobIdsForGroup(None)) - before
        return out


def _later() -> int:
    return int(time.time() * 1000) + 2000  # every snapshot and planted file is older


def _expire(t: Table) -> Any:
    t.delete("region = 'eu'")  # whole files: expiry then deletes data files too
    return t.maintenance.expire_snapshots(**{"retain-last": 1, "older-than": _later()})


def _orphans(t: Table) -> Any:
    data = Path(t.location.removeprefix("file://")) / "data"
    for i in range(3):
        (data / f"stray-{i}.parquet").write_bytes(b"not referenced")
    options = {"older-than": _later(), "dry-run": False, "force": True}
    t.maintenance.remove_orphan_files(**options).run()  # phase one: recorded...
    backdate_orphan_record(t, 2 * 24 * 3600 * 1000)  # ...two days ago, so this run deletes them
    return t.maintenance.remove_orphan_files(**options)


def _dv_rewrite(t: Table) -> Any:
    return t.maintenance.rewrite_deletion_vectors(**{"min-input-files": 2})


def _pos_rewrite(t: Table) -> Any:
    t.delete("id = 44 or id = 45 or id = 46 or id = 47")  # a second position delete file per file
    return t.maintenance.rewrite_position_delete_files(**{"min-input-files": 2})


# (id, table kind, the operation on a table); options in Iceberg's hyphenated names.
OPERATIONS: list[tuple[str, str, Callable[[Table], Any]]] = [
    ("compact-v2", "v2-deletes", lambda t: t.maintenance.rewrite_data_files(**{"min-input-files": 2})),
    ("compact-v4", "v4", lambda t: t.maintenance.rewrite_data_files(**{"min-input-files": 2})),
    ("rewrite-dvs", "v3-dvs", _dv_rewrite),
    ("rewrite-position-deletes", "v2-deletes", _pos_rewrite),
    ("rewrite-manifests", "v2-deletes", lambda t: t.maintenance.rewrite_manifests()),
    ("expire", "v3-dvs", _expire),
    ("orphans", "v1", _orphans),
]
# Result entries that differ between twins by chance: ids, timings, where metadata went, and
# byte counts (compressed files naming random UUIDs).
VOLATILE = {
    "table",
    "snapshot_id",
    "snapshot_ids",
    "duration_ms",
    "expired_snapshot_ids",
    "metadata_location",
}


def _comparable(result: Any, root: Path) -> dict[str, Any]:
    text = json.dumps(result.to_dict(), sort_keys=True).replace(str(root), "<root>")
    return {k: v for k, v in json.loads(text).items() if k not in VOLATILE and "bytes" not in k}


def _table_files(table: Table) -> list[tuple[str, int, int]]:
    """(partition, live-row count before deletes, delete files) of every planned file."""
    return sorted(
        (repr(t.file.partition), t.file.record_count, len(t.delete_files)) for t in table.scan().plan_files()
    )


@pytest.mark.parametrize(
    ("kind", "operation"), [(k, op) for _, k, op in OPERATIONS], ids=[i for i, _, _ in OPERATIONS]
)
def test_every_operation_commits_what_the_local_runner_commits(
    spark: Any, tmp_path: Path, kind: str, operation: Callable[[Table], Any]
) -> None:
    # Twins in directories of equal length, so paths differ only in one letter.
    for side in ("s", "l"):
        (tmp_path / side).mkdir()
    tables = {side: build_table(spark_catalog(tmp_path / side), kind) for side in ("s", "l")}
    runner = CountingSparkRunner(spark)
    results = {
        "s": operation(tables["s"]).run(runner=runner),
        "l": operation(tables["l"]).run(runner=LocalRunner()),
    }
    assert runner.units > 0 and runner.jobs > 0  # the units ran as Spark tasks
    comparable = {side: _comparable(r, tmp_path / side) for side, r in results.items()}
    assert comparable["s"] == comparable["l"]
    on_spark, local = tables["s"].refresh(), tables["l"].refresh()
    assert (results["s"].snapshot_id is None) == (results["l"].snapshot_id is None)
    assert results["l"].snapshot_id is not None or comparable["l"]["deleted_files"]  # it did work
    assert same_rows(on_spark.scan().to_arrow(), local.scan().to_arrow())
    assert _table_files(on_spark) == _table_files(local)
    assert len(on_spark.snapshots()) == len(local.snapshots())
    data_files = {
        side: [p for p in files_on_disk(tmp_path / side / "warehouse") if "/data/" in p] for side in tables
    }
    assert len(data_files["s"]) == len(data_files["l"])  # deletions and written files alike
