"""delete_confined, the one function every delete goes through (issue 18 item 3; STYLE 21): real
local files and symlinks, the in-memory FileIO, and a lint-like check that nothing else in the
library calls a FileIO's delete."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from firn.io.deletion import delete_confined, delete_quietly
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO
from firn.spec.deletion_scope import (
    KEPT_OTHER_ENTRY,
    KEPT_OUTSIDE,
    KEPT_SYMLINK,
    KEPT_UNSAFE_PATH,
    DeletionScope,
    OtherPlace,
)

PROVIDER = Path(__file__).resolve().parents[3] / "provider"


def _file(path: Path, data: bytes = b"x") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A table ``t`` with a nested table ``t/b``, an adjacent ``t2`` and an outside directory."""
    wh = tmp_path / "wh"
    out = tmp_path / "outside"
    for d in (wh / "t" / "data", wh / "t" / "b" / "data", wh / "t2" / "data", out / "sub"):
        d.mkdir(parents=True)
    return {"wh": wh, "t": wh / "t", "out": out}


def _scope(tree: dict[str, Path]) -> DeletionScope:
    t = str(tree["t"])
    return DeletionScope(owner="db.t", places=(t,), others=(OtherPlace(location=f"{t}/b", owner="db.t.b"),))


def test_deletes_inside_and_keeps_everything_else(tree: dict[str, Path]) -> None:
    t, wh, out = tree["t"], tree["wh"], tree["out"]
    own = _file(t / "data" / "a.parquet")
    own_uri = "file://" + _file(t / "metadata" / "v1.json")
    nested = _file(t / "b" / "data" / "b.parquet")
    adjacent = _file(wh / "t2" / "data" / "c.parquet")
    outside = _file(out / "d.txt")
    climbing = f"{t}/data/../../t2/data/c.parquet"
    missing = f"{t}/data/never-there.parquet"
    report = delete_confined(
        PyArrowFileIO(), _scope(tree), [own, own_uri, nested, adjacent, outside, climbing, missing, own]
    )
    assert set(report.deleted) == {own, own_uri, missing}  # a missing file counts as deleted
    kinds = {k.path: k.kind for k in report.kept}
    assert kinds == {
        nested: KEPT_OTHER_ENTRY,
        adjacent: KEPT_OUTSIDE,
        outside: KEPT_OUTSIDE,
        climbing: KEPT_UNSAFE_PATH,
    }
    assert report.failed == ()
    assert not os.path.exists(own) and not os.path.exists(own_uri[len("file://") :])
    for p in (nested, adjacent, outside):
        assert os.path.exists(p), p
    assert "deleted 3, kept 4, failed 0" in report.summary()


def test_never_follows_a_symlink(tree: dict[str, Path]) -> None:
    t, out = tree["t"], tree["out"]
    target_in_dir = _file(out / "sub" / "victim.parquet")
    target_file = _file(out / "single.parquet")
    (t / "data" / "linked").symlink_to(out / "sub", target_is_directory=True)
    (t / "data" / "link.parquet").symlink_to(out / "single.parquet")
    (t / "data" / "deep").mkdir()
    (t / "data" / "deep" / "hop").symlink_to(out, target_is_directory=True)
    through_dir = f"{t}/data/linked/victim.parquet"
    the_link = f"{t}/data/link.parquet"
    deep = f"{t}/data/deep/hop/sub/victim.parquet"
    report = delete_confined(PyArrowFileIO(), _scope(tree), [through_dir, the_link, deep])
    assert report.deleted == () and report.failed == ()
    assert {k.path for k in report.kept} == {through_dir, the_link, deep}
    assert all(k.kind == KEPT_SYMLINK and "symlink" in k.reason for k in report.kept)
    assert os.path.exists(target_in_dir) and os.path.exists(target_file)
    assert os.path.islink(the_link)  # not even the link itself is removed


def test_the_place_itself_may_be_reached_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real-warehouse" / "t"
    own = _file(real / "data" / "a.parquet")
    (tmp_path / "mounted").symlink_to(tmp_path / "real-warehouse", target_is_directory=True)
    place = str(tmp_path / "mounted" / "t")
    report = delete_confined(
        PyArrowFileIO(), DeletionScope(owner="t", places=(place,)), [f"{place}/data/a.parquet"]
    )
    assert report.deleted == (f"{place}/data/a.parquet",) and not os.path.exists(own)


def test_a_directory_is_not_deleted(tree: dict[str, Path]) -> None:
    report = delete_confined(PyArrowFileIO(), _scope(tree), [f"{tree['t']}/data"])
    assert report.deleted == () and len(report.failed) == 1 and "directory" in report.failed[0].error
    assert (tree["t"] / "data").is_dir()


