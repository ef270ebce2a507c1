"""Deleting files as work units, so a runner (threads here, Spark tasks in ``firn.spark``)
deletes batches in parallel.

A unit is ``{"kind": "delete-files", ..., "payload": {"file-kind": ..., "paths": [...],
"sizes": [...], "sequential": bool}}``; :func:`run_delete_unit` executes one from its JSON
alone and reports what it deleted. A file that is already gone counts as deleted (deleting is
idempotent, so a retried unit is harmless); a file that cannot be deleted is reported, never
raised, so one bad object does not stop the others (Iceberg Java suppresses delete failures
the same way and leaves the leftovers to orphan removal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from firn.io.base import FileIO
from firn.maintenance.runner import UnitContext, UnitResult, WorkUnit, execute_unit, make_unit

DELETE_UNIT = "delete-files"
# Paths per unit when no concurrency was asked for: big enough that unit overhead (a Spark
# task, a thread hand-off) is small next to the deletes, small enough to spread out.
DEFAULT_BATCH = 1000


def delete_units(
    files: Mapping[str, Mapping[str, int]],
    *,
    io: FileIO,
    metadata_location: str,
    io_ref: str | None,
    max_concurrent_deletes: int | None = None,
) -> list[WorkUnit]:
    """Units deleting ``files`` (kind -> path -> size; a size below 0 is unknown).

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
    failed: dict[str, str] = {}
    if not payload.get("sequential"):
        try:
            ctx.io.delete_many(paths)
        except Exception:  # some failed: find which, one by one (missing files are not errors)
            failed = _one_by_one(ctx.io, paths)
    else:
        failed = _one_by_one(ctx.io, paths)
    deleted = [(p, s) for p, s in zip(paths, sizes) if p not in failed]
    return {
        "file-kind": payload.get("file-kind"),
        "deleted": len(deleted),
        "deleted-bytes": sum(max(s, 0) for _, s in deleted),
        "failed": [{"path": p, "error": e} for p, e in failed.items()],
    }


def _one_by_one(io: FileIO, paths: Sequence[str]) -> dict[str, str]:
    failed: dict[str, str] = {}
    for p in paths:
        try:
            io.delete(p)
        except Exception as e:
            failed[p] = f"{type(e).__name__}: {e}"
    return failed


def run_delete_unit(unit: WorkUnit) -> UnitResult:
    """Execute one ``delete-files`` unit (module level, so Spark can ship it by reference)."""
    return execute_unit(_delete, unit)


@dataclass
class DeleteTally:
    """What a set of delete units did, by file kind."""

    deleted: dict[str, int] = field(default_factory=dict)
    deleted_bytes: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)


def tally(results: Sequence[UnitResult]) -> DeleteTally:
    out = DeleteTally()
    for r in results:
        kind = str(r.get("file-kind"))
        out.deleted[kind] = out.deleted.get(kind, 0) + int(r.get("deleted", 0))
        out.deleted_bytes[kind] = out.deleted_bytes.get(kind, 0) + int(r.get("deleted-bytes", 0))
        out.failed.extend((str(f["path"]), str(f["error"])) for f in r.get("failed") or [])
    return out


__all__ = ["DEFAULT_BATCH", "DELETE_UNIT", "DeleteTally", "delete_units", "run_delete_unit", "tally"]
