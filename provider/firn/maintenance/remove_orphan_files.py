"""Orphan file removal (Iceberg's ``remove_orphan_files`` procedure), in two phases.

``table.maintenance.remove_orphan_files(older_than=..., location=..., delete=...,
prefix_mismatch_mode=..., equal_schemes=..., equal_authorities=..., max_concurrent_deletes=...,
force=...)`` (Iceberg's ``stream_results`` and ``prefix_listing`` are accepted and change
nothing; its Spark-only ``file_list_view`` is not an option here) lists the files under
``location`` (default: the table location) through the table's FileIO, so s3/gs/hdfs work as
local paths do, and compares them with every file the table references:

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

Confinement (issue 18; DESIGN "Maintenance", safety invariant). The listing never follows a
symlink and skips the places of other catalog entries (a table nested below this one, one
sharing its location); the record directory ``metadata/orphans/`` is never listed. An orphan
outside the table's own places (a ``location`` elsewhere, a prefix mismatch in another
scheme or bucket) is kept and reported (``kept``), never recorded nor deleted.

Two phases (in the manner of S3 Tables; ``firn.maintenance.orphan_record``). A run never
deletes what it finds for the first time: it *records* new orphans with the time it first
saw them, and deletes only orphans an earlier run recorded at least ``orphans.grace`` ago (a
table property, default ``1d``) that are still unreferenced and unchanged. A recorded file
that is referenced again, gone or changed is dropped from the record. By default (Iceberg's
``dry-run``, which is ``delete=False``) a run lists both and writes nothing; with ``delete=True`` the run
deletes the due orphans as ``delete-files`` work units (after the references are checked again
against the table as it is then), then writes the record.

Paths are compared without scheme and authority, after mapping them through
``equal_schemes`` (default ``{"s3n,s3a": "s3"}``) and ``equal_authorities``. A listed file
whose path matches a referenced one only with a different scheme or authority is a *prefix
mismatch*: ``prefix_mismatch_mode`` ERROR (default) refuses, naming the conflicting pairs;
IGNORE keeps the file; DELETE treats it as an orphan (still subject to confinement).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar
from urllib.parse import urlsplit

from firn.errors import ValidationError
from firn.io.base import FileInfo, FileIO
from firn.maintenance.base import (
    DELETION_LINEAGE,
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    PlanWork,
    Skipped,
    plan_identity,
)
from firn.maintenance.file_deletion import delete_units, run_delete_unit, tally
from firn.maintenance.options import RemoveOrphanFilesOptions
from firn.maintenance.orphan_record import (
    OrphanFile,
    RecordedOrphan,
    read_record,
    record_dir,
    record_location,
    write_record,
)
from firn.maintenance.reachability import metadata_paths, reachable_streaming
from firn.maintenance.runner import LocalRunner, Runner, UnitFunction, UnitResult, WorkUnit
from firn.spec.deletion_scope import DeletionScope
from firn.spec.locations import LocationKey, location_key
from firn.spec.snapshots import MAIN_BRANCH
from firn.spec.table_metadata import TableMetadata, now_ms

DAY_MS = 24 * 3600 * 1000
DEFAULT_OLDER_THAN_MS = 3 * DAY_MS  # Java: TimeUnit.DAYS.toMillis(3)
MIN_OLDER_THAN_MS = DAY_MS  # younger cut-offs need force=True
DEFAULT_EQUAL_SCHEMES = {"s3n,s3a": "s3"}
VERSION_HINT = "version-hint.text"


# Paths a plan lists per kept or unrecorded reason, past which it only counts (plans are JSON).
PLAN_MAX_LISTED = 1000
# How to turn a dry run off, per interface (the CLI swaps one for the other in what it prints).
DRY_RUN_HINT_PYTHON = "pass delete=True"
DRY_RUN_HINT_CLI = "pass -o dry-run=false"


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesResult(MaintenanceResult):
    """What a run found and did.

    ``orphan_file_locations`` (Iceberg's output column): every orphan found that the table may
    delete. ``recorded_file_locations``: the orphans this run recorded (first seen now);
    ``waiting_files``: recorded earlier, still in their grace period; ``deleted_files`` /
    ``deleted_file_locations`` / ``deleted_bytes``: recorded at least ``orphans.grace`` ago and
    deleted now; ``unrecorded_files``: dropped from the record (referenced again, gone,
    changed); ``kept_outside_location``: orphans the confinement check kept (outside the
    table's own places, inside another entry's, through a symlink), each in ``skipped``. A
    dry run records and deletes nothing (the counts say what it would do)."""

    OPERATION: ClassVar[str] = "remove_orphan_files"
    LINEAGE: ClassVar[Mapping[str, str]] = DELETION_LINEAGE

    dry_run: bool = True
    orphan_file_locations: tuple[str, ...] = ()
    orphan_bytes: int = 0
    recorded_file_locations: tuple[str, ...] = ()
    waiting_files: int = 0
    unrecorded_files: int = 0
    deleted_files: int = 0
    deleted_bytes: int = 0
    deleted_file_locations: tuple[str, ...] = ()
    kept_outside_location: int = 0
    grace_ms: int = 0
    record_location: str = ""

    @property
    def orphan_files_count(self) -> int:
        return len(self.orphan_file_locations)

    @property
    def recorded_files(self) -> int:
        return len(self.recorded_file_locations)


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesPlan(MaintenancePlan[RemoveOrphanFilesResult]):
    """The orphans under ``location``, in the two phases: ``to_record`` (new: recorded by this
    run), ``waiting`` (recorded, within ``grace_ms``), ``to_delete`` (recorded at least
    ``grace_ms`` before ``now_ms``: deleted by this run) and ``unrecorded`` (record entries
    dropped, with why). ``listed`` files were seen, ``too_young`` of them kept for their age,
    ``hidden`` skipped by name, ``other_entries`` skipped inside the places of other catalog
    entries (``other_places``), ``mismatched`` kept for a prefix mismatch (IGNORE; the pairs
    are in ``conflicts``); ``kept`` are orphans outside the table's own places
    (``kept_outside_location`` counts them all, ``kept`` lists up to ``PLAN_MAX_LISTED``)."""

    OPERATION: ClassVar[str] = "remove_orphan_files"

    options: RemoveOrphanFilesOptions
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
    grace_ms: int = DAY_MS
    record_location: str = ""
    to_record: tuple[RecordedOrphan, ...] = ()
    waiting: tuple[RecordedOrphan, ...] = ()
    to_delete: tuple[RecordedOrphan, ...] = ()
    unrecorded: tuple[Skipped, ...] = ()
    other_entries: int = 0
    other_places: tuple[str, ...] = ()
    kept_outside_location: int = 0
    kept: tuple[Skipped, ...] = ()

    @property
    def orphans(self) -> tuple[OrphanFile, ...]:
        """Every orphan found that the table may delete, recorded or not, sorted by path."""
        found: list[OrphanFile] = [*self.to_record, *self.waiting, *self.to_delete]
        return tuple(sorted(found, key=lambda o: o.path))

    @property
    def is_noop(self) -> bool:
        return self.dry_run or not (self.to_record or self.to_delete or self.unrecorded)

    @property
    def orphan_bytes(self) -> int:
        return sum(max(o.size, 0) for o in self.orphans)

    def work(self) -> PlanWork:
        """The due orphans it deletes (none in a dry run; the listing is done by planning)."""
        return PlanWork(files_to_delete=0 if self.dry_run else len(self.to_delete))

    def describe(self) -> str:
        lines = [
            f"  listed {self.listed} files under {self.location}: {self.referenced} referenced paths known, "
            f"{self.too_young} modified after {_when(self.older_than_ms)} kept, {self.hidden} hidden skipped",
            f"  {len(self.orphans)} orphans, {self.orphan_bytes} bytes; grace {_duration(self.grace_ms)} "
            f"(orphans.grace), record {self.record_location}"
            + (f" (dry run: nothing is recorded or deleted; {DRY_RUN_HINT_PYTHON})" if self.dry_run else ""),
            f"  to record (first seen now, deleted by a run at least {_duration(self.grace_ms)} later): "
            f"{len(self.to_record)}",
        ]
        lines += _paths(o.path for o in self.to_record)
        lines.append(f"  to delete (recorded at least {_duration(self.grace_ms)} ago): {len(self.to_delete)}")
        lines += _paths(f"{o.path} (first seen {_when(o.first_seen_ms)})" for o in self.to_delete)
        if self.waiting:
            lines.append(f"  {len(self.waiting)} recorded orphans still within their grace period")
        if self.unrecorded:
            lines.append(f"  {len(self.unrecorded)} dropped from the record:")
            lines += _paths(f"{u.item}: {u.reason}" for u in self.unrecorded)
        if self.other_entries:
            lines.append(
                f"  {self.other_entries} files inside other tables' or views' locations skipped: "
                + ", ".join(self.other_places)
            )
        if self.kept_outside_location:
            lines.append(
                f"  {self.kept_outside_location} orphans kept outside the table's own locations (never deleted):"
            )
            lines += _paths(f"{k.item}: {k.reason}" for k in self.kept)
        if self.mismatched:
            lines.append(
                f"  {self.mismatched} kept for a scheme/authority mismatch: {', '.join(self.conflicts)}"
            )
        return "\n".join(lines)

    def default_runner(self) -> Runner:
        n = self.options.max_concurrent_deletes
        return LocalRunner(max_workers=n) if n else LocalRunner()

    def unit_function(self) -> UnitFunction | None:
        return run_delete_unit

    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> RemoveOrphanFilesResult:
        to_record, waiting, to_delete = list(self.to_record), list(self.waiting), list(self.to_delete)
        skipped: list[Skipped] = []
        unrecorded = list(self.unrecorded)
        if table.metadata_location != self.metadata_location and (to_record or waiting or to_delete):
            # The table moved since planning: a commit since then may reference a listed file
            # (add_files of an old file, say). Check the orphans against the table as it is now.
            known = _Matcher(self.equal_schemes, self.equal_authorities)
            known.add_all(_referenced(table, table.metadata, self.location))
            mode = "DELETE" if self.prefix_mismatch_mode == "DELETE" else "IGNORE"
            late = {o.path for o in [*to_record, *waiting, *to_delete] if not known.match(o.path, mode)[0]}
            for path in sorted(late):
                reason = "referenced by a commit made after planning"
                skipped.append(Skipped(item=path, reason=reason))
                unrecorded.append(Skipped(item=path, reason=reason))
            to_record = [o for o in to_record if o.path not in late]
            waiting = [o for o in waiting if o.path not in late]
            to_delete = [o for o in to_delete if o.path not in late]
        object.__setattr__(self, "_pending", [] if self.dry_run else to_delete)
        object.__setattr__(self, "_table_io", table.io)
        object.__setattr__(self, "_phases", (to_record, waiting, to_delete, unrecorded))
        found = sorted([*to_record, *waiting, *to_delete], key=lambda o: o.path)
        return RemoveOrphanFilesResult(
            table=self.table,
            dry_run=self.dry_run,
            orphan_file_locations=tuple(o.path for o in found),
            orphan_bytes=sum(max(o.size, 0) for o in found),
            recorded_file_locations=tuple(o.path for o in to_record),
            waiting_files=len(waiting),
            unrecorded_files=len(unrecorded),
            kept_outside_location=self.kept_outside_location,
            grace_ms=self.grace_ms,
            record_location=self.record_location,
            skipped=(*skipped, *self.kept),
        )

    def cleanup_units(
        self, table: MaintainedTable, result: RemoveOrphanFilesResult, io_ref: str
    ) -> list[WorkUnit]:
        pending: list[RecordedOrphan] = getattr(self, "_pending", [])
        if not pending:
            return []
        n = self.options.max_concurrent_deletes
        return delete_units(
            {"orphan_files": {o.path: o.size for o in pending}},
            scope=table.deletion_scope(),
            io=table.io,
            metadata_location=table.metadata_location,
            io_ref=io_ref,
            max_concurrent_deletes=int(n) if n else None,
        )

    def finish(
        self, result: RemoveOrphanFilesResult, cleanup: Sequence[UnitResult]
    ) -> RemoveOrphanFilesResult:
        t = tally(cleanup)
        pending: list[RecordedOrphan] = getattr(self, "_pending", [])
        to_record, waiting, _, unrecorded = getattr(self, "_phases", ([], [], [], []))
        io: FileIO | None = getattr(self, "_table_io", None)
        object.__setattr__(self, "_pending", [])
        object.__setattr__(self, "_phases", None)
        object.__setattr__(self, "_table_io", None)
        failed = {p for p, _ in t.failed}
        kept = {k.path for k in t.kept}
        deleted = [o for o in pending if o.path not in failed and o.path not in kept]
        if io is not None and not self.dry_run and not self.is_noop:
            self._write_record(
                io, to_record, waiting, [o for o in pending if o.path in failed], unrecorded, kept
            )
        return dataclasses.replace(
            result,
            deleted_files=len(deleted),
            deleted_bytes=sum(max(o.size, 0) for o in deleted),
            deleted_file_locations=tuple(o.path for o in deleted),
            kept_outside_location=result.kept_outside_location + len(kept),
            skipped=(*result.skipped, *(Skipped(item=p, reason=r) for p, r in t.skipped())),
        )

    def _write_record(
        self,
        io: FileIO,
        to_record: list[RecordedOrphan],
        waiting: list[RecordedOrphan],
        failed: list[RecordedOrphan],
        unrecorded: list[Skipped],
        kept: set[str],
    ) -> None:
        """The record after this run: entries outside this run's listing as they were, the
        waiting and failed ones, and the new ones; without the deleted, kept and dropped."""
        current = read_record(io, self.record_location, self.table_uuid)
        listed = location_key(self.location)
        dropped = {u.item for u in unrecorded} | kept | {o.path for o in self.to_delete}
        files = {
            p: o for p, o in current.items() if not listed.contains(location_key(p)) and p not in dropped
        }
        for o in [*waiting, *failed]:
            files[o.path] = o
        for o in to_record:
            files[o.path] = o
        write_record(io, self.record_location, self.table_uuid, self.now_ms, files)


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def _duration(ms: int) -> str:
    for unit, size in (("d", DAY_MS), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _paths(items: Iterable[str], limit: int = 20) -> list[str]:
    shown = list(itertools.islice(items, limit + 1))
    out = [f"    {p}" for p in shown[:limit]]
    if len(shown) > limit:
        out.append("    ...")
    return out


# -- path identity (Java's FileURI) ---------------------------------------------------------------
def _flatten(mapping: Mapping[str, str]) -> dict[str, str]:
    """``{"s3n,s3a": "s3"}`` -> ``{"s3n": "s3", "s3a": "s3"}``."""
    out: dict[str, str] = {}
    for keys, value in mapping.items():
        for k in keys.split(","):
            if k.strip():
                out[k.strip()] = value.strip()
    return out


_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789+-.")


def split_location(location: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a location; a plain path has neither scheme nor authority.
    The path has duplicate and trailing slashes removed, as Hadoop's ``Path`` normalizes it."""
    # The common form ``scheme://authority/path`` (lower-case scheme, no query or fragment)
    # splits with str methods: urlsplit costs microseconds, and orphan removal splits every
    # referenced path of the table.
    scheme, sep, rest = location.partition("://")
    if (
        sep
        and len(scheme) > 1
        and "?" not in rest
        and "#" not in rest
        and location[0] > " "  # urlsplit strips leading control characters and spaces...
        and "\t" not in rest  # ...and drops tabs and newlines anywhere
        and "\n" not in rest
        and "\r" not in rest
        and not set(scheme) - _SCHEME_CHARS
        and scheme[0].isalpha()
    ):
        authority, slash, tail = rest.partition("/")
        path = slash + tail
        if "//" not in path and not (len(path) > 1 and path.endswith("/")) and "[" not in authority:
            return scheme, authority, path
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
        # Normalized path -> its (scheme, authority) pairs; the tuples are shared, since a
        # table's paths have one or a few forms (one object per form, not per path).
        self.known: dict[str, tuple[tuple[str, str], ...]] = {}
        self._forms: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}

    def key(self, location: str) -> tuple[str, str, str]:
        scheme, authority, path = split_location(location)
        return self.schemes.get(scheme, scheme).lower(), self.authorities.get(authority, authority), path

    def add_all(self, locations: Iterable[str]) -> int:
        """Index ``locations``; returns how many were new (by path, scheme and authority)."""
        known, forms, key = self.known, self._forms, self.key
        added = 0
        for loc in locations:
            scheme, authority, path = key(loc)
            pair = (scheme, authority)
            refs = known.get(path)
            if refs is None:
                refs = (pair,)
            elif pair in refs:
                continue
            else:
                refs = tuple(sorted({*refs, pair}))
            known[path] = forms.setdefault(refs, refs)
            added += 1
        return added

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


