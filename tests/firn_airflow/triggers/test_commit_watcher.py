"""A DAG scheduled on a table asset with ``AssetWatcher(trigger=FirnCommitTrigger(...))``: it
parses and serializes, the real ``airflow dags reserialize`` registers its trigger in the
metadata database, and that trigger, rebuilt from its row as the triggerer rebuilds it, keeps
its watermark in the asset's state store (the real execution API, in process) so that a restart
resumes from it. Also the commit trigger run inline by ``dag.test()`` for a deferred task."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from firn_airflow.triggers import FirnCommitTrigger
from firn_airflow.triggers.commit import CLASSPATH
from tests.firn_airflow.triggers.support import (
    AfterDeferral,
    collect_while,
    commit,
    create_table,
    firn_connection,
    head,
    run_trigger,
    watch_polls,
    xcom_return,
)
from tests.fixtures.airflow import TEST_DAGS, airflow_cli, load_test_dag

pytestmark = pytest.mark.airflow

DAG_ID = "firn_test_sensor_commit_watch"
ASSET_NAME = "firn_sensor_test.db.events"
ASSET_URI = "firn://firn_sensor_test/db/events"


def test_the_dag_parses_and_serializes() -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    bag = DagBag(dag_folder=str(TEST_DAGS / f"{DAG_ID}.py"))
    assert bag.import_errors == {}
    dag = bag.dags[DAG_ID]
    serialized = json.loads(json.dumps(DagSerialization.to_dict(dag)))
    (asset,) = DagSerialization.from_dict(serialized).timetable.asset_condition.objects
    assert (asset.name, asset.uri) == (ASSET_NAME, ASSET_URI)
    (watcher,) = asset.watchers
    assert watcher.name == "firn_test_events_commits"
    assert watcher.trigger == {
        "classpath": CLASSPATH,
        "kwargs": {
            "table": "db.events",
            "firn_conn_id": "firn_sensor_test",
            "branch": "main",
            "poll_interval": 0.2,
            "operation": ["append", "delete", "overwrite"],
            "last_seen_snapshot_id": None,
        },
    }


def register_watcher() -> None:
    """Have the real ``airflow dags reserialize`` register the watcher's trigger.

    The dag processor registers the watchers of active, unpaused DAGs only. ``dag.test()`` of
    another test DAG may already have created this one's row, paused (the default): unpause it.
    The CLI encrypts the trigger's kwargs with this process's Fernet key, so we can read them.
    A watermark an earlier test stored for the asset (of another catalog) is removed.
    """
    import sqlalchemy as sa
    from airflow.configuration import conf
    from airflow.models.asset import AssetModel
    from airflow.models.asset_state_store import AssetStateStoreModel
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        session.execute(sa.update(DagModel).where(DagModel.dag_id == DAG_ID).values(is_paused=False))
        asset_ids = sa.select(AssetModel.id).where(AssetModel.name == ASSET_NAME).scalar_subquery()
        session.execute(sa.delete(AssetStateStoreModel).where(AssetStateStoreModel.asset_id.in_(asset_ids)))
    airflow_cli(
        "dags",
        "reserialize",
        "--bundle-name",
        "firn-tests",
        env={
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__FERNET_KEY": conf.get("core", "fernet_key"),
        },
    )


def registered_trigger() -> tuple[str, dict[str, Any], list[str]]:
    """The watcher trigger's row: classpath, decrypted kwargs, the assets it serves."""
    import sqlalchemy as sa
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    with create_session() as session:
        (row,) = session.scalars(
            sa.select(Trigger).where(Trigger.classpath == CLASSPATH, Trigger.assets.any())
        )
        return row.classpath, dict(row.kwargs), [a.name for a in row.assets]


def rebuild(classpath: str, kwargs: dict[str, Any]) -> FirnCommitTrigger:
    """The trigger as the triggerer makes it from its row (and hands it the asset's store)."""
    from airflow.sdk import Asset
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.execution_time.context import AssetStateStoreAccessors
    from airflow.serialization.decoders import smart_decode_trigger_kwargs

    trigger = import_string(classpath)(**{k: smart_decode_trigger_kwargs(v) for k, v in kwargs.items()})
    trigger.asset_state_store = AssetStateStoreAccessors(inlets=[Asset(name=ASSET_NAME, uri=ASSET_URI)])
    return trigger


