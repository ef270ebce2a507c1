"""Concurrent view changes: a lost pointer swap fails with CommitConflict or is re-applied.

The deterministic tests make one writer lose: just before its swap, another writer commits
(the catalog's ``_view_swap`` is wrapped to run the rival change first). The threaded tests
race real writers on each backend and check that no change is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from firn.catalog.base_catalog import BaseCatalog
from firn.catalog.views import ViewCatalogMixin
from firn.errors import AlreadyExists, CommitConflict, ValidationError
from firn.spec.schema import Schema
from firn.spec.types import LongType, NestedField
from firn.spec.view_properties import COMMIT_MIN_RETRY_WAIT_MS, COMMIT_NUM_RETRIES, VERSION_HISTORY_SIZE
from tests.fixtures.catalogs import make_sqlite_catalog, simple_schema

SCHEMA = Schema(NestedField(1, "id", LongType()))


@pytest.fixture
def cat(any_catalog: BaseCatalog) -> ViewCatalogMixin:
    assert isinstance(any_catalog, ViewCatalogMixin)
    any_catalog.create_namespace("db")
    return any_catalog


def _lose_once(
    cat: ViewCatalogMixin, monkeypatch: pytest.MonkeyPatch, rival: Callable[[], object]
) -> list[str]:
    """Run ``rival`` right before the next swap; returns the locations the loser tried."""
    original = cat._view_swap
    tried: list[str] = []
    state = {"armed": True}

    def swap(ns: str, name: str, expected: str, new: str) -> None:
        if state["armed"]:
            state["armed"] = False
            tried.append(new)
            rival()
        original(ns, name, expected, new)

    monkeypatch.setattr(cat, "_view_swap", swap)
    return tried


def test_losing_replace_without_retries_raises_commit_conflict(
    cat: ViewCatalogMixin, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 1", properties={COMMIT_NUM_RETRIES: "0"})
    tried = _lose_once(cat, monkeypatch, lambda: cat.replace_view("db.v", SCHEMA, "SELECT 'rival'"))
    with pytest.raises(CommitConflict, match="changed concurrently"):
        cat.replace_view("db.v", SCHEMA, "SELECT 'loser'")
    view = cat.load_view("db.v")
    assert view.sql_for("spark") == "SELECT 'rival'"
    assert [v.version_id for v in view.versions] == [1, 2]
    # The loser's metadata file was never referenced, so it was deleted.
    assert len(tried) == 1 and not cat.io.new_input(tried[0]).exists()


def test_losing_replace_retries_on_the_new_metadata(
    cat: ViewCatalogMixin, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 1", properties={COMMIT_MIN_RETRY_WAIT_MS: "1"})
    tried = _lose_once(cat, monkeypatch, lambda: cat.replace_view("db.v", SCHEMA, "SELECT 'rival'"))
    view = cat.replace_view("db.v", SCHEMA, "SELECT 'loser'")
    assert [(v.version_id, v.sql_for("spark").sql) for v in view.versions] == [  # type: ignore[union-attr]
        (1, "SELECT 1"),
        (2, "SELECT 'rival'"),
        (3, "SELECT 'loser'"),
    ]
    assert [e.version_id for e in view.history] == [1, 2, 3]
    assert cat.load_view("db.v").metadata_location == view.metadata_location
    assert view.metadata_location.split("/")[-1].startswith("00002-")
    assert not cat.io.new_input(tried[0]).exists()


def test_retry_rechecks_the_dialect_rule(cat: ViewCatalogMixin, monkeypatch: pytest.MonkeyPatch) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 1", properties={COMMIT_MIN_RETRY_WAIT_MS: "1"})
    # The rival adds a trino representation; re-applied on top of it, the loser's spark-only
    # replace would drop trino, so it is refused instead of silently losing the dialect.
    _lose_once(
        cat, monkeypatch, lambda: cat.replace_view("db.v", SCHEMA, {"spark": "SELECT 2", "trino": "SELECT 2"})
    )
    with pytest.raises(ValidationError, match=r"drop SQL dialect\(s\) \['trino'\]"):
        cat.replace_view("db.v", SCHEMA, "SELECT 3")
    assert cat.load_view("db.v").dialects == ("spark", "trino")


def test_rollback_racing_a_replace(cat: ViewCatalogMixin, monkeypatch: pytest.MonkeyPatch) -> None:
    cat.create_view("db.v", SCHEMA, "SELECT 1", properties={COMMIT_MIN_RETRY_WAIT_MS: "1"})
    cat.replace_view("db.v", SCHEMA, "SELECT 2")
    _lose_once(cat, monkeypatch, lambda: cat.replace_view("db.v", SCHEMA, "SELECT 3"))
    view = cat.rollback_view("db.v", 1)
    assert view.current_version.version_id == 1
    assert [v.version_id for v in view.versions] == [1, 2, 3]
    assert [e.version_id for e in view.history] == [1, 2, 3, 1]


@pytest.mark.parametrize("workers", [4])
def test_racing_writers_lose_nothing(cat: ViewCatalogMixin, workers: int) -> None:
    per_worker = 3
    cat.create_view(
        "db.v",
        SCHEMA,
        "SELECT 0",
        properties={COMMIT_NUM_RETRIES: "50", COMMIT_MIN_RETRY_WAIT_MS: "1", VERSION_HISTORY_SIZE: "100"},
    )
    barrier = threading.Barrier(workers)

    def work(w: int) -> None:
        barrier.wait(timeout=30)
        for i in range(per_worker):
            cat.replace_view("db.v", SCHEMA, f"SELECT {w + 1}{i:02d}")

    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(work, w) for w in range(workers)]:
            future.result()
    view = cat.load_view("db.v")
    sqls = [v.sql_for("spark").sql for v in view.versions]  # type: ignore[union-attr]
    assert sorted(sqls) == sorted(
        ["SELECT 0"] + [f"SELECT {w + 1}{i:02d}" for w in range(workers) for i in range(per_worker)]
    )
    assert [e.version_id for e in view.history] == list(range(1, workers * per_worker + 2))
    assert [v.version_id for v in view.versions] == list(range(1, workers * per_worker + 2))


@pytest.fixture
def two_sqlite_catalogs(tmp_path: Path) -> Iterator[tuple[ViewCatalogMixin, ViewCatalogMixin]]:
    """Two catalogs on one SQLite file, like two processes."""
    a, b = make_sqlite_catalog(tmp_path), make_sqlite_catalog(tmp_path)
    yield a, b
    a.close()
    b.close()


def test_one_name_one_winner_across_catalog_instances(
    two_sqlite_catalogs: tuple[ViewCatalogMixin, ViewCatalogMixin],
) -> None:
    """A view and a table created under one name at the same time: exactly one lands."""
    a, b = two_sqlite_catalogs
    a.create_namespace("db")
    for round_ in range(5):
        name = f"db.x{round_}"
        barrier = threading.Barrier(2)
        outcomes: dict[str, str] = {}

        def make_view(
            name: str = name, barrier: threading.Barrier = barrier, outcomes: dict[str, str] = outcomes
        ) -> None:
            barrier.wait(timeout=30)
            try:
                a.create_view(name, SCHEMA, "SELECT 1")
                outcomes["view"] = "won"
            except AlreadyExists:
                outcomes["view"] = "lost"

        def make_table(
            name: str = name, barrier: threading.Barrier = barrier, outcomes: dict[str, str] = outcomes
        ) -> None:
            barrier.wait(timeout=30)
            try:
                b.create_table(name, simple_schema())
                outcomes["table"] = "won"
            except AlreadyExists:
                outcomes["table"] = "lost"

        threads = [threading.Thread(target=make_view), threading.Thread(target=make_table)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes.values()) == ["lost", "won"]
        assert a.view_exists(name) != a.table_exists(name)
