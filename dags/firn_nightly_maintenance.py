"""Nightly maintenance of every table in a namespace, in the order that frees the most.

``list_tables`` asks the ``firn_default`` catalog for the namespace's tables; each maintenance
step is then mapped over them (dynamic task mapping), in nightly order: rewrite deletion
vectors -> compact -> flush the V4 root -> rewrite manifests -> expire snapshots -> remove
orphan files. Every step runs only when ``table.maintenance.recommend()`` asks for it (the
thresholds are table properties, see the README's Maintenance section) and skips cleanly
otherwise; a step whose table is held by another maintenance run (its lease) skips too.

``execution="auto"`` submits a step to Spark (``spark_default``) when its plan rewrites more
than ``spark_min_bytes`` of data and delete files (or more than the table's
``firn.execution.spark-min-metadata-bytes`` of manifests, or deletes more than
``firn.execution.spark-min-delete-files`` files) and runs it in the worker otherwise: a step
that only changes metadata never pays a spark-submit. Orphan removal only
lists what it would delete unless the ``orphans_delete`` param is turned on; then each night
records the orphans it finds and deletes those an earlier night recorded at least
``orphans.grace`` ago (a table property, default one day), only inside the table's own location.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, task

from firn_airflow.hooks.firn import FirnHook
from firn_airflow.operators import firn_table_maintenance

FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"

with DAG(
    dag_id="firn_nightly_maintenance",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 6, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,
    doc_md=__doc__,
    tags=["firn", "maintenance"],
    params={
        "namespace": Param("demo", type="string", description="every table of this namespace"),
        "orphans_delete": Param(
            False, type="boolean", description="delete orphan files (else only list them)"
        ),
        "spark_min_bytes": Param(
            1 << 30,
            type="integer",
            minimum=0,
            description="steps rewriting more bytes of data go to Spark (0: every step that rewrites data)",
        ),
    },
) as dag:

    @task
    def list_tables(namespace: str) -> list[str]:
        """The namespace's tables, ``["demo.events", ...]``."""
        return FirnHook(FIRN_CONN_ID).list_tables(namespace)

    firn_table_maintenance(
        list_tables("{{ params.namespace }}"),
        group_id="maintain",
        firn_conn_id=FIRN_CONN_ID,
        spark={"conn_id": SPARK_CONN_ID},
        execution="auto",
        spark_min_bytes="{{ params.spark_min_bytes }}",
        orphans_delete="{{ params.orphans_delete }}",
        skip_if_not_recommended=True,
        on_lease_held="skip",
    )
