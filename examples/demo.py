"""``make demo``: the main job — the ingest and maintenance DAGs, run by Airflow on Spark.

What it does, on the embedded defaults (a SQLite catalog and a local warehouse in
``./warehouse``, Airflow's metadata in SQLite under ``./.airflow``, Spark ``local[2]``):

1. creates the table ``demo.events`` (format V4) with maintenance thresholds scaled down to a
   demo-sized table (the defaults are for production tables of thousands of files), writes
   ``dags/`` to Airflow's metadata DB and unpauses ``firn_compact_after_ingest``;
2. runs the ingest DAG ``firn_ingest_events`` several times through ``dag.test()`` (real
   logical dates, nothing backdated): each run submits a PySpark job (``spark-submit``) that
   appends small batches through the ``firn`` data source and retracts some events with a
   merge-on-read delete. Its outlet event on the table's asset queues a run of
   ``firn_compact_after_ingest``: the scheduler's own asset logic creates that run (the demo
   prints which ingest run's event it consumed) and the demo runs its task -- at once, except
   after the last ingest, where it runs after the root flush (step 4) that it would otherwise
   pre-empt. After the first and the last ingest, the sensor-triggered pipeline
   ``firn_downstream_on_commit`` runs as its ``AssetWatcher`` would start it: a PySpark job
   folds the commits since its last run into the aggregate ``demo.events_by_kind``, exactly
   once, and the demo prints that table next to the aggregate recomputed from all of
   ``demo.events`` (they must be equal);
3. prints the table's ``health()`` and what ``recommend()`` would run;
4. runs ``firn_root_flush_on_growth``: its deferrable sensor compares the root's data files with
   the table's ``commit.root.max-data-files`` (8), fires, and the flush runs on Spark; then the
   compaction the last ingest queued;
5. runs the maintenance DAG ``firn_nightly_maintenance`` through ``dag.test()`` (every table of
   the namespace; the operations ``recommend()`` asks for), printing each task's state;
6. prints a before/after table (snapshots, data files, small files, DVs, root entries,
   planning and full-scan time, rows) around steps 4 and 5, checks that the table's rows are
   identical, and says where the warehouse is and how to see it in the Airflow UI
   (``make airflow``), where every run shows its real duration.

Re-running starts over: the demo table and the demo's Airflow database are recreated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
NAMESPACE = "demo"
TABLE = f"{NAMESPACE}.events"
DOWNSTREAM = f"{NAMESPACE}.events_by_kind"
FIRN_CONN_ID = "firn_default"
SPARK_CONN_ID = "spark_default"

# The demo table stays small (thousands of rows), so the thresholds at which recommend()
# asks for maintenance are scaled down with it; every key is a documented table property
# (README "Maintenance"), the defaults are in parentheses.
DEMO_TABLE_PROPERTIES = {
    "write.delete.mode": "merge-on-read",
    "maintenance.compact.min-small-files": "8",  # (100)
    "maintenance.rewrite-dvs.min-delete-ratio": "0.01",  # (0.1)
    "maintenance.expire.max-snapshots": "5",  # (1000)
    "commit.root.max-data-files": "8",  # (200)
    "commit.root.max-delete-vectors": "8",  # (200)
}


@dataclass(frozen=True)
class Paths:
    """Where the demo keeps its state."""

    warehouse: Path
    airflow_home: Path

    @property
    def catalog_uri(self) -> str:
        return f"sqlite:///{self.warehouse / 'catalog.db'}"


def airflow_environment(paths: Paths) -> dict[str, str]:
    """The environment Airflow (and the spark-submit it starts) runs in: this repository's
    ``dags/`` and ``plugins/``, a SQLite metadata DB, and the two connections the DAGs use."""
    firn_conn = {"conn_type": "firn", "host": paths.catalog_uri, "extra": {"warehouse": str(paths.warehouse)}}
    spark_conn = {"conn_type": "spark", "host": "local[2]", "extra": {"deploy-mode": "client"}}
    return {
        "AIRFLOW_HOME": str(paths.airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{paths.airflow_home / 'airflow.db'}",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW_CONN_FIRN_DEFAULT": json.dumps(firn_conn),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(spark_conn),
        # spark-submit comes from pip's pyspark in this venv; its workers run this interpreter.
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def reset_airflow_db(paths: Paths, env: dict[str, str]) -> None:
    """A fresh, migrated metadata database (the real ``airflow db migrate``)."""
    paths.airflow_home.mkdir(parents=True, exist_ok=True)
    (paths.airflow_home / "airflow.db").unlink(missing_ok=True)
    subprocess.run(
        [str(VENV_BIN / "airflow"), "db", "migrate"],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    )


def create_table(paths: Paths) -> None:
    """(Re)create ``demo.events`` empty, with the demo's maintenance thresholds."""
    import firn
    from firn.errors import NotFound

    catalog = firn.load_catalog(paths.catalog_uri, warehouse=str(paths.warehouse))
    try:
        if not catalog.namespace_exists(NAMESPACE):
            catalog.create_namespace(NAMESPACE)
        for name in (TABLE, DOWNSTREAM):
            with suppress(NotFound):
                catalog.drop_table(name, purge=True)
        sys.path.insert(0, str(REPO / "dags" / "jobs"))
        try:
            from ingest_events import PARTITION_SPEC, SCHEMA
        finally:
            sys.path.pop(0)
        catalog.create_table(TABLE, SCHEMA, partition_spec=PARTITION_SPEC, properties=DEMO_TABLE_PROPERTIES)
    finally:
        catalog.close()


