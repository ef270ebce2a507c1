"""The operators go through their hook: with ``FirnHook`` mocked (as the Databricks provider's
operator tests mock theirs), an operator's run is the hook calls it makes and the JSON of the
typed result it gets back."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from firn.catalog.lease import LEASE_OWNER_LABEL
from firn.maintenance import RewriteDataFilesResult
from firn_airflow.hooks.spark_job import SparkSettings
from firn_airflow.operators import FirnRewriteDataFilesOperator

pytestmark = pytest.mark.airflow


def _table() -> Any:
    health = SimpleNamespace(to_dict=lambda: {"data_files": 3}, data_bytes=10)
    return mock.Mock(
        name="table", location="/w/db/events", format_version=3, health=mock.Mock(return_value=health)
    )


@pytest.mark.parametrize("execution", ["worker", "spark"])
def test_the_operator_runs_its_operation_through_the_hook(execution: str) -> None:
    table = _table()
    table.name = "db.events"
    result = RewriteDataFilesResult(table="db.events", snapshot_id=7, rewritten_data_files_count=4)
    with mock.patch("firn_airflow.operators.base.FirnHook") as hook_class:
        hook = hook_class.return_value
        hook.load_table.return_value = table
        hook.get_catalog.return_value.maintenance_lease_holder.return_value = None
        hook.run_operation.return_value = result
        op = FirnRewriteDataFilesOperator(
            task_id="compact",
            table="db.events",
            firn_conn_id="firn_x",
            execution=execution,
            options={"min_input_files": 2},
            spark=SparkSettings(conn_id="spark_x", driver_memory="1g"),
        )
        out = op.execute(context={})  # type: ignore[arg-type]
    assert hook_class.call_args.args == ("firn_x",)
    assert hook_class.call_args.kwargs["catalog_properties"] == {LEASE_OWNER_LABEL: "airflow"}
    hook.load_table.assert_called_once_with("db.events")
    call = hook.run_operation.call_args
    assert call.args == (table, "rewrite_data_files", {"min-input-files": 2})
    assert call.kwargs["execution"] == execution and call.kwargs["dry_run"] is False
    assert call.kwargs["spark"] == SparkSettings(conn_id="spark_x", driver_memory="1g")
    assert out == result.to_dict() | {"skipped": [], "snapshot_ids": [], "failed_groups": []}
    assert op._lineage is not None and op._lineage.files_rewritten == 4
    hook.close.assert_called_once()


def test_on_kill_stops_the_hook_s_spark_job() -> None:
    with mock.patch("firn_airflow.operators.base.FirnHook") as hook_class:
        hook = hook_class.return_value
        hook.load_table.return_value = _table()
        hook.get_catalog.return_value.maintenance_lease_holder.return_value = None
        hook.run_operation.return_value = RewriteDataFilesResult(table="db.events")
        op = FirnRewriteDataFilesOperator(task_id="compact", table="db.events", execution="spark")
        op.execute(context={})  # type: ignore[arg-type]
        op.on_kill()
    hook.kill.assert_called_once_with()
