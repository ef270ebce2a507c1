"""Orphan file removal (Iceberg's ``remove_orphan_files`` procedure).

``table.maintenance.remove_orphan_files(older_than=..., location=..., dry_run=...,
prefix_mismatch_mode=..., equal_schemes=..., equal_authorities=..., max_concurrent_deletes=...,
force=...)`` (Iceberg's ``stream_results`` and ``prefix_listing`` are accepted and change
nothing; its Spark-only ``file_list_view`` is not an option here) lists the files under ``location`` (default: the table location, data and
metadata) through the table's FileIO, so s3/gs/hdfs work as local paths do, and compares them
with every file the table references:

* every snapshot's tree (``reachability``: manifest lists and roots, manifests and leaves, the
  data, delete and Puffin files of live entries, manifest-DV Puffin files);
* the current metadata JSON and those in its metadata log, statistics and partition statistics
  files, and ``metadata/version-hint.text``.

A listed file is an orphan when nothing references it and it was last modified before
``older_than`` (default now - 3 days): younger files may belong to a commit in flight. An
``older_than`` less than a day ago is refused unless ``force=True`` (Firn's own option), since
a writer's data files can be that old before its commit lands. Files and directories whose
names start with ``.`` or ``_`` are skipped, except partition directories of fields so named
(Java's hidden-path filter).

Paths are compared without scheme and authority, after mapping them through
``equal_schemes`` (default ``{"s3n,s3a": "s3"}``) and ``equal_authorities``. A listed file
whose path matches a referenced one only with a different scheme or authority is a *prefix
mismatch*: ``prefix_mismatch_mode`` ERROR (default) refuses, naming the conflicting pairs;
IGNORE keeps the file; DELETE treats it as an orphan.

It is a dry run unless ``dry_run=False``: the plan and the result list the orphans (paths,
count, bytes). With ``dry_run=False`` they are deleted as ``delete-files`` work units, after
the references are checked again against the table as it is then.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from firn.errors import ValidationError
from firn.io.base import FileInfo
from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    Skipped,
    plan_identity,
)
from firn.maintenance.file_deletion import delete_units, run_delete_unit, tally
from firn.maintenance.options import Option, options_of
from firn.maintenance.reachability import metadata_paths, reachable, read_trees
from firn.maintenance.runner import LocalRunner, Runner, UnitFunction, UnitResult, WorkUnit
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata, now_ms

DAY_MS = 24 * 3600 * 1000
DEFAULT_OLDER_THAN_MS = 3 * DAY_MS  # Java: TimeUnit.DAYS.toMillis(3)
MIN_OLDER_THAN_MS = DAY_MS  # younger cut-offs need force=True
DEFAULT_EQUAL_SCHEMES = {"s3n,s3a": "s3"}
PREFIX_MISMATCH_MODES = ("ERROR", "IGNORE", "DELETE")
VERSION_HINT = "version-hint.text"


@dataclass(frozen=True, kw_only=True)
class OrphanFile:
    path: str
    size: int


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesResult(MaintenanceResult):
    """The orphans found (``orphan_file_locations``, Iceberg's output column) and, unless it was
    a dry run, how many were deleted."""

    OPERATION: ClassVar[str] = "remove_orphan_files"

    dry_run: bool = True
    orphan_file_locations: tuple[str, ...] = ()
    orphan_bytes: int = 0
    deleted_files: int = 0
    deleted_bytes: int = 0

    @property
    def orphan_files_count(self) -> int:
        return len(self.orphan_file_locations)


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesPlan(MaintenancePlan[RemoveOrphanFilesResult]):
    """The orphans under ``location``; ``listed`` files were seen, ``too_young`` of them kept
    for their age, ``hidden`` skipped by name, ``mismatched`` kept for a prefix mismatch
    (IGNORE; the pairs are in ``conflicts``)."""

    OPERATION: ClassVar[str] = "remove_orphan_files"

    now_ms: int
    older_than_ms: int
    location: str
    dry_run: bool
    prefix_mismatch_mode: str
    equal_schemes: dict[str, str]
    equal_authorities: dict[str, str]
    listed: int
    too_young: int
    hidden: int
    referenced: int
    mismatched: int = 0
    conflicts: tuple[str, ...] = ()
    orphans: tuple[OrphanFile, ...] = ()

    @property
    def is_noop(self) -> bool:
        return self.dry_run or not self.orphans

    @property
    def orphan_bytes(self) -> int:
        return sum(max(o.size, 0) for o in self.orphans)

    def describe(self) -> str:
        lines = [
            f"  listed {self.listed} files under {self.location}: {self.referenced} referenced paths known, "
            f"{self.too_young} modified after {_when(self.older_than_ms)} kept, {self.hidden} hidden skipped",
            f"  {len(self.orphans)} orphans, {self.orphan_bytes} bytes"
            + (" (dry run: nothing is deleted; pass dry_run=False)" if self.dry_run else ""),
        ]
        lines += [f"    {o.path}" for o in self.orphans[:20]]
        if len(self.orphans) > 20:
            lines.append(f"    ... {len(self.orphans) - 20} more")
        if self.mismatched:
            lines.append(
                f"  {self.mismatched} kept for a scheme/authority mismatch: {', '.join(self.conflicts)}"
            )
        return "\n".join(lines)

    def default_runner(self) -> Runner:
        n = self.options.get("max-concurrent-deletes")
        return LocalRunner(max_workers=int(n)) if n else LocalRunner()

    def unit_function(self) -> UnitFunction | None:
        return run_delete_unit

    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> RemoveOrphanFilesResult:
        orphans = list(self.orphans)
        skipped: list[Skipped] = []
        if table.metadata_location != self.metadata_location and orphans:
            # The table moved since planning: a commit since then may reference a listed file
            # (add_files of an old file, say). Check the orphans against the table as it is now.
            known = _Matcher(self.equal_schemes, self.equal_authorities)
            known.add_all(_referenced(table, table.metadata, self.location))
            still = []
            for o in orphans:
                if known.match(o.path, "DELETE" if self.prefix_mismatch_mode == "DELETE" else "IGNORE")[0]:
                    still.append(o)
                else:
                    skipped.append(Skipped(item=o.path, reason="referenced by a commit made after planning"))
            orphans = still
        object.__setattr__(self, "_pending", [] if self.dry_run else orphans)
        return RemoveOrphanFilesResult(
            table=self.table,
            dry_run=self.dry_run,
            orphan_file_locations=tuple(o.path for o in orphans),
            orphan_bytes=sum(max(o.size, 0) for o in orphans),
            skipped=tuple(skipped),
        )

    def cleanup_units(
        self, table: MaintainedTable, result: RemoveOrphanFilesResult, io_ref: str
    ) -> list[WorkUnit]:
        pending: list[OrphanFile] = getattr(self, "_pending", [])
        n = self.options.get("max-concurrent-deletes")
        return delete_units(
            {"orphan_files": {o.path: o.size for o in pending}},
            io=table.io,
            metadata_location=table.metadata_location,
            io_ref=io_ref,
            max_concurrent_deletes=int(n) if n else None,
        )

    def finish(
        self, result: RemoveOrphanFilesResult, cleanup: Sequence[UnitResult]
    ) -> RemoveOrphanFilesResult:
        t = tally(cleanup)
        object.__setattr__(self, "_pending", [])
        return dataclasses.replace(
            result,
            deleted_files=sum(t.deleted.values()),
            deleted_bytes=sum(t.deleted_bytes.values()),
            skipped=(*result.skipped, *(Skipped(item=p, reason=f"not deleted: {e}") for p, e in t.failed)),
        )


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


# -- path identity (Java's FileURI) ---------------------------------------------------------------
def _flatten(mapping: Mapping[str, str]) -> dict[str, str]:
    """``{"s3n,s3a": "s3"}`` -> ``{"s3n": "s3", "s3a": "s3"}``."""
    out: dict[str, str] = {}
    for keys, value in mapping.items():
        for k in keys.split(","):
            if k.strip():
                out[k.strip()] = value.strip()
    return out


def split_location(location: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a location; a plain path has neither scheme nor authority.
    The path has duplicate and trailing slashes removed, as Hadoop's ``Path`` normalizes it."""
    parts = urlsplit(location)
    if len(parts.scheme) > 1:  # one letter would be a Windows drive
        scheme, authority, path = parts.scheme, parts.netloc, parts.path
    else:
        scheme, authority, path = "", "", location
    while "//" in path:
        path = path.replace("//", "/")
    if len(path) > 1:
        path = path.rstrip("/")
    return scheme, authority, path


class _Matcher:
    """Referenced locations indexed by normalized path, each with its schemes/authorities."""

    def __init__(self, equal_schemes: Mapping[str, str], equal_authorities: Mapping[str, str]) -> None:
        self.schemes = _flatten(equal_schemes)
        self.authorities = _flatten(equal_authorities)
        self.known: dict[str, set[tuple[str, str]]] = {}

    def key(self, location: str) -> tuple[str, str, str]:
        scheme, authority, path = split_location(location)
        return self.schemes.get(scheme, scheme).lower(), self.authorities.get(authority, authority), path

    def add_all(self, locations: Sequence[str] | set[str]) -> None:
        for loc in locations:
            scheme, authority, path = self.key(loc)
            self.known.setdefault(path, set()).add((scheme, authority))

    def match(self, location: str, mode: str) -> tuple[bool, str | None]:
        """(is an orphan, the conflict when a prefix mismatch kept it)."""
        scheme, authority, path = self.key(location)
        refs = self.known.get(path)
        if not refs:
            return True, None
        # Java's FileURI: an empty scheme or authority on the referenced side matches any.
        for s, a in refs:
            if (not s or s == scheme) and (not a or a == authority):
                return False, None
        if mode == "DELETE":
            return True, None
        s, a = sorted(refs)[0]
        return False, f"{s or '-'}://{a or '-'} (referenced) vs {scheme or '-'}://{authority or '-'} (listed)"


def _referenced(table: MaintainedTable, md: TableMetadata, location: str) -> set[str]:
    trees = read_trees(table.io, md, list(md.snapshots))
    out = reachable(table.io, md, trees).paths()
    out.update(metadata_paths(md, table.metadata_location))
    for base in {md.location.rstrip("/"), location.rstrip("/")}:
        out.add(f"{base}/metadata/{VERSION_HINT}")
    return out


def _hidden(relative: str, partition_names: set[str]) -> bool:
    for part in relative.split("/"):
        if part.startswith((".", "_")):
            name = part.split("=", 1)[0]
            if "=" in part and name in partition_names:
                continue
            return True
    return False


class RemoveOrphanFiles(MaintenanceOperation[RemoveOrphanFilesPlan, RemoveOrphanFilesResult]):
    """``table.maintenance.remove_orphan_files(**options)``; see the module docstring."""

    OPERATION = "remove_orphan_files"
    OPTIONS = options_of(
        Option("older-than", "timestamp", "only files last modified before this (default: now - 3 days)"),
        Option("location", "str", "the directory to list (default: the table location)"),
        Option("dry-run", "bool", "only report the orphans (default: true)"),
        Option(
            "max-concurrent-deletes", "int", "at most this many file deletes at once (default: the runner's)"
        ),
        Option(
            "prefix-mismatch-mode",
            "str",
            "a path referenced with another scheme/authority: ERROR (default), IGNORE or DELETE",
        ),
        Option("equal-schemes", "str-map", 'schemes to treat as equal (default {"s3n,s3a": "s3"})'),
        Option("equal-authorities", "str-map", "authorities to treat as equal"),
        Option("force", "bool", "allow an older_than less than a day ago"),
        Option(
            "stream-results",
            "bool",
            "Iceberg's Spark driver-memory switch; accepted, no effect here: deletes are already "
            "work units spread by the runner",
        ),
        Option(
            "prefix-listing",
            "bool",
            "Iceberg's switch to prefix listing; accepted, no effect here: listing always goes "
            "through the FileIO's prefix listing",
        ),
    )

    def __init__(self, table: MaintainedTable, **options: object) -> None:
        super().__init__(table, **options)
        mode = str(self.options.get("prefix-mismatch-mode", "ERROR")).strip().upper()
        if mode not in PREFIX_MISMATCH_MODES:
            raise ValidationError(
                f"remove_orphan_files: prefix_mismatch_mode must be one of {list(PREFIX_MISMATCH_MODES)}, "
                f"got {self.options['prefix-mismatch-mode']!r}"
            )
        self.options["prefix-mismatch-mode"] = mode
        deletes = self.options.get("max-concurrent-deletes")
        if deletes is not None and deletes < 1:
            raise ValidationError(
                f"remove_orphan_files: max_concurrent_deletes must be at least 1, got {deletes}"
            )
        self._check_older_than(now_ms())

    def _check_older_than(self, now: int) -> None:
        older_than = self.options.get("older-than")
        if older_than is not None and older_than > now - MIN_OLDER_THAN_MS and not self.options.get("force"):
            raise ValidationError(
                f"remove_orphan_files on {self.table.name}: older_than {older_than} is less than a day ago; "
                "files that young may belong to a commit in flight and deleting them would corrupt the table. "
                "Pass force=True if no writer is running."
            )

    def plan(self) -> RemoveOrphanFilesPlan:
        self.table.refresh()
        md = self.table.metadata
        now = now_ms()
        self._check_older_than(now)
        older_than = int(self.options.get("older-than", now - DEFAULT_OLDER_THAN_MS))
        location = str(self.options.get("location", md.location)).rstrip("/")
        dry_run = bool(self.options.get("dry-run", True))
        mode = str(self.options["prefix-mismatch-mode"])
        schemes = dict(self.options.get("equal-schemes", DEFAULT_EQUAL_SCHEMES))
        authorities = dict(self.options.get("equal-authorities", {}))
        matcher = _Matcher(schemes, authorities)
        referenced = _referenced(self.table, md, location)
        matcher.add_all(referenced)
        partition_names = {f.name for spec in md.partition_specs for f in spec.fields}
        listed = too_young = hidden = 0
        orphans: list[OrphanFile] = []
        conflicts: dict[str, None] = {}
        mismatched = 0
        for info in _list(self.table, location):
            listed += 1
            relative = (
                info.location[len(location) :].lstrip("/")
                if info.location.startswith(location)
                else info.location
            )
            if _hidden(relative, partition_names):
                hidden += 1
                continue
            if info.modified_ms is None or info.modified_ms >= older_than:
                too_young += 1
                continue
            orphan, conflict = matcher.match(info.location, mode)
            if orphan:
                orphans.append(OrphanFile(path=info.location, size=info.size))
            elif conflict is not None:
                mismatched += 1
                conflicts[conflict] = None
        if conflicts and mode == "ERROR":
            raise ValidationError(
                f"remove_orphan_files on {self.table.name}: {mismatched} listed files match referenced files "
                f"except for scheme/authority ({'; '.join(conflicts)}). Say which are equal with equal_schemes / "
                "equal_authorities, or set prefix_mismatch_mode to IGNORE (keep them) or DELETE (only if you "
                "are sure they are different files: deleted files cannot be recovered)"
            )
        head = md.snapshot_for_ref(MAIN_BRANCH)
        options: dict[str, Any] = {
            "older-than": older_than,
            "location": location,
            "dry-run": dry_run,
            "prefix-mismatch-mode": mode,
            "equal-schemes": schemes,
            "equal-authorities": authorities,
            "force": bool(self.options.get("force", False)),
        }
        if "max-concurrent-deletes" in self.options:
            options["max-concurrent-deletes"] = self.options["max-concurrent-deletes"]
        return RemoveOrphanFilesPlan(
            **plan_identity(self.table, head.snapshot_id if head else None, options),
            now_ms=now,
            older_than_ms=older_than,
            location=location,
            dry_run=dry_run,
            prefix_mismatch_mode=mode,
            equal_schemes=schemes,
            equal_authorities=authorities,
            listed=listed,
            too_young=too_young,
            hidden=hidden,
            referenced=len(referenced),
            mismatched=mismatched,
            conflicts=tuple(conflicts),
            orphans=tuple(sorted(orphans, key=lambda o: o.path)),
        )


def _list(table: MaintainedTable, location: str) -> list[FileInfo]:
    return list(table.io.list_prefix(location))


__all__ = [
    "DEFAULT_OLDER_THAN_MS",
    "OrphanFile",
    "RemoveOrphanFiles",
    "RemoveOrphanFilesPlan",
    "RemoveOrphanFilesResult",
    "split_location",
]
