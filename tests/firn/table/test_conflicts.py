"""Racing writers: conflict validation per isolation level, and no row lost or resurrected.

Two real writers are two ``Table`` objects loaded from one SQLite catalog (and, at the end,
several OS processes). Races are injected deterministically: writer 1 plans its change in a
transaction (``tx.delete`` / ``tx.overwrite`` read the table and write files), writer 2 commits,
then writer 1 commits its transaction — its base is stale, the
catalog's compare-and-swap fails, and the retry must re-validate against what writer 2 did.
Every test asserts the final rows exactly.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import firn.core.commit as transaction_module
from firn.catalog.sql import SqlCatalog
from firn.core.actions.overwrite import OverwriteFiles
from firn.core.actions.row_delta import RowDelta
from firn.core.transaction import Transaction
from firn.errors import ValidationConflict
from firn.table.table import Table
from tests.firn.table.ref_factories import ids, make_table, rows
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.races import TimedCommit, assert_raced, timed_commit


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = make_sqlite_catalog(tmp_path)
    yield cat
    cat.close()


def _writers(catalog: SqlCatalog, **kwargs: Any) -> tuple[Table, Table]:
    """The table with rows 0..9 in one data file, loaded twice (two independent writers)."""
    make_table(catalog, **kwargs).append(rows(range(10)))
    return catalog.load_table("db.t"), catalog.load_table("db.t")


def _fresh_ids(catalog: SqlCatalog, **scan: Any) -> list[int]:
    return ids(catalog.load_table("db.t"), **scan)


def _data_files(table: Table) -> list[str]:
    return sorted(t.file.file_path for t in table.refresh().scan().plan_files())


# -- (a) copy-on-write delete vs a concurrent delete of the same file ---------------------------
def test_cow_delete_loses_to_concurrent_delete_of_the_same_file(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id = 2")  # rewrites the file without row 2
    t2.delete("id = 3")  # rewrites the same file without row 3
    with pytest.raises(ValidationConflict, match="already removed"):
        planned.commit()
    # Row 3 stays deleted (t1's rewrite still had it) and row 2 is still there.
    assert _fresh_ids(catalog) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    # The loser re-plans on the fresh table and succeeds.
    t1.refresh().delete("id = 2")
    assert _fresh_ids(catalog) == [0, 1, 4, 5, 6, 7, 8, 9]


def test_cow_delete_of_the_same_rows_retry_finds_nothing_to_do(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id >= 5")
    t2.delete("id >= 5")
    with pytest.raises(ValidationConflict):
        planned.commit()
    files = _data_files(t1)
    t1.refresh().delete("id >= 5")  # matches nothing any more: no file is rewritten
    assert _data_files(t1) == files
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4]


def test_whole_file_delete_vs_concurrent_rewrite(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id >= 0")  # metadata-only: drops the whole file
    t2.delete("id = 9")
    with pytest.raises(ValidationConflict):
        planned.commit()
    assert _fresh_ids(catalog) == list(range(9))


def test_deletes_of_different_files_both_commit(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog, partitioned=True)
    t1.append(rows(range(100, 110), grp="b"))
    t2.refresh()
    planned = t1.transaction().delete("id = 1")  # file of group a
    t2.delete("id = 101")  # file of group b
    result = planned.commit()
    assert result.attempts == 2  # the swap lost once, re-validated, then landed
    assert _fresh_ids(catalog) == [0, *range(2, 10), 100, *range(102, 110)]


# -- (b) isolation levels: a concurrent append matching the filter -------------------------------
def test_serializable_delete_conflicts_with_concurrent_matching_append(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id >= 5")
    t2.append(rows([7, 42]))  # new rows matching the delete filter
    with pytest.raises(ValidationConflict, match="serializable"):
        planned.commit()
    assert _fresh_ids(catalog) == sorted([*range(10), 7, 42])


def test_snapshot_isolation_delete_allows_concurrent_matching_append(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog, properties={"write.delete.isolation-level": "snapshot"})
    planned = t1.transaction().delete("id >= 5")
    t2.append(rows([7, 42]))
    result = planned.commit()
    assert result.attempts == 2
    # The delete removes the rows it saw; the concurrently appended ones survive.
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 7, 42]


def test_serializable_delete_ignores_concurrent_non_matching_append(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id >= 5")
    t2.append(rows([-3, -1]))  # metrics prove these rows cannot match
    planned.commit()
    assert _fresh_ids(catalog) == [-3, -1, 0, 1, 2, 3, 4]


def test_serializable_overwrite_conflicts_with_concurrent_matching_append(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().overwrite(rows([500]), "id < 3")
    t2.append(rows([1]))
    with pytest.raises(ValidationConflict, match="serializable"):
        planned.commit()
    assert _fresh_ids(catalog) == [0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_snapshot_isolation_overwrite_allows_concurrent_append(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog, properties={"write.merge.isolation-level": "snapshot"})
    planned = t1.transaction().overwrite(rows([500]), "id < 3")
    t2.append(rows([1]))
    planned.commit()
    assert _fresh_ids(catalog) == [1, 3, 4, 5, 6, 7, 8, 9, 500]


# -- (c) concurrent appends always succeed via retry ---------------------------------------------
def test_concurrent_appends_retry_and_keep_every_row(catalog: SqlCatalog) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().append(rows([100, 101]))
    for i in range(3):
        t2.append(rows([200 + i]))
    result = planned.commit()
    assert result.attempts == 2
    assert _fresh_ids(catalog) == [*range(10), 100, 101, 200, 201, 202]
    head = catalog.load_table("db.t").current_snapshot()
    assert head is not None and head.summary.get("total-records") == "15"


# -- (d) deletes racing deletion vectors / position deletes on the same file ----------------------
def _row_delta(table: Table) -> RowDelta:
    return table.row_delta()


def _only_file(table: Table) -> str:
    (path,) = [t.file.file_path for t in table.scan().plan_files()]
    return path


@pytest.mark.parametrize("version", [2, 3])
def test_cow_delete_loses_to_concurrent_position_delete(catalog: SqlCatalog, version: int) -> None:
    # v3: the competitor writes a DV; v2: a position delete file. Either would be lost if the
    # rewrite (made from the file without those deletes) were committed on top: resurrection.
    t1, t2 = _writers(catalog, format_version=version)
    planned = t1.transaction().delete("id = 2")
    _row_delta(t2).delete_rows_at(_only_file(t2), [5]).commit()
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    with pytest.raises(ValidationConflict, match="resurrect"):
        planned.commit()
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    t1.refresh().delete("id = 2")
    assert _fresh_ids(catalog) == [0, 1, 3, 4, 6, 7, 8, 9]


@pytest.mark.parametrize("version", [2, 3])
def test_position_delete_loses_to_concurrent_cow_rewrite(catalog: SqlCatalog, version: int) -> None:
    t1, t2 = _writers(catalog, format_version=version)
    delta = _row_delta(t1).delete_rows_at(_only_file(t1), [5])  # planned against the old file
    t2.delete("id = 2")  # rewrites the file: position 5 now names a different row
    with pytest.raises(ValidationConflict):
        delta.commit()
    assert _fresh_ids(catalog) == [0, 1, 3, 4, 5, 6, 7, 8, 9]


def test_merge_on_read_deletes_of_the_same_file_conflict(catalog: SqlCatalog) -> None:
    pytest.importorskip("firn.core.actions.merge_on_read", reason="merge-on-read deletes not available")
    t1, t2 = _writers(catalog, format_version=3, properties={"write.delete.mode": "merge-on-read"})
    planned = t1.transaction().delete("id = 2")  # a DV for the file
    t2.delete("id = 7")  # another DV for the same file
    with pytest.raises(ValidationConflict):
        planned.commit()
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    t1.refresh().delete("id = 2")  # re-planned: merges the existing DV
    assert _fresh_ids(catalog) == [0, 1, 3, 4, 5, 6, 8, 9]


def test_manual_dv_racing_a_cow_delete(catalog: SqlCatalog) -> None:
    # The same race built from the delete writers directly, without the row-delta builder.
    from firn.core.metadata_io import metadata_dir
    from firn.deletes import PositionBitmap, write_dv_puffin
    from firn.spec.content import DataFile, FileContent, FileFormat

    t1, t2 = _writers(catalog, format_version=3)
    planned = t1.transaction().delete("id = 2")
    task = t2.scan().plan_files()[0]
    location = f"{metadata_dir(t2.metadata).rsplit('/', 1)[0]}/data/manual-dv.puffin"
    dv_file = write_dv_puffin(
        t2.io.new_output(location), {task.file.file_path: PositionBitmap.from_positions([6])}
    )
    (blob,) = dv_file.dvs
    dv = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PUFFIN,
        partition=task.file.partition,
        record_count=blob.cardinality,
        file_size_in_bytes=dv_file.file_size_in_bytes,
        spec_id=task.file.spec_id,
        referenced_data_file=task.file.file_path,
        content_offset=blob.offset,
        content_size_in_bytes=blob.length,
    )
    head = t2.current_snapshot()
    assert head is not None
    Transaction(t2).add_action(
        OverwriteFiles(starting_snapshot_id=head.snapshot_id, added_deletes=[dv], validate_deletes_for=[])
    ).commit()
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 5, 7, 8, 9]
    with pytest.raises(ValidationConflict, match="resurrect"):
        planned.commit()
    assert _fresh_ids(catalog) == [0, 1, 2, 3, 4, 5, 7, 8, 9]


# -- (e) retries re-validate: a conflicting commit lands during the backoff ---------------------------
def _during_backoff(monkeypatch: pytest.MonkeyPatch, competitor: Callable[[], object]) -> list[int]:
    """Run ``competitor`` once, inside the transaction's first backoff; returns a call log."""
    calls: list[int] = []

    def backoff(attempt: int, min_ms: int, max_ms: int) -> float:
        calls.append(attempt)
        if len(calls) == 1:
            competitor()
        return 0.0

    monkeypatch.setattr(transaction_module, "_backoff_ms", backoff)
    return calls


