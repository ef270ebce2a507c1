"""Row-level deletes run on Spark leave the same rows as ``table.delete`` does, with the delete
files each format version uses (position deletes on v2, DVs on v3 and V4) or rewritten files
(copy-on-write), in one commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import firn.spark
from firn.catalog.sql import SqlCatalog
from firn.errors import ValidationError
from firn.table.table import Table
from tests.fixtures.spark_tables import build_table, catalog_uri, same_rows, spark_catalog

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

PREDICATE = "id in (3, 9, 15, 42, 66, 90, 111, 120) or name = 'name-061'"  # several files, none whole


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return spark_catalog(tmp_path)


def _twins(catalog: SqlCatalog, kind: str) -> tuple[Table, Table]:
    return build_table(catalog, kind, name="a"), build_table(catalog, kind, name="b")


def _live_delete_files(table: Table) -> list[Any]:
    return [d for t in table.scan().plan_files() for d in t.delete_files]


@pytest.mark.parametrize("kind", ["v2-deletes", "v3-dvs", "v4"])
def test_merge_on_read_delete_matches_the_library(
    spark: Any, tmp_path: Path, catalog: SqlCatalog, kind: str
) -> None:
    a, b = _twins(catalog, kind)
    before = a.scan().count()
    result = firn.spark.delete(spark, "db.a", PREDICATE, catalog=catalog_uri(tmp_path))
    b.delete(PREDICATE)
    a.refresh()
    assert same_rows(a.scan().to_arrow(), b.scan().to_arrow())
    assert result.mode == "merge-on-read" and result.deleted_rows == before - a.scan().count() > 0
    assert result.rewritten_data_files == 0 and result.spark_tasks > 0
    snap = a.current_snapshot()
    assert snap is not None and snap.snapshot_id == result.snapshot_id
    assert snap.summary.operation.value == "delete"
    deletes = _live_delete_files(a)
    if kind == "v2-deletes":
        assert int(snap.summary.get("added-position-delete-files") or 0) > 0
    else:
        assert int(snap.summary.get("added-dvs") or 0) > 0 and all(
            d.is_dv for d in deletes if d.content.value == 1
        )


def test_copy_on_write_delete_rewrites_files(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    a, b = _twins(catalog, "v1")
    result = firn.spark.delete(spark, a, PREDICATE)
    b.delete(PREDICATE)
    assert same_rows(a.refresh().scan().to_arrow(), b.scan().to_arrow())
    assert result.mode == "copy-on-write" and result.rewritten_data_files > 0 and result.added_data_files > 0
    assert not _live_delete_files(a)


def test_merge_on_read_delete_ignores_a_copy_on_write_mode(
    spark: Any, tmp_path: Path, catalog: SqlCatalog
) -> None:
    table = build_table(catalog, "v3-dvs")
    table.set_properties({"write.delete.mode": "copy-on-write"})
    files = {t.file.file_path for t in table.scan().plan_files()}
    result = firn.spark.merge_on_read_delete(
        spark, "db.events", "id = 33 or id = 71", catalog=catalog_uri(tmp_path)
    )
    table.refresh()
    assert result.deleted_rows == 2 and {t.file.file_path for t in table.scan().plan_files()} == files
    assert table.scan(filter="id = 33 or id = 71").count() == 0


def test_whole_files_are_removed_without_a_task(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    a, b = _twins(catalog, "v3-dvs")
    eu_without_deletes = [
        t
        for t in a.scan(filter="region = 'eu'").plan_files()
        if t.file.partition == ("eu",) and not t.delete_files
    ]
    result = firn.spark.delete(spark, a, "region = 'eu'")
    b.delete("region = 'eu'")
    assert same_rows(a.refresh().scan().to_arrow(), b.scan().to_arrow())
    assert result.removed_data_files >= len(eu_without_deletes) > 0
    assert result.spark_tasks == result.removed_data_files - len(eu_without_deletes)


def test_nothing_matched_commits_nothing(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v2-deletes")
    snapshots = len(table.snapshots())
    result = firn.spark.delete(spark, table, "id = 123456")
    assert result.snapshot_id is None and result.deleted_rows == 0
    assert len(table.refresh().snapshots()) == snapshots


def test_bad_requests(spark: Any, tmp_path: Path, catalog: SqlCatalog) -> None:
    table = build_table(catalog, "v1")
    with pytest.raises(ValidationError, match="format version 1, which has no delete files"):
        firn.spark.merge_on_read_delete(spark, table, "id = 1")
    with pytest.raises(ValidationError, match="needs a predicate"):
        firn.spark.delete(spark, table, None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="no Firn catalog"):
        firn.spark.delete(spark, "db.events", "id = 1")


@pytest.mark.parametrize("kind", ["v1", "v2-deletes", "v3-dvs"])
def test_a_compaction_between_matching_and_commit_re_plans_the_delete(
    spark: Any, tmp_path: Path, catalog: SqlCatalog, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23: the files the Spark tasks matched are compacted before the driver commits;
    the delete runs again on the new files and commits (Iceberg Java refuses it)."""
    a, b = _twins(catalog, kind)
    maintainer = catalog.load_table("db.a")
    compacted: list[int] = []

    def compact_once() -> None:
        if not compacted:
            result = maintainer.maintenance.rewrite_data_files(min_input_files=2).run()
            compacted.append(result.rewritten_data_files_count)

    # The driver commits through row_delta (merge-on-read) or a transaction (copy-on-write).
    for name in ("row_delta", "transaction"):
        original = getattr(a, name)

        def hooked(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            compact_once()
            return _original(*args, **kwargs)

        monkeypatch.setattr(a, name, hooked)
    result = firn.spark.delete(spark, a, PREDICATE)
    b.delete(PREDICATE)
    assert compacted and compacted[0] > 0  # the matched files really moved
    a.refresh()
    assert same_rows(a.scan().to_arrow(), b.scan().to_arrow())
    assert result.snapshot_id == a.current_snapshot().snapshot_id  # type: ignore[union-attr]
    replace = [s for s in a.snapshots() if s.summary.operation.value == "replace"]
    assert replace and replace[-1].snapshot_id != result.snapshot_id