# -- measuring the table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """The table as a user sees it: metadata counts, planning and scan times, its rows."""

    snapshots: int
    data_files: int
    small_files: int
    deletion_vectors: int
    root_entries: int | None
    planning_ms: float
    scan_ms: float
    rows: int
    fingerprint: Any  # the rows sorted by event_id (a pyarrow Table)


def _median_ms(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(paths: Paths) -> Measurement:
    """Health counts, planning and full-scan times (medians of 3) and the rows."""
    import firn
    from firn.manifests.cache import clear_caches

    catalog = firn.load_catalog(paths.catalog_uri, warehouse=str(paths.warehouse))
    try:
        table = catalog.load_table(TABLE)
        health = table.health()

        def plan() -> object:
            clear_caches()
            return table.scan().plan_files()

        def scan() -> object:
            clear_caches()
            return table.scan().to_arrow()

        rows = table.scan().to_arrow().sort_by("event_id")
        return Measurement(
            snapshots=health.snapshots,
            data_files=health.data_files,
            small_files=health.small_files,
            deletion_vectors=health.deletion_vectors,
            root_entries=health.root_entries,
            planning_ms=_median_ms(plan),
            scan_ms=_median_ms(scan),
            rows=rows.num_rows,
            fingerprint=rows,
        )
    finally:
        catalog.close()


def comparison(before: Measurement, after: Measurement) -> str:
    """The before/after table, one metric per row."""

    def fmt(value: object) -> str:
        if value is None:
            return "-"
        return f"{value:,.1f} ms" if isinstance(value, float) else f"{value:,}"

    rows = [
        ("snapshots", before.snapshots, after.snapshots),
        ("data files", before.data_files, after.data_files),
        ("small files", before.small_files, after.small_files),
        ("deletion vectors", before.deletion_vectors, after.deletion_vectors),
        ("root entries", before.root_entries, after.root_entries),
        ("planning time", before.planning_ms, after.planning_ms),
        ("full-scan time", before.scan_ms, after.scan_ms),
        ("rows", before.rows, after.rows),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"  {'':<{width}}  {'before':>12}  {'after':>12}"]
    lines += [f"  {name:<{width}}  {fmt(b):>12}  {fmt(a):>12}" for name, b, a in rows]
    return "\n".join(lines)


# -- running DAGs ---------------------------------------------------------------------------------


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """dag.test() logs every task's output to stdout; the demo prints its own summary."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def run_dag(
    dag_id: str, logical_date: datetime, conf: dict[str, Any] | None, verbose: bool
) -> list[tuple[str, str]]:
    """Run ``dag_id`` from ``dags/`` once through ``dag.test()``; (task, state) of every task
    instance, mapped ones as ``task[index]``. Raises when the run did not succeed."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.session import create_session

    # Airflow installs its own warning filters on import: silence its dependencies' deprecation
    # notices (pathspec's, for .airflowignore) again here.
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    bag = DagBag(dag_folder=str(REPO / "dags"))
    if bag.import_errors:
        raise RuntimeError(f"DAG import errors: {bag.import_errors}")
    dag = bag.get_dag(dag_id)
    if dag is None:
        raise RuntimeError(f"no DAG {dag_id!r} in {REPO / 'dags'}")
    if verbose:
        run = dag.test(logical_date=logical_date, run_conf=conf)
    else:
        with _quiet_stdout():
            run = dag.test(logical_date=logical_date, run_conf=conf)
    order = {task.task_id: i for i, task in enumerate(dag.topological_sort())}
    with create_session() as session:
        tis = sorted(
            run.get_task_instances(session=session), key=lambda ti: (order.get(ti.task_id, 0), ti.map_index)
        )
        states = [
            (ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""), str(ti.state)) for ti in tis
        ]
        state = str(run.state)
    if state != "success":
        raise RuntimeError(f"{dag_id} run ended {state}: {states}")
    return states


