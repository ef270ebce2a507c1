"""Test DAG: every maintenance operator on ``db.events``, in nightly order, once in the worker and once on Spark.

The ``local_*`` chain works on connection ``firn_op_local`` in the worker; the ``spark_*`` chain
does the same through spark-submit on ``firn_op_spark`` (a twin catalog built the same way), so
tests/firn_airflow/operators/test_spark_runs.py can compare the two runners' results;
test_local_runs.py runs the local chain alone (spark tasks marked success). Compaction runs with
``execution="auto"``: Spark above ``spark_min_bytes`` (0 in the Spark chain), the worker below.
``template_expire_plan`` renders ``older_than`` from ``data_interval_end`` in a dry run.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, chain

from firn_airflow.operators import (
    FirnExpireSnapshotsOperator,
    FirnFlushRootManifestOperator,
    FirnRemoveOrphanFilesOperator,
    FirnRewriteDataFilesOperator,
    FirnRewriteDeletionVectorsOperator,
    FirnRewriteManifestsOperator,
)

TABLE = "db.events"

with DAG(
    dag_id="firn_test_op_chain",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"expire_before": Param("2000-01-01T00:00:00+00:00", type="string")},
) as dag:
    for runner in ("local", "spark"):
        execution = "worker" if runner == "local" else runner
        common = {"table": TABLE, "firn_conn_id": f"firn_op_{runner}", "execution": execution}
        if runner == "spark":
            common["spark"] = {"conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}}
        chain(
            FirnRewriteDeletionVectorsOperator(
                task_id=f"{runner}_rewrite_dvs", options={"min-input-files": 2}, **common
            ),
            FirnRewriteDataFilesOperator(
                task_id=f"{runner}_compact",
                options={"min_input_files": 2, "where": "region = 'eu'"},
                **{**common, "execution": "auto"},
                spark_min_bytes=0 if runner == "spark" else 1 << 40,
            ),
            FirnFlushRootManifestOperator(task_id=f"{runner}_flush", options={"force": True}, **common),
            FirnRewriteManifestsOperator(task_id=f"{runner}_rewrite_manifests", **common),
            FirnExpireSnapshotsOperator(
                task_id=f"{runner}_expire", older_than="{{ params.expire_before }}", retain_last=1, **common
            ),
            FirnRemoveOrphanFilesOperator(task_id=f"{runner}_orphans", **common),
        )

    FirnExpireSnapshotsOperator(
        task_id="template_expire_plan",
        table=TABLE,
        firn_conn_id="firn_op_local",
        execution="worker",
        dry_run=True,
        older_than="{{ data_interval_end - macros.timedelta(days=5) }}",
    )