def _referenced(table: MaintainedTable, md: TableMetadata, location: str) -> Iterator[str]:
    """Every referenced location (a path may come more than once). The reachable files are
    handed over one at a time and dropped as they go, so the matcher's index is the only
    per-file structure left (no second set of the same paths beside it)."""
    files = reachable_streaming(table.io, md, list(md.snapshots))
    while files.files:
        _, group = files.files.popitem()
        while group:  # popped one by one: each path is freed once the matcher has its key
            yield group.popitem()[0]
    yield from metadata_paths(md, table.metadata_location)
    for base in {md.location.rstrip("/"), location.rstrip("/")}:
        yield f"{base}/metadata/{VERSION_HINT}"


def _hidden(relative: str, partition_names: set[str]) -> bool:
    for part in relative.split("/"):
        if part.startswith((".", "_")):
            name = part.split("=", 1)[0]
            if "=" in part and name in partition_names:
                continue
            return True
    return False


class RemoveOrphanFiles(
    MaintenanceOperation[RemoveOrphanFilesPlan, RemoveOrphanFilesResult, RemoveOrphanFilesOptions]
):
    """``table.maintenance.remove_orphan_files(...)``; see the module docstring."""

    OPERATION = "remove_orphan_files"

    def __init__(self, table: MaintainedTable, options: RemoveOrphanFilesOptions) -> None:
        super().__init__(table, options)
        self._check_older_than(now_ms())

    def _check_older_than(self, now: int) -> None:
        older_than = self.options.older_than_ms
        if older_than is not None and older_than > now - MIN_OLDER_THAN_MS and not self.options.force:
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
        o = self.options
        older_than = o.older_than_ms if o.older_than_ms is not None else now - DEFAULT_OLDER_THAN_MS
        location = (o.location if o.location is not None else md.location).rstrip("/")
        dry_run = not o.delete
        mode = o.prefix_mismatch_mode
        schemes = dict(o.equal_schemes if o.equal_schemes is not None else DEFAULT_EQUAL_SCHEMES)
        authorities = dict(o.equal_authorities or {})
        matcher = _Matcher(schemes, authorities)
        referenced = matcher.add_all(_referenced(self.table, md, location))
        scope = self.table.deletion_scope()
        grace = md.table_properties.orphans_grace_ms
        record_at = record_location(md.location)
        records = read_record(self.table.io, record_at, str(md.table_uuid))
        found = _Listing(self.table, location, older_than, mode, matcher, scope)
        if found.conflicts and mode == "ERROR":
            raise ValidationError(
                f"remove_orphan_files on {self.table.name}: {found.mismatched} listed files match referenced "
                f"files except for scheme/authority ({'; '.join(found.conflicts)}). Say which are equal with "
                "equal_schemes / equal_authorities, or set prefix_mismatch_mode to IGNORE (keep them) or DELETE "
                "(only if you are sure they are different files: deleted files cannot be recovered)"
            )
        phases = _phases(found, records, location_key(location), now=now, grace_ms=grace)
        head = md.snapshot_for_ref(MAIN_BRANCH)
        # The plan records the values used; the switches with no effect are not kept.
        options = dataclasses.replace(
            o,
            older_than=older_than,
            location=location,
            equal_schemes=schemes,
            equal_authorities=authorities,
            stream_results=None,
            prefix_listing=None,
        )
        return RemoveOrphanFilesPlan(
            **plan_identity(self.table, head.snapshot_id if head else None, options),
            now_ms=now,
            older_than_ms=older_than,
            location=location,
            dry_run=dry_run,
            prefix_mismatch_mode=mode,
            equal_schemes=schemes,
            equal_authorities=authorities,
            listed=found.listed,
            too_young=found.too_young,
            hidden=found.hidden,
            referenced=referenced,
            mismatched=found.mismatched,
            conflicts=tuple(found.conflicts),
            grace_ms=grace,
            record_location=record_at,
            to_record=phases.to_record,
            waiting=phases.waiting,
            to_delete=phases.to_delete,
            unrecorded=phases.unrecorded,
            other_entries=found.other_entries,
            other_places=tuple(f"{o.owner} ({o.location})" for o in scope.others),
            kept_outside_location=len(found.kept),
            kept=tuple(found.kept[:PLAN_MAX_LISTED]),
        )


