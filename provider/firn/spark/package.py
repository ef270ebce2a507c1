"""Shipping Firn to Spark executors: a zip for ``--py-files``, or a packed virtualenv for
``--archives``.

On a cluster the driver and executors import ``firn`` (data source readers and writers, work
unit functions). Two ways to get it there:

* ``--py-files <firn.spark.package()>``: a zip of the ``firn`` package. Spark puts it on the
  Python path of the driver (client mode) and of every executor. Firn's dependencies
  (pyarrow, fastavro, pyroaring, ...) must already be installed on the nodes.
* ``--archives <firn.spark.pack_venv(...)>#env --conf spark.pyspark.python=./env/bin/python``:
  a virtualenv with Firn and its dependencies, unpacked by Spark in each executor's working
  directory. ``venv-pack`` is not used (not available here); :func:`pack_venv` tars a
  virtualenv made with ``python -m venv`` and copies the ``firn`` package into it (replacing
  an editable install, whose path would not exist on the nodes). A virtualenv is relocatable
  for imports but its ``bin/python`` links to the base interpreter by absolute path, so every
  node needs that interpreter at the same path (same image), and console scripts in ``bin/``
  keep absolute shebangs (Spark does not use them).
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import firn

# Fixed timestamps make the zip byte-identical for identical sources (cache-friendly uploads).
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def _package_files() -> list[tuple[Path, str]]:
    root = Path(firn.__file__).resolve().parent
    files = []
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        if path.suffix in (".py", ".typed"):
            files.append((path, "firn/" + path.relative_to(root).as_posix()))
    return files


def package(dest: str | os.PathLike[str] | None = None) -> Path:
    """Build ``firn.zip`` for ``spark-submit --py-files``; returns its path.

    ``dest`` is a directory (the zip is ``dest/firn.zip``) or a path ending in ``.zip``;
    default the current directory."""
    target = Path(dest) if dest is not None else Path.cwd()
    if target.suffix != ".zip":
        target.mkdir(parents=True, exist_ok=True)
        target = target / "firn.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path, name in _package_files():
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    tmp.replace(target)
    return target


def _site_packages(venv: Path) -> str:
    candidates = sorted((venv / "lib").glob("python3*/site-packages"))
    if not candidates:
        raise FileNotFoundError(f"{venv} has no lib/python3*/site-packages: not a virtualenv?")
    return candidates[0].relative_to(venv).as_posix()


def _is_editable_firn(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.startswith("__editable__") and "firn" in base


def pack_venv(dest: str | os.PathLike[str], *, venv: str | os.PathLike[str] | None = None) -> Path:
    """Pack the virtualenv ``venv`` (default: the running one) as ``dest`` (a ``.tar.gz``) for
    ``spark-submit --archives dest#env``, with the ``firn`` package copied into its
    site-packages (an editable install of Firn is left out). Caches (``__pycache__``) are
    skipped. See the module docstring for what the nodes need."""
    root = Path(venv if venv is not None else sys.prefix).resolve()
    if not (root / "pyvenv.cfg").exists():
        raise FileNotFoundError(f"{root} is not a virtualenv (no pyvenv.cfg)")
    site = _site_packages(root)
    target = Path(dest)
    target.parent.mkdir(parents=True, exist_ok=True)

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = info.name.split("/")
        if "__pycache__" in parts or _is_editable_firn(info.name):
            return None
        depth = len(site.split("/"))
        if len(parts) > depth and "/".join(parts[:depth]) == site and parts[depth] == "firn":
            return None  # replaced by the package added below
        return info

    with tarfile.open(target, "w:gz") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name, filter=keep)
        for path, name in _package_files():
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{site}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return target


__all__ = ["pack_venv", "package"]
