"""``table.maintenance.recommend()``: the maintenance worth running now, from ``table.health()``.

Each :class:`Recommendation` names a ``table.maintenance`` method, why it is recommended, the
options to run it with, and an :class:`Estimate` of what it gains. They come in the order a
nightly run takes (:data:`~firn.maintenance.operations.NIGHTLY_ORDER`): rewrite deletes,
compact, flush the V4 root, rewrite manifests, expire snapshots, remove orphan files. Only
:class:`~firn.maintenance.health.TableHealth` and the table's properties are consulted, so a
recommendation costs what a health poll costs.

The rules and their thresholds (table properties; defaults chosen from the survey of
maintenance systems in reference/notes/airflow-provider-notes.md §4.1):

``rewrite_deletion_vectors`` (runs as ``rewrite_position_delete_files`` on v2 tables) only when
    it has position delete files to work on:
    * v2: ``position_delete_files >= maintenance.rewrite-dvs.min-delete-files`` (default 10):
      each position delete file is opened by every scan of its partition; Glue already
      triggers on a single delete file, Amoro's minor trigger on 12 fragment files. Option
      ``min-input-files`` 2, so that partitions holding two to four of them are merged too;
    * v3 and V4: any position delete file (left from before an upgrade): converting it into
      deletion vectors is always a gain, since readers then need no file-level join.
    It is left out when compaction is recommended with ``delete-file-threshold`` 1, which
    rewrites what those files apply to and removes them. It never lowers the delete ratio
    (it hands files over its own 0.3 threshold to compaction), so the ratio is not its rule.
``rewrite_data_files`` when
    * ``small_files >= maintenance.compact.min-small-files`` (default 100, Glue's
      ``minInputFiles``) and ``small_files / data_files >= maintenance.compact.min-small-file-ratio``
      (default 0.1, IBM watsonx.data's small-file-count threshold). Iceberg's own
      ``min-input-files`` (5) applies per file group inside the run; at table level a handful
      of small files does not pay for a job, and one small file among thousands of full ones
      gains nothing. Once the table-level rule fires, the option ``min-input-files`` 2 lets
      every partition with two small files or more be compacted;
    * or ``delete_ratio >= maintenance.rewrite-dvs.min-delete-ratio`` (default 0.1). Amoro
      starts a major optimization at a 10% "duplicate ratio"; past it every read filters a
      tenth of what it decodes. Options: ``delete-ratio-threshold`` = that same threshold, so
      the files whose deleted share reaches it are rewritten (every file left is below it, so
      the table's ratio falls below it); ``delete-file-threshold`` 1 when position delete
      files (which may name several files) or equality deletes exist; and
      ``remove-dangling-deletes``, which removes the delete files that then apply to nothing;
    * or ``equality_delete_files >= maintenance.rewrite-dvs.min-delete-files``: equality deletes
      are only ever resolved by rewriting the data they apply to (``delete-file-threshold`` 1,
      ``remove-dangling-deletes``).
``flush_root`` (V4) when a root category is above its ``commit.root.*`` threshold (data files,
    DVs, manifest DVs, or the root's file size above ``commit.root.max-bytes``): the same rule a
    flush applies, so a recommended flush always has work.
``rewrite_manifests`` when ``small_manifests >= maintenance.manifests.min-small-manifests``
    (default 100, the count at which Iceberg's writers merge manifests on commit,
    ``commit.manifest.min-count-to-merge``).
``expire_snapshots`` when
    * more than ``maintenance.expire.max-snapshots`` snapshots are kept (default 1,000; 0 turns
      the cap off): options ``retain-last`` = the cap and ``older-than`` = the time of the
      health measurement, so the run trims to the cap even inside the age window. Metadata
      JSON grows by about 1 KB per snapshot and every commit rewrites it; the survey's worst
      case had 70,000 snapshots and a 110 MB metadata file. This rule takes precedence;
    * or the oldest snapshot is older than ``history.expire.max-snapshot-age-ms`` (5 days) and
      more than ``history.expire.min-snapshots-to-keep`` snapshots exist: the table's own
      retention would expire something, so the run uses the table defaults (no options).
``remove_orphan_files`` when ``gc.enabled`` is true, the oldest snapshot is older than the
    orphan age floor (3 days, Iceberg's ``older_than`` default: younger files are never
    removed, so a younger table cannot have removable orphans), and another file-writing
    operation is recommended in the same list. Orphans come only from writes that did not
    commit (crashed or failed writers and maintenance runs), which metadata cannot show, and
    finding them lists the whole table location, which is slow on object stores. A table in
    need of other maintenance has had the churn that leaves orphans, and gets one sweep at the
    end of the run (Iceberg's maintenance guide runs it after expiry); a quiet table is not
    listed. Its options are the operation's defaults (a dry run unless told otherwise).

Estimates are from health metrics only, so several are bounds; each field is None when
health cannot tell:

* ``files_removed``: files the table tracks fewer afterwards (removed minus written);
* ``bytes``: bytes the run rewrites (compaction: the small files' bytes, exact when every data
  file is small and otherwise an upper bound; flush: the root) or deletes;
* ``planning_entries_saved``: metadata entries every planning or metadata load reads fewer
  of (manifest entries of files, manifest-list or root entries, snapshots in the metadata JSON).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from firn.maintenance.health import SMALL_FILE_RATIO, TableHealth
from firn.maintenance.operations import (
    EXPIRE_SNAPSHOTS,
    FLUSH_ROOT,
    REMOVE_ORPHAN_FILES,
    REWRITE_DATA_FILES,
    REWRITE_DELETION_VECTORS,
    REWRITE_MANIFESTS,
)
from firn.maintenance.serde import from_jsonable, to_jsonable
from firn.spec.properties import (
    MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO,
    MAINTENANCE_COMPACT_MIN_SMALL_FILES,
    MAINTENANCE_EXPIRE_MAX_SNAPSHOTS,
    MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS,
    MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES,
    MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO,
    MaintenanceThresholds,
    TableProperties,
)
from firn.spec.versions import MIN_FORMAT_VERSION_DELETION_VECTORS

T = TypeVar("T")

# Iceberg's remove_orphan_files ``older_than`` default: files younger than this are never
# removed (a write may still be in flight).
ORPHAN_MIN_AGE_MS = 3 * 24 * 3600 * 1000


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """What a recommended run should gain (see the module docstring; None: cannot tell)."""

    files_removed: int | None = None
    bytes: int | None = None
    planning_entries_saved: int | None = None


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """One operation worth running: ``table.maintenance.<operation>(**options).run()``."""

    operation: str
    reason: str
    options: dict[str, Any] = field(default_factory=dict)
    estimate: Estimate = field(default_factory=Estimate)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = to_jsonable(self)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recommendation:
        return from_jsonable(cls, data, where="recommendation")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rewrite_deletes(h: TableHealth, t: MaintenanceThresholds) -> Recommendation | None:
    """Merging (v2) or converting (v3+) position delete files: recommended only where the
    operation has such files to work on. A high delete ratio is compaction's job (see
    ``_compact``): this operation never lowers the ratio."""
    if h.position_delete_files == 0:
        return None
    if h.format_version < MIN_FORMAT_VERSION_DELETION_VECTORS:
        if h.position_delete_files < t.rewrite_dvs_min_delete_files:
            return None
        reason = (
            f"{h.position_delete_files:,} position delete files to merge "
            f"({MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES} = {t.rewrite_dvs_min_delete_files})"
        )
    else:
        reason = f"{h.position_delete_files:,} position delete files to convert into deletion vectors"
    # Merged (v2) or converted into DVs packed in one Puffin file (v3+): at best one file is left.
    merged = max(0, h.position_delete_files - 1)
    return Recommendation(
        operation=REWRITE_DELETION_VECTORS,
        reason=reason,
        # Iceberg's per-partition min-input-files (5) would skip partitions holding two to
        # four of the files the table-level threshold counted.
        options={"min-input-files": 2} if h.format_version < MIN_FORMAT_VERSION_DELETION_VECTORS else {},
        estimate=Estimate(files_removed=merged, bytes=None, planning_entries_saved=merged),
    )


def _delete_ratio_reason(h: TableHealth, t: MaintenanceThresholds, options: dict[str, Any]) -> str:
    """Compaction for a high delete ratio: the options that make it rewrite the files whose
    deletes cross the table's own threshold, and the reason saying so."""
    threshold = t.rewrite_dvs_min_delete_ratio
    # Rewritten with their DVs and file-scoped position deletes applied, files at or above
    # ``threshold`` lose their deletes; every file left is below it, so the table's ratio
    # falls below it too. (Iceberg's per-file default, 0.3, would leave the ratio anywhere
    # between 0.1 and 0.3.)
    options["delete-ratio-threshold"] = threshold
    options["remove-dangling-deletes"] = True
    reason = (
        f"{_pct(h.delete_ratio)} of rows are deleted ({h.position_deletes + h.equality_deletes:,} of "
        f"{h.records:,}; {MAINTENANCE_REWRITE_DVS_MIN_DELETE_RATIO} = {threshold}): rewrite the data files "
        f"whose deleted share is at least {threshold} (delete-ratio-threshold)"
    )
    if h.position_delete_files or h.equality_delete_files:
        # A partition-scoped position delete file or an equality delete names no single data
        # file, so its per-file share is unknown: every file they apply to is rewritten.
        options["delete-file-threshold"] = 1
        reason += (
            " and every data file that position or equality delete files apply to (delete-file-threshold)"
        )
    return reason + ", then remove the delete files no live data file needs"


