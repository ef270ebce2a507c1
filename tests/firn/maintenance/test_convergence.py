"""Convergence (DESIGN.md "Maintenance"): every recommended operation, run with its recommended
options, makes progress on the reason it was recommended, and recommend -> run -> recommend
reaches an empty list within three rounds, with the table's rows unchanged after every round.

Random v2, v3 and V4 tables are built from small appends (small files, many manifests, a long
history, V4 root growth), merge-on-read deletes (v2 position delete files, v3/V4 deletion
vectors), equality deletes (global on unpartitioned tables, per partition otherwise) and
format upgrades (v2 position delete files left in a v3 or V4 table), with thresholds lowered
so that tables this small need maintenance.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from firn.deletes.writers import write_equality_delete_files
from firn.maintenance import TableHealth
from firn.table.table import Table
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.row_deletes import ROWS_SCHEMA

MAX_ROUNDS = 3
MAX_FORMAT_VERSION = 4
REGIONS = ("eu", "us")

# Thresholds a table of a few dozen rows crosses; each is a table property recommend() reads.
PROPERTIES = {
    "maintenance.compact.min-small-files": "4",
    "maintenance.compact.min-small-file-ratio": "0.1",
    "maintenance.rewrite-dvs.min-delete-ratio": "0.1",
    "maintenance.rewrite-dvs.min-delete-files": "3",
    "maintenance.manifests.min-small-manifests": "6",
    "maintenance.expire.max-snapshots": "8",
    "commit.root.max-data-files": "4",
    "commit.root.max-delete-vectors": "4",
    "commit.manifest-merge.enabled": "false",
}


@dataclass(frozen=True)
class Step:
    """One commit of the random history: an append of ``size`` rows, a merge-on-read delete of
    the listed ids, an equality delete of them, or an upgrade to the next format version."""

    kind: str
    size: int = 0
    picks: tuple[int, ...] = ()


steps = st.one_of(
    st.builds(Step, kind=st.just("append"), size=st.integers(1, 6)),
    st.builds(
        Step,
        kind=st.just("delete"),
        picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=4).map(tuple),
    ),
    st.builds(
        Step,
        kind=st.just("equality"),
        picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=3).map(tuple),
    ),
    # A format upgrade (v2 -> v3 -> V4): position delete files left from v2 are then converted.
    st.just(Step(kind="upgrade")),
)


def _rows(ids: list[int], partitioned: bool) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([REGIONS[i % 2] if partitioned else "eu" for i in ids], pa.string()),
            "name": pa.array([f"n{i}" for i in ids], pa.string()),
        }
    )


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _build(table: Table, history: list[Step], partitioned: bool) -> list[int]:
    """Commit ``history`` to ``table``; returns the ids it should hold."""
    live: list[int] = []
    next_id = 0
    for step in history:
        if step.kind == "append":
            new = list(range(next_id, next_id + step.size))
            next_id += step.size
            table.append(_rows(new, partitioned))
            live.extend(new)
            continue
        if step.kind == "upgrade":
            if table.format_version < MAX_FORMAT_VERSION:
                table.upgrade(format_version=table.format_version + 1)
            continue
        if not live:
            continue
        victims = sorted({live[p % len(live)] for p in step.picks})
        if step.kind == "delete":
            table.delete(f"id IN ({', '.join(map(str, victims))})")
        else:
            files = write_equality_delete_files(
                table.io, table.metadata, _rows(victims, partitioned).select(["id", "region"]), ["id"]
            )
            table.row_delta().add_deletes(files).commit()
        live = [i for i in live if i not in set(victims)]
    return sorted(live)


def _progress(operation: str, before: TableHealth, after: TableHealth) -> bool:
    """Did the run change what ``operation`` is recommended for?"""
    if operation == "rewrite_data_files":
        return (
            after.small_files < before.small_files
            or after.delete_files < before.delete_files
            or after.delete_ratio < before.delete_ratio
        )
    if operation == "rewrite_deletion_vectors":
        return after.position_delete_files < before.position_delete_files
    if operation == "flush_root":
        return (after.root_entries or 0) < (before.root_entries or 0)
    if operation == "rewrite_manifests":
        return after.small_manifests < before.small_manifests or after.manifests < before.manifests
    if operation == "expire_snapshots":
        return after.snapshots < before.snapshots
    raise AssertionError(f"unexpected recommendation {operation} on a young table")


def converge(table: Table, expected: list[int]) -> list[list[str]]:
    """recommend -> run each -> recommend, until quiet; returns the operations of each round
    and fails on a recommended run that does nothing, changed rows, or more than
    ``MAX_ROUNDS`` rounds."""
    rounds: list[list[str]] = []
    for _ in range(MAX_ROUNDS):
        recommendations = table.maintenance.recommend()
        if not recommendations:
            return rounds
        rounds.append([r.operation for r in recommendations])
        for listed in recommendations:
            table.refresh()
            # An earlier operation of the round may have done this one's work (compaction
            # leaves fewer files in the V4 root, expiry fewer manifests): what is no longer
            # recommended is not run, as a nightly run that re-checks before each step does.
            current = {r.operation: r for r in table.maintenance.recommend()}
            if listed.operation not in current:
                continue
            r = current[listed.operation]
            before = table.health()
            snapshot = table.metadata.current_snapshot_id
            op: Any = table.maintenance.operation(r.operation, dict(r.options))
            result = op.run()
            table.refresh()
            after = table.health()
            changed = table.metadata.current_snapshot_id != snapshot or after.snapshots != before.snapshots
            assert changed and _progress(r.operation, before, after), (
                f"recommended {r.operation}({r.options}) did nothing for its reason: {r.reason}; "
                f"result {result}; health before {before}, after {after}"
            )
        assert _ids(table) == expected, f"rows changed in round {len(rounds)}"
    left = table.maintenance.recommend()
    assert left == [], (
        f"not quiet after {MAX_ROUNDS} rounds {rounds}: {[(r.operation, r.reason) for r in left]}"
    )
    return rounds


def _table(directory: str, version: int, partitioned: bool) -> Table:
    catalog = make_sqlite_catalog(Path(directory))
    catalog.create_namespace("db")
    return catalog.create_table(
        "db.t",
        ROWS_SCHEMA,
        partition_spec=[("region", "identity")] if partitioned else None,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read", **PROPERTIES},
    )


def _check(version: int, partitioned: bool, history: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        table = _table(directory, version, partitioned)
        expected = _build(table, history, partitioned)
        assert _ids(table) == expected
        for n, operations in enumerate(converge(table, expected), 1):
            for operation in operations:
                event(f"round {n}: {operation}")


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    version=st.sampled_from([2, 3, 4]),
    partitioned=st.booleans(),
    history=st.lists(steps, min_size=4, max_size=14),
)
def test_recommend_run_converges(version: int, partitioned: bool, history: list[Step]) -> None:
    _check(version, partitioned, history)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    version=st.sampled_from([2, 3, 4]),
    partitioned=st.booleans(),
    history=st.lists(steps, min_size=10, max_size=40),
)
def test_recommend_run_converges_longer_histories(
    version: int, partitioned: bool, history: list[Step]
) -> None:
    _check(version, partitioned, history)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_thirty_percent_deleted_clears_in_one_round(tmp_path: Path, version: int) -> None:
    """The issue's case: 30% of rows deleted at default thresholds. One compaction of the files
    over the table's threshold clears it; nothing is recommended that does nothing."""
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", ROWS_SCHEMA, properties={"format-version": str(version), "write.delete.mode": "merge-on-read"}
    )
    for start in range(0, 100, 10):
        table.append(_rows(list(range(start, start + 10)), False))
    table.delete("id IN (" + ", ".join(str(i) for i in range(100) if i % 10 < 3) + ")")
    expected = [i for i in range(100) if i % 10 >= 3]
    [r] = table.maintenance.recommend()
    assert r.operation == "rewrite_data_files" and "30.0% of rows are deleted" in r.reason
    assert r.options["delete-ratio-threshold"] == 0.1 and r.options["remove-dangling-deletes"] is True
    assert converge(table, expected) == [["rewrite_data_files"]]
    h = table.health()
    assert h.delete_files == 0 and h.delete_ratio == 0.0


@pytest.mark.parametrize("partitioned", [False, True])
def test_equality_deletes_are_removed_after_compaction(tmp_path: Path, partitioned: bool) -> None:
    """Equality deletes (global on an unpartitioned table) go once compaction rewrote what they
    applied to, so the ratio does not rise afterwards."""
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        ROWS_SCHEMA,
        partition_spec=[("region", "identity")] if partitioned else None,
        properties={"format-version": "2", "maintenance.rewrite-dvs.min-delete-files": "3"},
    )
    table.append(_rows(list(range(40)), partitioned))
    for victim in (3, 7, 11):
        files = write_equality_delete_files(
            table.io, table.metadata, _rows([victim], partitioned).select(["id", "region"]), ["id"]
        )
        table.row_delta().add_deletes(files).commit()
    [r] = table.maintenance.recommend()
    assert r.operation == "rewrite_data_files"
    assert r.options == {"delete-file-threshold": 1, "remove-dangling-deletes": True}
    converge(table, [i for i in range(40) if i not in (3, 7, 11)])
    assert table.health().equality_delete_files == 0


@pytest.mark.parametrize("target", [3, 4])
def test_position_delete_files_left_by_an_upgrade_are_converted(tmp_path: Path, target: int) -> None:
    """v2 position delete files in a table upgraded to v3 or V4: the DV rewrite is recommended
    (it has files to convert) and one run leaves only DVs; then nothing is due."""
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t", ROWS_SCHEMA, properties={"format-version": "2", "write.delete.mode": "merge-on-read"}
    )
    for start in range(0, 40, 10):
        table.append(_rows(list(range(start, start + 10)), False))
    table.delete("id IN (1, 12)")
    table.delete("id IN (22)")
    table.upgrade(format_version=target)
    assert converge(table, [i for i in range(40) if i not in (1, 12, 22)]) == [["rewrite_deletion_vectors"]]
    h = table.health()
    assert h.position_delete_files == 0 and h.deletion_vectors == 3


@pytest.mark.parametrize("partitioned", [False, True])
def test_v2_position_delete_files_below_the_ratio_are_merged(tmp_path: Path, partitioned: bool) -> None:
    """v2, a low delete ratio but many position delete files: the recommended merge (with
    min-input-files 2, so each partition's few files count) leaves fewer files, then quiet."""
    catalog = make_sqlite_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        ROWS_SCHEMA,
        partition_spec=[("region", "identity")] if partitioned else None,
        properties={
            "format-version": "2",
            "write.delete.mode": "merge-on-read",
            "maintenance.rewrite-dvs.min-delete-files": "4",
        },
    )
    table.append(_rows(list(range(100)), partitioned))
    for victim in (3, 10, 17, 44):
        table.delete(f"id IN ({victim})")
    before = table.health()
    assert before.position_delete_files == 4 and before.delete_ratio < 0.1
    [r] = table.maintenance.recommend()
    assert r.operation == "rewrite_deletion_vectors" and r.options == {"min-input-files": 2}
    assert converge(table, [i for i in range(100) if i not in (3, 10, 17, 44)]) == [
        ["rewrite_deletion_vectors"]
    ]
    assert table.health().position_delete_files < 4
