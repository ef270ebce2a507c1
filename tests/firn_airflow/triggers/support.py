"""Helpers shared by the sensor and trigger tests: a real SQLite Firn catalog behind an Airflow
connection, commits, a runner that pulls events off a trigger, and a writer thread that acts
once a task has deferred.

Timing (issue 25, item 4): a trigger test acts when the trigger has done something, not after
a guessed sleep. :class:`PollLog` records every table read the triggers make (all of them poll
through ``TableReader.load``), so a test can wait until the trigger has taken its starting
point, or has seen a given commit, and can let a quiet trigger make a number of polls before
concluding that it stays silent. Deadlines (30-60 s) only bound a hang.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from contextlib import aclosing, suppress
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import firn
from firn.catalog.base import Catalog
from firn.table.table import Table
from firn_airflow.triggers.reader import TableReader

CONN_ID = "firn_sensor_test"
TABLE = "db.events"


def rows(n: int = 2, *, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "kind": ["a"] * n})


def firn_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, conn_id: str = CONN_ID, *, set_env: bool = True
) -> Catalog:
    """A SQLite Firn catalog in ``tmp_path``; the Airflow connection ``conn_id`` points at it."""
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = str(tmp_path / "warehouse")
    if set_env:
        set_connection(monkeypatch, tmp_path, conn_id)
    return firn.load_catalog(uri, warehouse=warehouse)


def set_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, conn_id: str = CONN_ID) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps(
            {
                "conn_type": "firn",
                "host": f"sqlite:///{tmp_path / 'catalog.db'}",
                "extra": {"warehouse": str(tmp_path / "warehouse")},
            }
        ),
    )


def create_table(catalog: Catalog, name: str = TABLE, *, format_version: int = 2, commits: int = 1) -> Table:
    """``name`` with ``commits`` appends of one small file each."""
    namespace = name.rsplit(".", 1)[0]
    if not catalog.namespace_exists(namespace):
        catalog.create_namespace(namespace)
    table = catalog.create_table(name, rows().schema, properties={"format-version": str(format_version)})
    for i in range(commits):
        commit(table, start=i * 10)
    return table


def commit(table: Table, *, start: int = 0) -> int:
    """Append one small file; the new snapshot id. Waits a few ms so commit times differ."""
    time.sleep(0.005)
    snapshot = table.append(rows(start=start))
    assert snapshot is not None
    return snapshot.snapshot_id


def head(table: Table) -> int:
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


Load = Table | BaseException  # what one TableReader.load returned or raised


class PollLog:
    """Every table read the triggers make in this process (``TableReader.load``): the table it
    loaded or the error it raised, in order. Install it with :func:`watch_polls`."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._loads: list[Load] = []

    def record(self, outcome: Load) -> None:
        with self._changed:
            self._loads.append(outcome)
            self._changed.notify_all()

    @property
    def count(self) -> int:
        with self._changed:
            return len(self._loads)

    @property
    def loads(self) -> list[Load]:
        """The loads so far, oldest first."""
        with self._changed:
            return list(self._loads)

    def wait_for(self, predicate: Callable[[Load], bool], what: str, *, timeout: float = 60) -> Load:
        """The first load, made so far or later, for which ``predicate`` holds (blocking)."""
        found: list[Load] = []

        def seen() -> bool:
            found[:] = [x for x in self._loads if predicate(x)][:1]
            return bool(found)

        with self._changed:
            if not self._changed.wait_for(seen, timeout):
                raise AssertionError(f"no trigger poll {what} within {timeout} s ({len(self._loads)} polls)")
        return found[0]

    def wait_for_count(self, count: int, *, timeout: float = 60) -> None:
        """Block until the triggers made ``count`` loads in all."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._loads) >= count, timeout):
                raise AssertionError(f"the trigger made {len(self._loads)} polls in {timeout} s, not {count}")

    def wait_for_head(self, snapshot_id: int, *, branch: str = "main", timeout: float = 60) -> None:
        """Block until a trigger's poll saw ``snapshot_id`` as the head of ``branch``."""

        def saw(load: Load) -> bool:
            if isinstance(load, BaseException):
                return False
            ref = load.metadata.refs.get(branch)
            return ref is not None and ref.snapshot_id == snapshot_id

        self.wait_for(saw, f"saw {snapshot_id} as the head of {branch}", timeout=timeout)


def watch_polls(monkeypatch: pytest.MonkeyPatch) -> PollLog:
    """Record every ``TableReader.load`` (the real one runs) in a new :class:`PollLog`."""
    log = PollLog()
    real = TableReader.load

    def load(reader: TableReader) -> Table:
        try:
            table = real(reader)
        except BaseException as e:
            log.record(e)
            raise
        log.record(table)
        return table

    monkeypatch.setattr(TableReader, "load", load)
    return log


async def collect(
    trigger: Any,
    count: int,
    timeout: float = 30,
    *,
    polls: PollLog | None = None,
    quiet_polls: int = 0,
) -> list[dict[str, Any]]:
    """Event payloads from ``trigger.run()``: up to ``count`` of them, then (with ``polls``)
    any that arrive while the trigger makes ``quiet_polls`` more table reads; ``count=0``
    with ``quiet_polls=n`` lets a trigger that should stay silent poll ``n`` times. Gives up
    after ``timeout`` s (the caller's assertions then fail on what arrived)."""
    payloads: list[dict[str, Any]] = []
    async with aclosing(trigger.run()) as events:

        async def pump() -> None:
            async for event in events:
                payloads.append(event.payload)

        task = asyncio.ensure_future(pump())
        try:
            deadline = time.monotonic() + timeout
            while len(payloads) < count and not task.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if polls is not None and quiet_polls:
                # The read that completes the n-th further poll; the polls before it were
                # processed whole (a trigger finishes one poll before it starts the next).
                target = polls.count + quiet_polls + 1
                while polls.count < target and not task.done() and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return payloads