def _compact(h: TableHealth, t: MaintenanceThresholds) -> Recommendation | None:
    reasons = []
    options: dict[str, Any] = {}
    files_removed = 0
    rewritten = 0
    if h.small_files >= t.compact_min_small_files and h.small_file_ratio >= t.compact_min_small_file_ratio:
        reasons.append(
            f"{h.small_files:,} of {h.data_files:,} data files ({_pct(h.small_file_ratio)}) are smaller than "
            f"{int(SMALL_FILE_RATIO * h.target_file_size_bytes):,} bytes ({MAINTENANCE_COMPACT_MIN_SMALL_FILES} = "
            f"{t.compact_min_small_files}, {MAINTENANCE_COMPACT_MIN_SMALL_FILE_RATIO} = "
            f"{t.compact_min_small_file_ratio})"
        )
        # The small files' bytes: exact when every file is small; otherwise an upper bound
        # (each is below the threshold, and every other file is at least at it).
        threshold = int(SMALL_FILE_RATIO * h.target_file_size_bytes)
        rewritten = max(
            0, min(h.small_files * threshold, h.data_bytes - (h.data_files - h.small_files) * threshold)
        )
        outputs = max(1, math.ceil(rewritten / h.target_file_size_bytes))
        files_removed += max(0, h.small_files - outputs)
        # The table-level thresholds decided that compaction pays; Iceberg's per-group
        # ``min-input-files`` (5) would then skip every partition holding two to four small
        # files, and the recommendation would stay with nothing done. Any two small files of
        # a partition make a group.
        options["min-input-files"] = 2
    by_ratio = h.delete_files > 0 and h.delete_ratio >= t.rewrite_dvs_min_delete_ratio
    if by_ratio:
        reasons.append(_delete_ratio_reason(h, t, options))
    if h.equality_delete_files >= t.rewrite_dvs_min_delete_files:
        reasons.append(
            f"{h.equality_delete_files:,} equality delete files, which only rewriting the data they apply to "
            f"resolves, then removing them ({MAINTENANCE_REWRITE_DVS_MIN_DELETE_FILES} = "
            f"{t.rewrite_dvs_min_delete_files})"
        )
        options["delete-file-threshold"] = 1
        options["remove-dangling-deletes"] = True
    if by_ratio or "delete-file-threshold" in options:
        # The delete files that go: every position and equality delete file once the files
        # they apply to are rewritten (delete-file-threshold 1), and the DVs of the rewritten
        # files, at least one when the ratio is high; the bytes rewritten are at most all.
        gone = h.equality_delete_files + (
            h.position_delete_files if "delete-file-threshold" in options else 0
        )
        files_removed += max(gone, 1 if by_ratio else 0)
        rewritten = h.data_bytes
    if not reasons:
        return None
    return Recommendation(
        operation=REWRITE_DATA_FILES,
        reason="; ".join(reasons),
        options=options,
        estimate=Estimate(files_removed=files_removed, bytes=rewritten, planning_entries_saved=files_removed),
    )


