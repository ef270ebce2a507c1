"""OpenLineage figures from real maintenance results (the OpenLineage provider is optional; its
classes are imported only when facets are built)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from firn_airflow.operators.lineage import dataset_identity, maintenance_lineage, openlineage_facets
from firn_airflow.operators.runners import plan_entry, run_local
from tests.firn_airflow.operators.helpers import (
    COMPACT_OPTIONS,
    DV_OPTIONS,
    FLUSH_OPTIONS,
    add_orphans,
    catalog_with_table,
)

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each operation run once, in nightly order, on a table where each has work."""
    catalog = catalog_with_table(tmp_path_factory.mktemp("lineage"))
    table = catalog.load_table("db.events")
    add_orphans(table, "orphan.parquet")
    out = {}
    for op, options in [
        ("rewrite_deletion_vectors", DV_OPTIONS),
        ("rewrite_data_files", COMPACT_OPTIONS),
        ("flush_root", FLUSH_OPTIONS),
        ("rewrite_manifests", {}),
        ("expire_snapshots", {"older_than": int(time.time() * 1000) + 1000, "retain_last": 1}),
        ("remove_orphan_files", {"dry_run": False}),
    ]:
        out[op] = run_local(table.refresh(), op, options)
    return out


def test_each_operation_reports_what_it_rewrote_wrote_and_deleted(results: dict[str, dict[str, Any]]) -> None:
    dvs = maintenance_lineage([results["rewrite_deletion_vectors"]])
    assert dvs.files_rewritten == results["rewrite_deletion_vectors"]["rewritten_delete_files_count"] > 0
    assert dvs.bytes_added == results["rewrite_deletion_vectors"]["added_bytes_count"] > 0
    compact = results["rewrite_data_files"]
    assert maintenance_lineage([compact]).to_dict() == {
        "operations": ("rewrite_data_files",),
        "files_rewritten": compact["rewritten_data_files_count"],
        "bytes_rewritten": compact["rewritten_bytes_count"],
        "records_rewritten": compact["rewritten_records"],
        "files_added": compact["added_data_files_count"],
        "bytes_added": compact["added_bytes_count"],
        "files_deleted": None,
        "bytes_deleted": None,
    }
    flush = maintenance_lineage([results["flush_root"]])
    assert flush.files_added == results["flush_root"]["leaves_written"] > 0 and flush.files_rewritten is None
    manifests = maintenance_lineage([results["rewrite_manifests"]])
    assert manifests.files_rewritten == results["rewrite_manifests"]["rewritten_manifests_count"] > 0
    expire = results["expire_snapshots"]
    assert maintenance_lineage([expire]).files_deleted == sum(expire["deleted_files"].values()) > 0
    orphans = maintenance_lineage([results["remove_orphan_files"]])
    assert (
        orphans.files_deleted == 1
        and orphans.bytes_deleted == results["remove_orphan_files"]["deleted_bytes"]
    )

    total = maintenance_lineage(results.values())
    assert total.operations == tuple(results)
    assert total.files_rewritten == dvs.files_rewritten + compact["rewritten_data_files_count"] + (
        manifests.files_rewritten or 0
    )
    assert total.totals()["files_deleted"] == (orphans.files_deleted or 0) + sum(
        expire["deleted_files"].values()
    )


def test_plans_and_errors_count_for_nothing(tmp_path: Path) -> None:
    table = catalog_with_table(tmp_path).load_table("db.events")
    plan = plan_entry(table, "rewrite_data_files", COMPACT_OPTIONS)
    assert plan["dry_run"] is True and plan["groups"]
    error = {"operation": "flush", "table": "db.events", "error": {"type": "X", "message": "m"}}
    assert maintenance_lineage([plan, error]) == maintenance_lineage([])
    assert maintenance_lineage([]).totals() == {}


def test_datasets_are_named_like_the_tables_asset() -> None:
    assert dataset_identity("firn_default", "db.events") == ("firn://firn_default", "db.events")


def test_facets_with_the_openlineage_provider(results: dict[str, dict[str, Any]]) -> None:
    pytest.importorskip("airflow.providers.openlineage", reason="the OpenLineage provider is not installed")
    lineage = maintenance_lineage([results["rewrite_data_files"]])
    facets = openlineage_facets("firn_default", "db.events", lineage)
    [output] = facets.outputs
    assert (output.namespace, output.name) == ("firn://firn_default", "db.events")
    stats = output.outputFacets["outputStatistics"]
    assert (stats.fileCount, stats.size) == (lineage.files_added, lineage.bytes_added)
