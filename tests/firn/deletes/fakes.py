"""Tiny in-memory stand-ins for the FileIO protocol (``firn.io.base``), for these tests only."""

from __future__ import annotations

import pyarrow as pa

from firn.errors import AlreadyExists, InvalidMetadata, NotFound
from firn.io.limits import DEFAULT_READ_LIMITS, ReadLimit, ReadLimits


class FakeInputFile:
    """An ``InputFile`` over bytes that records every ranged read."""

    def __init__(self, location: str, data: bytes | None) -> None:
        self._location = location
        self._data = data
        self.reads: list[tuple[int, int]] = []

    @property
    def location(self) -> str:
        return self._location

    def _bytes(self) -> bytes:
        if self._data is None:
            raise NotFound(f"{self._location}: no such file")
        return self._data

    @property
    def read_limits(self) -> ReadLimits:
        return DEFAULT_READ_LIMITS

    def read(self, limit: ReadLimit | None = None) -> bytes:
        data = self._bytes()
        if limit is not None:
            limit.check(self._location, len(data))
        return data

    def read_range(self, offset: int, length: int) -> bytes:
        data = self._bytes()
        self.reads.append((offset, length))
        if offset < 0 or length < 0 or offset + length > len(data):
            raise InvalidMetadata(
                f"cannot read {length} bytes at offset {offset} from a {len(data)}-byte file",
                location=self._location,
            )
        return data[offset : offset + length]

    def length(self) -> int:
        return len(self._bytes())

    def exists(self) -> bool:
        return self._data is not None

    def open_arrow(self) -> pa.NativeFile:
        return pa.BufferReader(self._bytes())


class FakeOutputFile:
    """An ``OutputFile`` that keeps what was written in a dict shared with its inputs."""

    def __init__(self, location: str, store: dict[str, bytes]) -> None:
        self._location = location
        self._store = store

    @property
    def location(self) -> str:
        return self._location

    def write(self, data: bytes, *, overwrite: bool = False) -> int:
        if self._location in self._store and not overwrite:
            raise AlreadyExists(f"{self._location} already exists")
        self._store[self._location] = bytes(data)
        return len(data)

    def open_arrow(self) -> pa.NativeFile:
        raise NotImplementedError("not needed by these tests")


class FakeFileIO:
    """Just enough of ``FileIO`` to hand out the fakes above."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def new_input(self, location: str) -> FakeInputFile:
        return FakeInputFile(location, self.files.get(location))

    def new_output(self, location: str) -> FakeOutputFile:
        return FakeOutputFile(location, self.files)
