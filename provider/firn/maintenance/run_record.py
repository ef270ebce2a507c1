"""Run records of the unit-based file rewrites: runs that resume and report honestly (issue 23).

``rewrite_data_files``, ``rewrite_deletion_vectors`` and ``rewrite_position_delete_files``
commit their groups in one or more ``replace`` snapshots (partial progress). Each of those
snapshots records the run in its summary: ``firn.maintenance.run-id`` (a digest of the plan,
:attr:`GroupedPlan.run_id`) and ``firn.maintenance.run-groups`` (the groups it landed). The
table's history is the run record, so it survives a crash of the driver with the commits:
executing the same plan again (a re-run after ``kill -9``, an Airflow task retry of a stored
plan) skips the groups already committed and rewrites the rest.

Every such result (:class:`GroupRunResult`) reports the groups committed, the groups skipped
as done by an earlier run of the plan, and the groups not committed, each with its reason:
*conflicted* (dropped at commit because a concurrent commit changed its files in a way that
cannot be carried over) or *failed* (its rewrite raised). A run with failed groups commits the
others and then raises :class:`GroupsFailed`, the result attached, unless the
``tolerate-failed-groups`` option is on; a retry of the same plan then redoes only those.
Conflicted groups are reported but do not fail the run: nothing went wrong in it, the table
moved, and the next run plans them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firn.errors import FirnError
from firn.maintenance.base import MaintainedTable, MaintenanceResult, Skipped
from firn.spec import summary as S
from firn.spec.table_metadata import TableMetadata


@dataclass(frozen=True, kw_only=True)
class FailedGroup:
    """A group that was not committed, and why: ``conflicted`` when a concurrent commit made it
    impossible to commit, otherwise its rewrite failed."""

    group_id: int
    partition: str = ""
    files: int = 0
    reason: str
    conflicted: bool = False

    def describe(self) -> str:
        where = f" ({self.partition})" if self.partition else ""
        kind = "conflicted" if self.conflicted else "failed"
        return f"group {self.group_id}{where} {kind}: {self.reason}"


@dataclass(frozen=True, kw_only=True)
class GroupRunResult(MaintenanceResult):
    """The group report every unit-based rewrite result carries (see the module docstring)."""

    groups_committed: int = 0
    # Groups an earlier run of the same plan committed (a re-run after a crash skips them).
    groups_skipped_as_done: int = 0
    # Groups not committed, conflicted or failed, each with its reason.
    failed_groups: tuple[FailedGroup, ...] = ()

    @property
    def conflicted(self) -> tuple[FailedGroup, ...]:
        return tuple(g for g in self.failed_groups if g.conflicted)

    @property
    def errored(self) -> tuple[FailedGroup, ...]:
        """The groups whose rewrite failed (these fail the run unless tolerated)."""
        return tuple(g for g in self.failed_groups if not g.conflicted)

    def group_report(self) -> list[str]:
        """Human-readable lines: the counts, then each group not committed with its reason."""
        head = (
            f"groups: {self.groups_committed} committed, {self.groups_skipped_as_done} skipped as done, "
            f"{len(self.conflicted)} conflicted, {len(self.errored)} failed"
        )
        return [head, *(f"  {g.describe()}" for g in self.failed_groups)]


class GroupsFailed(FirnError):
    """A unit-based rewrite committed what it could but some groups failed; ``result`` is what
    it did (re-executing the same plan redoes only the groups not committed)."""

    def __init__(self, message: str, result: GroupRunResult) -> None:
        super().__init__(message)
        self.result = result


def plan_run_id(plan_json: str) -> str:
    """A run's identity: a digest of its plan's JSON, recorded in the summaries of its commits."""
    return hashlib.sha256(plan_json.encode("utf-8")).hexdigest()[:24]


def run_properties(operation: str, run_id: str | None) -> dict[str, str]:
    """The snapshot summary properties a run's commits carry (the committing action adds the
    groups it lands, ``firn.maintenance.run-groups``)."""
    props = {S.MAINTENANCE_OPERATION: operation}
    if run_id is not None:
        props[S.MAINTENANCE_RUN_ID] = run_id
    return props


def groups_committed_by(metadata: TableMetadata, branch: str, since: int | None, run_id: str) -> set[int]:
    """The groups that commits of run ``run_id`` landed on ``branch`` after snapshot ``since``
    (the snapshot the run planned on)."""
    head = metadata.snapshot_for_ref(branch)
    done: set[int] = set()
    for snap in metadata.ancestors_of(head.snapshot_id if head is not None else None):
        if snap.snapshot_id == since:
            break
        props = snap.summary.properties
        if props.get(S.MAINTENANCE_RUN_ID) == run_id:
            done |= {int(g) for g in props.get(S.MAINTENANCE_RUN_GROUPS, "").split(",") if g}
    return done


def failed_groups(
    errors: Mapping[int, str],
    conflicts: Mapping[int, str],
    describe: Mapping[int, tuple[str, int]] | None = None,
) -> tuple[FailedGroup, ...]:
    """The :class:`FailedGroup` of each group in ``errors`` (its rewrite raised) and
    ``conflicts`` (dropped at commit), by group id; ``describe`` gives (partition, files)."""
    out = []
    for gid in sorted({*errors, *conflicts}):
        partition, files = (describe or {}).get(gid, ("", 0))
        conflicted = gid not in errors
        reason = conflicts[gid] if conflicted else errors[gid]
        out.append(
            FailedGroup(group_id=gid, partition=partition, files=files, reason=reason, conflicted=conflicted)
        )
    return tuple(out)


def skipped_of(groups: tuple[FailedGroup, ...]) -> tuple[Skipped, ...]:
    """The ``skipped`` entries of groups not committed (results list them there too)."""
    return tuple(
        Skipped(item=f"group {g.group_id}" + (f" ({g.partition})" if g.partition else ""), reason=g.reason)
        for g in groups
    )


def check_failed_groups(operation: str, table: str, result: GroupRunResult, tolerate: bool) -> None:
    """Raise :class:`GroupsFailed` when groups of the run failed and that is not tolerated."""
    if tolerate or not result.errored:
        return
    listed = "; ".join(g.describe() for g in result.errored[:5])
    more = f" (and {len(result.errored) - 5} more)" if len(result.errored) > 5 else ""
    raise GroupsFailed(
        f"{operation} on {table}: {len(result.errored)} group(s) failed: {listed}{more}; "
        f"{result.groups_committed} group(s) committed in snapshots {list(getattr(result, 'snapshot_ids', ()))}. "
        "Executing the same plan again redoes only the groups not committed; set "
        "tolerate-failed-groups to accept a partial run",
        result,
    )


class GroupedPlan:
    """What the unit-based rewrite plans share: the run's identity and the groups an earlier
    run of the same plan committed. Mixed into a plan with ``branch`` and ``snapshot_id``."""

    branch: str
    snapshot_id: int | None

    if TYPE_CHECKING:

        def to_json(self) -> str: ...  # MaintenancePlan's

    @property
    def run_id(self) -> str:
        """The run's identity: a digest of the plan, recorded in its commits' summaries.
        Computed once per plan object (a plan is frozen; serialising a plan of many files
        costs tens of milliseconds, and a run asks several times)."""
        cached: str | None = self.__dict__.get("_run_id")
        if cached is None:
            cached = plan_run_id(self.to_json())
            object.__setattr__(self, "_run_id", cached)  # not a field: to_json and == ignore it
        return cached

    def groups_done(self, table: MaintainedTable) -> set[int]:
        """The groups an earlier run of this plan committed (:func:`groups_committed_by`)."""
        return groups_committed_by(table.metadata, self.branch, self.snapshot_id, self.run_id)


__all__ = [
    "FailedGroup",
    "GroupRunResult",
    "GroupedPlan",
    "GroupsFailed",
    "check_failed_groups",
    "failed_groups",
    "groups_committed_by",
    "plan_run_id",
    "run_properties",
    "skipped_of",
]