def sync_dags_and_unpause(dag_ids: tuple[str, ...]) -> None:
    """Write ``dags/`` to the metadata DB (what the DAG processor does) and unpause ``dag_ids``:
    an asset event queues a run only for DAGs that are serialised and unpaused when it lands."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    manager = DagBundlesManager()
    with create_session() as session:
        manager.sync_bundles_to_db(session=session)
    for bundle in manager.get_all_dag_bundles():
        if not bundle.is_initialized:
            bundle.initialize()
        bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
        sync_bag_to_db(bag, bundle.name, bundle.version)
    with create_session() as session:
        for dag_id in dag_ids:
            model = session.get(DagModel, dag_id)
            if model is None:
                raise RuntimeError(f"DAG {dag_id!r} was not serialised from {REPO / 'dags'}")
            model.is_paused = False


@dataclass(frozen=True)
class QueuedRun:
    """An asset-triggered run the scheduler's asset logic created, and the events it consumed."""

    run_id: str
    consumed: list[tuple[str, str | None, str | None]]  # (asset uri, source dag, source run)


def create_asset_triggered_run(dag_id: str) -> QueuedRun | None:
    """What the scheduler does with the asset events queued for ``dag_id``: its own asset logic
    (``DagModel.dags_needing_dagruns``, ``SchedulerJobRunner._create_dag_runs_asset_triggered``)
    creates the queued ASSET_TRIGGERED run that consumes them. None when no event queued one."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dag import DagModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunType
    from sqlalchemy import select

    with create_session() as session:
        due, _ = DagModel.dags_needing_dagruns(session)
        models = [m for m in due if m.dag_id == dag_id]
        if not models:
            return None
        SchedulerJobRunner(job=Job(), executors=[])._create_dag_runs_asset_triggered(
            dag_models=models, session=session
        )
    with create_session() as session:
        run = session.scalars(
            select(DagRun)
            .where(DagRun.dag_id == dag_id, DagRun.run_type == DagRunType.ASSET_TRIGGERED)
            .where(DagRun.state == DagRunState.QUEUED)
            .order_by(DagRun.run_after.desc())
        ).first()
        if run is None:
            return None
        return QueuedRun(
            run.run_id, [(e.asset.uri, e.source_dag_id, e.source_run_id) for e in run.consumed_asset_events]
        )


def run_queued(dag_id: str, run_id: str, verbose: bool) -> list[tuple[str, str]]:
    """Run a queued run's tasks in this process, with the minimal scheduling loop of
    ``dag.test()`` (update the run, run what became schedulable); (task, state) of each task.
    Raises when the run did not succeed."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.dagrun import DagRun
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.sdk.definitions.dag import _run_task
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, TaskInstanceState
    from sqlalchemy import select

    dag = DagBag(dag_folder=str(REPO / "dags")).get_dag(dag_id)
    if dag is None:
        raise RuntimeError(f"no DAG {dag_id!r} in {REPO / 'dags'}")
    with create_session() as session, nullcontext() if verbose else _quiet_stdout():
        run = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)).one()
        serialized = SerializedDagModel.get(dag_id=dag_id, session=session)
        if serialized is None:
            raise RuntimeError(f"DAG {dag_id!r} is not in the metadata DB")
        run.dag = serialized.dag
        run.state = DagRunState.RUNNING
        run.start_date = datetime.now(UTC)
        session.commit()
        while run.state == DagRunState.RUNNING:
            session.expire_all()
            schedulable, _ = run.update_state(session=session)
            for ti in schedulable:
                ti.try_number += 1
                ti.state = TaskInstanceState.SCHEDULED
            session.commit()
            for ti in run.get_task_instances(session=session):
                if ti.state == TaskInstanceState.SCHEDULED:
                    _run_task(ti=ti, task=dag.task_dict[ti.task_id], run_triggerer=True)
        states = [
            (ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""), str(ti.state))
            for ti in run.get_task_instances(session=session)
        ]
        state = str(run.state)
    if state != "success":
        raise RuntimeError(f"{dag_id} run {run_id} ended {state}: {states}")
    return states


