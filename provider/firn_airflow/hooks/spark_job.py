"""The one spark-submit path of the provider: ``execution="spark"`` submits ``firn.spark.job``
once per operation and table through the Spark provider's public ``SparkSubmitHook(...).submit``,
and :class:`~firn_airflow.operators.spark_submit.FirnSparkSubmitOperator` runs any application
with the same checks (:func:`preflight`).

* **Connection.** The Spark connection must exist: ``SparkSubmitHook`` quietly submits to YARN
  when it cannot find it, so a missing connection is refused here first
  (:class:`~firn_airflow.errors.SparkConnectionError`), as is a ``spark-submit``
  that is not on ``PATH``. :func:`preflight` decides from the connection as the hook resolved
  it (master, deploy mode, binary), so the checks and the submission agree.
* **OpenLineage.** When the ``[openlineage] spark_inject_parent_job_info`` /
  ``spark_inject_transport_info`` options are on, the job's Spark conf gets the parent job and
  transport information, as ``SparkSubmitOperator`` gives its applications.
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
* **Quiet logs.** The job's driver JVM gets Firn's Log4j 2 configuration at WARN
  (``spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=...``, before the user's own
  options, so a ``-Dlog4j2.configurationFile`` of theirs wins), and its Python processes
  (driver and workers, ``PYTHONWARNINGS``, ``spark.executorEnv.PYTHONWARNINGS``) ignore
  third-party deprecation warnings: the task log holds spark-submit's command, warnings and
  errors, and the job's one result line last (:func:`quiet_conf`). The file is this worker's:
  in cluster deploy mode the driver runs elsewhere and Spark's own configuration applies.
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

from firn.errors import FirnError, LeaseHeld, ValidationError, error_class
from firn.maintenance import registry
from firn_airflow.errors import SparkConnectionError, SparkJobFailed

if TYPE_CHECKING:
    import logging

    from airflow.sdk import Context

    from firn_airflow.hooks.connection import FirnConnectionConfig

DEFAULT_SPARK_CONN_ID = "spark_default"
DEFAULT_SPARK_BINARY = "spark-submit"
# The catalog property that names the catalog (firn.spark.config.CATALOG_NAME_PROPERTY).
_CATALOG_NAME_PROPERTY = "name"


# The Firn errors a job result entry may name (``{"error": {"type": ...}}``), by class name.
@dataclass(frozen=True, kw_only=True)
class SparkSettings:
    """How to submit: the Spark connection and ``SparkSubmitHook``'s resource options. The
    operators take it as one ``spark`` argument (a ``SparkSettings`` or a dict of its fields,
    templated)."""

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


def job_operation(method: str) -> str:
    """The Spark job's operation (the registry's short name) that runs ``method``."""
    spec = registry.spec(method)
    if spec.short_name is None:
        raise ValidationError(
            f"{spec.name} has no Spark job operation of its own (it runs as another operation's "
            "fallback); run that operation instead"
        )
    return spec.short_name


def entry_error(entry: Mapping[str, Any], method: str, table: str) -> FirnError:
    """The task error for a job result entry that reports a failure: the same Firn error class
    when it is one (``LeaseHeld``, ``NoSuchTable``, ``ValidationError``, ...)."""
    error = entry.get("error") or {}
    kind = str(error.get("type") or "Error")
    message = str(error.get("message") or "no message")
    text = f"{method} on {table} failed in the Spark job: {message}"
    cls = error_class(kind)
    if cls is LeaseHeld:
        return LeaseHeld(message)  # already names the table and the holder
    if cls is not None:
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
        self._result: str | None = None  # this submission's result path: on its command lines

    # -- checks before anything is submitted -----------------------------------------------------
    def check(self) -> None:
        """Refuse what cannot work before a JVM starts (see :func:`preflight`)."""
        require_spark_connection(self.settings.conn_id)
        preflight(
            self._new_hook(),
            spark_conn_id=self.settings.conn_id,
            firn=self.catalog,
            conf=self.settings.conf,
            env_vars=self.settings.env_vars,
            result_dir=self.settings.result_dir,
            needs_result_in_cluster_mode=True,
        )

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, method: str, table: str, options: Mapping[str, Any], context: Context | None = None
    ) -> dict[str, Any]:
        """Submit the job for ``method`` (an operation of ``firn.maintenance.operations``, e.g.
        ``rewrite_data_files``) on ``table`` and return the table's result entry; raise the
        entry's error, or :class:`SparkJobFailed`. (On v2 tables the job itself runs
        ``rewrite_position_delete_files`` for ``rewrite_deletion_vectors``.) With the task's
        ``context``, OpenLineage's Spark properties are added when configured."""
        from airflow.sdk.exceptions import AirflowException

        from firn.spark.job import path as job_path

        self.check()
        workdir: str | None = None
        if self.settings.result_dir:
            result = (
                f"{self.settings.result_dir.rstrip('/')}/firn-{job_operation(method)}-{uuid.uuid4().hex}.json"
            )
        else:
            workdir = tempfile.mkdtemp(prefix="firn-spark-result-")
            result = str(Path(workdir) / "result.json")
        self._result = result
        self._hook = self.submit_hook(method, table, options, result, context)
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

    def _new_hook(self, **kwargs: Any) -> Any:
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        s = self.settings
        return SparkSubmitHook(conn_id=s.conn_id, conf={str(k): v for k, v in s.conf.items()}, **kwargs)

    def submit_hook(
        self,
        method: str,
        table: str,
        options: Mapping[str, Any],
        result: str,
        context: Context | None = None,
    ) -> Any:
        """The ``SparkSubmitHook`` that submits the job: the catalog in ``env_vars`` (with the
        user's), the job's arguments without it, OpenLineage's properties in the conf."""
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        from firn.spark.job import PYTHON_WORKER_WARNINGS

        short = job_operation(method)
        s = self.settings
        return SparkSubmitHook(
            conf=openlineage_conf(quiet_conf({str(k): v for k, v in s.conf.items()}), context),
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
                PYTHONWARNINGS: PYTHON_WORKER_WARNINGS,
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
        import psutil  # type: ignore[import-untyped, unused-ignore]

        # spark-submit is a child of this task process and the PySpark driver its child: both
        # are among this process's descendants and carry this submission's unique result path
        # in their arguments (read before on_kill, which ends spark-submit). Only those and
        # what they started are killed: never another Spark process of this task process (a
        # local SparkSession, another job).
        ours: dict[int, Any] = {}
        with contextlib.suppress(psutil.Error):
            for process in psutil.Process().children(recursive=True):
                if self._result is not None and _runs_job(process, self._result):
                    ours[process.pid] = process
                    with contextlib.suppress(psutil.Error):
                        ours.update((c.pid, c) for c in process.children(recursive=True))
        hook.on_kill()
        for process in ours.values():
            with contextlib.suppress(Exception):
                process.kill()


def _runs_job(process: Any, result: str) -> bool:
    """Whether ``process`` runs the submission whose result path is ``result``."""
    try:
        return any(result in arg for arg in process.cmdline())
    except Exception:  # gone already, or not ours to read
        return False


def require_spark_connection(conn_id: str) -> None:
    """Refuse a Spark connection that does not exist: ``SparkSubmitHook`` would silently
    submit to YARN instead."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise SparkConnectionError(
            f"Spark connection {conn_id!r} is not defined (SparkSubmitHook would silently submit "
            f"to YARN instead): add it, e.g. AIRFLOW_CONN_{conn_id.upper()}="
            '\'{"conn_type": "spark", "host": "local[*]"}\', or pass its id in the Spark settings'
        ) from None


def preflight(
    hook: Any,
    *,
    spark_conn_id: str,
    firn: FirnConnectionConfig,
    conf: Mapping[str, Any] | None,
    env_vars: Mapping[str, str] | None,
    result_dir: str | None = None,
    needs_result_in_cluster_mode: bool = False,
) -> None:
    """The checks before a submission, from the connection as ``hook`` (a ``SparkSubmitHook``)
    resolved it: cluster deploy mode would put the Firn connection's secrets on the command
    line (the hook passes ``env_vars`` as ``--conf`` there), and needs a ``result_dir`` both
    sides reach for a maintenance job; ``spark-submit`` must be on ``PATH``."""
    # The provider exposes the resolved connection only as this attribute; it is read here
    # alone, so every Firn submission decides from the same settings the hook submits with.
    connection: Mapping[str, Any] = hook._connection
    mode = connection.get("deploy_mode") or (conf or {}).get("spark.submit.deployMode") or "client"
    if mode == "cluster":
        if firn.secrets:
            raise SparkConnectionError(
                f"Spark connection {spark_conn_id!r} uses cluster deploy mode, where SparkSubmitHook "
                "passes env_vars as --conf arguments on the command line; Firn connection "
                f"{firn.conn_id!r} holds secrets, which must not go there. Use client deploy mode, "
                "or a Firn connection without secrets and give the cluster the catalog settings "
                "(spark.firn.catalog.*) through its own secret mechanism"
            )
        if needs_result_in_cluster_mode and not result_dir:
            raise SparkConnectionError(
                f"Spark connection {spark_conn_id!r} uses cluster deploy mode: the driver runs "
                "elsewhere, so pass result_dir, a location both the driver and this worker reach "
                "(e.g. s3://bucket/tmp/firn-results)"
            )
    binary = str(connection.get("spark_binary") or DEFAULT_SPARK_BINARY)
    path = (env_vars or {}).get("PATH") or os.environ.get("PATH", "")
    if shutil.which(binary, path=path) is None:
        raise SparkConnectionError(
            f"{binary} is not on PATH (Spark connection {spark_conn_id!r}): install pyspark "
            "(or Spark) in the worker and put its bin directory on PATH"
        )


PYTHONWARNINGS = "PYTHONWARNINGS"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_PYTHONWARNINGS = "spark.executorEnv.PYTHONWARNINGS"


def quiet_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """``conf`` with the job's quiet logging (see the module docstring): Firn's Log4j 2 file
    first in the driver's Java options (the user's options after it, so theirs win), and
    ``PYTHONWARNINGS`` for the Python workers unless the conf sets it."""
    from firn.spark.job import PYTHON_WORKER_WARNINGS, log_config

    out = dict(conf)
    ours = f"-Dlog4j2.configurationFile=file:{log_config()}"
    theirs = str(out.get(DRIVER_JAVA_OPTIONS) or "").strip()
    out[DRIVER_JAVA_OPTIONS] = f"{ours} {theirs}".strip()
    out.setdefault(EXECUTOR_PYTHONWARNINGS, PYTHON_WORKER_WARNINGS)
    return out


def openlineage_conf(conf: dict[str, Any], context: Context | None) -> dict[str, Any]:
    """``conf`` with OpenLineage's parent job and transport properties when the
    ``[openlineage] spark_inject_*`` options are on (what ``SparkSubmitOperator`` adds)."""
    if context is None:
        return conf
    from airflow.providers.common.compat.openlineage.utils.spark import (
        inject_parent_job_information_into_spark_properties,
        inject_transport_information_into_spark_properties,
    )
    from airflow.providers.common.compat.sdk import conf as airflow_conf

    if airflow_conf.getboolean("openlineage", "spark_inject_parent_job_info", fallback=False):
        conf = inject_parent_job_information_into_spark_properties(conf, context)
    if airflow_conf.getboolean("openlineage", "spark_inject_transport_info", fallback=False):
        conf = inject_transport_information_into_spark_properties(conf, context)
    return conf


__all__ = [
    "DEFAULT_SPARK_CONN_ID",
    "SparkMaintenanceJob",
    "SparkSettings",
    "driver_environment",
    "entry_error",
    "job_arguments",
    "job_operation",
    "openlineage_conf",
    "preflight",
    "quiet_conf",
    "require_spark_connection",
]
