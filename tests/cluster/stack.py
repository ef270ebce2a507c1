"""docker-compose.yaml's stack as local processes, for ``make cluster-test`` (no Docker engine).

:func:`compose_stack` reads ``docker-compose.yaml`` and runs its services the way the file
wires them, with every host rewritten to 127.0.0.1:

* **postgres**: the PostgreSQL on 127.0.0.1:5432 (``FIRN_TEST_POSTGRES_URL``); the compose's
  catalog init script (``configs: firn-catalog-db``) and Airflow's metadata database are
  created there, their database and role names suffixed per run so runs never share state;
* **minio** / **minio-init**: moto's S3 server (``tests/fixtures/s3.py``) with the bucket
  ``minio-init`` makes, created the same way (a ``PUT`` of the bucket with the root keys);
* **spark-master** / **spark-worker**: a standalone master and one worker from pip pyspark's
  ``spark-class`` (the ``spark_cluster`` fixture);
* **airflow-init**: its own command, run with ``bash`` (Fernet key and JWT secret generated,
  ``airflow db migrate``, the admin password file), then **airflow-apiserver**
  (``airflow api-server``: the execution API the LocalExecutor's tasks talk to).

:meth:`ComposeStack.airflow` runs the ``airflow`` CLI with the compose's Airflow environment
(``x-airflow-common`` and the scheduler's own: LocalExecutor, Postgres metadata, the
``firn_default`` and ``spark_default`` connection JSON), rewritten. The Airflow metadata URL's
driver becomes psycopg (v3) and its async twin psycopg's, which this venv has (the image has
psycopg2 and asyncpg).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
import yaml

from tests.fixtures.catalogs import POSTGRES_URL
from tests.fixtures.s3 import S3Server, running_s3_server
from tests.fixtures.spark import SparkCluster, free_port, spark_env

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yaml"
VENV_BIN = Path(sys.executable).parent
AUTH_DIR_IN_IMAGE = "/opt/airflow/auth"


def compose_file() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def _env(service: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (service.get("environment") or {}).items()}


def _command(service: Mapping[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


@dataclass
class Databases:
    """The per-run databases and roles created in the local PostgreSQL."""

    admin_url: str
    created: list[tuple[str, str]] = field(default_factory=list)  # (database, role)

    def create(self, database: str, role: str, password: str) -> None:
        engine = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                literal = password.replace("'", "''")  # DDL takes no bind parameters
                conn.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD '{literal}'"))
                conn.execute(sa.text(f"CREATE DATABASE {database} OWNER {role}"))
        finally:
            engine.dispose()
        self.created.append((database, role))

    def drop_all(self) -> None:
        engine = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                for database, role in reversed(self.created):
                    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
                    conn.execute(sa.text(f"DROP ROLE IF EXISTS {role}"))
        finally:
            engine.dispose()


def _local_url(url: str, *, database: str, role: str, driver: str | None = None) -> str:
    """A database URL of the compose file on 127.0.0.1:5432, with this run's names."""
    parsed = sa.make_url(url)
    local = sa.make_url(POSTGRES_URL)
    parsed = parsed.set(host=local.host, port=local.port, database=database, username=role)
    if driver:
        parsed = parsed.set(drivername=driver)
    return parsed.render_as_string(hide_password=False)


