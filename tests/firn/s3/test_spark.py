"""Spark on an ``s3://`` warehouse (moto on loopback): the ``firn`` data source reads and writes,
``SparkRunner`` units run in Spark's Python workers (which rebuild the FileIO from the unit's
properties), the spark-submit job takes its storage credentials from the environment, and
``firn.spark.read`` routes files by whether Spark itself can read the scheme.

pip's pyspark ships no hadoop-aws, so Spark has no S3A here: the "not available" branch runs
for real; the "available" branch's decision (``s3://`` read by Spark at ``s3a://``) is checked
with a filesystem check that answers yes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.spark import SparkRunner
from firn.spark.config import ENV_CATALOG_PROPERTIES
from firn.spark.dataframe import Router, SparkPaths, hadoop_filesystem_problem
from tests.fixtures.maintenance import soon_ms
from tests.fixtures.row_deletes import ids, make_table, rows
from tests.fixtures.s3 import S3Server
from tests.fixtures.s3_tables import MOR, fill, needed, objects
from tests.fixtures.spark import SPARK_SUBMIT, spark_env

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def catalog_options(tmp_path: Path, warehouse: str, server: S3Server) -> dict[str, str]:
    """The data source's catalog options: URI, warehouse and the FileIO properties."""
    options = {
        "catalog": f"sqlite:///{tmp_path / 'catalog.db'}",
        "warehouse": warehouse,
        "catalog.name": "s3test",
    }
    options.update({f"catalog.{k}": v for k, v in server.properties().items()})
    return options


def test_the_data_source_reads_and_writes_s3(
    spark: Any, s3_catalog: SqlCatalog, tmp_path: Path, s3_warehouse: str, s3_server: S3Server
) -> None:
    t = make_table(s3_catalog, 3, partitioned=True, properties=MOR)
    t.append(rows(range(5)))
    t.delete("id = 1")
    options = catalog_options(tmp_path, s3_warehouse, s3_server)
    df = spark.read.format("firn").options(**options).load("db.t")
    assert sorted(r.id for r in df.collect()) == [0, 2, 3, 4]
    new = spark.createDataFrame([(10, "us", "n10"), (11, "eu", "n11")], "id long, region string, name string")
    new.write.format("firn").options(**options).mode("append").save("db.t")
    assert ids(t.refresh()) == [0, 2, 3, 4, 10, 11]
    written = {task.file.file_path for task in t.scan(filter="id >= 10").plan_files()}
    assert written and all(p.startswith(f"{t.location}/data/") for p in written)
    assert set(written) <= objects(t)


def test_read_routes_s3_files_through_the_data_source_without_s3a(
    spark: Any, s3_catalog: SqlCatalog, s3_server: S3Server
) -> None:
    assert hadoop_filesystem_problem(spark, "hdfs") is None  # Hadoop's own filesystems are there
    problem = hadoop_filesystem_problem(spark, "s3a")
    assert problem is not None and "S3AFileSystem" in problem and "hadoop-aws" in problem
    t = make_table(s3_catalog, 3, partitioned=True, properties=MOR)
    t.append(rows(range(5)))
    t.append(rows(range(5, 8), region="us"))
    plan = firn.spark.plan_read(spark, t)
    # No file is delete-ridden or odd: only the missing S3A keeps Spark's reader away.
    assert not plan.native_files and len(plan.firn_files) == 2
    assert all(
        "no Hadoop FileSystem for s3a://" in r.reason and "hadoop-aws" in r.reason for r in plan.routed
    )
    got = firn.spark.read(spark, t).toArrow()
    assert sorted(got.column("id").to_pylist()) == list(range(8))


def test_read_uses_s3a_when_spark_has_it(s3_catalog: SqlCatalog) -> None:
    """The decision, with a filesystem check that says Spark has S3A (and none for gs://)."""
    t = make_table(s3_catalog, 3, partitioned=True)
    t.append(rows(range(5)))
    asked: list[str] = []

    def has_s3a(scheme: str) -> str | None:
        asked.append(scheme)
        return None if scheme == "s3a" else f"no FileSystem for {scheme}://"

    paths = SparkPaths(t, has_s3a)
    assert paths("s3://bucket/wh/a.parquet") == "s3a://bucket/wh/a.parquet"
    assert paths("s3n://bucket/wh/a.parquet") == "s3a://bucket/wh/a.parquet"
    assert paths("s3a://bucket/wh/a.parquet") == "s3a://bucket/wh/a.parquet"
    assert (
        paths("gs://bucket/a.parquet") is None
        and paths.why_not("gs://bucket/a.parquet") == "no FileSystem for gs://"
    )
    assert paths("/tmp/x.parquet") == "file:///tmp/x.parquet"
    assert asked == ["s3a", "gs"]  # once per scheme
    scan = t.scan()
    native, left, routed = Router(t, scan, list(scan.projection.fields), paths).split(scan.plan_files())
    assert not left and not routed
    [group] = native
    assert group.paths == tuple(f.replace("s3://", "s3a://", 1) for f in group.files)
    assert all(f.startswith("s3://") for f in group.files)


def test_spark_runner_units_run_against_s3(spark: Any, s3_catalog: SqlCatalog) -> None:
    t = make_table(s3_catalog, 3, partitioned=True, properties=MOR)
    fill(t)
    expected = ids(t)
    runner = SparkRunner(spark)
    compacted = t.maintenance.rewrite_data_files(min_input_files=2).run(runner)
    assert compacted.rewritten_data_files_count >= 4
    t.maintenance.rewrite_deletion_vectors(rewrite_all=True).run(runner)
    t.maintenance.expire_snapshots(older_than=soon_ms(), retain_last=1).run(runner)
    t.io.new_output(f"{t.location}/data/stray.parquet").write(b"x")
    for _ in range(2):
        t.maintenance.remove_orphan_files(older_than=soon_ms(2), force=True, delete=True).run(runner)
    assert ids(t.refresh()) == expected
    assert objects(t) == needed(t)


def test_the_spark_submit_job_takes_storage_credentials_from_the_environment(
    s3_catalog: SqlCatalog, tmp_path: Path, s3_warehouse: str, s3_server: S3Server
) -> None:
    t = make_table(s3_catalog, 3, partitioned=True, properties=MOR)
    fill(t)
    expected = ids(t)
    result = tmp_path / "result.json"
    argv = [
        str(SPARK_SUBMIT),
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        firn.spark.job.path(),
        "compact",
        "--catalog",
        f"sqlite:///{tmp_path / 'catalog.db'}",
        "--warehouse",
        s3_warehouse,
        "--catalog-property",
        "name=s3test",
        "--table",
        "db.t",
        "--options",
        '{"min-input-files": 2}',
        "--result",
        str(result),
    ]
    env = spark_env()
    env[ENV_CATALOG_PROPERTIES] = json.dumps(s3_server.properties())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(Path.cwd())) if p)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert s3_server.secret_access_key not in " ".join(argv)  # the secret never was an argument
    assert s3_server.secret_access_key not in done.stdout + done.stderr
    [entry] = json.loads(result.read_text())
    assert entry["operation"] == "rewrite_data_files" and entry["rewritten_data_files_count"] >= 4
    assert ids(t.refresh()) == expected
