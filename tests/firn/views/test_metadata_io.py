"""View metadata files: names (Java's layout), gzip or plain, local files, bad files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from firn.errors import AlreadyExists, InvalidMetadata, NotFound
from firn.io.memory import InMemoryFileIO
from firn.io.pyarrow_io import load_file_io
from firn.spec.view_metadata_json import view_metadata_from_json, view_metadata_to_json
from firn.spec.view_properties import METADATA_COMPRESSION, WRITE_METADATA_PATH
from firn.views import (
    new_view_metadata_location,
    read_view_metadata,
    update_view_properties,
    write_view_metadata,
)
from firn.views.metadata_io import parse_view_metadata_version
from tests.fixtures.view_examples import SPEC_APPENDIX_A_CREATE

MD = view_metadata_from_json(SPEC_APPENDIX_A_CREATE)


def test_names_follow_java() -> None:
    first = new_view_metadata_location(MD, None)
    assert first.startswith("s3://bucket/warehouse/default.db/event_agg/metadata/00000-")
    assert first.endswith(".gz.metadata.json")
    assert parse_view_metadata_version(first) == 0
    assert new_view_metadata_location(MD, first).split("/")[-1].startswith("00001-")
    assert (
        new_view_metadata_location(MD, "s3://b/m/00041-abc.metadata.json").split("/")[-1].startswith("00042-")
    )
    # Not a counted name (a Hadoop-style v1.metadata.json): start over at 0 like Java.
    assert parse_view_metadata_version("s3://b/m/v1.metadata.json") == -1
    plain, _ = update_view_properties(MD, {METADATA_COMPRESSION: "none"})
    plain_name = new_view_metadata_location(plain, None)
    assert plain_name.endswith(".metadata.json") and not plain_name.endswith(".gz.metadata.json")
    moved, _ = update_view_properties(MD, {WRITE_METADATA_PATH: "s3://other/meta/"})
    assert new_view_metadata_location(moved, None).startswith("s3://other/meta/00000-")


def test_write_read_local_files(tmp_path: Path) -> None:
    io = load_file_io({}, str(tmp_path))
    md, _ = update_view_properties(MD, {"x": "1"})
    gz = f"{tmp_path}/metadata/00000-a.gz.metadata.json"
    plain = f"{tmp_path}/metadata/00001-b.metadata.json"
    assert write_view_metadata(io, md, gz) > 0
    assert write_view_metadata(io, md, plain) > 0
    assert gzip.decompress((tmp_path / "metadata/00000-a.gz.metadata.json").read_bytes()).decode() == (
        view_metadata_to_json(md)
    )
    assert (tmp_path / "metadata/00001-b.metadata.json").read_text() == view_metadata_to_json(md)
    assert read_view_metadata(io, gz) == md
    assert read_view_metadata(io, plain) == md
    with pytest.raises(AlreadyExists, match="refusing to overwrite"):
        write_view_metadata(io, md, plain)


def test_content_decides_not_the_name() -> None:
    io = InMemoryFileIO()
    io.new_output("memory://m/00000-a.metadata.json").write(gzip.compress(view_metadata_to_json(MD).encode()))
    assert read_view_metadata(io, "memory://m/00000-a.metadata.json") == MD


def test_bad_files_name_the_file() -> None:
    io = InMemoryFileIO()
    with pytest.raises(NotFound):
        read_view_metadata(io, "memory://m/missing.metadata.json")
    io.new_output("memory://m/empty.metadata.json").write(b"")
    with pytest.raises(
        InvalidMetadata, match=r"^memory://m/empty\.metadata\.json: view metadata file is empty"
    ):
        read_view_metadata(io, "memory://m/empty.metadata.json")
    io.new_output("memory://m/cut.gz.metadata.json").write(
        gzip.compress(SPEC_APPENDIX_A_CREATE.encode())[:-12]
    )
    with pytest.raises(
        InvalidMetadata, match=r"^memory://m/cut\.gz\.metadata\.json: view metadata is not valid JSON"
    ):
        read_view_metadata(io, "memory://m/cut.gz.metadata.json")
