"""The ``spark`` runner: one spark-submit of ``firn.spark.job`` per operation and table, through
the Spark provider's ``SparkSubmitHook``.

* **Connection.** The Spark connection must exist: ``SparkSubmitHook`` quietly submits to YARN
  when it cannot find it, so a missing connection is refused here first
  (:class:`~firn_airflow.operators.errors.SparkConnectionError`), as is a ``spark-submit``
  that is not on ``PATH``.
* **Secrets.** The catalog (URI, warehouse, properties such as ``s3.secret-access-key``) goes
  to the driver through its environment (``FIRN_CATALOG_*``, read by the job), never on the
  command line, which any user of the machine can see and spark-submit's log line shows. In
  client and local deploy mode the hook merges ``env_vars`` into the spark-submit process's
  environment, which the driver inherits. In cluster mode the hook turns ``env_vars`` into
  ``--conf`` arguments (YARN, Kubernetes) or refuses them (standalone), so a connection with
  secrets is refused there with an explanation.
* **Result.** The job writes its JSON result to ``--result``: a temporary local file in client
  and local mode (the driver runs in this worker), or a file under ``result_dir`` (a FileIO URI
  both sides reach, e.g. ``s3://bucket/tmp``) -- cluster mode requires one. The table's entry
  is the operation's ``result.to_dict()``; an entry with an ``error`` becomes one task error of
  the same Firn error class (``LeaseHeld`` included, so the operator's lease policy applies).
* **Kill.** :meth:`SparkMaintenanceJob.kill` runs the hook's ``on_kill`` (kills spark-submit,
  and the application on YARN or Kubernetes) and then the processes spark-submit started (the
  PySpark driver is a child of the spark-submit JVM and outlives a killed parent otherwise).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from firn import errors as firn_errors
from firn.errors import FirnError, LeaseHeld
from firn.maintenance import registry
from firn_airflow.operators.errors import SparkConnectionError, SparkJobFailed

if TYPE_CHECKING:
    import logging

    from firn_airflow.hooks.connection import FirnConnectionConfig

DEFAULT_SPARK_CONN_ID = "spark_default"
DEFAULT_SPARK_BINARY = "spark-submit"
# The catalog property that names the catalog (firn.spark.config.CATALOG_NAME_PROPERTY).
_CATALOG_NAME_PROPERTY = "name"


@dataclass(frozen=True, kw_only=True)
class SparkSettings:
    """How to submit: the Spark connection and ``SparkSubmitHook``'s resource options."""

    conn_id: str = DEFAULT_SPARK_CONN_ID
    conf: Mapping[str, Any] = field(default_factory=dict)
    py_files: str | None = None
    archives: str | None = None
    executor_cores: int | None = None
    executor_memory: str | None = None
    num_executors: int | None = None
    total_executor_cores: int | None = None
    driver_memory: str | None = None
    env_vars: Mapping[str, str] = field(default_factory=dict)
    result_dir: str | None = None


def driver_environment(config: FirnConnectionConfig, extra_properties: Mapping[str, str]) -> dict[str, str]:
    """The ``FIRN_CATALOG_*`` variables that give the job's driver the connection's catalog."""
    from firn.spark.config import ENV_CATALOG_PROPERTIES, ENV_CATALOG_URI, ENV_CATALOG_WAREHOUSE

    properties = {**config.properties, **extra_properties, _CATALOG_NAME_PROPERTY: config.name}
    env = {
        ENV_CATALOG_URI: config.uri,
        ENV_CATALOG_PROPERTIES: json.dumps(properties, sort_keys=True, separators=(",", ":")),
    }
    if config.warehouse:
        env[ENV_CATALOG_WAREHOUSE] = config.warehouse
    return env


def job_arguments(operation: str, table: str, options: Mapping[str, Any], result: str) -> list[str]:
    """The job's command-line arguments: no catalog, so no secret, on the command line."""
    return [
        operation,
        "--table",
        table,
        "--options",
        json.dumps(dict(options), sort_keys=True, separators=(",", ":")),
        "--result",
        result,
    ]