class _Listing:
    """One pass over the files under ``location``: the candidates (unreferenced, old enough,
    inside the table's own places) and what became of every other listed file."""

    def __init__(
        self,
        table: MaintainedTable,
        location: str,
        older_than: int,
        mode: str,
        matcher: _Matcher,
        scope: DeletionScope,
    ) -> None:
        md = table.metadata
        partition_names = {f.name for spec in md.partition_specs for f in spec.fields}
        records = location_key(record_dir(md.location))
        record_prefix = record_dir(md.location) + "/"
        # Listed paths share the listing location's form; compare keys only when it differs
        # from the table location's (file:///x listed for a table at /x, say).
        same_form = location.startswith(md.location.rstrip("/"))
        self.listed = self.too_young = self.hidden = self.mismatched = self.other_entries = 0
        self.conflicts: dict[str, None] = {}
        self.candidates: dict[str, FileInfo] = {}
        self.kept: list[Skipped] = []
        # Why a listed file is not a candidate (for record entries dropped this run).
        self.fate: dict[str, str] = {}
        for info in table.io.list_prefix(location):
            path = info.location
            if path.startswith(record_prefix) or (not same_form and records.contains(location_key(path))):
                continue  # the orphan record and its directory are never orphans
            self.listed += 1
            if scope.excludes(path):
                self.other_entries += 1
                self.fate[path] = "now inside the location of another table or view"
                continue
            relative = path[len(location) :].lstrip("/") if path.startswith(location) else path
            if _hidden(relative, partition_names):
                self.hidden += 1
                self.fate[path] = "hidden"
                continue
            if info.modified_ms is None or info.modified_ms >= older_than:
                self.too_young += 1
                self.fate[path] = "modified after the older_than cut-off"
                continue
            orphan, conflict = matcher.match(path, mode)
            if not orphan:
                self.fate[path] = "referenced by the table again"
                if conflict is not None:
                    self.mismatched += 1
                    self.conflicts[conflict] = None
                continue
            verdict = scope.check(path)
            if verdict is not None:
                self.kept.append(Skipped(item=path, reason=f"kept ({verdict.kind}): {verdict.reason}"))
                self.fate[path] = f"kept ({verdict.kind})"
                continue
            self.candidates[path] = info