def _flush(h: TableHealth, p: TableProperties) -> Recommendation | None:
    if h.root_entries is None:
        return None
    data = h.root_data_files or 0
    deletes = h.root_delete_files or 0
    mdvs = h.root_manifest_dvs or 0
    too_big = (h.root_bytes or 0) > p.root_max_bytes
    move_data = data > 0 and (too_big or data > p.root_max_data_files)
    move_deletes = deletes > 0 and (too_big or deletes > p.root_max_delete_vectors)
    fold = mdvs > 0 and (too_big or mdvs > p.root_max_manifest_dvs)
    if not (move_data or move_deletes or fold):
        return None
    parts = []
    if move_data:
        parts.append(f"{data:,} data files (commit.root.max-data-files = {p.root_max_data_files})")
    if move_deletes:
        parts.append(
            f"{deletes:,} delete files (commit.root.max-delete-vectors = {p.root_max_delete_vectors})"
        )
    if fold:
        parts.append(f"{mdvs:,} manifest DVs (commit.root.max-manifest-dvs = {p.root_max_manifest_dvs})")
    reason = "the root holds " + ", ".join(parts)
    if too_big:
        reason += f"; it is {h.root_bytes:,} bytes (commit.root.max-bytes = {p.root_max_bytes})"
    leaf = p.leaf_target_entries
    moved = (data if move_data else 0) + (deletes if move_deletes else 0)
    new_leaf_entries = (math.ceil(data / leaf) if move_data else 0) + (
        math.ceil(deletes / leaf) if move_deletes else 0
    )
    saved = moved - new_leaf_entries + (mdvs if fold else 0)
    return Recommendation(
        operation=FLUSH_ROOT,
        reason=reason,
        estimate=Estimate(files_removed=0, bytes=h.root_bytes, planning_entries_saved=saved),
    )