@contextmanager
def execution_api_in_process() -> Iterator[None]:
    """Route ``SUPERVISOR_COMMS`` to an in-process supervisor backed by the real execution API
    and the metadata database (what ``dag.test()`` does for the triggers it runs inline)."""
    import psutil
    import structlog
    from airflow.sdk.execution_time.supervisor import (
        InProcessSupervisorComms,
        InProcessTestSupervisor,
        set_supervisor_comms,
    )

    supervisor = InProcessTestSupervisor(
        id=uuid.uuid4(),
        pid=os.getpid(),
        process=psutil.Process(),
        process_log=structlog.get_logger(logger_name="task").bind(),
        client=InProcessTestSupervisor._api_client(),
    )
    supervisor.comms = InProcessSupervisorComms(supervisor=supervisor)
    with set_supervisor_comms(supervisor.comms):
        yield


def stored_keys() -> list[str]:
    """Keys of the asset's state-store rows in the metadata database (values are encrypted)."""
    import sqlalchemy as sa
    from airflow.models.asset import AssetModel
    from airflow.models.asset_state_store import AssetStateStoreModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return list(
            session.scalars(
                sa.select(AssetStateStoreModel.key)
                .join(AssetModel, AssetModel.id == AssetStateStoreModel.asset_id)
                .where(AssetModel.name == ASSET_NAME)
            )
        )


def stored(key: str) -> Any:
    """The value under ``key``, read back through the execution API as a restarted trigger would."""
    from airflow.sdk import Asset
    from airflow.sdk.execution_time.context import AssetStateStoreAccessors

    return AssetStateStoreAccessors(inlets=[Asset(name=ASSET_NAME, uri=ASSET_URI)]).get(key)


def test_registered_watcher_keeps_its_watermark_across_restarts(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_watcher()
    classpath, kwargs, assets = registered_trigger()
    assert classpath == CLASSPATH
    assert assets == [ASSET_NAME]
    assert kwargs["table"] == "db.events"

    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    start = head(table)
    new: list[int] = []
    polls = watch_polls(monkeypatch)
    with execution_api_in_process():
        # First run: the head it finds is the starting point; one commit, one event.
        first = rebuild(classpath, kwargs)
        key = first.watermark_key
        # Nothing stored yet. (This first call also starts the in-process API, which takes
        # seconds; the trigger's own first read must not race the commit below.)
        assert stored(key) is None
        before, events = asyncio.run(
            collect_while(first, 1, 60, lambda: new.append(commit(table)), polls=polls)
        )
        assert before == []
        assert [(e["previous_snapshot_id"], e["snapshot_id"]) for e in events] == [(start, new[0])]
        assert stored_keys() == [key]
        assert stored(key) == {"snapshot_id": new[0]}

        # Down for a while: a commit lands. The restarted trigger (same kwargs, which know no
        # watermark) resumes from the stored one and reports just that commit.
        new.append(commit(table))
        # (That one event, then nothing over two more polls.)
        second = run_trigger(rebuild(classpath, kwargs), 1, polls=polls, quiet_polls=2)
        assert [(e["previous_snapshot_id"], e["snapshot_id"]) for e in second] == [(new[0], new[1])]
        assert stored(key) == {"snapshot_id": new[1]}

        # A stale kwarg loses to the stored watermark: nothing is reported twice (three polls).
        stale = rebuild(classpath, {**kwargs, "last_seen_snapshot_id": start})
        assert run_trigger(stale, 0, polls=polls, quiet_polls=3) == []
        assert stored(key) == {"snapshot_id": new[1]}


def test_several_assets_on_one_trigger_run_without_a_watermark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import Asset
    from airflow.sdk.execution_time.context import AssetStateStoreAccessors

    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    trigger = FirnCommitTrigger(table="db.events", firn_conn_id="firn_sensor_test", poll_interval=0.05)
    # Built as the triggerer builds it for a trigger that two assets' watchers share.
    trigger.asset_state_store = AssetStateStoreAccessors(
        inlets=[Asset(name="a", uri="firn://c/db/a"), Asset(name="b", uri="firn://c/db/b")]
    )
    new: list[int] = []
    _, events = asyncio.run(
        collect_while(trigger, 1, 60, lambda: new.append(commit(table)), polls=watch_polls(monkeypatch))
    )
    assert [e["snapshot_id"] for e in events] == new


def test_runs_inline_under_dag_test(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=2)
    start = head(table)
    new: list[int] = []
    writer = AfterDeferral(CLASSPATH, lambda: new.append(commit(table)))
    writer.start()
    run = load_test_dag("firn_test_sensor_commit_wait").test()
    writer.join(timeout=60)
    assert writer.error is None and writer.saw_trigger
    assert run.state == "success"
    event = xcom_return(run, "next_commit")
    assert (event["previous_snapshot_id"], event["snapshot_id"]) == (start, new[0])
    assert event["operation"] == "append"
