"""Bounded reads: caps on the files read whole, and no reads of what is not a regular file.

Real files throughout: a SQLite catalog's tables (metadata JSON, manifest lists, Avro and V4
manifests, Puffin deletion vectors) read through a FileIO whose caps are set below their sizes,
and the devices, FIFOs and directories of the local machine.
"""

from __future__ import annotations

import gzip
import os
import stat
import threading
from pathlib import Path

import pytest

from firn.catalog.sql import SqlCatalog
from firn.core.metadata_io import read_metadata
from firn.deletes.puffin import read_puffin_footer
from firn.errors import InvalidMetadata, ValidationError
from firn.io.limits import (
    DEFAULT_MANIFEST_MAX_BYTES,
    DEFAULT_METADATA_JSON_MAX_BYTES,
    DEFAULT_PUFFIN_FOOTER_MAX_BYTES,
    MANIFEST_MAX_BYTES,
    METADATA_JSON_MAX_BYTES,
    PUFFIN_FOOTER_MAX_BYTES,
    ReadLimit,
    ReadLimits,
    gunzip_capped,
)
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import PyArrowFileIO
from firn.manifests import read_manifest, read_manifest_list
from firn.manifests.v4_io import read_v4_manifest
from firn.spec.content import FileFormat
from firn.views.metadata_io import read_view_metadata
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.tables import events, make_events_table

MOR = {"write.delete.mode": "merge-on-read"}


# -- the properties ----------------------------------------------------------------------------------
def test_defaults_and_properties() -> None:
    assert ReadLimits.from_properties({}) == ReadLimits()
    assert (ReadLimits().metadata_json.max_bytes, ReadLimits().manifest.max_bytes) == (
        DEFAULT_METADATA_JSON_MAX_BYTES,
        DEFAULT_MANIFEST_MAX_BYTES,
    )
    assert DEFAULT_METADATA_JSON_MAX_BYTES == 512 * 1024 * 1024
    set_ = ReadLimits.from_properties(
        {METADATA_JSON_MAX_BYTES: "10", MANIFEST_MAX_BYTES: " 20 ", PUFFIN_FOOTER_MAX_BYTES: "30"}
    )
    assert set_ == ReadLimits(
        ReadLimit(10, METADATA_JSON_MAX_BYTES),
        ReadLimit(20, MANIFEST_MAX_BYTES),
        ReadLimit(30, PUFFIN_FOOTER_MAX_BYTES),
    )
    assert PyArrowFileIO({MANIFEST_MAX_BYTES: "20"}).read_limits.manifest.max_bytes == 20
    assert InMemoryFileIO({PUFFIN_FOOTER_MAX_BYTES: "30"}).read_limits.puffin_footer.max_bytes == 30
    assert ReadLimits().puffin_footer.max_bytes == DEFAULT_PUFFIN_FOOTER_MAX_BYTES


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1.5"])
def test_a_bad_cap_is_refused_when_the_fileio_is_built(value: str) -> None:
    for make in (PyArrowFileIO, InMemoryFileIO):
        with pytest.raises(
            ValidationError, match=rf"{MANIFEST_MAX_BYTES} must be a .*number of bytes.*{value}"
        ):
            make({MANIFEST_MAX_BYTES: value})


