"""The spark-submit job reads its catalog from ``FIRN_CATALOG_*`` environment variables when the
command line does not name it, so secrets stay off the command line; the command line wins
over the environment, which wins over the Spark conf."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn.spark import job
from tests.fixtures.spark_tables import build_table, catalog_uri, spark_catalog


def test_environment_options_map_to_catalog_options() -> None:
    options = job.environment_options(
        {
            job.ENV_CATALOG_URI: "sqlite:///c.db",
            job.ENV_CATALOG_WAREHOUSE: "/wh",
            job.ENV_CATALOG_PROPERTIES: json.dumps(
                {"s3.secret-access-key": "k", "io.delete-threads": 4, "s3.path-style-access": True}
            ),
            "UNRELATED": "x",
        }
    )
    assert options == {
        "catalog": "sqlite:///c.db",
        "warehouse": "/wh",
        "catalog.s3.secret-access-key": "k",
        "catalog.io.delete-threads": "4",
        "catalog.s3.path-style-access": "true",
    }
    assert job.environment_options({}) == {}


@pytest.mark.parametrize("raw", ['{"a": "top-secret-value"', '["top-secret-value"]', '{"a": {"b": 1}}'])
def test_bad_properties_name_the_variable_not_its_value(raw: str) -> None:
    with pytest.raises(ValidationError, match=job.ENV_CATALOG_PROPERTIES) as info:
        job.environment_options({job.ENV_CATALOG_PROPERTIES: raw})
    assert "top-secret-value" not in str(info.value)


def test_command_line_wins_over_environment(tmp_path: Path) -> None:
    build_table(spark_catalog(tmp_path), "v4")
    args = job.parse_args(
        [
            "flush",
            "--catalog",
            catalog_uri(tmp_path),
            "--table",
            "db.events",
            "--result",
            str(tmp_path / "r.json"),
            "--dry-run",
        ]
    )
    # The environment names a catalog that does not exist: the command line must win.
    env = {job.ENV_CATALOG_URI: f"sqlite:///{tmp_path / 'other' / 'missing.db'}"}
    entries, failed = job.run(args, None, environ=env)
    assert failed == 0 and entries[0]["table"] == "db.events" and entries[0]["dry_run"] is True


def test_dry_run_as_a_script_with_the_catalog_only_in_the_environment(tmp_path: Path) -> None:
    build_table(spark_catalog(tmp_path), "v4")
    env = {
        **os.environ,
        job.ENV_CATALOG_URI: catalog_uri(tmp_path),
        # Unused by a local warehouse, but passed through to the catalog like any property.
        job.ENV_CATALOG_PROPERTIES: json.dumps({"s3.secret-access-key": "env-secret-123"}),
    }
    result = tmp_path / "out.json"
    argv = ["flush", "--table", "db.events", "--options", '{"force": true}', "--result", str(result)]
    done = subprocess.run(
        [sys.executable, job.path(), *argv, "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("firn flush: 1 table(s), 1 planned, 0 failed")
    assert "env-secret-123" not in done.stdout + done.stderr
    [entry] = json.loads(result.read_text())
    assert entry["operation"] == "flush_root" and entry["move_data_files"] is True