@dataclass(frozen=True)
class _Phases:
    to_record: tuple[RecordedOrphan, ...]
    waiting: tuple[RecordedOrphan, ...]
    to_delete: tuple[RecordedOrphan, ...]
    unrecorded: tuple[Skipped, ...]


def _phases(
    found: _Listing, records: Mapping[str, RecordedOrphan], listed: LocationKey, *, now: int, grace_ms: int
) -> _Phases:
    """Split the candidates by the record: new ones are recorded now; recorded, unchanged ones
    are due once recorded at least ``grace_ms`` ago; record entries under the listed location
    that are no longer candidates are dropped, saying why."""
    to_record: list[RecordedOrphan] = []
    waiting: list[RecordedOrphan] = []
    to_delete: list[RecordedOrphan] = []
    unrecorded: list[Skipped] = []
    for path, info in sorted(found.candidates.items()):
        seen = RecordedOrphan(path=path, size=info.size, modified_ms=info.modified_ms, first_seen_ms=now)
        rec = records.get(path)
        if rec is not None and rec.modified_ms not in (None, info.modified_ms):
            unrecorded.append(Skipped(item=path, reason="changed since it was recorded: recorded afresh"))
            rec = None
        if rec is None or rec.first_seen_ms >= now:
            to_record.append(seen)
        elif rec.first_seen_ms <= now - grace_ms:
            to_delete.append(replace(rec, size=info.size))
        else:
            waiting.append(rec)
    for path in sorted(records):
        if path in found.candidates or not listed.contains(location_key(path)):
            continue  # handled above, or outside this run's listing: left as it is
        unrecorded.append(Skipped(item=path, reason=found.fate.get(path, "no longer there")))
    return _Phases(tuple(to_record), tuple(waiting), tuple(to_delete), tuple(unrecorded))


__all__ = [
    "DEFAULT_OLDER_THAN_MS",
    "PLAN_MAX_LISTED",
    "OrphanFile",
    "RecordedOrphan",
    "RemoveOrphanFiles",
    "RemoveOrphanFilesPlan",
    "RemoveOrphanFilesResult",
    "split_location",
]
