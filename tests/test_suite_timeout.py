"""A hung test fails the run instead of hanging it (issue 25, item 4): pytest-timeout is on
under this repository's pytest configuration, with the default ``timeout`` of pyproject.toml,
and a test's own ``@pytest.mark.timeout`` overrides it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

HANGS = """
import time

import pytest


@pytest.mark.timeout(2)
def test_hangs():
    time.sleep(600)


def test_finishes():
    assert True
"""


def test_the_default_timeout_is_configured(pytestconfig: pytest.Config) -> None:
    configured = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "timeout"
    ]
    assert int(configured) >= 300  # the slowest tests take minutes on a loaded machine
    assert float(pytestconfig.getini("timeout")) == float(configured)  # and this run uses it


def test_a_hung_test_fails_under_the_repository_configuration(tmp_path: Path) -> None:
    (tmp_path / "test_hang.py").write_text(HANGS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-q",
            str(tmp_path / "test_hang.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert "Timeout (>2.0s) from pytest-timeout" in done.stdout, done.stdout