def entry_error(entry: Mapping[str, Any], method: str, table: str) -> FirnError:
    """The task error for a job result entry that reports a failure: the same Firn error class
    when it is one (``LeaseHeld``, ``NoSuchTable``, ``ValidationError``, ...)."""
    error = entry.get("error") or {}
    kind = str(error.get("type") or "Error")
    message = str(error.get("message") or "no message")
    text = f"{method} on {table} failed in the Spark job: {message}"
    cls = getattr(firn_errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, FirnError):
        if cls is LeaseHeld:
            return LeaseHeld(message)  # already names the table and the holder
        with contextlib.suppress(TypeError):
            return cls(text)
    return SparkJobFailed(f"{method} on {table} failed in the Spark job: {kind}: {message}")


class SparkMaintenanceJob:
    """Submits ``firn.spark.job`` for one operation on one table and reads its result back.

    :param settings: the Spark connection and resources.
    :param catalog: the Firn connection's catalog settings (passed to the driver's environment).
    :param extra_properties: catalog properties added for this run (the lease owner label).
    """

    def __init__(
        self,
        settings: SparkSettings,
        catalog: FirnConnectionConfig,
        *,
        extra_properties: Mapping[str, str] | None = None,
        log: logging.Logger | Any = None,
    ) -> None:
        self.settings = settings
        self.catalog = catalog
        self.extra_properties = dict(extra_properties or {})
        self.log = log
        self.killed = False
        self._hook: Any = None

    # -- checks before anything is submitted -----------------------------------------------------
    def _connection_extra(self) -> dict[str, Any]:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        conn_id = self.settings.conn_id
        try:
            conn = BaseHook.get_connection(conn_id)
        except AirflowNotFoundException:
            raise SparkConnectionError(
                f"Spark connection {conn_id!r} is not defined (SparkSubmitHook would silently submit "
                f"to YARN instead): add it, e.g. AIRFLOW_CONN_{conn_id.upper()}="
                '\'{"conn_type": "spark", "host": "local[*]"}\', or pass spark_conn_id'
            ) from None
        extra: dict[str, Any] = dict(conn.extra_dejson or {})
        return extra

    def check(self) -> dict[str, Any]:
        """Refuse what cannot work before a JVM starts; returns the connection's extra."""
        extra = self._connection_extra()
        deploy_mode = str(
            extra.get("deploy-mode") or self.settings.conf.get("spark.submit.deployMode") or "client"
        )
        if deploy_mode == "cluster":
            if self.catalog.secrets:
                raise SparkConnectionError(
                    f"Spark connection {self.settings.conn_id!r} uses cluster deploy mode, where "
                    "SparkSubmitHook passes env_vars as --conf arguments on the command line; Firn "
                    f"connection {self.catalog.conn_id!r} holds secrets, which must not go there. Use "
                    "client deploy mode, or give the cluster the catalog settings (spark.firn.catalog.*) "
                    "through its own secret mechanism and a Firn connection without secrets"
                )
            if not self.settings.result_dir:
                raise SparkConnectionError(
                    f"Spark connection {self.settings.conn_id!r} uses cluster deploy mode: the driver "
                    "runs elsewhere, so pass result_dir, a location both the driver and this worker "
                    "reach (e.g. s3://bucket/tmp/firn-results)"
                )
        binary = str(extra.get("spark-binary") or DEFAULT_SPARK_BINARY)
        path = self.settings.env_vars.get("PATH") or os.environ.get("PATH", "")
        if shutil.which(binary, path=path) is None:
            raise SparkConnectionError(
                f"{binary} is not on PATH (Spark connection {self.settings.conn_id!r}): install "
                "pyspark (or Spark) in the worker and put its bin directory on PATH"
            )
        return extra

    # -- running ---------------------------------------------------------------------------------
    def run(self, method: str, table: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Submit the job for ``method`` (an operation of ``firn.maintenance.operations``, e.g.
        ``rewrite_data_files``) on ``table`` and return the table's result entry; raise the
        entry's error, or :class:`SparkJobFailed`. (On v2 tables the job itself runs
        ``rewrite_position_delete_files`` for ``rewrite_deletion_vectors``.)"""
        from airflow.sdk.exceptions import AirflowException

        from firn.spark.job import path as job_path

        self.check()
        workdir: str | None = None
        if self.settings.result_dir:
            result = f"{self.settings.result_dir.rstrip('/')}/firn-{registry.spec(method).short_name}-{uuid.uuid4().hex}.json"
        else:
            workdir = tempfile.mkdtemp(prefix="firn-spark-result-")
            result = str(Path(workdir) / "result.json")
        self._hook = self.submit_hook(method, table, options, result)
        failure: str | None = None
        try:
            try:
                self._hook.submit(application=job_path())
            except AirflowException as e:
                failure = str(e)
            entries = self._read(result)
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
        return self._entry(entries, method, table, failure)

    def submit_hook(self, method: str, table: str, options: Mapping[str, Any], result: str) -> Any:
        """The ``SparkSubmitHook`` that submits the job: the catalog in ``env_vars`` (with the
        user's), the job's arguments without it."""
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        short = registry.spec(method).short_name
        s = self.settings
        return SparkSubmitHook(
            conf={str(k): v for k, v in s.conf.items()},
            conn_id=s.conn_id,
            py_files=s.py_files,
            archives=s.archives,
            executor_cores=s.executor_cores,
            executor_memory=s.executor_memory,
            num_executors=s.num_executors,
            total_executor_cores=s.total_executor_cores,
            driver_memory=s.driver_memory,
            name=f"firn-{short}-{table}",
            application_args=job_arguments(short, table, options, result),
            env_vars={
                **{str(k): str(v) for k, v in s.env_vars.items()},
                **driver_environment(self.catalog, self.extra_properties),
            },
        )

    def _read(self, location: str) -> list[Any] | None:
        """The job's result file, or None when the job wrote none (it failed before)."""
        try:
            if "://" in location:
                from firn.io.pyarrow_io import load_file_io

                io = load_file_io(dict(self.catalog.properties), location)
                source = io.new_input(location)
                if not source.exists():
                    return None
                data = source.read()
                with contextlib.suppress(Exception):  # a leftover file is harmless
                    io.delete(location)
            else:
                data = Path(location).read_bytes()
        except FileNotFoundError:
            return None
        try:
            entries = json.loads(data)
        except ValueError:
            raise SparkJobFailed(f"the Spark job's result file {location} is not JSON") from None
        if not isinstance(entries, list):
            raise SparkJobFailed(f"the Spark job's result file {location} does not hold a list of entries")
        return entries

    def _entry(
        self, entries: list[Any] | None, method: str, table: str, failure: str | None
    ) -> dict[str, Any]:
        if self.killed:
            raise SparkJobFailed(f"{method} on {table}: the Spark job was killed")
        found = [e for e in entries or [] if isinstance(e, dict)]
        # One --table, one entry (its name as the catalog spells it, perhaps not as given).
        mine = [e for e in found if e.get("table") == table] or (found if len(found) == 1 else [])
        if mine:
            entry: dict[str, Any] = mine[0]
            if "error" in entry:
                raise entry_error(entry, method, table)
            if failure is None:
                return entry
        if failure is not None:
            raise SparkJobFailed(f"{method} on {table}: spark-submit failed. {failure}")
        raise SparkJobFailed(f"{method} on {table}: the Spark job's result has no entry for the table")

    def kill(self) -> None:
        """Stop the job: the hook's ``on_kill``, then whatever spark-submit started."""
        hook = self._hook
        if hook is None:
            return
        self.killed = True
        children: list[Any] = []
        # The hook keeps its spark-submit process here; the PySpark driver is its child.
        process = getattr(hook, "_submit_sp", None)
        if process is not None and process.poll() is None:
            import psutil  # type: ignore[import-untyped, unused-ignore]

            with contextlib.suppress(psutil.Error):
                children = psutil.Process(process.pid).children(recursive=True)
        hook.on_kill()
        for child in children:
            with contextlib.suppress(Exception):
                child.kill()


__all__ = [
    "DEFAULT_SPARK_CONN_ID",
    "SparkMaintenanceJob",
    "SparkSettings",
    "driver_environment",
    "entry_error",
    "job_arguments",
]