def _rewrite_manifests(h: TableHealth, t: MaintenanceThresholds) -> Recommendation | None:
    if h.small_manifests < t.manifests_min_small_manifests:
        return None
    kind = "leaf manifests" if h.root_entries is not None else "manifests"
    merged = max(0, h.small_manifests - 1)  # an upper bound: all of them fit in one
    return Recommendation(
        operation=REWRITE_MANIFESTS,
        reason=f"{h.small_manifests:,} of {h.manifests:,} {kind} are small "
        f"({MAINTENANCE_MANIFESTS_MIN_SMALL_MANIFESTS} = {t.manifests_min_small_manifests})",
        estimate=Estimate(files_removed=merged, bytes=None, planning_entries_saved=merged),
    )


def _expire(h: TableHealth, t: MaintenanceThresholds, p: TableProperties) -> Recommendation | None:
    if t.expire_max_snapshots > 0 and h.snapshots > t.expire_max_snapshots:
        excess = h.snapshots - t.expire_max_snapshots
        return Recommendation(
            operation=EXPIRE_SNAPSHOTS,
            reason=f"{h.snapshots:,} snapshots ({MAINTENANCE_EXPIRE_MAX_SNAPSHOTS} = {t.expire_max_snapshots})",
            options={"retain-last": t.expire_max_snapshots, "older-than": h.measured_at_ms},
            # At least one manifest list or root per expired snapshot (an upper bound on the
            # snapshots when branches or tags retain some).
            estimate=Estimate(files_removed=excess, bytes=None, planning_entries_saved=excess),
        )
    age = h.oldest_snapshot_age_ms
    if age is not None and age > p.max_snapshot_age_ms and h.snapshots > p.min_snapshots_to_keep:
        return Recommendation(
            operation=EXPIRE_SNAPSHOTS,
            reason=f"the oldest of {h.snapshots:,} snapshots is {age / 86_400_000:.1f} days old "
            f"(history.expire.max-snapshot-age-ms = {p.max_snapshot_age_ms}, "
            f"min-snapshots-to-keep = {p.min_snapshots_to_keep})",
            estimate=Estimate(),
        )
    return None


