"""Local files for :class:`~firn.io.pyarrow_io.PyArrowFileIO`, and the translation of pyarrow
and OS errors into Firn's hierarchy.

Local reads accept regular files only (a device such as ``/dev/zero`` never ends, a FIFO
blocks the reader), and local listings never follow a symlink (issue 18 finding 3: pyarrow's
``FileSelector`` follows them, and orphan removal once deleted a symlinked directory's target).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from firn.errors import AlreadyExists, FirnError, InvalidMetadata, NotFound, ValidationError
from firn.io.base import FileInfo


def is_not_found(exc: BaseException) -> bool:
    """Whether a pyarrow or OS error says the file does not exist."""
    if isinstance(exc, FileNotFoundError):
        return True
    # Some pyarrow backends raise a plain OSError for missing objects.
    text = str(exc).lower()
    return isinstance(exc, OSError) and (
        "does not exist" in text or "not found" in text or "nosuchkey" in text
    )


def io_error(location: str, action: str, exc: BaseException) -> FirnError:
    """Translate a pyarrow/OS error from reading, listing or deleting into Firn's hierarchy,
    naming the location. (Writes use :func:`write_error`.)"""
    if is_not_found(exc):
        return NotFound(f"file not found: {location}")
    if isinstance(exc, FileExistsError):
        return AlreadyExists(f"file already exists: {location}")
    return FirnError(f"{location}: {action} failed: {exc}")


def write_error(location: str, exc: BaseException, step: str | None = None) -> FirnError:
    """A failed write, naming the location and why. Never ``NotFound``: a missing directory
    that cannot be created (``/proc/...``), a missing bucket or a path running through a
    regular file means the write failed, not that a file is absent. Never ``AlreadyExists``
    either: callers raise that only when the target name itself is taken (the commit
    protocol treats it as "another writer got there first")."""
    return FirnError(
        f"{location}: write failed: {step}: {exc}" if step else f"{location}: write failed: {exc}"
    )


def make_parent_dirs(location: str, directory: str) -> None:
    """Create ``directory`` (for the file at ``location``) or raise a write failure saying why."""
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError as e:  # exist_ok=True raises this only for a non-directory
        raise FirnError(f"{location}: write failed: {directory} exists and is not a directory") from e

    except OSError as e:
        raise write_error(location, e, f"cannot create directory {directory}") from e


def list_local(base: str, out_prefix: str) -> Iterator[FileInfo]:
    """Regular files below the local directory ``base``, never through a symlink: symlinked
    files and directories are skipped (``DirEntry`` answers without following them). A
    missing ``base``, or one that is a file, lists nothing."""
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        directory = os.path.join(base, rel_dir) if rel_dir else base
        try:
            with os.scandir(directory) as entries:
                found = list(entries)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise io_error(f"{out_prefix}/{rel_dir}" if rel_dir else out_prefix, "list", e) from e
        for entry in sorted(found, key=lambda e: e.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(rel)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue  # a FIFO, socket or device is not a table file
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:  # removed while listing
                continue
            yield FileInfo(
                location=f"{out_prefix}/{rel}", size=st.st_size, modified_ms=st.st_mtime_ns // 1_000_000
            )


def past_end(location: str, offset: int, length: int, size: int) -> InvalidMetadata:
    """The error for a range read past the end of a ``size``-byte file."""
    return InvalidMetadata(
        f"file is truncated or the range is wrong: wanted {length} bytes at offset {offset} "
        f"of a {size}-byte file",
        location=location,
    )


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def require_regular(location: str, mode: int) -> None:
    """Refuse what is not a regular file: a device such as ``/dev/zero`` never ends, a FIFO
    blocks the reader, and neither is a file a table could have written."""
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    raise ValidationError(f"{location}: cannot read it: it is {kind}, not a regular file")


def open_local(location: str, path: str) -> int:
    """A descriptor of the regular file at ``path`` (see :func:`require_regular`).

    The path is checked before it is opened (opening some devices has effects of its own) and
    the descriptor again after (the path may have been replaced in between). ``O_NONBLOCK``
    keeps a FIFO swapped in meanwhile from blocking the open; it changes nothing for regular
    files.
    """
    require_regular(location, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        require_regular(location, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


__all__ = [
    "io_error",
    "is_not_found",
    "list_local",
    "make_parent_dirs",
    "open_local",
    "past_end",
    "require_regular",
    "write_error",
]
