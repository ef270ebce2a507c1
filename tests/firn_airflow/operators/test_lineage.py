"""OpenLineage from real maintenance runs: the figures (pure, from real results), the dataset
names (OpenLineage's naming spec, checked against the OpenLineage client's own naming classes),
the facets the operators give the OpenLineage provider, the events a real ``airflow dags test``
run emits through the provider's listener, and a provider that runs without OpenLineage
installed (a subprocess that cannot see it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from firn_airflow.operators.execution import plan_entry, run_in_worker
from firn_airflow.operators.lineage import (
    MAINTENANCE_FACET,
    dataset_identity,
    deletion_summary,
    maintenance_lineage,
    openlineage_facets,
    storage_identity,
)
from tests.firn_airflow.operators.helpers import (
    COMPACT_OPTIONS,
    DV_OPTIONS,
    FLUSH_OPTIONS,
    add_orphans,
    catalog_with_table,
    set_firn_connection,
    xcom,
)
from tests.fixtures.airflow import REPO, airflow_cli
from tests.fixtures.maintenance import backdate_orphan_record

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each operation run once, in nightly order, on a table where each has work."""
    catalog = catalog_with_table(tmp_path_factory.mktemp("lineage"))
    table = catalog.load_table("db.events")
    add_orphans(table, "orphan.parquet")
    table.maintenance.remove_orphan_files(delete=True).run()  # phase one: recorded...
    backdate_orphan_record(table, 2 * 24 * 3600 * 1000)  # ...two days ago: the run below deletes it
    out = {}
    for op, options in [
        ("rewrite_deletion_vectors", DV_OPTIONS),
        ("rewrite_data_files", COMPACT_OPTIONS),
        ("flush_root", FLUSH_OPTIONS),
        ("rewrite_manifests", {}),
        ("expire_snapshots", {"older_than": int(time.time() * 1000) + 1000, "retain_last": 1}),
        ("remove_orphan_files", {"dry_run": False}),
    ]:
        out[op] = run_in_worker(table.refresh(), op, options)
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


def test_the_log_says_what_was_recorded_deleted_and_kept(results: dict[str, dict[str, Any]]) -> None:
    orphans = deletion_summary(results["remove_orphan_files"])
    assert orphans is not None
    assert "recorded 0 new orphans" in orphans and "deleted 1 files" in orphans
    assert "kept 0 outside the table's own locations" in orphans
    expire = deletion_summary(results["expire_snapshots"])
    assert (
        expire is not None
        and f"deleted {sum(results['expire_snapshots']['deleted_files'].values())} files" in expire
    )
    assert deletion_summary(results["rewrite_data_files"]) is None
    recording = {
        "operation": "remove_orphan_files",
        "recorded_file_locations": ["a", "b"],
        "grace_ms": 86_400_000,
    }
    assert deletion_summary(recording) == (
        "recorded 2 new orphans (deleted by a run at least 24 h later: orphans.grace), "
        "0 recorded orphans still within their grace, deleted 0 files, "
        "kept 0 outside the table's own locations (or inside another table's; never deleted)"
    )


def test_plans_and_errors_count_for_nothing(tmp_path: Path) -> None:
    table = catalog_with_table(tmp_path).load_table("db.events")
    plan = plan_entry(table, "rewrite_data_files", COMPACT_OPTIONS)
    assert plan["dry_run"] is True and plan["groups"]
    error = {"operation": "flush", "table": "db.events", "error": {"type": "X", "message": "m"}}
    assert maintenance_lineage([plan, error]) == maintenance_lineage([])
    assert maintenance_lineage([]).totals() == {}


def _reference_names() -> list[tuple[str, Any]]:
    """Locations and the OpenLineage client's own naming of them (openlineage.client.naming)."""
    from openlineage.client.naming import dataset as naming

    return [
        ("/data/wh/db/events", naming.LocalFileSystem(path="/data/wh/db/events")),
        ("file:///data/wh/db/events/", naming.LocalFileSystem(path="/data/wh/db/events")),
        ("file:/data/wh/db/events", naming.LocalFileSystem(path="/data/wh/db/events")),
        ("file://nas/exports/wh/t", naming.RemoteFileSystem(host="nas", path="/exports/wh/t")),
        ("s3://lake/wh/db/events", naming.S3(bucket_name="lake", object_key="wh/db/events")),
        ("s3a://lake/wh/db/events/", naming.S3(bucket_name="lake", object_key="wh/db/events")),
        ("gs://lake/wh/db/events", naming.GCS(bucket_name="lake", object_key="wh/db/events")),
        (
            "hdfs://namenode:8020/wh/db/events",
            naming.HDFS(namenode_host="namenode", namenode_port="8020", path="/wh/db/events"),
        ),
        (
            "abfss://box@acct.dfs.core.windows.net/wh/db/events",
            naming.ABFSS(container="box", service="acct", path="wh/db/events"),
        ),
    ]