def _orphans(h: TableHealth, p: TableProperties, others: list[Recommendation]) -> Recommendation | None:
    age = h.oldest_snapshot_age_ms
    if not p.gc_enabled or age is None or age < ORPHAN_MIN_AGE_MS or not others:
        return None
    names = ", ".join(r.operation for r in others)
    return Recommendation(
        operation=REMOVE_ORPHAN_FILES,
        reason=f"the table has churn that can leave uncommitted files ({names} recommended) and is older "
        f"than the {ORPHAN_MIN_AGE_MS // 86_400_000}-day orphan age floor",
        estimate=Estimate(),
    )


def recommend(health: TableHealth, properties: Mapping[str, str]) -> list[Recommendation]:
    """The operations worth running on a table with this ``health`` and these table
    ``properties``, in nightly order (rules and defaults: module docstring). A malformed
    threshold property is a ``ValidationError`` naming it."""
    if health.snapshot_id is None:
        return []
    t = MaintenanceThresholds.parse(properties)
    p = TableProperties.parse(properties)
    found = [
        _rewrite_deletes(health, t),
        _compact(health, t),
        _flush(health, p),
        _rewrite_manifests(health, t),
        _expire(health, t, p),
    ]
    out = [r for r in found if r is not None]
    compact = found[1]
    if compact is not None and compact.options.get("delete-file-threshold") == 1:
        # Compaction rewrites every data file a position delete file applies to and then
        # removes the delete files: merging or converting them first would be wasted work.
        out = [r for r in out if r.operation != REWRITE_DELETION_VECTORS]
    orphans = _orphans(health, p, out)
    if orphans is not None:
        out.append(orphans)
    return out


def run_in_turn(
    recommendations: Sequence[Recommendation],
    recommend_again: Callable[[], Sequence[Recommendation]],
    run: Callable[[Recommendation], T],
) -> tuple[list[T], list[str]]:
    """Run ``recommendations`` in their order through ``run``, asking ``recommend_again()``
    before each one after the first: an earlier operation may have done a later one's work
    (compaction leaves fewer files in the V4 root, expiry fewer manifests), so a step runs only
    if it is still recommended, with the options recommended now. Returns the results and the
    operations left out because they were no longer recommended (``firn maintain recommend
    --run`` and ``FirnMaintenanceOperator`` both run their lists through this)."""
    results: list[T] = []
    satisfied: list[str] = []
    for i, listed in enumerate(recommendations):
        current = {r.operation: r for r in (recommendations if i == 0 else recommend_again())}
        now = current.get(listed.operation)
        if now is None:
            satisfied.append(listed.operation)
            continue
        results.append(run(now))
    return results, satisfied


__all__ = ["ORPHAN_MIN_AGE_MS", "Estimate", "Recommendation", "recommend", "run_in_turn"]
