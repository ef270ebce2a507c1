"""The FileIO contract, run against local files (plain paths and file://) and the memory fake."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from firn.errors import AlreadyExists, InvalidMetadata, NotFound, ValidationError
from firn.io.base import FileIO, InputFile, OutputFile
from firn.io.limits import ReadLimit, ReadLimits
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO


@dataclass
class Store:
    io: FileIO
    base: str

    def loc(self, *parts: str) -> str:
        return "/".join((self.base, *parts))


@pytest.fixture(params=["local", "file-uri", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "local":
        yield Store(PyArrowFileIO(), str(tmp_path / "root"))
    elif request.param == "file-uri":
        yield Store(PyArrowFileIO(), f"file://{tmp_path}/root")
    else:
        yield Store(InMemoryFileIO(), "memory://bucket/root")


def test_implements_protocols(store: Store) -> None:
    assert isinstance(store.io, FileIO)
    assert isinstance(store.io.new_input(store.loc("x")), InputFile)
    assert isinstance(store.io.new_output(store.loc("x")), OutputFile)


def test_write_read_round_trip_creates_parents(store: Store) -> None:
    location = store.loc("a", "b", "c", "file.bin")
    assert store.io.new_output(location).write(b"hello world") == 11
    f = store.io.new_input(location)
    assert f.location == location
    assert f.read() == b"hello world"
    assert f.length() == 11
    assert f.exists()


def test_write_never_clobbers(store: Store) -> None:
    location = store.loc("meta", "00001.metadata.json")
    store.io.new_output(location).write(b"first")
    with pytest.raises(AlreadyExists, match=r"00001\.metadata\.json"):
        store.io.new_output(location).write(b"second")
    assert store.io.new_input(location).read() == b"first"
    store.io.new_output(location).write(b"third", overwrite=True)
    assert store.io.new_input(location).read() == b"third"


def test_missing_file_errors_name_the_location(store: Store) -> None:
    location = store.loc("nope.json")
    f = store.io.new_input(location)
    assert not f.exists()
    for call in (f.read, f.length, f.open_arrow, lambda: f.read_range(0, 1)):
        with pytest.raises(NotFound, match=r"nope\.json"):
            call()


def test_read_range(store: Store) -> None:
    location = store.loc("data.bin")
    store.io.new_output(location).write(bytes(range(100)))
    f = store.io.new_input(location)
    assert f.read_range(10, 5) == bytes([10, 11, 12, 13, 14])
    assert f.read_range(95, 5) == bytes(range(95, 100))
    assert f.read_range(100, 0) == b""
    with pytest.raises(InvalidMetadata, match="truncated") as info:
        f.read_range(96, 8)
    assert "data.bin" in str(info.value)
    with pytest.raises(InvalidMetadata, match="truncated"):
        f.read_range(500, 1)
    # A damaged length (a DV's content_size_in_bytes, say) fails before any allocation.
    with pytest.raises(InvalidMetadata, match="truncated"):
        f.read_range(10, 2**62)
    with pytest.raises(ValidationError):
        f.read_range(-1, 1)


def test_a_read_with_a_limit_refuses_a_longer_file(store: Store) -> None:
    location = store.loc("big.bin")
    store.io.new_output(location).write(b"x" * 1000)
    f = store.io.new_input(location)
    assert f.read(ReadLimit(1000, "io.read-limit.manifest")) == b"x" * 1000  # the cap itself is fine
    with pytest.raises(
        ValidationError, match=r"big\.bin: the file is 1000 bytes.*999 bytes.*io\.read-limit\.manifest"
    ):
        f.read(ReadLimit(999, "io.read-limit.manifest"))
    assert f.read() == b"x" * 1000  # no limit given, none applied
    assert f.read_limits == ReadLimits()  # the defaults, as no property sets them


def test_delete_is_idempotent(store: Store) -> None:
    location = store.loc("d.bin")
    store.io.delete(location)  # missing: not an error
    store.io.new_output(location).write(b"x")
    store.io.delete(location)
    assert not store.io.new_input(location).exists()


def test_delete_many_counts_only_existing_files(store: Store) -> None:
    locations = [store.loc("many", f"{i:03d}.bin") for i in range(40)]
    for location in locations:
        store.io.new_output(location).write(b"x")
    missing = [store.loc("many", "missing-1"), store.loc("many", "missing-2")]
    assert store.io.delete_many([*locations, *missing, locations[0]]) == 40
    assert list(store.io.list_prefix(store.loc("many"))) == []
    assert store.io.delete_many([]) == 0


def test_list_prefix_is_recursive_with_sizes(store: Store) -> None:
    store.io.new_output(store.loc("t", "metadata", "v1.json")).write(b"12345")
    store.io.new_output(store.loc("t", "data", "p=1", "f.parquet")).write(b"123")
    store.io.new_output(store.loc("t2", "other.bin")).write(b"1")  # sibling with a shared prefix
    infos = sorted(store.io.list_prefix(store.loc("t")), key=lambda i: i.location)
    assert [(i.location, i.size) for i in infos] == [
        (store.loc("t", "data", "p=1", "f.parquet"), 3),
        (store.loc("t", "metadata", "v1.json"), 5),
    ]
    assert all(i.modified_ms is not None and i.modified_ms > 0 for i in infos)
    # A trailing slash is the same prefix; a missing prefix lists nothing.
    assert len(list(store.io.list_prefix(store.loc("t") + "/"))) == 2
    assert list(store.io.list_prefix(store.loc("absent"))) == []


def test_parquet_through_open_arrow(store: Store) -> None:
    table = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    location = store.loc("data", "f.parquet")
    out = store.io.new_output(location)
    with out.open_arrow() as sink:
        pq.write_table(table, sink)
    assert store.io.new_input(location).length() > 0
    with store.io.new_input(location).open_arrow() as source:
        assert pq.read_table(source).equals(table)
    with pytest.raises(AlreadyExists):
        store.io.new_output(location).open_arrow()


def test_arrow_filesystem_reads_and_writes_datasets(store: Store) -> None:
    table = pa.table({"x": list(range(10))})
    for i in range(2):
        fs, path = store.io.arrow_filesystem(store.loc("ds", f"part-{i}.parquet"))
        fs.create_dir(path.rpartition("/")[0], recursive=True)  # pyarrow's local fs needs parents
        pq.write_table(table, path, filesystem=fs)
    fs, directory = store.io.arrow_filesystem(store.loc("ds"))
    dataset = ds.dataset(directory, filesystem=fs, format="parquet")
    assert dataset.to_table().num_rows == 20
    assert len(list(store.io.list_prefix(store.loc("ds")))) == 2
