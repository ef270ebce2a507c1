"""The commit watcher under the real ``airflow triggerer``: each commit to the table becomes one
asset event, and a restarted triggerer resumes from the watermark in the asset's state store.

The triggerer is a subprocess on this test's metadata database; its trigger runner reaches the
execution API of the in-process API server (``airflow_api_server``) for the connection and the
state store, as it would in a deployment.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.firn_airflow.triggers.support import commit, create_table, firn_connection, head
from tests.firn_airflow.triggers.test_commit_watcher import ASSET_NAME, register_watcher, stored_keys
from tests.fixtures.airflow import AIRFLOW_BIN

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def asset_events() -> list[dict[str, Any]]:
    """Payloads of the asset events the watcher's trigger created, oldest first."""
    import sqlalchemy as sa
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        extras = session.scalars(
            sa.select(AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.name == ASSET_NAME)
            .order_by(AssetEvent.id)
        )
        return [extra["payload"] for extra in extras if extra.get("from_trigger")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@contextmanager
def triggerer(log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [str(AIRFLOW_BIN), "triggerer"],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield proc
        finally:
            # SIGTERM lets the triggerer stop its runner and give its triggers back.
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def test_one_asset_event_per_commit_and_resume_after_restart(
    airflow_api_server: str, airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.configuration import conf

    env = {
        "AIRFLOW__CORE__FERNET_KEY": conf.get("core", "fernet_key"),
        # The triggerer serves its logs on a fixed port by default; another test process may hold it.
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
    }
    register_watcher()
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    log = tmp_path / "triggerer.log"
    already = len(asset_events())
    new: list[int] = []

    with triggerer(log, env) as proc:
        # The trigger stores its starting point once it has looked at the table.
        wait_until(lambda: proc.poll() is None and bool(stored_keys()), "the watcher's first poll")
        start = head(table)
        new.append(commit(table))
        new.append(commit(table))
        wait_until(lambda: len(asset_events()) >= already + 2, "two asset events")
        time.sleep(1)  # and no more
    events = asset_events()[already:]
    assert [(e["previous_snapshot_id"], e["snapshot_id"]) for e in events] == [
        (start, new[0]),
        (new[0], new[1]),
    ]
    assert events[0]["table"] == "db.events" and events[0]["operation"] == "append"

    new.append(commit(table))  # while no triggerer runs
    with triggerer(log, env):
        wait_until(
            lambda: len(asset_events()) >= already + 3, "the asset event of the commit made while down"
        )
        time.sleep(1)
    events = asset_events()[already:]
    assert [(e["previous_snapshot_id"], e["snapshot_id"]) for e in events[2:]] == [(new[1], new[2])], (
        log.read_text()[-3000:]
    )