def test_in_memory_file_io_is_confined_too() -> None:
    io = InMemoryFileIO()
    for p in ("memory://wh/t/data/a", "memory://wh/t2/data/b", "memory://wh/t/b/data/c"):
        io.new_output(p).write(b"x")
    scope = DeletionScope(
        owner="t", places=("memory://wh/t",), others=(OtherPlace(location="memory://wh/t/b", owner="t.b"),)
    )
    report = delete_confined(
        io, scope, ["memory://wh/t/data/a", "memory://wh/t2/data/b", "memory://wh/t/b/data/c"]
    )
    assert report.deleted == ("memory://wh/t/data/a",)
    assert (
        "memory://wh/t/data/a" not in io and "memory://wh/t2/data/b" in io and "memory://wh/t/b/data/c" in io
    )


class _Flaky(InMemoryFileIO):
    """Refuses to delete one file (a permission error on an object store, say)."""

    def delete(self, location: str) -> None:
        if location.endswith("stuck"):
            raise PermissionError(f"access denied: {location}")
        super().delete(location)

    def delete_many(self, locations: object) -> int:
        raise PermissionError("batch refused")


def test_failures_are_reported_per_file_never_raised() -> None:
    io = _Flaky()
    for p in ("memory://wh/t/a", "memory://wh/t/stuck"):
        io.new_output(p).write(b"x")
    scope = DeletionScope(owner="t", places=("memory://wh/t",))
    report = delete_confined(io, scope, ["memory://wh/t/a", "memory://wh/t/stuck"])
    assert report.deleted == ("memory://wh/t/a",)
    assert [f.path for f in report.failed] == ["memory://wh/t/stuck"] and "access denied" in report.failed[
        0
    ].error
    quiet = delete_quietly(io, scope, ["memory://wh/t/stuck"], "test")
    assert len(quiet.failed) == 1 and "memory://wh/t/stuck" in io


def test_listing_never_follows_symlinks(tree: dict[str, Path]) -> None:
    t, out = tree["t"], tree["out"]
    own = _file(t / "data" / "a.parquet")
    _file(out / "sub" / "victim.parquet")
    (t / "data" / "linked").symlink_to(out / "sub", target_is_directory=True)
    (t / "data" / "link.parquet").symlink_to(out / "sub" / "victim.parquet")
    os.mkfifo(t / "data" / "fifo")
    listed = [i.location for i in PyArrowFileIO().list_prefix(str(t))]
    assert listed == [own]
    assert [i.location for i in PyArrowFileIO().list_prefix(f"file://{t}/")] == [f"file://{own}"]
    assert list(PyArrowFileIO().list_prefix(f"{t}/nowhere")) == []


# -- the lint: nobody else deletes through a FileIO ------------------------------------------------
# Where a FileIO's delete may be called, and why. Everything else goes through delete_confined.
ALLOWED = {
    "firn/io/deletion.py": "the one confined delete function",
    "firn/io/memory.py": "the in-memory FileIO's own pyarrow filesystem adapter",
    "firn_airflow/hooks/spark_job.py": "the Spark job's result file, written by the operator itself, no table file",
}


def _delete_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, receiver) of calls ``<x>.delete_many(...)``, ``<x>.try_delete_many(...)`` and
    ``<x>.delete(...)`` where ``x``
    looks like a FileIO (its text ends in ``io``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = ast.unparse(node.func.value)
            if node.func.attr in ("delete_many", "try_delete_many") or (
                node.func.attr == "delete" and receiver.lower().endswith("io")
            ):
                found.append((node.lineno, receiver))
    return found


def test_no_module_deletes_through_a_file_io_directly() -> None:
    offenders = []
    for path in sorted(PROVIDER.rglob("*.py")):
        rel = path.relative_to(PROVIDER).as_posix()
        if rel in ALLOWED:
            continue
        for line, receiver in _delete_calls(ast.parse(path.read_text(), filename=str(path))):
            offenders.append(f"{rel}:{line}: {receiver}.delete...")
    assert offenders == [], "delete through firn.io.deletion.delete_confined instead:\n" + "\n".join(
        offenders
    )


def test_the_lint_finds_a_direct_delete() -> None:
    sample = (
        "def f(table, io):\n    table.io.delete_many(['x'])\n    io.delete('y')\n    tx.delete('id > 1')\n"
        "    table.io.try_delete_many(['z'])\n"
    )
    assert [r for _, r in _delete_calls(ast.parse(sample))] == ["table.io", "io", "table.io"]
