"""docker-compose.yaml and the Dockerfile, checked without a Docker engine.

The compose file is validated against the Compose Specification's JSON schema (vendored in
tests/fixtures/compose_spec/) and its wiring is checked across services: published ports,
connection URIs against service names, ports, users and the bucket, volumes, health checks
behind every ``depends_on`` condition, one image for Airflow and Spark, consistent settings.
The connections are read by the real FirnHook parser, Firn's S3 FileIO and the Spark
provider's own master resolution.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.fixtures.airflow import REPO

pytestmark = pytest.mark.airflow

COMPOSE = REPO / "docker-compose.yaml"
DOCKERFILE = REPO / "Dockerfile"
SCHEMA = REPO / "tests" / "fixtures" / "compose_spec" / "compose-spec.json"
AIRFLOW_SERVICES = {
    "airflow-apiserver": "api-server",
    "airflow-scheduler": "scheduler",
    "airflow-dag-processor": "dag-processor",
    "airflow-triggerer": "triggerer",
}
SPARK_SERVICES = ("spark-master", "spark-worker-1", "spark-worker-2")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = compose["services"]
    return result


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else [str(c) for c in command]


def _published(service: dict[str, Any]) -> dict[int, int]:
    """host port -> container port."""
    out = {}
    for spec in service.get("ports", []):
        host, container = str(spec).split(":")
        out[int(host)] = int(container)
    return out


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def test_file_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # A bare "$" would be interpolated from the host's environment by compose: every literal
    # dollar in this file is escaped as "$$".
    for text in _strings(compose):
        assert not re.search(r"(?<!\$)\$(?!\$)", text.replace("$$", "")), text


def test_every_dependency_condition_can_be_met(services: dict[str, dict[str, Any]]) -> None:
    conditions = set()
    for name, service in services.items():
        for target, dep in service.get("depends_on", {}).items():
            assert target in services, f"{name} depends on unknown service {target}"
            assert target != name
            condition = dep["condition"]
            conditions.add(condition)
            if condition == "service_healthy":
                check = services[target].get("healthcheck")
                assert check and not check.get("disable") and check.get("test"), (
                    f"{target} has no healthcheck"
                )
            if condition == "service_completed_successfully":
                # A one-shot job: it must not be restarted when it exits.
                assert "restart" not in services[target], target
    assert conditions == {"service_healthy", "service_completed_successfully"}
    # The long-running Airflow components wait for the migrated database.
    for name in AIRFLOW_SERVICES:
        deps = services[name]["depends_on"]
        assert deps["airflow-init"]["condition"] == "service_completed_successfully"
        assert deps["postgres"]["condition"] == "service_healthy"
    assert (
        services["airflow-scheduler"]["depends_on"]["minio-init"]["condition"]
        == "service_completed_successfully"
    )


def test_airflow_components_local_executor_and_metadata_db(services: dict[str, dict[str, Any]]) -> None:
    pg = _env(services["postgres"])
    for name, subcommand in AIRFLOW_SERVICES.items():
        service = services[name]
        env = _env(service)
        assert _command(service) == [subcommand], name
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        db = urlsplit(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        assert (db.hostname, db.port, db.username, db.password, db.path) == (
            "postgres",
            5432,
            pg["POSTGRES_USER"],
            pg["POSTGRES_PASSWORD"],
            f"/{pg['POSTGRES_DB']}",
        )
        api = urlsplit(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
        assert (api.hostname, api.port, api.path) == ("airflow-apiserver", 8080, "/execution/")
    # One JWT secret and one Fernet key for every component (tasks' tokens are checked by the
    # api-server; connections are decrypted wherever they are read): both read from the files
    # airflow-init generates (test_secrets_are_generated_not_written_here).
    for name in (*AIRFLOW_SERVICES, "airflow-init"):
        env = _env(services[name])
        assert env["AIRFLOW__API_AUTH__JWT_SECRET_CMD"] == "cat /opt/airflow/auth/jwt.secret", name
        assert env["AIRFLOW__CORE__FERNET_KEY_CMD"] == "cat /opt/airflow/auth/fernet.key", name
        assert "airflow-auth:/opt/airflow/auth" in services[name]["volumes"], name
    scheduler = services["airflow-scheduler"]
    assert _env(scheduler)["AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK"] == "true"
    assert "8974" in " ".join(scheduler["healthcheck"]["test"])
    assert _published(services["airflow-apiserver"]) == {8080: 8080}
    assert "localhost:8080/api/v2/monitor/health" in " ".join(
        services["airflow-apiserver"]["healthcheck"]["test"]
    )


def test_ports_are_unique_and_spark_ui_is_off_8080(services: dict[str, dict[str, Any]]) -> None:
    host_ports = [port for s in services.values() for port in _published(s)]
    assert len(host_ports) == len(set(host_ports))
    master = services["spark-master"]
    command = _command(master)
    ui_port = int(command[command.index("--webui-port") + 1])
    assert _published(master) == {9090: ui_port}
    assert f"localhost:{ui_port}/" in " ".join(master["healthcheck"]["test"])
    for name in ("spark-worker-1", "spark-worker-2"):
        worker = _command(services[name])
        port = worker[worker.index("--webui-port") + 1]
        assert f"localhost:{port}/" in " ".join(services[name]["healthcheck"]["test"])
    minio = services["minio"]
    console = _command(minio)[_command(minio).index("--console-address") + 1]
    assert _published(minio) == {9000: 9000, int(console.lstrip(":")): int(console.lstrip(":"))}


def test_spark_runs_from_the_airflow_image_and_connects_in_client_mode(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    images = {services[n]["image"] for n in (*AIRFLOW_SERVICES, "airflow-init", *SPARK_SERVICES)}
    assert len(images) == 1
    # Built once: one service builds the image, every other one uses it and never pulls it.
    builders = [n for n, svc in services.items() if "build" in svc]
    assert builders == ["airflow-init"] and services["airflow-init"]["build"] == "."
    for n in (*AIRFLOW_SERVICES, *SPARK_SERVICES):
        assert services[n]["pull_policy"] == "never", n
    master = _command(services["spark-master"])
    assert master[:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    master_url = f"spark://{master[master.index('--host') + 1]}:{master[master.index('--port') + 1]}"
    for name in ("spark-worker-1", "spark-worker-2"):
        worker = _command(services[name])
        assert worker[:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
        assert worker[-1] == master_url
        assert services[name]["depends_on"]["spark-master"]["condition"] == "service_healthy"
    for name in SPARK_SERVICES:
        # The image's entrypoint would run Airflow; Spark services bypass it.
        assert services[name]["entrypoint"] == ["/usr/bin/dumb-init", "--"]
        assert _env(services[name])["SPARK_LOCAL_HOSTNAME"] == services[name]["hostname"] == name
    # Executors reach the driver, which runs in the scheduler's task processes.
    scheduler = services["airflow-scheduler"]
    assert _env(scheduler)["SPARK_LOCAL_HOSTNAME"] == scheduler["hostname"] == "airflow-scheduler"

    # The Spark provider resolves spark_default to the master above, in client mode.
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", _env(scheduler)["AIRFLOW_CONN_SPARK_DEFAULT"])
    resolved = SparkSubmitHook(conn_id="spark_default")._resolve_connection()
    assert resolved["master"] == master_url
    assert resolved["deploy_mode"] == "client"


def test_firn_connection_reaches_the_catalog_db_and_the_bucket(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    from airflow.sdk import Connection

    from firn.io.pyarrow_io import PyArrowFileIO
    from firn_airflow.hooks.connection import catalog_config

    raw = json.loads(_env(services["airflow-scheduler"])["AIRFLOW_CONN_FIRN_DEFAULT"])
    extra = raw.pop("extra")
    config = catalog_config(Connection(conn_id="firn_default", extra=json.dumps(extra), **raw))

    # Catalog database: the user and database created by postgres' init script, on the
    # postgres service, with the password from the connection's password field.
    (init,) = services["postgres"]["configs"]
    assert init["target"].startswith("/docker-entrypoint-initdb.d/")
    sql = compose["configs"][init["source"]]["content"]
    user, password = re.search(r"CREATE USER (\w+) WITH PASSWORD '([^']*)'", sql).groups()  # type: ignore[union-attr]
    database, owner = re.search(r"CREATE DATABASE (\w+) OWNER (\w+)", sql).groups()  # type: ignore[union-attr]
    url = urlsplit(config.uri)
    assert url.scheme == "postgresql+psycopg"
    assert (url.hostname, url.port, url.username, url.password, url.path) == (
        "postgres",
        5432,
        user,
        password,
        f"/{database}",
    )
    assert owner == user

    # Warehouse: the bucket minio-init creates, through MinIO's S3 API with its root keys.
    minio_env = _env(services["minio"])
    init_script = " ".join(_command(services["minio-init"]))
    alias = re.search(r"mc alias set (\S+) (\S+) (\S+) (\S+)", init_script)
    assert alias is not None
    assert alias.group(3, 4) == (minio_env["MINIO_ROOT_USER"], minio_env["MINIO_ROOT_PASSWORD"])
    bucket = re.search(rf"mc mb --ignore-existing {alias.group(1)}/(\S+)", init_script)
    assert bucket is not None
    assert urlsplit(config.warehouse or "").netloc == bucket.group(1)

    # Firn's S3 FileIO understands every property: endpoint, path style, region, keys.
    options = PyArrowFileIO(config.properties).s3_options(bucket.group(1))
    endpoint = urlsplit(alias.group(2))
    assert options["endpoint_override"] == f"{endpoint.hostname}:{endpoint.port}" == "minio:9000"
    assert options["scheme"] == "http"
    assert options["force_virtual_addressing"] is False
    assert options["region"] == "us-east-1"
    assert (options["access_key"], options["secret_key"]) == (
        minio_env["MINIO_ROOT_USER"],
        minio_env["MINIO_ROOT_PASSWORD"],
    )


def test_volumes_mount_dags_plugins_and_share_the_auth_file(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    declared = set(compose["volumes"])
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith("."):
                assert source in declared, f"{name} mounts undeclared volume {source}"
    for name in AIRFLOW_SERVICES:
        mounts = {v.split(":")[1]: v.split(":")[0] for v in services[name]["volumes"]}
        assert mounts["/opt/airflow/dags"] == "./dags"
        assert mounts["/opt/airflow/plugins"] == "./plugins"
        assert mounts["/opt/airflow/logs"] == "airflow-logs"
    assert (REPO / "dags").is_dir()
    assert (REPO / "plugins" / "firn_table_health.py").is_file()
    passwords = _env(services["airflow-apiserver"])["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
    auth_dir = str(Path(passwords).parent)
    for name in ("airflow-init", "airflow-apiserver"):
        assert f"airflow-auth:{auth_dir}" in services[name]["volumes"]
    assert passwords in " ".join(_command(services["airflow-init"]))
    users = _env(services["airflow-apiserver"])["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"]
    assert users.split(":")[0] in " ".join(_command(services["airflow-init"]))


def test_images_are_pinned_to_a_minor_version_or_a_release(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag, f"{name}: {image} has no tag"
        if image == "firn-airflow-spark:local":
            continue  # built here
        # postgres:16.9, minio's RELEASE.<timestamp>; never a bare major version or latest
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?(-[\w.]+)?|RELEASE\.[\dT\-]+Z", tag), f"{name}: {image}"


def test_secrets_are_generated_not_written_here(services: dict[str, dict[str, Any]]) -> None:
    from cryptography.fernet import Fernet

    text = COMPOSE.read_text()
    assert "FERNET_KEY:" not in text and "JWT_SECRET:" not in text  # only the _CMD forms
    script = " ".join(_command(services["airflow-init"]))
    # The generators airflow-init runs, run here: a valid Fernet key, a 64-hex-digit secret.
    generators = re.findall(r'python -c "([^"]+)" > (fernet\.key|jwt\.secret)', script)
    assert sorted(target for _, target in generators) == ["fernet.key", "jwt.secret"]
    outputs = {}
    for code, target in generators:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        outputs[target] = done.stdout.strip()
        assert f"test -s {target} ||" in script  # generated once, kept across restarts
    Fernet(outputs["fernet.key"].encode())  # raises unless a valid key
    assert re.fullmatch(r"[0-9a-f]{64}", outputs["jwt.secret"])
    assert script.index("fernet.key") < script.index("airflow db migrate")


def test_readme_states_the_compose_version_and_the_local_stack() -> None:
    readme = (REPO / "README.md").read_text()
    assert "Compose 2.23" in readme and "configs" in readme
    assert "Compose 2.23" in COMPOSE.read_text()
    assert "make cluster-test" in readme


def _dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), " ".join(rest.split())))
    return out


def test_dockerfile_builds_airflow_with_java_17_and_pinned_pyspark() -> None:
    instructions = _dockerfile_instructions()
    keywords = [k for k, _ in instructions]
    assert set(keywords) <= {"ARG", "FROM", "USER", "RUN", "ENV", "COPY"}
    args = dict(rest.split("=", 1) for k, rest in instructions if k == "ARG" and "=" in rest)
    (base,) = [rest for k, rest in instructions if k == "FROM"]
    assert base == "apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}"
    assert keywords.index("FROM") > keywords.index("ARG")  # the versions are declared before FROM
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert any(dep == "apache-airflow>=3.3,<3.4" for dep in extras["airflow"])
    assert args["AIRFLOW_VERSION"].startswith("3.3.")
    # pyspark matches pyspark-client, as the spark extra pins them.
    assert f"pyspark=={args['PYSPARK_VERSION']}" in extras["spark"]
    assert f"pyspark-client=={args['PYSPARK_VERSION']}" in extras["spark"]
    run = " ".join(rest for k, rest in instructions if k == "RUN")
    assert "openjdk-17-jre-headless" in run
    assert '"pyspark==${PYSPARK_VERSION}"' in run and '"pyspark-client==${PYSPARK_VERSION}"' in run
    assert '"apache-airflow==${AIRFLOW_VERSION}"' in run
    # Under Airflow's constraints for this Airflow and Python, minus the pyspark pair Firn pins.
    assert args["AIRFLOW_CONSTRAINTS_URL"] == (
        "https://raw.githubusercontent.com/apache/airflow/constraints-${AIRFLOW_VERSION}/"
        "constraints-${PYTHON_VERSION}.txt"
    )
    assert "ARG PYTHON_VERSION" in " ".join(f"{k} {r}" for k, r in instructions[keywords.index("FROM") :])
    assert 'curl -fsSL -o /tmp/airflow-constraints.txt "${AIRFLOW_CONSTRAINTS_URL}"' in run
    assert "sed -i -E '/^(pyspark|pyspark-client)==/d' /tmp/airflow-constraints.txt" in run
    assert "pip install --no-cache-dir --constraint /tmp/airflow-constraints.txt" in run
    assert '"/opt/firn[spark,airflow,postgres]"' in run
    env = " ".join(rest for k, rest in instructions if k == "ENV")
    assert "JAVA_HOME=/usr/lib/jvm/java-17" in env
    assert 'ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17' in run
    for copy in (rest for k, rest in instructions if k == "COPY"):
        for source in copy.split()[1:-1]:
            assert (REPO / source).exists(), source
    # Airflow's image must not run as root.
    assert [rest for k, rest in instructions if k == "USER"][-1] == "airflow"
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored
