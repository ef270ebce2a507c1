"""The spec's "Snapshot Retention Policy" as ``firn.core.retention`` evaluates it.

Metadata is built directly (no I/O): snapshots with chosen timestamps and refs with chosen
settings, so every rule and boundary can be pinned down.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from firn.core.create import new_table_metadata
from firn.core.retention import BranchRetention, evaluate_retention, retained_snapshot_ids
from firn.errors import ValidationError
from firn.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot, SnapshotRef, Summary
from firn.spec.table_metadata import TableMetadata
from tests.fixtures.catalogs import simple_schema

DAY = 24 * 3600 * 1000
NOW = 1_000 * DAY  # a fixed "now", far from zero
FIVE_DAYS = 5 * DAY  # history.expire.max-snapshot-age-ms default


def _snap(sid: int, parent: int | None, age_ms: int) -> Snapshot:
    return Snapshot(
        snapshot_id=sid,
        parent_snapshot_id=parent,
        sequence_number=sid,
        timestamp_ms=NOW - age_ms,
        summary=Summary(Operation.APPEND),
        manifest_list=f"memory://t/metadata/snap-{sid}.avro",
    )


def _metadata(
    snapshots: list[Snapshot],
    refs: dict[str, SnapshotRef],
    properties: dict[str, str] | None = None,
) -> TableMetadata:
    md = new_table_metadata(
        simple_schema(), location="memory://t", format_version=2, properties=properties or {}
    )
    main = refs.get(MAIN_BRANCH)
    return replace(
        md,
        snapshots=tuple(snapshots),
        refs=MappingProxyType(dict(refs)),
        current_snapshot_id=main.snapshot_id if main is not None else None,
        last_sequence_number=max((s.sequence_number for s in snapshots), default=0),
    )


def _chain(ages_days: list[float], start: int = 1, parent: int | None = None) -> list[Snapshot]:
    """A linear history, oldest first: ids start, start+1, ... with the given ages in days."""
    out = []
    for i, age in enumerate(ages_days):
        sid = start + i
        out.append(_snap(sid, parent, int(age * DAY)))
        parent = sid
    return out


def _branch(sid: int, **settings: int) -> SnapshotRef:
    return SnapshotRef(sid, RefType.BRANCH, **settings)


def _tag(sid: int, max_ref_age_ms: int | None = None) -> SnapshotRef:
    return SnapshotRef(sid, RefType.TAG, max_ref_age_ms=max_ref_age_ms)


# -- main with table defaults ------------------------------------------------------------------
def test_defaults_keep_five_days_of_main_and_at_least_its_head() -> None:
    # 1 (10d) <- 2 (6d) <- 3 (4d) <- 4 (1d)
    md = _metadata(_chain([10, 6, 4, 1]), {MAIN_BRANCH: _branch(4)})
    assert retained_snapshot_ids(md, NOW) == {3, 4}
    # Everything old: min-snapshots-to-keep (default 1) still keeps the head.
    md = _metadata(_chain([30, 20, 10]), {MAIN_BRANCH: _branch(3)})
    assert retained_snapshot_ids(md, NOW) == {3}


def test_boundaries_are_inclusive() -> None:
    # An ancestor exactly max-snapshot-age-ms old is still young (timestamp >= now - age).
    md = _metadata(_chain([6, 5, 1]), {MAIN_BRANCH: _branch(3)})
    assert retained_snapshot_ids(md, NOW) == {2, 3}
    # A ref exactly max-ref-age-ms old is kept (now - timestamp <= max-ref-age-ms).
    md = _metadata(_chain([3, 1]), {MAIN_BRANCH: _branch(2), "t": _tag(1, max_ref_age_ms=3 * DAY)})
    assert evaluate_retention(md, NOW).expired_refs == ()
    assert evaluate_retention(md, NOW + 1).expired_refs == ("t",)


def test_table_properties_are_the_branch_defaults() -> None:
    snaps = _chain([10, 6, 4, 3, 2, 1])
    refs = {MAIN_BRANCH: _branch(6)}
    md = _metadata(snaps, refs, {"history.expire.max-snapshot-age-ms": str(2 * DAY)})
    assert retained_snapshot_ids(md, NOW) == {5, 6}
    md = _metadata(snaps, refs, {"history.expire.min-snapshots-to-keep": "5"})
    assert retained_snapshot_ids(md, NOW) == {2, 3, 4, 5, 6}


def test_expiry_overrides_replace_table_defaults_only() -> None:
    snaps = _chain([10, 6, 4, 3, 2, 1])
    md = _metadata(snaps, {MAIN_BRANCH: _branch(6)})
    assert retained_snapshot_ids(md, NOW, older_than_ms=NOW - int(2.5 * DAY)) == {5, 6}
    assert retained_snapshot_ids(md, NOW, retain_last=4, older_than_ms=NOW) == {3, 4, 5, 6}
    # A branch's own setting wins over the override.
    md = _metadata(snaps, {MAIN_BRANCH: _branch(6, min_snapshots_to_keep=2)})
    assert retained_snapshot_ids(md, NOW, retain_last=4, older_than_ms=NOW) == {5, 6}
    with pytest.raises(ValidationError, match="retain_last"):
        evaluate_retention(md, NOW, retain_last=0)


# -- per-branch settings -------------------------------------------------------------------------
def test_branch_min_snapshots_to_keep_keeps_old_snapshots() -> None:
    md = _metadata(_chain([40, 30, 20, 10]), {MAIN_BRANCH: _branch(4, min_snapshots_to_keep=3)})
    r = evaluate_retention(md, NOW)
    assert r.retained_snapshot_ids == {2, 3, 4}
    assert r.expired_snapshot_ids(md) == {1}
    assert r.branch_settings[MAIN_BRANCH] == BranchRetention(3, NOW - FIVE_DAYS)


def test_branch_max_snapshot_age_ms() -> None:
    md = _metadata(_chain([10, 6, 4, 1]), {MAIN_BRANCH: _branch(4, max_snapshot_age_ms=8 * DAY)})
    assert retained_snapshot_ids(md, NOW) == {2, 3, 4}


def test_walk_stops_at_first_snapshot_past_both_limits() -> None:
    # Spec step 4 adds ancestors *until* one is old and beyond min-snapshots-to-keep: a
    # (clock-skewed) young snapshot behind it is not retained through this branch.
    snaps = [_snap(1, None, 1 * DAY), _snap(2, 1, 10 * DAY), _snap(3, 2, 1 * DAY)]
    md = _metadata(snaps, {MAIN_BRANCH: _branch(3)})
    assert retained_snapshot_ids(md, NOW) == {3}


def test_each_branch_walks_its_own_history() -> None:
    # main: 1 <- 2 <- 3 ; dev forks at 1: 1 <- 10 <- 11, keeping 3 snapshots.
    snaps = [*_chain([20, 15, 1]), *_chain([18, 12], start=10, parent=1)]
    refs = {MAIN_BRANCH: _branch(3), "dev": _branch(11, min_snapshots_to_keep=3)}
    assert retained_snapshot_ids(_metadata(snaps, refs), NOW) == {1, 3, 10, 11}


# -- tags and ref expiry ---------------------------------------------------------------------------
def test_tags_keep_only_their_snapshot() -> None:
    snaps = _chain([30, 20, 10, 1])
    md = _metadata(snaps, {MAIN_BRANCH: _branch(4), "v1": _tag(2)})
    assert retained_snapshot_ids(md, NOW) == {2, 4}


def test_refs_past_max_ref_age_expire_but_main_never_does() -> None:
    snaps = _chain([30, 20, 10])
    refs = {
        MAIN_BRANCH: _branch(3),
        "old-tag": _tag(1, max_ref_age_ms=25 * DAY),  # 30 days old: expires
        "young-tag": _tag(2, max_ref_age_ms=25 * DAY),
        "old-branch": _branch(1, max_ref_age_ms=DAY),
    }
    md = _metadata(snaps, refs, {"history.expire.max-ref-age-ms": "1"})
    r = evaluate_retention(md, NOW)
    # main is 10 days old, far past the table's 1 ms max-ref-age: it never expires.
    assert set(r.retained_refs) == {MAIN_BRANCH, "young-tag"}
    assert r.expired_refs == ("old-branch", "old-tag")
    assert r.retained_snapshot_ids == {2, 3}


def test_table_max_ref_age_is_the_default_for_refs() -> None:
    snaps = _chain([30, 20, 10])
    refs = {MAIN_BRANCH: _branch(3), "a": _tag(1), "b": _tag(2, max_ref_age_ms=40 * DAY)}
    # Without the property refs never expire.
    assert evaluate_retention(_metadata(snaps, refs), NOW).expired_refs == ()
    md = _metadata(snaps, refs, {"history.expire.max-ref-age-ms": str(25 * DAY)})
    r = evaluate_retention(md, NOW)
    assert r.expired_refs == ("a",)
    assert r.retained_snapshot_ids == {2, 3}


def test_expired_branch_history_is_no_longer_protected() -> None:
    # dev (expired) kept 3 snapshots; once it expires they age out by the default.
    snaps = [*_chain([1]), *_chain([30, 20, 10], start=10)]
    refs = {
        MAIN_BRANCH: _branch(1),
        "dev": _branch(12, min_snapshots_to_keep=3, max_ref_age_ms=DAY),
    }
    r = evaluate_retention(_metadata(snaps, refs), NOW)
    assert r.expired_refs == ("dev",)
    assert r.retained_snapshot_ids == {1}


def test_ref_to_a_missing_snapshot_is_expired() -> None:
    md = _metadata(_chain([1]), {MAIN_BRANCH: _branch(1), "ghost": _tag(999)})
    r = evaluate_retention(md, NOW)
    assert r.expired_refs == ("ghost",)
    assert r.retained_snapshot_ids == {1}


# -- unreferenced snapshots ------------------------------------------------------------------------
def test_unreferenced_snapshots_age_out_by_the_default() -> None:
    # Staged (WAP) snapshots off main: 20 (young) is kept, 21 (old) is not (Iceberg Java).
    snaps = [*_chain([10, 1]), _snap(20, 2, DAY // 2), _snap(21, 1, 9 * DAY)]
    md = _metadata(snaps, {MAIN_BRANCH: _branch(2)})
    assert retained_snapshot_ids(md, NOW) == {2, 20}


def test_implicit_main_and_empty_tables() -> None:
    md = _metadata(_chain([10, 1]), {MAIN_BRANCH: _branch(2)})
    implicit = replace(md, refs=MappingProxyType({}))  # only current-snapshot-id (v1 style)
    assert retained_snapshot_ids(implicit, NOW) == {2}
    empty = _metadata([], {})
    r = evaluate_retention(empty, NOW)
    assert r.retained_snapshot_ids == frozenset() and r.expired_refs == ()
