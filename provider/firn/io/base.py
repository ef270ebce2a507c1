"""FileIO: how Firn reads and writes files (protocol only; see ``pyarrow_io`` and ``memory``).

INTERFACE — implementations live in ``firn.io.pyarrow_io`` (local, s3, gs, hdfs via
``pyarrow.fs``) and ``firn.io.memory`` (an in-memory fake for unit tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.fs as pafs

from firn.io.limits import ReadLimit, ReadLimits


@dataclass(frozen=True, slots=True)
class FileInfo:
    location: str
    size: int
    modified_ms: int | None = None


@runtime_checkable
class InputFile(Protocol):
    @property
    def location(self) -> str: ...

    @property
    def read_limits(self) -> ReadLimits:
        """The caps of the FileIO that made this file (``firn.io.limits``)."""
        ...

    def read(self, limit: ReadLimit | None = None) -> bytes:
        """The whole file. Raises ``firn.errors.NotFound`` naming the location when missing,
        and ``ValidationError`` naming it when it is not a regular file (a device, a FIFO, a
        directory) or, with a ``limit``, when it is longer than that (checked before reading)."""
        ...

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset``; raises ``InvalidMetadata`` if the file is shorter."""
        ...

    def length(self) -> int: ...

    def exists(self) -> bool: ...

    def open_arrow(self) -> pa.NativeFile:
        """A seekable Arrow file for pyarrow readers (Parquet); not for a file that is not a
        regular file (``ValidationError``, as :meth:`read`)."""
        ...


@runtime_checkable
class OutputFile(Protocol):
    @property
    def location(self) -> str: ...

    def write(self, data: bytes, *, overwrite: bool = False) -> int:
        """Write the whole file; fails with ``AlreadyExists`` if it exists and not ``overwrite``.
        Returns the number of bytes written."""
        ...

    def open_arrow(self) -> pa.NativeFile:
        """A writable Arrow stream (for the Parquet writer)."""
        ...


@runtime_checkable
class FileIO(Protocol):
    # The properties it was built from: ``load_file_io(properties, location)`` builds an
    # equivalent FileIO in another process (maintenance work units rely on it).
    @property
    def properties(self) -> Mapping[str, str]: ...

    def new_input(self, location: str) -> InputFile: ...

    def new_output(self, location: str) -> OutputFile: ...

    def delete(self, location: str) -> None:
        """Delete one file; a missing file is not an error."""
        ...

    def delete_many(self, locations: Iterable[str]) -> int:
        """Delete files (in parallel where the store allows); returns how many were deleted."""
        ...

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        """Every file under a directory-like prefix, recursively."""
        ...

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem and in-filesystem path for ``location``."""
        ...


@runtime_checkable
class ReportsDeleteFailures(Protocol):
    """A FileIO that tells which files of a batch it could not delete (an object store's
    batch delete answers per key), so callers need not retry them one by one to find out."""

    def try_delete_many(self, locations: Iterable[str]) -> dict[str, str]:
        """Delete the files that exist; returns the locations not deleted, with why. Never
        raises for a single file."""
        ...


def read_all(io: FileIO, location: str, limit: ReadLimit | None = None) -> bytes:
    """The whole file at ``location`` (refused past ``limit`` when given)."""
    return io.new_input(location).read(limit)


__all__ = ["FileIO", "FileInfo", "IO", "InputFile", "OutputFile", "ReportsDeleteFailures", "read_all"]
