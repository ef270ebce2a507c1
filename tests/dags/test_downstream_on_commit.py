"""``firn_downstream_on_commit`` end to end: real ``airflow dags test`` runs (SQLite metadata DB,
SQLite Firn catalog, spark-submit of ``jobs/aggregate_events.py``), and the job killed with
SIGKILL on Spark right after its commit, then the DAG run as its retry.

After every run the downstream aggregate equals a recomputation from the source's rows; runs
with nothing new and runs after a compaction (``replace``) of the source commit nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from firn.catalog.sql import SqlCatalog
from firn.spark.config import ENV_CATALOG_URI, ENV_CATALOG_WAREHOUSE
from firn.table.downstream import recorded_source_snapshot
from tests.dags.test_example_dags import _catalog, _env, dags_test
from tests.fixtures.airflow import REPO

sys.path.insert(0, str(REPO / "dags" / "jobs"))
import aggregate_events as job

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.spark,
    pytest.mark.xdist_group("spark"),
    pytest.mark.timeout(2400),
]

SOURCE, TARGET = "demo.events", "demo.events_by_kind"
SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("region", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)


def batch(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "event_id": list(ids),
            "kind": [("view", "click", "cart", "buy")[i % 4] for i in ids],
            "region": [("eu", "us", "ap")[i % 3] for i in ids],
            "amount": [(i * 13 % 10000) / 100 for i in ids],
        },
        schema=SCHEMA,
    )


def assert_matches(catalog: SqlCatalog) -> pa.Table:
    order = [("kind", "ascending"), ("region", "ascending")]
    got = catalog.load_table(TARGET).scan().to_arrow().sort_by(order)
    want = job.recompute(catalog.load_table(SOURCE).scan().to_arrow()).sort_by(order)
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    return got


def target_snapshots(catalog: SqlCatalog) -> int:
    return len(catalog.load_table(TARGET).snapshots())


def test_downstream_on_commit(airflow_home: Path, tmp_path: Path) -> None:
    catalog_dir = tmp_path / "lake"
    env = _env(catalog_dir)
    catalog = _catalog(catalog_dir)
    catalog.create_namespace("demo")
    source = catalog.create_table(
        SOURCE,
        SCHEMA,
        properties={"format-version": "4", "write.delete.mode": "merge-on-read"},
    )
    source.append(batch(0, 60))
    source.append(batch(60, 40))
    source.delete("region = 'us' AND event_id < 50")  # deletion vectors

    assert dags_test("firn_downstream_on_commit", env) == {"wake": "success", "aggregate": "success"}
    assert assert_matches(catalog).num_rows == 12
    assert (
        recorded_source_snapshot(catalog.load_table(TARGET), SOURCE)
        == source.refresh().current_snapshot().snapshot_id
    )  # type: ignore[union-attr]
    assert target_snapshots(catalog) == 1

    # Nothing new, then a compaction of the source (replace): both commit nothing.
    dags_test("firn_downstream_on_commit", env)
    source.refresh().maintenance.rewrite_data_files(rewrite_all=True).run()
    dags_test("firn_downstream_on_commit", env)
    assert target_snapshots(catalog) == 1

    # A run killed with SIGKILL on Spark right after its commit, then retried by the DAG.
    source.refresh().append(batch(100, 30))
    source.refresh().delete("kind = 'buy' AND event_id >= 100")
    spark_env = {**os.environ, **env}
    spark_env[ENV_CATALOG_URI] = f"sqlite:///{catalog_dir / 'catalog.db'}"
    spark_env[ENV_CATALOG_WAREHOUSE] = str(catalog_dir / "warehouse")
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            "local[2]",
            str(REPO / "dags" / "jobs" / "aggregate_events.py"),
            "--source",
            SOURCE,
            "--target",
            TARGET,
            "--crash-after-commit",
        ],
        env=spark_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode != 0 and "AGGREGATE" not in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert target_snapshots(catalog) == 2  # the commit landed before the kill
    dags_test("firn_downstream_on_commit", env)
    assert target_snapshots(catalog) == 2  # the retry processed nothing twice
    assert_matches(catalog)
    catalog.close()


@pytest.mark.parametrize(
    ("extras", "wanted"),
    [
        ([], None),
        ([{"from_trigger": True, "payload": {"to_snapshot_id": 7, "maintenance_only": True}}], "skip"),
        (
            [
                {
                    "from_trigger": True,
                    "payload": {"to_snapshot_id": 7, "timestamp_ms": 2, "maintenance_only": False},
                },
                {
                    "from_trigger": True,
                    "payload": {"to_snapshot_id": 9, "timestamp_ms": 5, "maintenance_only": False},
                },
                {
                    "from_trigger": True,
                    "payload": {"to_snapshot_id": 8, "timestamp_ms": 9, "maintenance_only": True},
                },
            ],
            9,
        ),
        # An event from the ingest task's outlet names no range: read to the current snapshot.
        ([{"from_trigger": True, "payload": {"to_snapshot_id": 7, "maintenance_only": False}}, {}], None),
    ],
)
def test_which_range_end_the_events_ask_for(extras: list[dict[str, object]], wanted: object) -> None:
    sys.path.insert(0, str(REPO / "dags"))
    import firn_downstream_on_commit as dag_module

    assert dag_module.newest_data_commit(extras) == wanted