def test_table_locations_are_named_as_the_openlineage_client_names_storage() -> None:
    for location, reference in _reference_names():
        expected = (reference.get_namespace(), reference.get_name())
        assert storage_identity(location) == expected, location


def test_credentials_in_a_location_stay_out_of_the_name() -> None:
    assert storage_identity("s3://key:secret@lake/wh/t") == ("s3://lake", "wh/t")


def test_the_catalog_name_is_the_symlink() -> None:
    identity = dataset_identity("firn_default", "db.events", "s3://lake/wh/db/events")
    assert (identity.namespace, identity.name) == ("s3://lake", "wh/db/events")
    # The authority of the table's asset URI (firn://firn_default/db/events) and the table.
    assert (identity.catalog_namespace, identity.catalog_name) == ("firn://firn_default", "db.events")


def _serialized(facets: Any) -> dict[str, Any]:
    """The datasets as the OpenLineage client writes them into an event."""
    from openlineage.client.serde import Serde

    return {
        "inputs": [json.loads(Serde.to_json(d)) for d in facets.inputs],
        "outputs": [json.loads(Serde.to_json(d)) for d in facets.outputs],
    }


def _plain(facet: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in facet.items() if not k.startswith("_")}


def test_facets_of_a_compaction_and_of_an_expiry(results: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    identity = dataset_identity("firn_default", "db.events", str(tmp_path / "wh" / "db" / "events"))
    compact = results["rewrite_data_files"]
    events = _serialized(openlineage_facets(identity, maintenance_lineage([compact])))
    [source], [target] = events["inputs"], events["outputs"]
    for dataset in (source, target):
        assert (dataset["namespace"], dataset["name"]) == ("file", str(tmp_path / "wh" / "db" / "events"))
        assert dataset["facets"]["symlinks"]["identifiers"] == [
            {"namespace": "firn://firn_default", "name": "db.events", "type": "TABLE"}
        ]
    assert _plain(source["inputFacets"]["inputStatistics"]) == {
        "rowCount": compact["rewritten_records"],
        "size": compact["rewritten_bytes_count"],
        "fileCount": compact["rewritten_data_files_count"],
    }
    assert _plain(target["outputFacets"]["outputStatistics"]) == {
        "rowCount": compact["rewritten_records"],
        "size": compact["added_bytes_count"],
        "fileCount": compact["added_data_files_count"],
    }
    assert _plain(target["outputFacets"][MAINTENANCE_FACET]) == {
        "operations": ["rewrite_data_files"],
        "filesRewritten": compact["rewritten_data_files_count"],
        "bytesRewritten": compact["rewritten_bytes_count"],
        "recordsRewritten": compact["rewritten_records"],
        "filesAdded": compact["added_data_files_count"],
        "bytesAdded": compact["added_bytes_count"],
    }

    expire = results["expire_snapshots"]
    events = _serialized(openlineage_facets(identity, maintenance_lineage([expire])))
    [source], [target] = events["inputs"], events["outputs"]
    assert source["inputFacets"] == {}  # expiry rewrites nothing
    assert set(target["outputFacets"]) == {MAINTENANCE_FACET}  # and writes nothing
    assert _plain(target["outputFacets"][MAINTENANCE_FACET]) == {
        "operations": ["expire_snapshots"],
        "filesDeleted": sum(expire["deleted_files"].values()),
        "bytesDeleted": sum(expire["deleted_bytes"].values()),
    }


def _ol_events(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(job name, event type)`` -> the event, from the file transport's JSON lines."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(e["job"]["name"], e["eventType"]): e for e in events}


@pytest.mark.timeout(900)  # past the 600 s its `airflow` subprocess may take
def test_a_real_run_emits_the_facets_through_the_openlineage_provider(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = catalog_with_table(tmp_path)
    location = catalog.load_table("db.events").location.removeprefix("file://")
    set_firn_connection(monkeypatch, "firn_op_lineage", tmp_path)
    events_file = tmp_path / "openlineage.jsonl"
    conf = {"expire_before": "2100-01-01T00:00:00+00:00"}
    # A process of its own: the OpenLineage provider reads its settings (and registers its
    # listener) once per process.
    airflow_cli(
        "dags",
        "test",
        "firn_test_op_lineage",
        "--bundle-name",
        "firn-tests",
        "--conf",
        json.dumps(conf),
        env={
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                {"type": "file", "log_file_path": str(events_file), "append": True}
            ),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": "firn-tests",
        },
        timeout=600,
    )
    events = _ol_events(events_file)
    compact_event = events[("firn_test_op_lineage.compact", "COMPLETE")]
    expire_event = events[("firn_test_op_lineage.expire", "COMPLETE")]
    assert compact_event["job"]["namespace"] == "firn-tests"

    run_id = compact_event["run"]["facets"]["airflow"]["dagRun"]["run_id"]
    run = SimpleNamespace(dag_id="firn_test_op_lineage", run_id=run_id)
    compact, expire = xcom(run, "compact"), xcom(run, "expire")
    assert compact["rewritten_data_files_count"] > compact["added_data_files_count"] > 0

    [source], [target] = compact_event["inputs"], compact_event["outputs"]
    assert (target["namespace"], target["name"]) == ("file", location)
    assert (source["namespace"], source["name"]) == ("file", location)
    assert target["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "firn://firn_op_lineage", "name": "db.events", "type": "TABLE"}
    ]
    assert _plain(target["outputFacets"]["outputStatistics"]) == {
        "rowCount": compact["rewritten_records"],
        "size": compact["added_bytes_count"],
        "fileCount": compact["added_data_files_count"],
    }
    stats = _plain(target["outputFacets"][MAINTENANCE_FACET])
    assert stats["filesRewritten"] == compact["rewritten_data_files_count"]
    assert stats["bytesRewritten"] == compact["rewritten_bytes_count"]
    assert (
        _plain(source["inputFacets"]["inputStatistics"])["fileCount"] == compact["rewritten_data_files_count"]
    )
    # The same figures as the commit's own snapshot summary (Iceberg spec, Appendix F).
    summary = catalog.load_table("db.events").metadata.current_snapshot().summary
    # (Its removed-files-size also counts the delete files the rewrite dropped.)
    assert int(summary.get("deleted-data-files")) == stats["filesRewritten"]
    assert int(summary.get("added-data-files")) == stats["filesAdded"]
    assert int(summary.get("added-files-size")) == stats["bytesAdded"]

    [target] = expire_event["outputs"]
    assert (target["namespace"], target["name"]) == ("file", location)
    deleted = _plain(target["outputFacets"][MAINTENANCE_FACET])
    assert deleted["operations"] == ["expire_snapshots"]
    assert deleted["filesDeleted"] == sum(expire["deleted_files"].values()) > 0
    assert deleted["bytesDeleted"] == sum(expire["deleted_bytes"].values()) > 0


# Run in a subprocess that cannot see the OpenLineage packages: neither import them nor find
# their distributions (Airflow discovers providers from distribution entry points).
_WITHOUT_OPENLINEAGE = """
import importlib.machinery, re, sys
import importlib_metadata  # installs its distribution finder, wrapped below with the others

HIDDEN = ("openlineage", "airflow.providers.openlineage")
HIDDEN_DISTRIBUTIONS = re.compile(r"(apache[-_.]airflow[-_.]providers[-_.])?openlineage([-_.].*)?", re.I)


class Hide:
    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        if any(name == h or name.startswith(h + ".") for h in HIDDEN):
            return None
        return self.inner.find_spec(name, path, target)

    def find_distributions(self, *args, **kwargs):
        found = getattr(self.inner, "find_distributions", None)
        return [
            d for d in (found(*args, **kwargs) if found else [])
            if not HIDDEN_DISTRIBUTIONS.fullmatch(d.metadata["Name"] or "")
        ]

    def invalidate_caches(self):
        getattr(self.inner, "invalidate_caches", lambda: None)()


sys.meta_path[:] = [
    Hide(f) if f is importlib.machinery.PathFinder or hasattr(f, "find_distributions") else f
    for f in sys.meta_path
]

import importlib.util, json
from airflow.providers_manager import ProvidersManager
from tests.fixtures.airflow import load_test_dag
from tests.firn_airflow.operators.helpers import task_states, xcom

assert importlib.util.find_spec("airflow.providers.openlineage") is None
providers = set(ProvidersManager().providers)
assert "airflow-provider-firn" in providers and not any("openlineage" in p for p in providers), providers
run = load_test_dag("firn_test_op_lineage").test(run_conf={"expire_before": "2100-01-01T00:00:00+00:00"})
print(json.dumps({
    "state": str(run.state),
    "tasks": task_states(run),
    "compact": xcom(run, "compact"),
    "imported": sorted(m for m in sys.modules if m.split(".")[0] == "openlineage" or "providers.openlineage" in m),
}))
"""


@pytest.mark.timeout(900)  # past the 600 s its subprocess may take
def test_the_provider_runs_without_openlineage(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog_with_table(tmp_path)
    set_firn_connection(monkeypatch, "firn_op_lineage", tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_OPENLINEAGE],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["state"] == "success" and report["tasks"] == {"compact": "success", "expire": "success"}
    assert report["compact"]["rewritten_data_files_count"] > 0
    assert report["imported"] == []
