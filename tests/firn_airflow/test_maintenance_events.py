"""Maintenance events apart from data events (issue 20 item 2), with real ``dag.test()`` runs.

An ingest DAG whose outlet is the table's asset queues the DAG scheduled on that asset (the
compaction DAG); the compaction's own result goes to the table's maintenance asset, so it
queues the DAG that follows maintenance and not the compaction DAG again. The history stays
visible: the maintenance asset's event (operation, result, health), the task's XCom, and the
table-health view's maintenance history.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from firn_airflow.assets import firn_asset, maintenance_asset
from firn_airflow.constants import EVENT_HEALTH, EVENT_OPERATION, EVENT_RESULT
from tests.firn_airflow.triggers.support import create_table, firn_connection, xcom_return
from tests.fixtures.airflow import TEST_BUNDLE, airflow_cli, load_test_dag

pytestmark = pytest.mark.airflow

CONN_ID = "firn_events_test"
TABLE = "db.events"
INGEST = "firn_test_events_ingest"
COMPACT = "firn_test_events_compact"
FOLLOW = "firn_test_events_follow_maintenance"


def register_unpaused() -> None:
    """Have the real ``airflow dags reserialize`` register the test DAGs (and their asset
    references); the scheduled ones unpaused, as the scheduler queues runs only for those."""
    import sqlalchemy as sa
    from airflow.configuration import conf
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    airflow_cli(
        "dags",
        "reserialize",
        "--bundle-name",
        TEST_BUNDLE,
        # The bundle's watcher DAG has a trigger whose kwargs the CLI encrypts: with our key.
        env={
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__FERNET_KEY": conf.get("core", "fernet_key"),
        },
    )
    with create_session() as session:
        session.execute(
            sa.update(DagModel).where(DagModel.dag_id.in_([COMPACT, FOLLOW])).values(is_paused=False)
        )


def queued() -> set[str]:
    """The DAGs an asset event queued a run of (the scheduler's asset-triggered queue)."""
    import sqlalchemy as sa
    from airflow.models.asset import AssetDagRunQueue
    from airflow.utils.session import create_session

    with create_session() as session:
        return set(
            session.scalars(
                sa.select(AssetDagRunQueue.target_dag_id).where(
                    AssetDagRunQueue.target_dag_id.in_([COMPACT, FOLLOW])
                )
            )
        )


def clear_queue() -> None:
    import sqlalchemy as sa
    from airflow.models.asset import AssetDagRunQueue
    from airflow.utils.session import create_session

    with create_session() as session:
        session.execute(
            sa.delete(AssetDagRunQueue).where(AssetDagRunQueue.target_dag_id.in_([COMPACT, FOLLOW]))
        )


def events_of(uri: str) -> list[dict[str, object]]:
    import sqlalchemy as sa
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.scalars(
            sa.select(AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == uri)
            .order_by(AssetEvent.id)
        )
        return [dict(extra or {}) for extra in rows]


def test_ingest_triggers_compaction_and_compaction_triggers_only_maintenance_followers(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = firn_connection(tmp_path, monkeypatch, CONN_ID)
    table = create_table(catalog, TABLE, commits=5)  # 5 small files
    register_unpaused()
    clear_queue()
    data_uri = firn_asset(CONN_ID, TABLE).uri
    maintenance_uri = maintenance_asset(CONN_ID, TABLE).uri
    data_before, maintenance_before = len(events_of(data_uri)), len(events_of(maintenance_uri))

    # New data: the ingest's event on the table's asset queues the compaction DAG.
    ingest = load_test_dag(INGEST).test()
    assert ingest.state == "success"
    assert len(events_of(data_uri)) == data_before + 1
    assert queued() == {COMPACT}

    # Maintenance: its result goes to the maintenance asset and queues only the DAG that
    # follows maintenance -- the compaction DAG is not triggered by its own compaction.
    clear_queue()
    compact = load_test_dag(COMPACT).test()
    assert compact.state == "success"
    assert table.refresh().health().data_files == 1
    assert len(events_of(data_uri)) == data_before + 1, "maintenance posted on the table's data asset"
    assert queued() == {FOLLOW}

    # The history stays visible: the maintenance asset's event, the XCom, the health view.
    (event,) = events_of(maintenance_uri)[maintenance_before:]
    assert event[EVENT_OPERATION] == "rewrite_data_files"
    assert isinstance(event[EVENT_RESULT], dict) and isinstance(event[EVENT_HEALTH], dict)
    assert event[EVENT_HEALTH]["data_files"] == 1
    result = xcom_return(compact, "compact")
    assert result["operation"] == "rewrite_data_files"

    from airflow.utils.session import create_session

    from firn_airflow.health_view.data import maintenance_events

    with create_session() as session:
        history = maintenance_events(session, CONN_ID, TABLE)
    assert [e["operation"] for e in history if e["task_id"] == "compact"][-1] == "rewrite_data_files"
    catalog.close()
