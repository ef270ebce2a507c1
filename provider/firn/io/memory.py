"""An in-memory FileIO for unit tests: a dict of location -> bytes with FileIO's semantics.

Locations are plain string keys (any scheme, or none); "directories" are implied by ``/``.
Errors match :class:`~firn.io.pyarrow_io.PyArrowFileIO` (``NotFound``, ``AlreadyExists``,
``InvalidMetadata`` for truncated reads), so tests written against the fake hold for real
storage. :meth:`InMemoryFileIO.arrow_filesystem` returns a ``pyarrow.fs.PyFileSystem`` over the
same dict, so Parquet readers and writers (and ``pyarrow.dataset``) work in unit tests too.
Output streams publish their bytes only when closed, like an object store.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from firn.errors import AlreadyExists, InvalidMetadata, NotFound, ValidationError
from firn.io.base import FileInfo
from firn.io.limits import ReadLimit, ReadLimits


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _Blob:
    data: bytes
    modified_ms: int


class _PublishOnClose(io.BytesIO):
    """Buffers a stream's bytes and stores them in the FileIO when closed."""

    def __init__(
        self, owner: InMemoryFileIO, location: str, *, overwrite: bool, initial: bytes = b""
    ) -> None:
        super().__init__()
        self._owner = owner
        self._location = location
        self._overwrite = overwrite
        if initial:
            self.write(initial)

    def close(self) -> None:
        if not self.closed:
            data = self.getvalue()
            super().close()
            self._owner._put(self._location, data, overwrite=self._overwrite)