# -- what is not a regular file ------------------------------------------------------------------------
def _every_read(io: PyArrowFileIO, location: str) -> list[object]:
    f = io.new_input(location)
    return [
        lambda: f.read(),
        lambda: f.read(ReadLimits().metadata_json),
        f.length,
        f.open_arrow,
        lambda: f.read_range(0, 8),
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", ["{}", "file://{}"])
def test_a_device_is_refused_at_once(form: str) -> None:
    if not os.path.exists("/dev/zero"):  # pragma: no cover - every Linux and macOS has it
        pytest.skip("no /dev/zero")
    io = PyArrowFileIO()
    location = form.format("/dev/zero")
    for call in _every_read(io, location):
        with pytest.raises(ValidationError, match=r"/dev/zero: cannot read it: it is a character device"):
            call()  # type: ignore[operator]
    assert not io.new_input(location).exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", ["{}", "file://{}"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, form: str) -> None:
    fifo = tmp_path / "pipe.metadata.json"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    io = PyArrowFileIO()
    outcome: list[BaseException] = []

    def read_all_ways() -> None:
        for call in _every_read(io, form.format(fifo)):
            try:
                call()  # type: ignore[operator]
            except BaseException as e:
                outcome.append(e)

    # Opening a FIFO for reading blocks until a writer comes: run it where a hang shows.
    reader = threading.Thread(target=read_all_ways, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert len(outcome) == 5
    for error in outcome:
        assert isinstance(error, ValidationError) and "it is a FIFO, not a regular file" in str(error)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.metadata.json").mkdir()
    for call in _every_read(PyArrowFileIO(), str(tmp_path / "dir.metadata.json")):
        with pytest.raises(ValidationError, match=r"dir\.metadata\.json: cannot read it: it is a directory"):
            call()  # type: ignore[operator]


def test_proc_files_are_read_within_the_cap() -> None:
    # /proc files are regular files that stat as empty: the cap still bounds the read.
    status = "/proc/self/status"
    if not os.path.exists(status):  # pragma: no cover - Linux only
        pytest.skip("no /proc")
    f = PyArrowFileIO().new_input(status)
    assert f.read(ReadLimit(1 << 20, METADATA_JSON_MAX_BYTES)).startswith(b"Name:")
    with pytest.raises(
        ValidationError, match=r"/proc/self/status: the file is \d+ bytes, more than the 10 bytes"
    ):
        f.read(ReadLimit(10, METADATA_JSON_MAX_BYTES))


# -- gzip ------------------------------------------------------------------------------------------------
def test_gunzip_is_capped_on_its_output() -> None:
    cap = ReadLimit(1 << 20, METADATA_JSON_MAX_BYTES)
    bomb = gzip.compress(b"{" + b" " * (50 << 20) + b"}")  # 50 MiB of JSON in 50 KiB
    assert len(bomb) < 100_000
    with pytest.raises(
        ValidationError, match=r"m\.json: the file decompresses to more than the 1048576 bytes"
    ):
        gunzip_capped(bomb, cap, "m.json")
    members = gzip.compress(b'{"a": ') + gzip.compress(b"1}")  # several members: one stream
    assert gunzip_capped(members, cap, "m.json") == b'{"a": 1}'
    assert gunzip_capped(b'{"plain": true}', cap, "m.json") == b'{"plain": true}'
    exact = b"x" * cap.max_bytes
    assert gunzip_capped(gzip.compress(exact), cap, "m.json") == exact
    with pytest.raises(InvalidMetadata, match="gzip data is truncated"):
        gunzip_capped(members[:-3], cap, "m.json")


# -- the readers honour the caps of their FileIO ----------------------------------------------------------
@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = make_sqlite_catalog(tmp_path)
    yield catalog  # type: ignore[misc]
    catalog.close()


def _json_size(location: str) -> int:
    """The bytes of a metadata file's JSON (after gzip when compressed): the cap it needs."""
    data = Path(location).read_bytes()
    return len(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def _capped(**caps: int) -> PyArrowFileIO:
    names = {"metadata_json": METADATA_JSON_MAX_BYTES, "manifest": MANIFEST_MAX_BYTES}
    names["puffin_footer"] = PUFFIN_FOOTER_MAX_BYTES
    return PyArrowFileIO({names[k]: str(v) for k, v in caps.items()})


def test_metadata_json_is_capped_plain_and_gzip(catalog: SqlCatalog) -> None:
    for version in (2, 4):  # v2 writes plain JSON, V4 gzip
        table = make_events_table(catalog, version, name=f"t{version}")
        table.append(events(10))
        location = table.metadata_location
        size = _json_size(location)
        assert read_metadata(_capped(metadata_json=size), location).table_uuid == table.metadata.table_uuid
        with pytest.raises(ValidationError, match=rf"{METADATA_JSON_MAX_BYTES}"):
            read_metadata(_capped(metadata_json=size - 1), location)
    # The gzip file is within the cap but its JSON is not: refused while inflating.
    v4 = catalog.load_table("db.t4")
    compressed = os.path.getsize(v4.metadata_location)
    assert compressed < _json_size(v4.metadata_location) - 1
    with pytest.raises(ValidationError, match=r"decompresses to more than"):
        read_metadata(_capped(metadata_json=compressed + 1), v4.metadata_location)


def test_the_catalog_property_reaches_every_table_read(tmp_path: Path) -> None:
    writer = make_sqlite_catalog(tmp_path)
    make_events_table(writer, 2).append(events(10))
    writer.close()
    capped = make_sqlite_catalog(tmp_path, **{METADATA_JSON_MAX_BYTES: "100"})
    try:
        with pytest.raises(
            ValidationError, match=r"\.metadata\.json: the file is \d+ bytes, more than the 100"
        ):
            capped.load_table("db.events")
    finally:
        capped.close()


def test_view_metadata_is_capped(catalog: SqlCatalog) -> None:
    catalog.create_namespace("db")
    view = catalog.create_view("db.v", events(1).schema, "SELECT 1")
    size = _json_size(view.metadata_location)  # gzip (Java's default for views): its JSON's size
    assert read_view_metadata(_capped(metadata_json=size), view.metadata_location).view_uuid
    with pytest.raises(ValidationError, match=METADATA_JSON_MAX_BYTES):
        read_view_metadata(_capped(metadata_json=size - 1), view.metadata_location)


def test_manifest_lists_and_manifests_are_capped(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 2)
    table.append(events(10))
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    listing = snapshot.manifest_list
    manifests = read_manifest_list(
        _capped(manifest=os.path.getsize(listing)).new_input(listing), use_cache=False
    )
    with pytest.raises(ValidationError, match=rf"snap-.*\.avro: the file is \d+ bytes.*{MANIFEST_MAX_BYTES}"):
        read_manifest_list(_capped(manifest=os.path.getsize(listing) - 1).new_input(listing), use_cache=False)
    path = manifests[0].manifest_path
    ok = _capped(manifest=os.path.getsize(path))
    assert len(read_manifest(ok.new_input(path), manifests[0], use_cache=False)) == 1
    with pytest.raises(ValidationError, match=MANIFEST_MAX_BYTES):
        read_manifest(
            _capped(manifest=os.path.getsize(path) - 1).new_input(path), manifests[0], use_cache=False
        )


def test_v4_manifests_are_capped(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 4)
    table.append(events(10))
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.root_manifest is not None
    root = snapshot.root_manifest
    size = os.path.getsize(root)
    assert read_v4_manifest(_capped(manifest=size), root, use_cache=False).num_rows == 1
    with pytest.raises(ValidationError, match=rf"the file is {size} bytes.*{MANIFEST_MAX_BYTES}"):
        read_v4_manifest(_capped(manifest=size - 1), root, use_cache=False)


def test_puffin_footers_are_capped(catalog: SqlCatalog) -> None:
    table = make_events_table(catalog, 3, properties=MOR)
    table.append(events(10))
    table.delete("id = 3")
    puffins = [t.delete_files for t in table.scan().plan_files()]
    dv = next(d for ds in puffins for d in ds if d.file_format == FileFormat.PUFFIN)
    footer = read_puffin_footer(PyArrowFileIO().new_input(dv.file_path))
    exact = _capped(puffin_footer=footer.footer_size_in_bytes)
    assert read_puffin_footer(exact.new_input(dv.file_path)).blobs == footer.blobs
    with pytest.raises(
        ValidationError, match=rf"\(Puffin footer\): the file is \d+ bytes.*{PUFFIN_FOOTER_MAX_BYTES}"
    ):
        read_puffin_footer(_capped(puffin_footer=footer.footer_size_in_bytes - 1).new_input(dv.file_path))
