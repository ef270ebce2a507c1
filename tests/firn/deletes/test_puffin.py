"""Puffin container: byte layout, compression, footer parsing and malformed files."""

from __future__ import annotations

import json
import struct

import lz4.frame
import pytest
import zstandard

from firn.deletes.puffin import (
    DEFAULT_CREATED_BY,
    MAGIC,
    BlobMetadata,
    PuffinBlob,
    PuffinCodec,
    extract_blob,
    parse_puffin_footer,
    read_puffin_blob,
    read_puffin_footer,
    serialize_puffin,
    write_puffin,
)
from firn.errors import AlreadyExists, InvalidMetadata, ValidationError
from tests.firn.deletes.fakes import FakeFileIO, FakeInputFile

LOCATION = "memory://warehouse/stats.puffin"

# Java core/src/test/resources/org/apache/iceberg/puffin/v1/empty-puffin-uncompressed.bin
EMPTY_PUFFIN = (
    b"PFA1" + b"PFA1" + b'{"blobs":[]}' + bytes.fromhex("0c000000 00000000".replace(" ", "")) + b"PFA1"
)


def _blobs() -> list[PuffinBlob]:
    text = b"abc" * 1000
    return [
        PuffinBlob(type="some-blob", data=b"raw bytes", fields=(1,), snapshot_id=2, sequence_number=1),
        PuffinBlob(
            type="apache-datasketches-theta-v1",
            data=text,
            fields=(2, 3),
            snapshot_id=7,
            sequence_number=3,
            properties={"ndv": "3"},
            compression_codec=PuffinCodec.ZSTD,
        ),
        PuffinBlob(type="lz4-blob", data=text[::-1], fields=(), compression_codec=PuffinCodec.LZ4),
        PuffinBlob(type="empty-blob", data=b"", fields=(4,)),
    ]


def test_empty_file_is_the_32_byte_java_file() -> None:
    data, footer = serialize_puffin([], created_by=None)
    assert data == EMPTY_PUFFIN
    assert len(data) == 32
    assert footer.footer_size_in_bytes == 28
    parsed = parse_puffin_footer(EMPTY_PUFFIN, location=LOCATION)
    assert parsed.blobs == ()
    assert dict(parsed.properties) == {}
    assert parsed.file_size_in_bytes == 32


@pytest.mark.parametrize("compress_footer", [False, True])
def test_round_trip_with_compressed_blobs(compress_footer: bool) -> None:
    blobs = _blobs()
    data, written = serialize_puffin(blobs, properties={"k": "v"}, compress_footer=compress_footer)
    footer = parse_puffin_footer(data, location=LOCATION)
    assert footer == written
    assert footer.footer_compressed is compress_footer
    assert dict(footer.properties) == {"k": "v", "created-by": DEFAULT_CREATED_BY}
    assert footer.footer_size_in_bytes == written.footer_size_in_bytes
    assert data[-8] & 1 == int(compress_footer)
    for blob, meta in zip(blobs, footer.blobs):
        assert extract_blob(data, meta, location=LOCATION) == blob.data
        assert meta.type == blob.type
        assert meta.fields == tuple(blob.fields)
        assert meta.compression_codec == blob.compression_codec
    # Offsets are contiguous from the header magic; the stored bytes really are compressed.
    assert footer.blobs[0].offset == 4
    for a, b in zip(footer.blobs, footer.blobs[1:]):
        assert b.offset == a.offset + a.length
    zstd_meta, lz4_meta = footer.blobs[1], footer.blobs[2]
    assert zstd_meta.length < 3000 and lz4_meta.length < 3000
    zstd_frame = data[zstd_meta.offset : zstd_meta.offset + zstd_meta.length]
    assert zstandard.get_frame_parameters(zstd_frame).content_size == 3000
    lz4_frame = data[lz4_meta.offset : lz4_meta.offset + lz4_meta.length]
    assert lz4.frame.get_frame_info(lz4_frame)["content_size"] == 3000


def test_footer_json_matches_java_field_names_and_order() -> None:
    data, _ = serialize_puffin(_blobs()[:2], created_by="test 1.0")
    size = struct.unpack_from("<i", data, len(data) - 12)[0]
    payload = data[-12 - size : -12]
    doc = json.loads(payload)
    assert list(doc) == ["blobs", "properties"]
    assert list(doc["blobs"][1]) == [
        "type",
        "fields",
        "snapshot-id",
        "sequence-number",
        "offset",
        "length",
        "compression-codec",
        "properties",
    ]
    assert "compression-codec" not in doc["blobs"][0] and "properties" not in doc["blobs"][0]
    assert doc["properties"] == {"created-by": "test 1.0"}


def test_deletion_vector_blobs_cannot_be_compressed() -> None:
    blob = PuffinBlob(type="deletion-vector-v1", data=b"x", fields=(1,), compression_codec=PuffinCodec.ZSTD)
    with pytest.raises(ValidationError, match="must not be compressed"):
        serialize_puffin([blob])


def test_file_level_wrappers_use_ranged_reads() -> None:
    io = FakeFileIO()
    written = write_puffin(io.new_output(LOCATION), _blobs(), compress_footer=True)
    with pytest.raises(AlreadyExists):
        write_puffin(io.new_output(LOCATION), [])
    file = io.new_input(LOCATION)
    footer = read_puffin_footer(file)
    assert footer == written
    # A small file is covered by the single tail read, header magic included.
    assert file.reads == [(0, len(io.files[LOCATION]))]
    for blob, meta in zip(_blobs(), footer.blobs):
        assert read_puffin_blob(file, meta) == blob.data


