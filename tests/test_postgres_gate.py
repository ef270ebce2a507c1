"""The Postgres tests never vanish from a green run (issue 25, item 1).

A pytest run of its own (a subprocess, on a small test file that needs Postgres the way the
suite's Postgres tests do) against a URL where nothing listens: locally the test is skipped
and the terminal summary has a "PostgreSQL tests skipped" section naming the file, the count
and the reason; under ``CI=true`` the same test fails with that reason, so CI goes red.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.spark import free_port  # a port nothing listens on once closed

REPO = Path(__file__).resolve().parents[1]

NEEDS_POSTGRES = """
from tests.fixtures.catalogs import require_postgres


def test_needs_postgres(postgres_catalog):
    raise AssertionError("must not run: the server is unreachable")


def test_calls_require_postgres():
    require_postgres()
    raise AssertionError("must not run: the server is unreachable")


def test_without_postgres():
    assert True
"""


def _run(tmp_path: Path, *, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_pg.py").write_text(NEEDS_POSTGRES)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "provider"), env.get("PYTHONPATH", "")])
    env["FIRN_TEST_POSTGRES_URL"] = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(tmp_path / "pytest.ini"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "tests.fixtures.catalogs",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-q",
            str(tmp_path / "test_pg.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_locally_postgres_skips_are_named_in_the_summary(tmp_path: Path) -> None:
    done = _run(tmp_path, ci=None)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "1 passed, 2 skipped" in out, out
    section = out[out.index("PostgreSQL tests skipped") :]
    assert "2 PostgreSQL test(s) did NOT run (PostgreSQL not reachable at postgresql+psycopg://" in section
    assert "under CI=true these tests fail instead of skipping" in section
    assert "  2  test_pg.py" in section


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_postgres_fails_the_run(tmp_path: Path, ci: str) -> None:
    done = _run(tmp_path, ci=ci)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 1 passed, 1 error" in out, out
    assert out.count("CI=true and PostgreSQL not reachable at postgresql+psycopg://") >= 2
    assert "must not run" not in out  # failed on the missing server, not by running the test body
    assert "PostgreSQL tests skipped" not in out


def test_ci_false_is_a_local_run(tmp_path: Path) -> None:
    done = _run(tmp_path, ci="false")
    assert done.returncode == 0 and "1 passed, 2 skipped" in done.stdout, done.stdout
