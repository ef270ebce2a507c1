"""Deleting files as work units, so a runner (threads here, Spark tasks in ``firn.spark``)
deletes batches in parallel.

A unit is ``{"kind": "delete-files", ..., "payload": {"file-kind": ..., "paths": [...],
"sizes": [...], "sequential": bool, "scope": {...}}}``; :func:`run_delete_unit` executes one
from its JSON alone and reports what it deleted and what it kept. Every path goes through
:func:`firn.io.deletion.delete_confined` under the table's
:class:`~firn.spec.deletion_scope.DeletionScope`, which the unit carries (an executor has no
catalog to ask), so a file outside the table's own places, inside another table's, or reached
through a symlink is kept and reported; a unit without a scope deletes nothing. A file that is
already gone counts as deleted (deleting is idempotent, so a retried unit is harmless); a file
that cannot be deleted is reported, never raised, so one bad object does not stop the others
(Iceberg Java suppresses delete failures the same way and leaves the leftovers to orphan
removal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.io.deletion import KeptFile, delete_confined
from firn.maintenance.runner import UnitContext, UnitResult, WorkUnit, execute_unit, make_unit
from firn.spec.deletion_scope import DeletionScope

DELETE_UNIT = "delete-files"
# Paths per unit when no concurrency was asked for: big enough that unit overhead (a Spark
# task, a thread hand-off) is small next to the deletes, small enough to spread out.
DEFAULT_BATCH = 1000


def delete_units(
    files: Mapping[str, Mapping[str, int]],
    *,
    scope: DeletionScope,
    io: FileIO,
    metadata_location: str,
    io_ref: str | None,
    max_concurrent_deletes: int | None = None,
) -> list[WorkUnit]:
    """Units deleting ``files`` (kind -> path -> size; a size below 0 is unknown) under
    ``scope`` (the table's :meth:`~firn.maintenance.base.MaintainedTable.deletion_scope`).

    Without ``max_concurrent_deletes`` each unit deletes up to ``DEFAULT_BATCH`` paths with
    the FileIO's own parallel ``delete_many``. With it, the paths are split into at least that
    many units and each deletes one file at a time, so at most that many deletes run at once
    on a runner with that many workers."""
    units: list[WorkUnit] = []
    total = sum(len(g) for g in files.values())
    if total == 0:
        return units
    batch = DEFAULT_BATCH
    if max_concurrent_deletes:
        batch = max(1, min(DEFAULT_BATCH, math.ceil(total / max_concurrent_deletes)))
    for kind, group in files.items():
        items = sorted(group.items())
        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            payload = {
                "file-kind": kind,
                "paths": [p for p, _ in chunk],
                "sizes": [s for _, s in chunk],
                "sequential": bool(max_concurrent_deletes),
                "scope": scope.to_dict(),
            }
            units.append(
                make_unit(
                    DELETE_UNIT, io=io, metadata_location=metadata_location, payload=payload, io_ref=io_ref
                )
            )
    return units


def _delete(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
    paths = [str(p) for p in payload.get("paths") or []]
    sizes = [int(s) for s in payload.get("sizes") or [-1] * len(paths)]
    raw_scope = payload.get("scope")
    if not isinstance(raw_scope, dict):
        raise ValidationError(
            f"{DELETE_UNIT} unit for {ctx.metadata_location} carries no deletion scope: nothing is "
            "deleted without one (a unit from an older Firn? plan again)"
        )
    report = delete_confined(
        ctx.io, DeletionScope.from_dict(raw_scope), paths, sequential=bool(payload.get("sequential"))
    )
    gone = set(report.deleted)
    deleted = [(p, s) for p, s in zip(paths, sizes) if p in gone]
    return {
        "file-kind": payload.get("file-kind"),
        "deleted": len(deleted),
        "deleted-bytes": sum(max(s, 0) for _, s in deleted),
        "kept": [{"path": k.path, "kind": k.kind, "reason": k.reason} for k in report.kept],
        "failed": [{"path": f.path, "error": f.error} for f in report.failed],
    }


def run_delete_unit(unit: WorkUnit) -> UnitResult:
    """Execute one ``delete-files`` unit (module level, so Spark can ship it by reference)."""
    return execute_unit(_delete, unit)


@dataclass
class DeleteTally:
    """What a set of delete units did, by file kind."""

    deleted: dict[str, int] = field(default_factory=dict)
    deleted_bytes: dict[str, int] = field(default_factory=dict)
    kept: list[KeptFile] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def skipped(self) -> list[tuple[str, str]]:
        """(path, reason) of every file kept or failed, for a result's ``skipped``."""
        return [(k.path, f"kept ({k.kind}): {k.reason}") for k in self.kept] + [
            (p, f"not deleted: {e}") for p, e in self.failed
        ]


def tally(results: Sequence[UnitResult]) -> DeleteTally:
    out = DeleteTally()
    for r in results:
        kind = str(r.get("file-kind"))
        out.deleted[kind] = out.deleted.get(kind, 0) + int(r.get("deleted", 0))
        out.deleted_bytes[kind] = out.deleted_bytes.get(kind, 0) + int(r.get("deleted-bytes", 0))
        out.kept.extend(
            KeptFile(path=str(k["path"]), kind=str(k["kind"]), reason=str(k["reason"]))
            for k in r.get("kept") or []
        )
        out.failed.extend((str(f["path"]), str(f["error"])) for f in r.get("failed") or [])
    return out


__all__ = ["DEFAULT_BATCH", "DELETE_UNIT", "DeleteTally", "delete_units", "run_delete_unit", "tally"]
