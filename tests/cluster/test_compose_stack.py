"""The compose stack without Docker (``make cluster-test``): docker-compose.yaml's services as
local processes (``tests/cluster/stack.py``), then the example DAGs through ``airflow dags test``
with the compose's LocalExecutor, every maintenance step that rewrites data submitted to the
Spark cluster, and the table's rows checked afterwards."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.cluster.stack import REPO, ComposeStack, compose_stack
from tests.fixtures.catalogs import postgres_unavailable
from tests.fixtures.spark import SparkCluster

pytestmark = [
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.airflow,
    pytest.mark.postgres,
    pytest.mark.xdist_group("spark"),
]

INGEST_RUNS = ("2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+00:00", "2026-01-01T02:00:00+00:00")
NIGHTLY_RUN = "2026-01-02T00:00:00+00:00"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, spark_cluster: SparkCluster) -> Iterator[ComposeStack]:
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    with compose_stack(tmp_path_factory.mktemp("compose-stack"), spark_cluster) as running:
        yield running


def catalog_of(stack: ComposeStack) -> Any:
    """The ``firn_default`` connection's catalog, read by the provider's own parser."""
    from airflow.sdk import Connection

    import firn
    from firn_airflow.hooks.connection import catalog_config

    raw = dict(stack.firn_connection)
    extra = raw.pop("extra")
    config = catalog_config(Connection(conn_id="firn_default", extra=json.dumps(extra), **raw))
    return firn.load_catalog(config.uri, warehouse=config.warehouse, name=config.name, **config.properties)


def registered_apps(stack: ComposeStack) -> list[str]:
    """Applications the standalone master registered, in order."""
    text = (stack.spark.log_dir / "master.log").read_text(errors="replace")
    return re.findall(r"Registering app (.+?)\s*$", text, flags=re.M)


def cli_json(stack: ComposeStack, *args: str) -> Any:
    """The JSON an ``airflow ... -o json`` command prints (its last line; warnings precede it)."""
    out = stack.airflow(*args, "-o", "json").stdout.strip().splitlines()
    return json.loads(out[-1])


def dag_runs(stack: ComposeStack, dag_id: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = cli_json(stack, "dags", "list-runs", dag_id)
    return runs


def run_states(stack: ComposeStack, dag_id: str) -> dict[str, str]:
    """task (``task[index]`` when mapped) -> state, of the DAG's only run."""
    (run,) = dag_runs(stack, dag_id)
    states = {}
    for ti in cli_json(stack, "tasks", "states-for-dag-run", dag_id, run["run_id"]):
        index = str(ti.get("map_index") or "")
        states[ti["task_id"] + (f"[{index}]" if index not in ("", "-1") else "")] = str(ti["state"])
    return states


def rows(table: Any) -> pa.Table:
    return table.scan().to_arrow().sort_by("event_id")


def test_ingest_and_nightly_maintenance_on_the_compose_stack(stack: ComposeStack) -> None:
    sys.path.insert(0, str(REPO / "dags" / "jobs"))
    try:
        from ingest_events import PARTITION_SPEC, SCHEMA
    finally:
        sys.path.pop(0)
    from examples.demo import DEMO_TABLE_PROPERTIES, NAMESPACE, TABLE

    # The table make demo creates (thresholds scaled to a demo-sized table), in the catalog
    # database on Postgres with its files in the bucket.
    catalog = catalog_of(stack)
    catalog.create_namespace(NAMESPACE)
    table = catalog.create_table(
        TABLE, SCHEMA, partition_spec=PARTITION_SPEC, properties=DEMO_TABLE_PROPERTIES
    )
    assert table.location.startswith(f"s3://{stack.bucket}/")

    for when in INGEST_RUNS:
        stack.airflow("dags", "test", "--use-executor", "firn_ingest_events", when)
    runs = dag_runs(stack, "firn_ingest_events")
    assert len(runs) == len(INGEST_RUNS) and all(r["state"] == "success" for r in runs), runs
    # Each run's job ran as an application of the standalone cluster (the job names itself).
    assert [a for a in registered_apps(stack) if a.startswith("firn ingest")] == [f"firn ingest {TABLE}"] * 3

    table = catalog.load_table(TABLE)
    before, health_before = rows(table), table.health()
    assert before.num_rows > 0 and health_before.snapshots >= 3 * len(INGEST_RUNS)
    recommended = [r.operation for r in table.maintenance.recommend()]
    assert recommended, health_before

    apps_before = len(registered_apps(stack))
    conf = {"namespace": NAMESPACE, "spark_min_bytes": 0, "orphans_delete": True}
    stack.airflow(
        "dags", "test", "--use-executor", "firn_nightly_maintenance", NIGHTLY_RUN, "-c", json.dumps(conf)
    )
    states = run_states(stack, "firn_nightly_maintenance")
    assert "failed" not in states.values() and "upstream_failed" not in states.values(), states
    assert states["list_tables"] == "success", states
    ran = sorted(t for t, s in states.items() if t.startswith("maintain.") and s == "success")
    skipped = {t for t, s in states.items() if s == "skipped"}
    assert set(states) == {"list_tables", *ran, *skipped}, states  # nothing failed or left over
    # execution="auto" with spark_min_bytes=0: every step that ran and rewrites data was one
    # maintenance job on the standalone cluster; metadata-only steps (a root flush, an expiry
    # of a few files) ran in the worker, never paying a spark-submit. The first step that ran
    # is the first operation recommend() asked for; steps whose work an earlier step did (a
    # flush after compaction) skip.
    spark_apps = registered_apps(stack)[apps_before:]
    assert ran and len(spark_apps) <= len(ran), (states, spark_apps)
    assert all(a.startswith("firn ") and not a.startswith("firn ingest") for a in spark_apps), spark_apps
    if "maintain.rewrite_data_files[0]" in ran:
        assert "firn compact" in spark_apps, spark_apps
    assert "firn flush" not in spark_apps, spark_apps
    assert f"maintain.{recommended[0]}[0]" in ran, (recommended, states)

    table = catalog.load_table(TABLE)
    after, health_after = rows(table), table.health()
    assert after.equals(before), "maintenance changed the rows"
    assert (
        health_after.snapshots < health_before.snapshots or health_after.data_files < health_before.data_files
    )
    assert all(o.location.startswith(f"s3://{stack.bucket}/") for o in table.io.list_prefix(table.location))
    catalog.close()


def test_the_stack_follows_the_compose_file(stack: ComposeStack) -> None:
    """What was rewritten is only where things run: hosts, ports, per-run names."""
    from tests.cluster.stack import compose_file

    env = compose_file()["services"]["airflow-scheduler"]["environment"]
    original = json.loads(env["AIRFLOW_CONN_FIRN_DEFAULT"])
    assert stack.firn_connection["extra"]["warehouse"] == original["extra"]["warehouse"]
    assert stack.firn_connection["password"] == original["password"]
    assert {k: v for k, v in stack.firn_connection["extra"]["properties"].items() if k != "s3.endpoint"} == {
        k: v for k, v in original["extra"]["properties"].items() if k != "s3.endpoint"
    }
    assert stack.spark_connection["extra"] == json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["extra"]
    assert stack.env["AIRFLOW__CORE__EXECUTOR"] == env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert stack.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg://")
    # The keys airflow-init generated, read by the components through the _CMD settings.
    auth = Path(stack.env["AIRFLOW__CORE__FERNET_KEY_CMD"].split()[-1]).parent
    assert (auth / "fernet.key").read_text().strip() and (auth / "jwt.secret").read_text().strip()
    assert (auth / "passwords.json").is_file()