def test_retry_revalidates_after_conflicting_commit_in_backoff(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t1, t2 = _writers(catalog, partitioned=True)
    planned = t1.transaction().delete("id = 2")
    t2.append(rows([300], grp="z"))  # unrelated: t1's first swap fails, validation would pass
    calls = _during_backoff(monkeypatch, lambda: t2.delete("id = 4"))  # conflicting, mid-backoff
    with pytest.raises(ValidationConflict, match="already removed"):
        planned.commit()
    assert calls == [1]  # exactly one retry, and it re-validated against the new commit
    assert _fresh_ids(catalog) == [0, 1, 2, 3, *range(5, 10), 300]


def test_retry_revalidates_serializable_filter_in_backoff(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t1, t2 = _writers(catalog)
    planned = t1.transaction().delete("id >= 8")
    t2.append(rows([-1]))  # does not match the filter
    calls = _during_backoff(monkeypatch, lambda: t2.append(rows([9])))  # matches it
    with pytest.raises(ValidationConflict, match="serializable"):
        planned.commit()
    assert calls == [1]
    assert _fresh_ids(catalog) == [-1, *range(10), 9]


def test_retry_succeeds_when_backoff_commit_does_not_conflict(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t1, t2 = _writers(catalog, partitioned=True)
    planned = t1.transaction().delete("id = 2")
    t2.append(rows([300], grp="z"))
    calls = _during_backoff(monkeypatch, lambda: t2.append(rows([301], grp="y")))
    result = planned.commit()
    assert calls == [1] and result.attempts == 2
    assert _fresh_ids(catalog) == [0, 1, *range(3, 10), 300, 301]


# -- two OS processes ----------------------------------------------------------------------------------
# The workers start at a barrier after their imports and table loads, report every commit, and
# the tests require that they raced (tests/fixtures/races.py): a serial run fails.
def _append_worker(directory: str, first_id: int, count: int, barrier: Any, results: Any) -> None:
    catalog = make_sqlite_catalog(Path(directory))
    table = catalog.load_table("db.t")
    barrier.wait(timeout=120)
    made = [
        timed_commit(first_id, lambda tx, i=i: tx.append(rows([first_id + i])), table) for i in range(count)
    ]
    catalog.close()
    results.put(made)


def _delete_worker(directory: str, targets: list[int], barrier: Any, results: Any) -> None:
    catalog = make_sqlite_catalog(Path(directory))
    table = catalog.load_table("db.t")
    barrier.wait(timeout=120)
    made: list[TimedCommit] = []
    for target in targets:
        for _ in range(50):
            try:
                delete = lambda tx, t=target: tx.delete(f"id = {t}")  # noqa: E731
                made.append(timed_commit(targets[0], delete, table, refused=made))
                break
            except ValidationConflict:
                table.refresh()  # lost the race: re-plan against the winner's commit
        else:  # pragma: no cover - would mean livelock
            raise AssertionError(f"could not delete {target}")
    catalog.close()
    results.put(made)


def _run(workers: list[tuple[Callable[..., None], tuple[Any, ...]]]) -> None:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(len(workers)), ctx.Queue()
    procs = [ctx.Process(target=fn, args=(*args, barrier, results)) for fn, args in workers]
    for p in procs:
        p.start()
    reports = [results.get(timeout=240) for _ in procs]  # before join: queued data blocks exit
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    assert_raced([c for made in reports for c in made])


def test_processes_append_concurrently(catalog: SqlCatalog, tmp_path: Path) -> None:
    make_table(catalog)
    _run([(_append_worker, (str(tmp_path), 1000 * (w + 1), 6)) for w in range(3)])
    expected = sorted(1000 * (w + 1) + i for w in range(3) for i in range(6))
    assert _fresh_ids(catalog) == expected
    assert len(catalog.load_table("db.t").snapshots()) == 18


def test_processes_racing_deletes_lose_and_resurrect_nothing(catalog: SqlCatalog, tmp_path: Path) -> None:
    make_table(catalog).append(rows(range(40)))
    odd, even = list(range(1, 20, 2)), list(range(0, 20, 2))
    _run([(_delete_worker, (str(tmp_path), odd)), (_delete_worker, (str(tmp_path), even))])
    assert _fresh_ids(catalog) == list(range(20, 40))


def test_retry_refuses_a_table_replaced_concurrently(catalog: SqlCatalog) -> None:
    t1, _ = _writers(catalog)
    planned = t1.transaction().append(rows([100]))
    catalog.drop_table("db.t")
    make_table(catalog).append(rows([7]))  # same name, new table (new UUID)
    with pytest.raises(ValidationConflict, match="replaced concurrently"):
        planned.commit()
    assert _fresh_ids(catalog) == [7]