def run_trigger(
    trigger: Any, count: int, timeout: float = 30, *, polls: PollLog | None = None, quiet_polls: int = 0
) -> list[dict[str, Any]]:
    """:func:`collect` on a fresh event loop."""
    return asyncio.run(collect(trigger, count, timeout, polls=polls, quiet_polls=quiet_polls))


async def collect_while(
    trigger: Any,
    expected: int,
    timeout: float,
    action: Callable[[], None],
    *,
    polls: PollLog,
    quiet_polls: int = 2,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the trigger; once its first poll is over (its second table read has completed, so
    it has taken its starting point) note the events so far and run ``action`` in a thread;
    then wait (``timeout`` s at most) for ``expected`` events in all, and for any extra one
    while the trigger polls ``quiet_polls`` more times. Returns ``(events before the action,
    all events)``."""
    payloads: list[dict[str, Any]] = []
    async with aclosing(trigger.run()) as events:

        async def pump() -> None:
            async for event in events:
                payloads.append(event.payload)

        async def until(done: Callable[[], bool], deadline: float) -> None:
            while not done() and not task.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)

        task = asyncio.ensure_future(pump())
        try:
            first = polls.count
            await until(lambda: polls.count >= first + 2, time.monotonic() + timeout)
            assert polls.count >= first + 2 or task.done(), f"the trigger did not poll twice in {timeout} s"
            before = list(payloads)
            await asyncio.to_thread(action)
            deadline = time.monotonic() + timeout
            await until(lambda: len(payloads) >= expected, deadline)
            target = polls.count + quiet_polls + 1
            await until(lambda: polls.count >= target, deadline)
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return before, payloads


class AfterDeferral(threading.Thread):
    """Runs ``action`` once a trigger of ``classpath`` was registered in Airflow's database
    (after this object was made), i.e. once the task deferred; ``dag.test()`` then runs that
    trigger inline."""

    def __init__(self, classpath: str, action: Callable[[], None], *, timeout: float = 120) -> None:
        super().__init__(name="firn-after-deferral", daemon=True)
        # Import the ORM models here, in the test's thread: two threads importing them at once
        # deadlock on the import lock.
        from airflow.models import import_all_models

        import_all_models()
        self.since = dt.datetime.now(dt.UTC)
        self.classpath = classpath
        self.action = action
        self.timeout = timeout
        self.saw_trigger = False
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline and not self.saw_trigger:
                self.saw_trigger = self.classpath in trigger_classpaths(since=self.since)
                if not self.saw_trigger:
                    time.sleep(0.05)
            if self.saw_trigger:
                self.action()
        except BaseException as e:  # reported by the test through .error
            self.error = e


def trigger_classpaths(*, since: dt.datetime) -> list[str]:
    """Classpaths of the triggers registered in Airflow's database since ``since``."""
    import sqlalchemy as sa
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    with create_session() as session:
        return list(session.scalars(sa.select(Trigger.classpath).where(Trigger.created_date >= since)))


def xcom_return(run: Any, task_id: str) -> Any:
    """The return value (XCom) of ``task_id`` in the DAG run ``run``."""
    import sqlalchemy as sa
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        value = session.scalar(
            sa.select(XComModel.value).where(
                XComModel.dag_id == run.dag_id,
                XComModel.run_id == run.run_id,
                XComModel.task_id == task_id,
                XComModel.key == "return_value",
            )
        )
    return json.loads(value) if isinstance(value, str) else value


def task_states(run: Any) -> dict[str, str | None]:
    import sqlalchemy as sa
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.scalars(
            sa.select(TaskInstance).where(
                TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
            )
        )
        return {ti.task_id: (str(ti.state.value) if ti.state is not None else None) for ti in tis}


def assert_round_trip(trigger: Any) -> dict[str, Any]:
    """``serialize()`` names the trigger's own class, its kwargs survive Airflow's encoding (as
    a deferring task and the triggerer use it), and rebuild an identical trigger. The kwargs."""
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.serde import deserialize, serialize

    classpath, kwargs = trigger.serialize()
    assert import_string(classpath) is type(trigger)
    encoded = serialize(kwargs)
    decoded = deserialize(json.loads(json.dumps(encoded)))
    assert decoded == kwargs
    rebuilt = type(trigger)(**decoded)
    assert rebuilt.serialize() == (classpath, kwargs)
    return kwargs


def wait_for_running(dag_id: str, task_id: str, *, timeout: float = 120) -> bool:
    """Wait until ``task_id`` of ``dag_id`` is running (call from a thread beside ``dag.test()``)."""
    import sqlalchemy as sa
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with create_session() as session:
            state = session.scalar(
                sa.select(TaskInstance.state).where(
                    TaskInstance.dag_id == dag_id,
                    TaskInstance.task_id == task_id,
                    TaskInstance.state == "running",
                )
            )
        if state is not None:
            return True
        time.sleep(0.05)
    return False