@dataclass
class ComposeStack:
    """The running stack: the rewritten Airflow environment and what the tests check against."""

    env: dict[str, str]
    firn_connection: dict[str, Any]
    spark_connection: dict[str, Any]
    s3: S3Server
    bucket: str
    spark: SparkCluster
    api_url: str
    logs: Path

    def airflow(
        self, *args: str, timeout: float = 1800, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The ``airflow`` CLI of this venv in the stack's Airflow environment."""
        done = subprocess.run(
            [str(VENV_BIN / "airflow"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"airflow {' '.join(args)} exited {done.returncode}\n"
                f"stdout:\n{done.stdout[-6000:]}\nstderr:\n{done.stderr[-6000:]}"
            )
        return done


def _rewrite_connections(
    env: dict[str, str], *, catalog_db: str, catalog_role: str, s3_endpoint: str, master_port: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The compose's ``firn_default`` and ``spark_default`` JSON with hosts on 127.0.0.1."""
    firn_conn = json.loads(env["AIRFLOW_CONN_FIRN_DEFAULT"])
    firn_conn["host"] = _local_url(firn_conn["host"], database=catalog_db, role=catalog_role)
    props = firn_conn["extra"]["properties"]
    minio = urlsplit(props["s3.endpoint"])
    props["s3.endpoint"] = s3_endpoint
    assert minio.hostname == "minio", minio  # the file's endpoint is the one being replaced
    spark_conn = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert urlsplit(spark_conn["host"]).hostname == "spark-master", spark_conn
    spark_conn["host"], spark_conn["port"] = "spark://127.0.0.1", master_port
    return firn_conn, spark_conn


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise TimeoutError(f"{url} did not answer within {timeout} s:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)
            return


@contextlib.contextmanager
def compose_stack(root: Path, spark: SparkCluster) -> Iterator[ComposeStack]:
    """Start the stack (see the module docstring) under ``root``; stop it afterwards."""
    compose = compose_file()
    services = compose["services"]
    run = uuid.uuid4().hex[:10]
    logs = root / "logs"
    logs.mkdir(parents=True)
    dbs = Databases(POSTGRES_URL)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        # postgres: the catalog database of the init script, and Airflow's metadata database.
        (init,) = services["postgres"]["configs"]
        sql = compose["configs"][init["source"]]["content"]
        role, password = re.search(r"CREATE USER (\w+) WITH PASSWORD '([^']*)'", sql).groups()  # type: ignore[union-attr]
        database = re.search(r"CREATE DATABASE (\w+) OWNER", sql).group(1)  # type: ignore[union-attr]
        catalog_db, catalog_role = f"{database}_{run}", f"{role}_{run}"
        dbs.create(catalog_db, catalog_role, password)
        pg = _env(services["postgres"])
        airflow_db, airflow_role = f"{pg['POSTGRES_DB']}_{run}", f"{pg['POSTGRES_USER']}_{run}"
        dbs.create(airflow_db, airflow_role, pg["POSTGRES_PASSWORD"])

        # minio, minio-init: moto, and the bucket `mc mb` creates.
        s3_ctx = running_s3_server(logs / "moto.log")
        s3 = s3_ctx.__enter__()
        try:
            init_script = " ".join(_command(services["minio-init"]))
            bucket = re.search(r"mc mb --ignore-existing \S+?/(\S+)", init_script).group(1)  # type: ignore[union-attr]
            s3.create_bucket(bucket)

            # Airflow: the scheduler's environment (x-airflow-common plus its own), rewritten.
            scheduler = _env(services["airflow-scheduler"])
            api_port = free_port()
            firn_conn, spark_conn = _rewrite_connections(
                scheduler,
                catalog_db=catalog_db,
                catalog_role=catalog_role,
                s3_endpoint=s3.endpoint,
                master_port=int(spark.master_url.rsplit(":", 1)[1]),
            )
            auth = root / "auth"
            auth.mkdir()
            home = root / "airflow-home"
            home.mkdir()
            # Nothing of the test process's own Airflow settings (tests/fixtures/airflow.py).
            env = {k: v for k, v in spark_env().items() if not k.startswith("AIRFLOW")}
            for key, value in scheduler.items():
                env[key] = value.replace(AUTH_DIR_IN_IMAGE, str(auth))
            env.update(
                {
                    "AIRFLOW_HOME": str(home),
                    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
                    "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": _local_url(
                        scheduler["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"],
                        database=airflow_db,
                        role=airflow_role,
                        driver="postgresql+psycopg",
                    ),
                    # Airflow derives an asyncpg URL, which the image has and this venv has not.
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": _local_url(
                        scheduler["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"],
                        database=airflow_db,
                        role=airflow_role,
                        driver="postgresql+psycopg_async",
                    ),
                    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
                    "AIRFLOW_CONN_FIRN_DEFAULT": json.dumps(firn_conn),
                    "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(spark_conn),
                    "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
                    "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                }
            )
            assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"

            # airflow-init, as the compose runs it (keys, migration, the admin password file).
            script = " ".join(_command(services["airflow-init"])[2:]).replace(AUTH_DIR_IN_IMAGE, str(auth))
            done = subprocess.run(
                ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=900, check=False
            )
            assert done.returncode == 0, f"airflow-init failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"

            # airflow-apiserver (the execution API for the LocalExecutor's tasks).
            log = logs / "api-server.log"
            with log.open("wb") as out:
                api = subprocess.Popen(
                    [str(VENV_BIN / "airflow"), "api-server", "--host", "127.0.0.1", "--port", str(api_port)],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            procs.append(api)
            api_url = f"http://127.0.0.1:{api_port}"
            _wait_http(f"{api_url}/api/v2/monitor/health", api, log)
            yield ComposeStack(env, firn_conn, spark_conn, s3, bucket, spark, api_url, logs)
        finally:
            s3_ctx.__exit__(None, None, None)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        dbs.drop_all()


__all__ = ["ComposeStack", "compose_file", "compose_stack"]
