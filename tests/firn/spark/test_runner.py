"""``SparkRunner`` runs maintenance work units as Spark tasks with the same results, in the same
order, as the local runner; a maintenance operation run through it commits the same table.

Of the unit-based operations, this branch has none yet (``flush_root`` commits on the driver
without units): the unit test below uses a real unit function built on
``firn.maintenance.runner.execute_unit`` (it reads each data file's Parquet footer through the
FileIO rebuilt from the unit), and ``flush_root`` runs end to end through the runner."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from firn.catalog.sql import SqlCatalog
from firn.maintenance.runner import (
    LocalRunner,
    UnitContext,
    UnitResult,
    WorkUnit,
    execute_unit,
    local_io,
    make_unit,
)
from firn.spark import SparkRunner
from firn.table.table import Table
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