def print_compaction(queued: QueuedRun, states: list[tuple[str, str]], seconds: float) -> None:
    print(
        f"  firn_compact_after_ingest {queued.run_id}: {', '.join(f'{t} {s}' for t, s in states)} ({seconds:.1f} s)"
    )


def print_states(dag_id: str, states: list[tuple[str, str]]) -> None:
    print(f"  {dag_id}")
    for task_id, state in states:
        print(f"    {task_id:<48} {state}")


def downstream_check(paths: Paths) -> bool:
    """Print the downstream aggregate next to a full recomputation from the source; equal?"""
    import firn

    sys.path.insert(0, str(REPO / "dags" / "jobs"))
    try:
        from aggregate_events import recompute
    finally:
        sys.path.pop(0)
    from firn.table.downstream import recorded_source_snapshot

    catalog = firn.load_catalog(paths.catalog_uri, warehouse=str(paths.warehouse))
    try:
        source, target = catalog.load_table(TABLE), catalog.load_table(DOWNSTREAM)
        order = [("kind", "ascending"), ("region", "ascending")]
        got = target.scan().to_arrow().sort_by(order)
        want = recompute(source.scan().to_arrow()).sort_by(order)
        head = source.current_snapshot()
        recorded = recorded_source_snapshot(target, TABLE)
    finally:
        catalog.close()
    print(f"  {DOWNSTREAM} records {TABLE} up to snapshot {recorded} (head {head and head.snapshot_id})")
    print(
        f"    {'kind':<6} {'region':<6} {'events':>7} {'amount':>12}   | recomputed {'events':>7} {'amount':>12}"
    )
    full = {(r["kind"], r["region"]): r for r in want.to_pylist()}
    for r in got.to_pylist():
        w = full.get((r["kind"], r["region"]), {"events": 0, "amount_cents": 0})
        print(
            f"    {r['kind']!s:<6} {r['region']!s:<6} {r['events']:>7,} {r['amount_cents'] / 100:>12,.2f}"
            f"   | {'':>10} {w['events']:>7,} {w['amount_cents'] / 100:>12,.2f}"
        )
    equal = got.equals(want)
    print(f"  Downstream equals the full recomputation: {'yes' if equal else 'NO'}")
    return equal


