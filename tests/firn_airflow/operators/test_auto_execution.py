"""``execution="auto"`` decides by the work the operation's plan holds (bytes to rewrite,
files to delete), never by the table's size: real plans on a real V4 table, the thresholds
from arguments, table properties and defaults, and operator runs that show which way each
plan went."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.maintenance.base import PlanWork
from firn.table.table import Table
from firn_airflow.errors import SparkConnectionError
from firn_airflow.operators import (
    FirnExpireSnapshotsOperator,
    FirnFlushRootManifestOperator,
    FirnRewriteDataFilesOperator,
)
from firn_airflow.operators.execution import (
    DEFAULT_SPARK_MIN_BYTES,
    DEFAULT_SPARK_MIN_DELETE_FILES,
    DEFAULT_SPARK_MIN_METADATA_BYTES,
    PROPERTY_SPARK_MIN_BYTES,
    PROPERTY_SPARK_MIN_DELETE_FILES,
    AutoThresholds,
    choose_execution,
)
from tests.firn_airflow.operators.helpers import COMPACT_OPTIONS, catalog_with_table, set_firn_connection

pytestmark = pytest.mark.airflow

ZERO = AutoThresholds(spark_min_bytes=0, spark_min_metadata_bytes=0, spark_min_delete_files=0)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    directory = tmp_path_factory.mktemp("auto")
    return catalog_with_table(directory).load_table("db.events")


# -- the decision, on real plans ---------------------------------------------------------------------------
def test_compaction_goes_to_spark_above_its_bytes_and_stays_below(table: Table) -> None:
    plan = table.maintenance.rewrite_data_files(**COMPACT_OPTIONS).plan()
    work = plan.work()
    read = sum(g.input_bytes for g in plan.groups)
    assert work == PlanWork(data_bytes=read) and read > 0
    where, why = choose_execution("auto", work, AutoThresholds(spark_min_bytes=read - 1))
    assert where == "spark" and f"data bytes to rewrite {read:,} > {read - 1:,}" in why
    assert choose_execution("auto", work, AutoThresholds(spark_min_bytes=read))[0] == "worker"


def test_metadata_only_plans_never_go_to_spark_even_with_zero_byte_thresholds(table: Table) -> None:
    """A root flush and an expiry that frees few files hold no bytes to rewrite."""
    flush = table.maintenance.flush_root(force=True).plan()
    assert not flush.is_noop and flush.work() == PlanWork()
    expire = table.maintenance.expire_snapshots(
        older_than=int(time.time() * 1000) + 60_000, retain_last=1
    ).plan()
    freed = expire.work().files_to_delete
    assert not expire.is_noop and 0 < freed < DEFAULT_SPARK_MIN_DELETE_FILES
    assert expire.work().data_bytes == expire.work().metadata_bytes == 0
    keep_bytes_at_zero = AutoThresholds(spark_min_bytes=0, spark_min_metadata_bytes=0)
    assert choose_execution("auto", flush.work(), ZERO)[0] == "worker"
    assert choose_execution("auto", expire.work(), keep_bytes_at_zero)[0] == "worker"
    # ... and an expiry that deletes more files than the threshold goes to Spark.
    where, why = choose_execution("auto", expire.work(), AutoThresholds(spark_min_delete_files=freed - 1))
    assert where == "spark" and "files to delete" in why


def test_a_manifest_rewrite_goes_by_manifest_bytes(table: Table) -> None:
    plan = table.maintenance.rewrite_manifests().plan()
    work = plan.work()
    assert not plan.is_noop and work.data_bytes == 0 and work.metadata_bytes > 0
    assert choose_execution("auto", work, AutoThresholds())[0] == "worker"  # small manifests
    assert choose_execution("auto", work, AutoThresholds(spark_min_metadata_bytes=work.metadata_bytes - 1))[
        0
    ] == ("spark")


def test_a_dry_run_of_orphans_deletes_nothing() -> None:
    assert AutoThresholds().choose(PlanWork())[0] == "worker"
    assert ZERO.choose(PlanWork(files_to_delete=1))[0] == "spark"


def test_spark_and_worker_are_taken_as_asked() -> None:
    assert choose_execution("spark", None, ZERO)[0] == "spark"
    assert choose_execution("worker", PlanWork(data_bytes=1 << 50), ZERO)[0] == "worker"
    with pytest.raises(ValidationError, match="needs the operation's plan"):
        choose_execution("auto", None, ZERO)


# -- the thresholds: argument, then table property, then default ------------------------------------------
def test_thresholds_come_from_arguments_then_table_properties_then_defaults() -> None:
    assert AutoThresholds.resolve({}, {}) == AutoThresholds(
        DEFAULT_SPARK_MIN_BYTES, DEFAULT_SPARK_MIN_METADATA_BYTES, DEFAULT_SPARK_MIN_DELETE_FILES
    )
    props = {PROPERTY_SPARK_MIN_BYTES: "1000", PROPERTY_SPARK_MIN_DELETE_FILES: "7"}
    got = AutoThresholds.resolve({"spark_min_bytes": None, "spark_min_delete_files": "3"}, props)
    assert got == AutoThresholds(1000, DEFAULT_SPARK_MIN_METADATA_BYTES, 3)


@pytest.mark.parametrize("value", ["1 GiB", True, -1, "-5", 1.5])
def test_a_bad_threshold_is_one_clear_error(value: object) -> None:
    with pytest.raises(ValidationError, match="spark_min_bytes must be"):
        AutoThresholds.resolve({"spark_min_bytes": value}, {})
    with pytest.raises(ValidationError, match=f"table property {PROPERTY_SPARK_MIN_BYTES}"):
        AutoThresholds.resolve({}, {PROPERTY_SPARK_MIN_BYTES: str(value)})


@pytest.mark.parametrize("field", ["spark_min_bytes", "spark_min_metadata_bytes", "spark_min_delete_files"])
def test_thresholds_are_templated(field: str) -> None:
    assert field in FirnRewriteDataFilesOperator.template_fields
    op = FirnRewriteDataFilesOperator(
        task_id="c", table="db.t", execution="auto", **{field: "{{ params.x }}"}
    )
    assert getattr(op, field) == "{{ params.x }}"


# -- operator runs ---------------------------------------------------------------------------------------
def test_operator_runs_decide_by_the_plan_not_the_table(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every byte threshold at 0 and no Spark connection defined: the root flush and the
    expiry run in the worker (no spark-submit), the compaction goes to Spark (refused, as the
    Spark connection does not exist -- which proves it was sent there) and goes to the worker
    once the table's property raises its threshold."""
    catalog: SqlCatalog = catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_auto", tmp_path)
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    zero = {"spark_min_bytes": 0, "spark_min_metadata_bytes": 0}
    common = {"table": "db.events", "firn_conn_id": "firn_auto", "execution": "auto", **zero}

    flush = FirnFlushRootManifestOperator(task_id="flush", options={"force": True}, **common).execute({})  # type: ignore[arg-type]
    assert flush["operation"] == "flush_root" and flush["snapshot_id"] is not None
    expire = FirnExpireSnapshotsOperator(
        task_id="expire", options={"older-than": int(time.time() * 1000) + 60_000, "retain-last": 1}, **common
    ).execute({})  # type: ignore[arg-type]
    assert expire["operation"] == "expire_snapshots" and expire["expired_snapshot_ids"]
    rows_before = catalog.load_table("db.events").scan().to_arrow().num_rows

    compact = FirnRewriteDataFilesOperator(task_id="compact", options=COMPACT_OPTIONS, **common)
    with pytest.raises(SparkConnectionError, match="spark_default"):
        compact.execute({})  # type: ignore[arg-type]
    table = catalog.load_table("db.events")
    table.set_properties({PROPERTY_SPARK_MIN_BYTES: str(1 << 40)})
    del compact
    common.pop("spark_min_bytes")
    done = FirnRewriteDataFilesOperator(task_id="compact2", options=COMPACT_OPTIONS, **common).execute({})  # type: ignore[arg-type]
    assert done["rewritten_data_files_count"] > done["added_data_files_count"] > 0
    assert catalog.load_table("db.events").scan().to_arrow().num_rows == rows_before
