"""Puffin files of deletion vectors: writing many, reading one, and PyIceberg reading ours."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from firn.deletes import (
    DELETION_VECTOR_V1,
    PositionBitmap,
    PuffinBlob,
    parse_dv_puffin,
    parse_puffin_footer,
    read_dv,
    read_dv_puffin,
    serialize_dv,
    serialize_dv_puffin,
    serialize_puffin,
    write_dv_puffin,
)
from firn.errors import InvalidMetadata, ValidationError
from tests.firn.deletes.fakes import FakeFileIO

PUFFIN = "memory://warehouse/db/t/data/00000-1-dv.puffin"


def _dvs() -> dict[str, PositionBitmap]:
    rng = np.random.default_rng(42)
    return {
        "s3://b/t/data/a.parquet": PositionBitmap.from_positions([0, 1, 2, 10]),
        "s3://b/t/data/b.parquet": PositionBitmap.from_positions(
            rng.choice(1_000_000, 100_000, replace=False)
        ),
        "s3://b/t/data/c.parquet": PositionBitmap.from_range(5_000, 90_000),
        "s3://b/t/data/d.parquet": PositionBitmap.from_positions([7, (1 << 32) + 3, (3 << 32) + 1]),
    }


def test_write_many_dvs_and_read_each_by_offset() -> None:
    io = FakeFileIO()
    dvs = _dvs()
    result = write_dv_puffin(io.new_output(PUFFIN), dvs)
    data = io.files[PUFFIN]
    assert result.location == PUFFIN
    assert result.file_size_in_bytes == len(data)
    assert [w.referenced_data_file for w in result.dvs] == list(dvs)

    footer = parse_puffin_footer(data, location=PUFFIN)
    for written, meta in zip(result.dvs, footer.blobs):
        bitmap = dvs[written.referenced_data_file]
        # Manifest content_offset / content_size_in_bytes must equal the footer exactly.
        assert (written.offset, written.length) == (meta.offset, meta.length)
        assert written.cardinality == bitmap.cardinality
        assert data[meta.offset : meta.offset + meta.length] == serialize_dv(bitmap)
        # Blob metadata as Iceberg Java writes it.
        assert meta.type == DELETION_VECTOR_V1
        assert meta.fields == (2147483645,)
        assert (meta.snapshot_id, meta.sequence_number) == (-1, -1)
        assert meta.compression_codec is None
        assert dict(meta.properties) == {
            "referenced-data-file": written.referenced_data_file,
            "cardinality": str(bitmap.cardinality),
        }
        file = io.new_input(PUFFIN)
        loaded = read_dv(file, written.offset, written.length, expected_cardinality=written.cardinality)
        assert loaded == bitmap
        assert file.reads == [(written.offset, written.length)]  # one ranged read, no footer

    assert read_dv_puffin(io.new_input(PUFFIN)) == dvs
    assert parse_dv_puffin(data, location=PUFFIN) == dvs


def test_read_dv_with_wrong_manifest_range_names_the_file() -> None:
    io = FakeFileIO()
    result = write_dv_puffin(io.new_output(PUFFIN), _dvs())
    first = result.dvs[0]
    for offset, length in [(first.offset + 1, first.length), (first.offset, first.length - 1)]:
        with pytest.raises(InvalidMetadata) as info:
            read_dv(io.new_input(PUFFIN), offset, length)
        assert PUFFIN in str(info.value)
    with pytest.raises(InvalidMetadata, match="cardinality"):
        read_dv(io.new_input(PUFFIN), first.offset, first.length, expected_cardinality=first.cardinality + 1)
    with pytest.raises(InvalidMetadata, match=PUFFIN):
        read_dv(io.new_input(PUFFIN), result.file_size_in_bytes - 4, 100)


def test_writer_rejects_duplicates_and_empty_dvs() -> None:
    bitmap = PositionBitmap.from_positions([1])
    with pytest.raises(ValidationError, match="more than one"):
        serialize_dv_puffin([("f", bitmap), ("f", bitmap)])
    with pytest.raises(ValidationError, match="deletes no rows"):
        serialize_dv_puffin({"f": PositionBitmap()})


def test_footer_cardinality_must_match_vector() -> None:
    bitmap = PositionBitmap.from_positions([1, 2, 3])
    blob = PuffinBlob(
        type=DELETION_VECTOR_V1,
        data=serialize_dv(bitmap),
        fields=(2147483645,),
        properties={"referenced-data-file": "f", "cardinality": "4"},
    )
    data, _ = serialize_puffin([blob])
    with pytest.raises(InvalidMetadata, match="cardinality 3 does not match the expected 4"):
        parse_dv_puffin(data, location=PUFFIN)
    missing = PuffinBlob(
        type=DELETION_VECTOR_V1, data=serialize_dv(bitmap), fields=(), properties={"cardinality": "3"}
    )
    data, _ = serialize_puffin([missing])
    with pytest.raises(InvalidMetadata, match="referenced-data-file"):
        parse_dv_puffin(data, location=PUFFIN)


@pytest.mark.interop
def test_pyiceberg_reads_firn_dv_puffin_files() -> None:
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    dvs = _dvs()
    data, _ = serialize_dv_puffin(dvs)
    puffin = PuffinFile(data)
    assert [b.properties["referenced-data-file"] for b in puffin.footer.blobs] == list(dvs)
    vectors = deletion_vectors_from_puffin_file(puffin)
    assert len(vectors) == len(dvs)
    for vector in vectors:
        positions = np.asarray(vector.to_vector().to_numpy(), dtype=np.int64)
        assert positions.tolist() == dvs[vector.referenced_data_file].to_array().tolist()
    # PyIceberg reads the footer JSON with pydantic aliases; check it sees Java's fields too.
    blob = puffin.footer.blobs[0]
    assert (blob.snapshot_id, blob.sequence_number, blob.fields) == (-1, -1, [2147483645])
    assert json.loads(puffin.footer.model_dump_json(by_alias=True))["properties"]["created-by"].startswith(
        "Firn "
    )


@pytest.mark.parametrize("backend", ["memory", "local"])
def test_with_firn_file_io_implementations(backend: str, tmp_path: Path) -> None:
    # The wrappers only use InputFile.read_range/length and OutputFile.write, so Firn's own
    # FileIO implementations work as well as the fakes above.
    if backend == "memory":
        memory = pytest.importorskip("firn.io.memory")
        io = memory.InMemoryFileIO()
        location = PUFFIN
    else:
        pyarrow_io = pytest.importorskip("firn.io.pyarrow_io")
        io = pyarrow_io.PyArrowFileIO()
        location = f"file://{tmp_path}/dv.puffin"
    dvs = _dvs()
    result = write_dv_puffin(io.new_output(location), dvs)
    file = io.new_input(location)
    assert file.length() == result.file_size_in_bytes
    for written in result.dvs:
        assert read_dv(file, written.offset, written.length) == dvs[written.referenced_data_file]
    assert read_dv_puffin(file) == dvs
