"""The layer contracts of pyproject.toml (README "Architecture") hold, and they catch an
upward import, even one hidden inside a function."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project / "provider")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_contracts_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "provider", tmp_path / "provider", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / "provider" / "firn" / "spec" / "types.py"
    target.write_text(
        target.read_text()
        + "\n\ndef _upward() -> object:\n    from firn.catalog import sql\n\n    return sql\n"
    )
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "firn.spec is not allowed to import firn.catalog" in result.stdout
    assert "firn.spec.types -> firn.catalog.sql" in result.stdout
