"""InMemoryFileIO specifics: its pyarrow filesystem, stream publication, test helpers."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from firn.errors import AlreadyExists
from firn.io.memory import InMemoryFileIO


def test_output_stream_is_published_on_close() -> None:
    io = InMemoryFileIO()
    stream = io.new_output("mem://a/f.bin").open_arrow()
    stream.write(b"partial")
    assert "mem://a/f.bin" not in io  # like an object store: invisible until complete
    stream.close()
    assert io.new_input("mem://a/f.bin").read() == b"partial"


def test_helpers_and_counters() -> None:
    io = InMemoryFileIO()
    io.new_output("b").write(b"2")
    io.new_output("a").write(b"1")
    io.new_input("a").read()
    assert io.locations() == ["a", "b"] and len(io) == 2
    assert io.writes == 2 and io.reads == 1


def test_pyfilesystem_directories_and_selectors() -> None:
    io = InMemoryFileIO()
    for key in ("wh/t/data/p=1/a.parquet", "wh/t/data/p=2/b.parquet", "wh/t/metadata/v1.json", "wh/t2/x"):
        io.new_output(key).write(b"abc")
    fs, _ = io.arrow_filesystem("wh")
    assert fs.get_file_info("wh/t").type == pafs.FileType.Directory
    assert fs.get_file_info("wh/t/metadata/v1.json").size == 3
    assert fs.get_file_info("wh/none").type == pafs.FileType.NotFound
    flat = {i.path: i.type for i in fs.get_file_info(pafs.FileSelector("wh/t"))}
    assert flat == {"wh/t/data": pafs.FileType.Directory, "wh/t/metadata": pafs.FileType.Directory}
    deep = {i.path for i in fs.get_file_info(pafs.FileSelector("wh/t", recursive=True))}
    assert deep == {
        "wh/t/data",
        "wh/t/data/p=1",
        "wh/t/data/p=2",
        "wh/t/metadata",
        "wh/t/data/p=1/a.parquet",
        "wh/t/data/p=2/b.parquet",
        "wh/t/metadata/v1.json",
    }
    with pytest.raises(FileNotFoundError):
        fs.get_file_info(pafs.FileSelector("wh/none"))
    fs.move("wh/t2/x", "wh/t2/y")
    fs.copy_file("wh/t2/y", "wh/t2/z")
    assert io.locations()[-2:] == ["wh/t2/y", "wh/t2/z"]
    fs.delete_dir_contents("wh/t/data")
    assert [i.location for i in io.list_prefix("wh/t")] == ["wh/t/metadata/v1.json"]
    with pytest.raises(FileNotFoundError):
        fs.delete_file("wh/t/data/p=1/a.parquet")


def test_partitioned_dataset_round_trip() -> None:
    io = InMemoryFileIO()
    fs, root = io.arrow_filesystem("memory://wh/t/data")
    table = pa.table({"p": [1, 1, 2], "v": ["a", "b", "c"]})
    ds.write_dataset(
        table, root, filesystem=fs, format="parquet", partitioning=["p"], partitioning_flavor="hive"
    )
    files = [i.location for i in io.list_prefix("memory://wh/t/data")]
    assert len(files) == 2 and all(f.endswith(".parquet") for f in files)
    read = ds.dataset(root, filesystem=fs, format="parquet", partitioning="hive").to_table()
    assert sorted(read.column("v").to_pylist()) == ["a", "b", "c"]
    one = pq.read_table(files[0], filesystem=fs)
    assert one.num_rows in (1, 2)


def test_new_output_never_clobbers_even_via_stream() -> None:
    io = InMemoryFileIO()
    io.new_output("k").write(b"x")
    with pytest.raises(AlreadyExists):
        io.new_output("k").open_arrow()
