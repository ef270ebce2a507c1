"""Shipping Firn: the ``--py-files`` zip imports on an interpreter without Firn, and a packed
virtualenv relocates with ``firn`` inside it (its editable install left out)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import firn.spark


def test_package_zip_holds_the_firn_package(tmp_path: Path) -> None:
    zip_path = firn.spark.package(tmp_path)
    assert zip_path == tmp_path / "firn.zip"
    names = zipfile.ZipFile(zip_path).namelist()
    assert {"firn/__init__.py", "firn/py.typed", "firn/spark/job.py", "firn/core/transaction.py"} <= set(
        names
    )
    assert not any("__pycache__" in n or n.startswith("firn_airflow") for n in names)
    again = firn.spark.package(tmp_path / "other.zip")
    assert again.read_bytes() == zip_path.read_bytes()  # reproducible


def test_package_zip_imports_where_firn_is_not_installed(tmp_path: Path, bare_python: str) -> None:
    zip_path = firn.spark.package(tmp_path)
    done = subprocess.run(
        [bare_python, "-c", "import firn, firn.spark.job; print(firn.__file__, firn.spark.job.path())"],
        env={**os.environ, "PYTHONPATH": str(zip_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{zip_path}/firn/__init__.py")


def test_packed_venv_relocates_with_firn_inside(tmp_path: Path) -> None:
    source = tmp_path / "src-env"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(source)], check=True)
    site = next((source / "lib").glob("python3*/site-packages"))
    (site / "__editable__.airflow_provider_firn-0.1.0.pth").write_text("/nowhere/provider\n")
    (site / "firn").mkdir()
    (site / "firn" / "stale.py").write_text("raise RuntimeError('an old copy')\n")
    archive = firn.spark.pack_venv(tmp_path / "env.tar.gz", venv=source)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert not any("__editable__" in n or n.endswith("firn/stale.py") for n in names)
        assert any(n.endswith("site-packages/firn/spark/job.py") for n in names)
        target = tmp_path / "unpacked" / "env"
        target.mkdir(parents=True)
        tar.extractall(target, filter="tar")
    done = subprocess.run(
        [
            str(target / "bin" / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('firn').origin)",
        ],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(target / "lib"))


def test_pack_venv_refuses_a_directory_that_is_not_a_venv(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(FileNotFoundError, match="not a virtualenv"):
        firn.spark.pack_venv(tmp_path / "x.tar.gz", venv=tmp_path)