# -- the job --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="ingest DAG runs (default 4)")
    parser.add_argument("--warehouse", type=Path, default=REPO / "warehouse")
    parser.add_argument("--airflow-home", type=Path, default=REPO / ".airflow")
    parser.add_argument("--verbose", action="store_true", help="show the DAG runs' task logs")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    paths = Paths(args.warehouse.resolve(), args.airflow_home.resolve())
    started = time.monotonic()
    demo_start = datetime.now(UTC).replace(microsecond=0)

    # Airflow's own modules warn about deprecations of their dependencies; not the demo's concern.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    env = airflow_environment(paths)
    os.environ.update(env)  # before Airflow is first imported: it reads its settings once
    paths.warehouse.mkdir(parents=True, exist_ok=True)
    print(f"Airflow metadata DB: {paths.airflow_home / 'airflow.db'} (migrating)")
    reset_airflow_db(paths, env)
    create_table(paths)
    print(f"Table {TABLE} (format V4) in {paths.catalog_uri}")

    # Every DAG is in the metadata DB before the first ingest, and the compaction DAG is unpaused:
    # the ingest's asset event then queues its run, as with the real scheduler.
    sync_dags_and_unpause(("firn_compact_after_ingest",))
    print(f"Demo started at {demo_start.isoformat()} (every DAG run below starts after it, at the real time)")

    print(f"\n1. Ingest: {args.runs} runs of firn_ingest_events (spark-submit, local[2])")
    last_compaction: QueuedRun | None = None
    for i in range(args.runs):
        t0 = time.monotonic()
        states = run_dag("firn_ingest_events", datetime.now(UTC), None, args.verbose)
        print(f"  run {i + 1}: {', '.join(f'{t} {s}' for t, s in states)} ({time.monotonic() - t0:.0f} s)")
        # The ingest's outlet event on demo.events queued a run of firn_compact_after_ingest; the
        # scheduler's asset logic creates it.
        queued = create_asset_triggered_run("firn_compact_after_ingest")
        if queued is None:
            print(
                "\nERROR: the ingest's asset event queued no run of firn_compact_after_ingest",
                file=sys.stderr,
            )
            return 1
        sources = ", ".join(f"{dag} {run} on {uri}" for uri, dag, run in queued.consumed)
        print(f"  firn_compact_after_ingest {queued.run_id} queued by the asset event of {sources}")
        if i < args.runs - 1:
            t0 = time.monotonic()
            print_compaction(
                queued,
                run_queued("firn_compact_after_ingest", queued.run_id, args.verbose),
                time.monotonic() - t0,
            )
        else:
            last_compaction = queued  # runs after the root flush (below), which it would undo
        if i in (0, args.runs - 1):
            # What the AssetWatcher on demo.events would start after these commits.
            t0 = time.monotonic()
            states = run_dag("firn_downstream_on_commit", datetime.now(UTC), None, args.verbose)
            print(
                f"  firn_downstream_on_commit: {', '.join(f'{t} {s}' for t, s in states)}"
                f" ({time.monotonic() - t0:.0f} s)"
            )
            if not downstream_check(paths):
                print(f"\nERROR: {DOWNSTREAM} differs from the recomputation", file=sys.stderr)
                return 1

    import firn

    catalog = firn.load_catalog(paths.catalog_uri, warehouse=str(paths.warehouse))
    table = catalog.load_table(TABLE)
    print("\n2. Health and recommendations")
    from firn.maintenance.present import estimate_sentence, health_rows, options_text

    for label, value in health_rows(table.health()):
        print(f"  {label:<24} {value}")
    root_files, root_limit = (
        table.health().root_data_files,
        table.properties.get("commit.root.max-data-files"),
    )
    for rec in table.maintenance.recommend():
        print(f"  -> {rec.operation}: {rec.reason}")
        print(f"     table.maintenance.{rec.operation}({options_text(rec.options, 'python')})")
        print(f"     gain: {estimate_sentence(rec.estimate)}")
    catalog.close()

    before = measure(paths)
    print(
        "\n3. Root flush: firn_root_flush_on_growth (the sensor compares the root's data files with the"
        " table's commit.root.max-data-files, 8 here; the flush runs on Spark)"
    )
    if root_files is None or root_limit is None or root_files < int(root_limit):
        # The sensor would wait (deferred) for growth that no further ingest brings.
        print(f"\nERROR: the root holds {root_files} data files, below {root_limit}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    states = run_dag("firn_root_flush_on_growth", datetime.now(UTC), None, args.verbose)
    print_states("firn_root_flush_on_growth", states)
    print(f"  ({time.monotonic() - t0:.0f} s)")

    # The compaction the last ingest queued: it runs after the flush, since it rewrites the
    # root's small files into one (in a deployment the two would race; here they take turns).
    assert last_compaction is not None  # --runs >= 1
    print("\n4. The compaction the last ingest's asset event queued")
    t0 = time.monotonic()
    states = run_queued("firn_compact_after_ingest", last_compaction.run_id, args.verbose)
    print_compaction(last_compaction, states, time.monotonic() - t0)

    print(
        "\n5. Maintenance: firn_nightly_maintenance (namespace demo; steps that rewrite data on Spark, "
        "metadata-only steps in the worker)"
    )
    t0 = time.monotonic()
    states = run_dag(
        "firn_nightly_maintenance",
        datetime.now(UTC).replace(microsecond=0),
        {"namespace": NAMESPACE, "spark_min_bytes": 0, "orphans_delete": False},
        args.verbose,
    )
    print_states("firn_nightly_maintenance", states)
    print(f"  ({time.monotonic() - t0:.0f} s)")
    after = measure(paths)

    print("\n6. Before and after")
    print(comparison(before, after))
    if not before.fingerprint.equals(after.fingerprint):
        print("\nERROR: the table's rows changed during maintenance", file=sys.stderr)
        return 1
    print(f"\n  Rows identical before and after: {after.rows:,} rows")
    print(f"\nWarehouse: {paths.warehouse} (catalog {paths.catalog_uri})")
    print("Health page: run `make airflow`, open http://localhost:8080 and choose 'Firn table health'")
    print(f"Demo finished in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