class InMemoryInputFile:
    """A readable view of one key of an :class:`InMemoryFileIO`."""

    __slots__ = ("_io", "_location")

    def __init__(self, owner: InMemoryFileIO, location: str) -> None:
        self._io = owner
        self._location = location

    @property
    def location(self) -> str:
        return self._location

    @property
    def read_limits(self) -> ReadLimits:
        return self._io.read_limits

    def read(self, limit: ReadLimit | None = None) -> bytes:
        data = self._io._get(self._location).data
        if limit is not None:
            limit.check(self._location, len(data))
        return data

    def read_range(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValidationError(f"{self._location}: invalid range offset={offset} length={length}")
        data = self._io._get(self._location).data
        chunk = data[offset : offset + length]
        if len(chunk) < length:
            raise InvalidMetadata(
                f"file is truncated: wanted {length} bytes at offset {offset}, got {len(chunk)}",
                location=self._location,
            )
        return chunk

    def length(self) -> int:
        return len(self._io._get(self._location).data)

    def exists(self) -> bool:
        return self._location in self._io

    def open_arrow(self) -> pa.NativeFile:
        return pa.BufferReader(self._io._get(self._location).data)


class InMemoryOutputFile:
    """A writable key of an :class:`InMemoryFileIO`."""

    __slots__ = ("_io", "_location")

    def __init__(self, owner: InMemoryFileIO, location: str) -> None:
        self._io = owner
        self._location = location

    @property
    def location(self) -> str:
        return self._location

    def write(self, data: bytes, *, overwrite: bool = False) -> int:
        self._io._put(self._location, bytes(data), overwrite=overwrite)
        return len(data)

    def open_arrow(self) -> pa.NativeFile:
        """A stream whose bytes appear when it is closed; ``AlreadyExists`` if the file exists."""
        if self._location in self._io:
            raise AlreadyExists(f"file already exists: {self._location}")
        return pa.PythonFile(_PublishOnClose(self._io, self._location, overwrite=False), mode="w")


class InMemoryFileIO:
    """Dict-backed :class:`~firn.io.base.FileIO`; thread-safe. Also counts reads and writes."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: dict[str, str] = dict(properties or {})
        self.read_limits = ReadLimits.from_properties(self.properties)
        self._files: dict[str, _Blob] = {}
        self._lock = threading.Lock()
        # Counters let tests assert how much I/O an operation did (e.g. "no metadata re-read").
        self.reads = 0
        self.writes = 0

    # -- FileIO --------------------------------------------------------------------------------
    def new_input(self, location: str) -> InMemoryInputFile:
        return InMemoryInputFile(self, location)

    def new_output(self, location: str) -> InMemoryOutputFile:
        return InMemoryOutputFile(self, location)

    def delete(self, location: str) -> None:
        with self._lock:
            self._files.pop(location, None)

    def delete_many(self, locations: Iterable[str]) -> int:
        deleted = 0
        with self._lock:
            for location in dict.fromkeys(locations):
                if self._files.pop(location, None) is not None:
                    deleted += 1
        return deleted

    def list_prefix(self, prefix: str) -> Iterator[FileInfo]:
        base = prefix.rstrip("/") + "/"
        with self._lock:
            entries = sorted((k, v) for k, v in self._files.items() if k.startswith(base))
        for location, blob in entries:
            yield FileInfo(location=location, size=len(blob.data), modified_ms=blob.modified_ms)

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem over this dict; in-filesystem paths are the locations themselves."""
        return pafs.PyFileSystem(_MemoryFsHandler(self)), location

    # -- helpers for tests ---------------------------------------------------------------------
    def __contains__(self, location: object) -> bool:
        with self._lock:
            return location in self._files

    def __len__(self) -> int:
        with self._lock:
            return len(self._files)

    def locations(self) -> list[str]:
        """Every stored location, sorted."""
        with self._lock:
            return sorted(self._files)

    # -- internals (also used by the pyarrow handler) ------------------------------------------
    def _get(self, location: str) -> _Blob:
        with self._lock:
            blob = self._files.get(location)
            self.reads += 1
        if blob is None:
            raise NotFound(f"file not found: {location}")
        return blob

    def _put(self, location: str, data: bytes, *, overwrite: bool) -> None:
        if not location:
            raise ValidationError("empty file location")
        with self._lock:
            if not overwrite and location in self._files:
                raise AlreadyExists(f"file already exists: {location}")
            self._files[location] = _Blob(data, _now_ms())
            self.writes += 1

    def _snapshot(self) -> dict[str, _Blob]:
        with self._lock:
            return dict(self._files)

    def _remove_under(self, directory: str) -> None:
        base = directory.rstrip("/") + "/"
        with self._lock:
            for key in [k for k in self._files if k.startswith(base) or not directory]:
                del self._files[key]


class _MemoryFsHandler(pafs.FileSystemHandler):
    """``pyarrow.fs.FileSystemHandler`` over an :class:`InMemoryFileIO`'s dict.

    Directories are implicit: a path is a directory when some key starts with ``path + "/"``.
    Missing paths raise ``FileNotFoundError``, which pyarrow maps to its own not-found errors.
    """

    def __init__(self, owner: InMemoryFileIO) -> None:
        self._io = owner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _MemoryFsHandler) and other._io is self._io

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self._io)

    def get_type_name(self) -> str:
        return "firn-memory"

    def normalize_path(self, path: str) -> str:
        return path

    def _info(self, path: str, files: dict[str, _Blob]) -> pafs.FileInfo:
        blob = files.get(path)
        if blob is not None:
            return pafs.FileInfo(
                path, pafs.FileType.File, size=len(blob.data), mtime_ns=blob.modified_ms * 1_000_000
            )
        base = path.rstrip("/") + "/"
        if any(k.startswith(base) for k in files):
            return pafs.FileInfo(path, pafs.FileType.Directory)
        return pafs.FileInfo(path, pafs.FileType.NotFound)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        files = self._io._snapshot()
        return [self._info(p, files) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        files = self._io._snapshot()
        base = selector.base_dir.rstrip("/") + "/"
        under = sorted(k for k in files if k.startswith(base))
        if not under:
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"directory not found: {selector.base_dir}")
        out: dict[str, pafs.FileInfo] = {}
        for key in under:
            parts = key[len(base) :].split("/")
            depth = len(parts) if selector.recursive else 1
            for i in range(1, min(depth, len(parts) - 1) + 1):  # implied directories
                d = base + "/".join(parts[:i])
                out.setdefault(d, pafs.FileInfo(d, pafs.FileType.Directory))
            if len(parts) == 1 or selector.recursive:
                out[key] = self._info(key, files)
        return list(out.values())

    def create_dir(self, path: str, recursive: bool) -> None:
        """Directories are implicit; nothing to do."""

    def delete_dir(self, path: str) -> None:
        self._io._remove_under(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        if not missing_dir_ok and self._info(path, self._io._snapshot()).type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"directory not found: {path}")
        self._io._remove_under(path)

    def delete_root_dir_contents(self) -> None:
        self._io._remove_under("")

    def delete_file(self, path: str) -> None:
        if path not in self._io:
            raise FileNotFoundError(f"file not found: {path}")
        self._io.delete(path)

    def move(self, src: str, dest: str) -> None:
        try:
            blob = self._io._get(src)
        except NotFound:
            raise FileNotFoundError(f"file not found: {src}") from None
        self._io._put(dest, blob.data, overwrite=True)
        self._io.delete(src)

    def copy_file(self, src: str, dest: str) -> None:
        try:
            blob = self._io._get(src)
        except NotFound:
            raise FileNotFoundError(f"file not found: {src}") from None
        self._io._put(dest, blob.data, overwrite=True)

    def _read(self, path: str) -> bytes:
        try:
            return self._io._get(path).data
        except NotFound:
            raise FileNotFoundError(f"file not found: {path}") from None

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self._read(path))

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self._read(path))

    def open_output_stream(self, path: str, metadata: object = None) -> pa.NativeFile:
        # pyarrow's filesystem contract is "create or truncate", so overwriting is allowed here.
        return pa.PythonFile(_PublishOnClose(self._io, path, overwrite=True), mode="w")

    def open_append_stream(self, path: str, metadata: object = None) -> pa.NativeFile:
        existing = self._io._get(path).data if path in self._io else b""
        return pa.PythonFile(_PublishOnClose(self._io, path, overwrite=True, initial=existing), mode="w")


__all__ = ["InMemoryFileIO", "InMemoryInputFile", "InMemoryOutputFile"]