def test_large_file_reads_footer_and_header_magic_separately() -> None:
    big = PuffinBlob(type="big", data=bytes(range(256)) * 400, fields=(1,))
    many = [PuffinBlob(type=f"t{i}", data=b"", fields=(i,), properties={"p": "x" * 100}) for i in range(200)]
    data, written = serialize_puffin([big, *many])
    assert written.footer_size_in_bytes > 16 * 1024  # bigger than the speculative tail read
    file = FakeInputFile(LOCATION, data)
    assert read_puffin_footer(file, file_size=len(data)) == written
    size = len(data)
    assert file.reads[0] == (size - 16 * 1024, 16 * 1024)
    assert file.reads[1] == (size - written.footer_size_in_bytes, written.footer_size_in_bytes)
    assert file.reads[2] == (0, 4)


def _with_footer(payload: bytes, flags: int = 0, blobs_area: bytes = b"") -> bytes:
    return MAGIC + blobs_area + MAGIC + payload + struct.pack("<iI", len(payload), flags) + MAGIC


def _malformed_cases() -> list[tuple[str, bytes, str]]:
    good = EMPTY_PUFFIN
    blob = {"type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1, "offset": 4, "length": 3}

    def doc(**changes: object) -> bytes:
        b = dict(blob)
        for k, v in changes.items():
            if v is None:
                b.pop(k.replace("_", "-"))
            else:
                b[k.replace("_", "-")] = v
        return json.dumps({"blobs": [b]}).encode()

    return [
        ("too short", good[:19], "shorter than the minimum"),
        ("bad header magic", b"XFA1" + good[4:], "bad header magic"),
        ("bad trailing magic", good[:-1] + b"2", "bad trailing magic"),
        ("bad footer start magic", good[:4] + b"PFA2" + good[8:], "bad footer start magic"),
        ("negative payload size", good[:-12] + struct.pack("<i", -1) + good[-8:], "payload size -1"),
        ("payload size too big", good[:-12] + struct.pack("<i", 100) + good[-8:], "payload size 100"),
        ("payload size off by one", good[:-12] + struct.pack("<i", 11) + good[-8:], "bad footer start magic"),
        ("unknown flag", good[:-8] + struct.pack("<I", 2) + good[-4:], "unknown flags"),
        (
            "compressed flag on plain json",
            good[:-8] + struct.pack("<I", 1) + good[-4:],
            "cannot decompress lz4",
        ),
        ("not json", _with_footer(b"{blobs"), "not valid UTF-8 JSON"),
        ("not utf-8", _with_footer(b'{"blobs":[],"x":"\xff"}'), "not valid UTF-8 JSON"),
        ("json array", _with_footer(b"[]"), "not a JSON object"),
        ("no blobs", _with_footer(b"{}"), "missing required field 'blobs'"),
        ("blob not object", _with_footer(b'{"blobs":[1]}'), "blob 0 is not a JSON object"),
        ("missing type", _with_footer(doc(type=None), blobs_area=b"abc"), "missing required field 'type'"),
        ("bool offset", _with_footer(doc(offset=True), blobs_area=b"abc"), "must be a JSON int"),
        ("string fields", _with_footer(doc(fields=["1"]), blobs_area=b"abc"), "fields must be integers"),
        ("blob past footer", _with_footer(doc(length=4), blobs_area=b"abc"), "outside the blob area"),
        ("blob in header", _with_footer(doc(offset=0), blobs_area=b"abc"), "outside the blob area"),
        (
            "unknown codec",
            _with_footer(doc(compression_codec="snappy"), blobs_area=b"abc"),
            "unsupported compression-codec",
        ),
        (
            "bad properties",
            _with_footer(doc(properties={"a": 1}), blobs_area=b"abc"),
            "properties must map strings",
        ),
    ]


@pytest.mark.parametrize(("name", "data", "needle"), _malformed_cases())
def test_malformed_files_raise_invalid_metadata(name: str, data: bytes, needle: str) -> None:
    with pytest.raises(InvalidMetadata) as info:
        parse_puffin_footer(data, location=LOCATION)
    assert needle in str(info.value), name
    assert LOCATION in str(info.value)
    # The ranged reader agrees with the in-memory parser.
    with pytest.raises(InvalidMetadata) as info:
        read_puffin_footer(FakeInputFile(LOCATION, data))
    assert LOCATION in str(info.value), name


def test_corrupt_compressed_blob_raises_invalid_metadata() -> None:
    data, footer = serialize_puffin(_blobs())
    zstd_meta = footer.blobs[1]
    corrupt = bytearray(data)
    corrupt[zstd_meta.offset + zstd_meta.length - 2] ^= 0xFF
    with pytest.raises(InvalidMetadata, match="cannot decompress zstd") as info:
        extract_blob(bytes(corrupt), zstd_meta, location=LOCATION)
    assert LOCATION in str(info.value)
    lz4_meta = footer.blobs[2]
    with pytest.raises(InvalidMetadata, match=LOCATION):
        extract_blob(data[: lz4_meta.offset] + b"\x00" * lz4_meta.length, lz4_meta, location=LOCATION)
    past_end = BlobMetadata("t", (1,), 1, 1, offset=len(data) - 2, length=10)
    with pytest.raises(InvalidMetadata, match="past the end"):
        extract_blob(data, past_end, location=LOCATION)
