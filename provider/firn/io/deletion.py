"""The one function every delete of a table's (or view's) files goes through (STYLE 21).

:func:`delete_confined` deletes a batch of paths through a FileIO under a
:class:`~firn.spec.deletion_scope.DeletionScope` and reports what it deleted, what it kept and
what failed; it never raises for a single file. A path is kept when:

* the scope refuses it (outside the owner's own places, inside another catalog entry's, a
  relative or climbing path: :meth:`DeletionScope.check`);
* on the local filesystem, any component of it below the own place that contains it is a
  symlink, the file itself included. Local deletes walk the path one directory at a time with
  ``O_NOFOLLOW`` directory descriptors and ``unlinkat``, so a directory swapped for a symlink
  between a check and the delete is not followed either. The own place itself may be reached
  through a symlink (a warehouse mounted that way); what lies below it may not.

A file that is already gone counts as deleted (deleting is idempotent: a retried work unit is
harmless). Object stores and other FileIOs delete with the FileIO's own (parallel) deletes:
``try_delete_many`` where the FileIO reports failures per file (S3's batch deletes, which
report partial failures in their answer: ``firn.io.s3_delete``), else ``delete_many``, and
when that fails the files are retried one by one to tell which failed.

``tests/firn/io/test_deletion.py`` checks that no other module of the library calls a FileIO's
``delete`` or ``delete_many``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from firn.io.base import FileIO, ReportsDeleteFailures
from firn.io.pyarrow_io import PyArrowFileIO, parse_location
from firn.spec.deletion_scope import KEPT_SYMLINK, DeletionScope
from firn.spec.locations import location_key

log = logging.getLogger(__name__)

# Local deletes without following symlinks need ``openat``/``unlinkat`` (Linux, macOS, BSD).
_DIR_FD = os.open in os.supports_dir_fd and os.unlink in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


@dataclass(frozen=True, slots=True)
class KeptFile:
    """A file the confinement check kept: its path, the ``KEPT_*`` kind and why."""

    path: str
    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class FailedDelete:
    """A file whose delete was attempted and failed."""

    path: str
    error: str


@dataclass(frozen=True, slots=True)
class DeletionReport:
    """What :func:`delete_confined` did: ``deleted`` (gone now, including files that were
    already gone), ``kept`` (refused by the confinement check) and ``failed``."""

    deleted: tuple[str, ...] = ()
    kept: tuple[KeptFile, ...] = ()
    failed: tuple[FailedDelete, ...] = ()

    def __add__(self, other: DeletionReport) -> DeletionReport:
        return DeletionReport(
            deleted=self.deleted + other.deleted,
            kept=self.kept + other.kept,
            failed=self.failed + other.failed,
        )

    def summary(self) -> str:
        """One line: counts, with the first kept and failed files."""
        text = f"deleted {len(self.deleted)}, kept {len(self.kept)}, failed {len(self.failed)}"
        if self.kept:
            text += f"; kept e.g. {self.kept[0].path} ({self.kept[0].reason})"
        if self.failed:
            text += f"; failed e.g. {self.failed[0].path} ({self.failed[0].error})"
        return text


def delete_confined(
    io: FileIO, scope: DeletionScope, paths: Iterable[str], *, sequential: bool = False
) -> DeletionReport:
    """Delete ``paths`` that ``scope`` allows, through ``io``; report every path's fate.

    ``sequential``: delete one file at a time (a caller bounding concurrency itself)."""
    kept: list[KeptFile] = []
    local: list[tuple[str, str]] = []
    other: list[str] = []
    native_local = isinstance(io, PyArrowFileIO)
    for path in dict.fromkeys(paths):
        verdict = scope.check(path)
        if verdict is not None:
            kept.append(KeptFile(path=path, kind=verdict.kind, reason=verdict.reason))
            continue
        place = scope.place_of(path)
        if native_local and place is not None and _is_local(path):
            local.append((path, place))
        else:
            other.append(path)
    deleted: list[str] = []
    failed: list[FailedDelete] = []
    for path, place in local:
        outcome = _delete_local(path, place)
        if outcome is None:
            deleted.append(path)
        elif isinstance(outcome, KeptFile):
            kept.append(outcome)
        else:
            failed.append(outcome)
    if other:
        d, f = _delete_through(io, other, sequential)
        deleted += d
        failed += f
    report = DeletionReport(deleted=tuple(deleted), kept=tuple(kept), failed=tuple(failed))
    if report.kept:
        log.warning(
            "kept %d files of %s that confinement forbids deleting, e.g. %s: %s",
            len(report.kept),
            scope.owner,
            report.kept[0].path,
            report.kept[0].reason,
        )
    return report


def delete_quietly(io: FileIO, scope: DeletionScope, paths: Sequence[str], what: str) -> DeletionReport:
    """Best-effort cleanup (files a failed write or commit left): delete under ``scope``,
    log what could not be deleted and never raise; orphan removal reclaims leftovers."""
    if not paths:
        return DeletionReport()
    try:
        report = delete_confined(io, scope, paths)
    except Exception:  # a broken FileIO must not hide the error that caused the cleanup
        log.warning("could not delete %d %s files of %s", len(paths), what, scope.owner, exc_info=True)
        return DeletionReport(failed=tuple(FailedDelete(path=p, error="cleanup failed") for p in paths))
    if report.failed:
        log.warning(
            "could not delete %d %s files of %s, e.g. %s: %s",
            len(report.failed),
            what,
            scope.owner,
            report.failed[0].path,
            report.failed[0].error,
        )
    return report


# -- local files: never through a symlink -----------------------------------------------------------
def _is_local(path: str) -> bool:
    try:
        return parse_location(path).is_local
    except Exception:  # an unparsable path goes to the FileIO, which reports it as failed
        return False


def _delete_local(path: str, place: str) -> KeptFile | FailedDelete | None:
    """Delete ``path`` below the own place ``place`` without following a symlink below
    ``place``; None when it is gone now."""
    below = location_key(path).segments[len(location_key(place).segments) :]
    root = parse_location(place).path
    try:
        if _DIR_FD:
            return _unlink_at(path, root, below)
        return _unlink_checked(path, root, below)
    except OSError as e:
        return FailedDelete(path=path, error=f"{type(e).__name__}: {e}")


def _symlink(path: str, component: str) -> KeptFile:
    return KeptFile(
        path=path,
        kind=KEPT_SYMLINK,
        reason=f"{component} is a symlink: a delete never follows one (its target may be anything)",
    )


def _unlink_at(path: str, root: str, below: Sequence[str]) -> KeptFile | FailedDelete | None:
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(root, flags)
    except FileNotFoundError:
        return None  # the whole place is gone: so is the file
    try:
        walked = root
        for name in below[:-1]:
            walked = f"{walked}/{name}"
            try:
                nxt = os.open(name, flags | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno == errno.ENOENT:
                    return None
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        return None
                    if stat.S_ISLNK(st.st_mode):
                        return _symlink(path, walked)
                    return None  # a regular file where a directory should be: no such file
                raise
            os.close(fd)
            fd = nxt
        name = below[-1]
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return _symlink(path, f"{walked}/{name}")
        if stat.S_ISDIR(st.st_mode):
            return FailedDelete(path=path, error="it is a directory, not a file")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
        return None
    finally:
        os.close(fd)


def _unlink_checked(path: str, root: str, below: Sequence[str]) -> KeptFile | FailedDelete | None:
    """Where ``unlinkat`` is missing: check every component with ``lstat``, then unlink."""
    walked = root
    for name in below:
        walked = f"{walked}/{name}"
        try:
            st = os.lstat(walked)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return _symlink(path, walked)
    if stat.S_ISDIR(os.lstat(walked).st_mode):
        return FailedDelete(path=path, error="it is a directory, not a file")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(walked)
    return None


# -- everything else: the FileIO's own deletes ---------------------------------------------------------
def _delete_through(io: FileIO, paths: list[str], sequential: bool) -> tuple[list[str], list[FailedDelete]]:
    if not sequential and isinstance(io, ReportsDeleteFailures):
        # Object stores answer per key (S3's DeleteObjects): the failures are known as is.
        try:
            errors = io.try_delete_many(paths)
        except Exception as e:  # a broken FileIO: every file's fate is unknown, so each failed
            return [], [FailedDelete(path=p, error=f"{type(e).__name__}: {e}") for p in paths]
        return [p for p in paths if p not in errors], [
            FailedDelete(path=p, error=errors[p]) for p in paths if p in errors
        ]
    if not sequential:
        try:
            io.delete_many(paths)
            return paths, []
        except Exception:  # some failed: find which, one by one (missing files are not errors)
            log.debug("delete_many failed; retrying %d files one by one", len(paths), exc_info=True)
    deleted: list[str] = []
    failed: list[FailedDelete] = []
    for p in paths:
        try:
            io.delete(p)
            deleted.append(p)
        except Exception as e:
            failed.append(FailedDelete(path=p, error=f"{type(e).__name__}: {e}"))
    return deleted, failed


__all__ = ["DeletionReport", "FailedDelete", "KeptFile", "delete_confined", "delete_quietly"]
