"""Which snapshots and refs a table's retention policy keeps (spec "Snapshot Retention Policy").

The spec evaluates retention in five steps:

1. start with an empty set of snapshots to retain;
2. remove any ref other than ``main`` whose snapshot is older than its ``max-ref-age-ms``;
3. retain the snapshot of every remaining branch and tag;
4. for each branch, retain ancestors until a snapshot is both older than
   ``max-snapshot-age-ms`` and not among the branch's first ``min-snapshots-to-keep``;
5. expire everything else.

Ref settings fall back to the table properties ``history.expire.max-ref-age-ms`` (default:
refs never expire), ``history.expire.max-snapshot-age-ms`` (5 days) and
``history.expire.min-snapshots-to-keep`` (1) — spec "Snapshot References". Snapshot expiry
may override the two branch defaults (``older_than`` / ``retain_last``), as Iceberg Java's
``ExpireSnapshots.expireOlderThan`` / ``retainLast`` do.

Two details follow Iceberg Java (``RemoveSnapshots``), which the spec leaves open:

* a snapshot reachable from no ref (a staged write-audit-publish snapshot, or the history
  of a removed branch) is retained while it is younger than the default age cut-off,
  so a staged snapshot is not expired before anyone could publish it;
* a ref pointing at a snapshot that no longer exists is expired (it is invalid).

Ages are measured from the ref's or snapshot's ``timestamp-ms``; a ref is kept while
``now - timestamp <= max-ref-age-ms``, and an ancestor is young while
``timestamp >= now - max-snapshot-age-ms``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from firn.errors import ValidationError
from firn.spec.snapshots import MAIN_BRANCH, SnapshotRef
from firn.spec.table_metadata import TableMetadata


@dataclass(frozen=True, slots=True)
class BranchRetention:
    """The retention settings in force for one branch, after falling back to table defaults."""

    min_snapshots_to_keep: int
    # Ancestors with ``timestamp-ms`` below this are old (``now - max-snapshot-age-ms``).
    expire_older_than_ms: int


@dataclass(frozen=True, slots=True)
class RefRetention:
    """The outcome of evaluating the retention policy at one instant.

    ``retained_refs`` are the refs that survive (``main`` always does), ``expired_refs``
    the names of refs past their ``max-ref-age-ms`` (or pointing at a missing snapshot),
    and ``retained_snapshot_ids`` every snapshot the policy keeps.
    """

    now_ms: int
    retained_refs: Mapping[str, SnapshotRef]
    expired_refs: tuple[str, ...]
    retained_snapshot_ids: frozenset[int]
    branch_settings: Mapping[str, BranchRetention]

    def expired_snapshot_ids(self, metadata: TableMetadata) -> frozenset[int]:
        """The snapshots of ``metadata`` the policy does not retain."""
        return frozenset(
            s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in self.retained_snapshot_ids
        )


def _positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")


def _refs_of(metadata: TableMetadata) -> dict[str, SnapshotRef]:
    refs = dict(metadata.refs)
    main = metadata.ref(MAIN_BRANCH)  # implicit when only current-snapshot-id is set
    if main is not None:
        refs.setdefault(MAIN_BRANCH, main)
    return refs


def evaluate_retention(
    metadata: TableMetadata,
    now_ms: int,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> RefRetention:
    """Evaluate the spec's retention policy for ``metadata`` at ``now_ms``.

    ``older_than_ms`` (an absolute timestamp) and ``retain_last`` replace the table-level
    defaults for branches that set no ``max-snapshot-age-ms`` / ``min-snapshots-to-keep`` of
    their own; a ref's own settings always win.
    """
    _positive("retain_last", retain_last)
    props = metadata.table_properties
    default_older_than = older_than_ms if older_than_ms is not None else now_ms - props.max_snapshot_age_ms
    default_min_keep = retain_last if retain_last is not None else props.min_snapshots_to_keep
    default_max_ref_age = props.max_ref_age_ms

    # Step 2: drop refs (never main) whose snapshot is older than max-ref-age-ms.
    retained_refs: dict[str, SnapshotRef] = {}
    expired: list[str] = []
    for name, ref in sorted(_refs_of(metadata).items()):
        snap = metadata.snapshot_by_id(ref.snapshot_id)
        if name == MAIN_BRANCH:
            retained_refs[name] = ref
            continue
        if snap is None:
            expired.append(name)
            continue
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_max_ref_age
        if max_age is not None and now_ms - snap.timestamp_ms > max_age:
            expired.append(name)
            continue
        retained_refs[name] = ref

    retained: set[int] = set()
    reachable: set[int] = set()
    settings: dict[str, BranchRetention] = {}
    for name, ref in retained_refs.items():
        if metadata.snapshot_by_id(ref.snapshot_id) is None:
            continue  # main pointing at a missing snapshot: nothing to keep
        # Step 3: every ref's own snapshot.
        retained.add(ref.snapshot_id)
        if not ref.is_branch:
            reachable.add(ref.snapshot_id)
            continue
        # Step 4: walk the branch's ancestors, newest first.
        br = BranchRetention(
            min_snapshots_to_keep=(
                ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_min_keep
            ),
            expire_older_than_ms=(
                now_ms - ref.max_snapshot_age_ms
                if ref.max_snapshot_age_ms is not None
                else default_older_than
            ),
        )
        settings[name] = br
        kept = 0
        keeping = True
        for ancestor in metadata.ancestors_of(ref.snapshot_id):
            reachable.add(ancestor.snapshot_id)
            if keeping and (
                kept < br.min_snapshots_to_keep or ancestor.timestamp_ms >= br.expire_older_than_ms
            ):
                retained.add(ancestor.snapshot_id)
                kept += 1
            else:
                # The first snapshot that is both old and beyond min-snapshots-to-keep ends
                # the branch's retained history (older ancestors are not revisited).
                keeping = False

    # Java: unreferenced snapshots (staged, or history of dropped refs) age out by the default.
    for s in metadata.snapshots:
        if s.snapshot_id not in reachable and s.timestamp_ms >= default_older_than:
            retained.add(s.snapshot_id)

    return RefRetention(
        now_ms=now_ms,
        retained_refs=MappingProxyType(retained_refs),
        expired_refs=tuple(expired),
        retained_snapshot_ids=frozenset(retained),
        branch_settings=MappingProxyType(settings),
    )


def retained_snapshot_ids(
    metadata: TableMetadata,
    now_ms: int,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> frozenset[int]:
    """The ids of the snapshots the retention policy keeps at ``now_ms`` (see :func:`evaluate_retention`)."""
    return evaluate_retention(
        metadata, now_ms, older_than_ms=older_than_ms, retain_last=retain_last
    ).retained_snapshot_ids


__all__ = ["BranchRetention", "RefRetention", "evaluate_retention", "retained_snapshot_ids"]
