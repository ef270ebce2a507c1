"""V4 planned tasks are views on the columnar plan: they read, compare, copy and pickle as the
plain ``FileScanTask`` they stand for, decode a chunk once, and are safe across threads."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import firn.core.v4.planning as planning
from firn.core.planning import FileScanTask
from firn.expressions import AlwaysTrue

from .support import Labels, commit_append, commit_change, data_files, dv_for, new_table


def _table_with_dv(tmp_path: Path) -> Any:
    t, lb = new_table(tmp_path), Labels()
    files = data_files(t, lb, [f"D{i}" for i in range(7)])
    commit_append(t, files)
    commit_change(t, add_deletes=[dv_for(t, lb, files[3], [0], "DV")])
    return t


def _eager(plan: planning.PlannedTasks) -> list[FileScanTask]:
    return plan._materialize(0, len(plan))


def test_views_read_as_the_eager_tasks(tmp_path: Path) -> None:
    t = _table_with_dv(tmp_path)
    plan = t.scan().plan_files()
    assert isinstance(plan, planning.PlannedTasks)
    views = list(plan)
    eager = _eager(plan)
    assert len(views) == len(eager) == 7
    for v, e in zip(views, eager):
        assert isinstance(v, FileScanTask) and type(e) is FileScanTask
        assert (v.file, v.data_sequence_number, v.delete_files, v.residual, v.origin) == (
            e.file,
            e.data_sequence_number,
            e.delete_files,
            e.residual,
            e.origin,
        )
        assert v.file_path == e.file_path and v.record_count == e.record_count
        assert v == e and e == v and repr(v) == repr(e)
    with_dv = [v for v in views if v.delete_files]
    assert len(with_dv) == 1 and with_dv[0].delete_files[0].referenced_data_file == with_dv[0].file_path
    assert views[0] != views[1]
    assert plan[2] == eager[2] and list(plan[1:3]) == eager[1:3]


def test_views_copy_pickle_and_replace_into_plain_tasks(tmp_path: Path) -> None:
    t = _table_with_dv(tmp_path)
    (v, *_) = list(t.scan().plan_files())
    for made in (copy.copy(v), copy.deepcopy(v), pickle.loads(pickle.dumps(v))):
        assert type(made) is FileScanTask and made == v
    replaced = dataclasses.replace(v, residual=AlwaysTrue())
    assert type(replaced) is FileScanTask
    assert replaced.file == v.file and replaced.residual == AlwaysTrue() and replaced.origin == v.origin
    try:
        plain_hash = hash(v.resolve())
    except TypeError:  # stats maps make a task unhashable, plain or view alike
        with pytest.raises(TypeError):
            hash(v)
    else:
        assert hash(v) == plain_hash and {v.resolve(): 1}[v] == 1


def test_a_chunk_decodes_once_and_only_when_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table_with_dv(tmp_path)
    monkeypatch.setattr(planning, "ITER_CHUNK", 3)
    calls: list[tuple[int, int]] = []
    real = planning.PlannedTasks._materialize

    def spy(self: planning.PlannedTasks, start: int, stop: int) -> list[FileScanTask]:
        calls.append((start, stop))
        return real(self, start, stop)

    monkeypatch.setattr(planning.PlannedTasks, "_materialize", spy)
    views = list(t.scan().plan_files())
    assert len(views) == 7 and calls == []
    paths = {views[4].file_path, views[5].file_path, views[3].file_path}
    assert calls == [(3, 6)] and len(paths) == 3
    assert all(v.file for v in views)
    assert sorted(calls) == [(0, 3), (3, 6), (6, 7)]


def test_threads_reading_one_chunk_decode_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table_with_dv(tmp_path)
    calls: list[int] = []
    real = planning.PlannedTasks._materialize

    def slow(self: planning.PlannedTasks, start: int, stop: int) -> list[FileScanTask]:
        calls.append(start)
        import time

        time.sleep(0.05)
        return real(self, start, stop)

    monkeypatch.setattr(planning.PlannedTasks, "_materialize", slow)
    views = list(t.scan().plan_files())
    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda v: v.file.file_path, views))
    assert calls == [0] and len(set(paths)) == 7
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 4, 5, 6]
