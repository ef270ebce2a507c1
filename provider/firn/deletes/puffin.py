"""Puffin files (puffin-spec.md): ``Magic Blob1 ... BlobN Footer``.

``Footer = Magic FooterPayload FooterPayloadSize Flags Magic``; the payload is UTF-8 JSON (the
``FileMetadata`` object), optionally one LZ4 frame (flag byte 0, bit 0). Integers in the
footer are 4-byte signed little-endian. Blobs may be compressed with ``lz4`` or ``zstd``, each
a single frame with the content size present; ``deletion-vector-v1`` blobs never are.

Bytes-level functions (:func:`serialize_puffin`, :func:`parse_puffin_footer`,
:func:`extract_blob`) do no I/O; :func:`write_puffin`, :func:`read_puffin_footer` and
:func:`read_puffin_blob` wrap them around the FileIO protocol (``firn.io.base``). Every
malformed input raises :class:`firn.errors.InvalidMetadata` naming the file.
"""

from __future__ import annotations

import enum
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import lz4.frame
import zstandard

from firn.errors import InvalidMetadata, ValidationError
from firn.io.base import InputFile, OutputFile
from firn.io.limits import ReadLimit
from firn.util.version import __version__

MAGIC = b"PFA1"  # Puffin Fratercula arctica, version 1
# FooterPayloadSize (4) + Flags (4) + Magic (4), after the payload.
FOOTER_STRUCT_SIZE = 12
# Footer = Magic + payload + FOOTER_STRUCT_SIZE.
FOOTER_OVERHEAD = len(MAGIC) + FOOTER_STRUCT_SIZE
# The smallest file: header magic plus a footer with an empty payload.
MIN_FILE_SIZE = len(MAGIC) + FOOTER_OVERHEAD
FLAG_FOOTER_PAYLOAD_COMPRESSED = 0x1  # byte 0, bit 0

# Recommended FileMetadata property (puffin-spec "Common properties").
CREATED_BY_PROPERTY = "created-by"
DEFAULT_CREATED_BY = f"Firn {__version__}"

DELETION_VECTOR_V1 = "deletion-vector-v1"

# How much of the file's tail read_puffin_footer fetches first; most footers fit, so one
# ranged read usually suffices.
_TAIL_READ_SIZE = 16 * 1024
_INT32_MAX = (1 << 31) - 1
_FOOTER_STRUCT = struct.Struct("<iI4s")
_EMPTY_PROPERTIES: Mapping[str, str] = MappingProxyType({})


class PuffinCodec(enum.StrEnum):
    """Blob compression codecs (puffin-spec "Compression codecs")."""

    LZ4 = "lz4"
    ZSTD = "zstd"


@dataclass(frozen=True, slots=True)
class PuffinBlob:
    """A blob to write: its bytes and the ``BlobMetadata`` fields the writer cannot compute."""

    type: str
    data: bytes
    fields: Sequence[int]
    # Not known when the file is written for DVs; the spec says to write -1 then.
    snapshot_id: int = -1
    sequence_number: int = -1
    properties: Mapping[str, str] = field(default_factory=lambda: _EMPTY_PROPERTIES)
    compression_codec: PuffinCodec | None = None


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """One ``BlobMetadata`` of the footer; ``offset``/``length`` are of the stored (compressed) bytes."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: PuffinCodec | None = None
    properties: Mapping[str, str] = field(default_factory=lambda: _EMPTY_PROPERTIES)


@dataclass(frozen=True, slots=True)
class PuffinFooter:
    """A Puffin file's ``FileMetadata`` plus the sizes table metadata records."""

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str]
    file_size_in_bytes: int
    # Whole footer, magic to magic: what ``file-footer-size-in-bytes`` records.
    footer_size_in_bytes: int
    footer_compressed: bool = False


# -- compression -----------------------------------------------------------------------


def _compress(data: bytes, codec: PuffinCodec) -> bytes:
    if codec is PuffinCodec.LZ4:
        # One frame with the content size in its header (store_size), as the spec requires.
        return bytes(lz4.frame.compress(data, store_size=True))
    # Level 3 is zstd's and Iceberg Java's default.
    return zstandard.ZstdCompressor(level=3, write_content_size=True).compress(data)


def _decompress(
    data: bytes, codec: PuffinCodec, *, location: str, what: str, limit: ReadLimit | None = None
) -> bytes:
    try:
        if codec is PuffinCodec.LZ4 and limit is not None:
            # Capped: refuse output past the limit before it is produced (a footer is read
            # from files a client may name; LZ4 inflates up to 255-fold).
            inflater = lz4.frame.LZ4FrameDecompressor()
            out = inflater.decompress(data, max_length=limit.max_bytes + 1)
            limit.check(f"{location} ({what}, decompressed)", len(out))
            if not inflater.eof:
                raise InvalidMetadata(f"{what}: the LZ4 frame is truncated", location=location)
            if inflater.unused_data:
                raise InvalidMetadata(
                    f"{what}: {len(inflater.unused_data)} bytes after the single LZ4 frame", location=location
                )
            return bytes(out)
        if codec is PuffinCodec.LZ4:
            result, consumed = lz4.frame.decompress(data, return_bytes_read=True)
            if consumed != len(data):
                raise InvalidMetadata(
                    f"{what}: {len(data) - consumed} bytes after the single LZ4 frame", location=location
                )
            return bytes(result)
        # allow_extra_data=False: the spec allows exactly one frame.
        return zstandard.ZstdDecompressor().decompress(data, allow_extra_data=False)
    except InvalidMetadata:
        raise
    except (RuntimeError, ValueError, zstandard.ZstdError) as exc:
        raise InvalidMetadata(
            f"{what}: cannot decompress {codec.value} data: {exc}", location=location
        ) from exc


# -- writing ---------------------------------------------------------------------------


def _check_properties(properties: Mapping[str, str], what: str) -> dict[str, str]:
    for key, value in properties.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValidationError(f"{what} properties must map strings to strings, got {key!r}: {value!r}")
    return dict(properties)


def _blob_json(meta: BlobMetadata) -> dict[str, object]:
    # Key order and omission of absent optionals follow Java's FileMetadataParser.
    out: dict[str, object] = {
        "type": meta.type,
        "fields": list(meta.fields),
        "snapshot-id": meta.snapshot_id,
        "sequence-number": meta.sequence_number,
        "offset": meta.offset,
        "length": meta.length,
    }
    if meta.compression_codec is not None:
        out["compression-codec"] = meta.compression_codec.value
    if meta.properties:
        out["properties"] = dict(meta.properties)
    return out


def serialize_puffin(
    blobs: Iterable[PuffinBlob],
    *,
    created_by: str | None = DEFAULT_CREATED_BY,
    properties: Mapping[str, str] | None = None,
    compress_footer: bool = False,
) -> tuple[bytes, PuffinFooter]:
    """Build a Puffin file in memory; returns its bytes and footer (with every blob's offset).

    ``created_by`` becomes the ``created-by`` file property (None omits it, which gives the
    spec's 32-byte empty file for no blobs). ``compress_footer`` LZ4-compresses the footer
    payload and sets flag bit 0.
    """
    file_properties = _check_properties(properties or {}, "file")
    if created_by is not None:
        file_properties[CREATED_BY_PROPERTY] = created_by
    parts: list[bytes] = [MAGIC]
    position = len(MAGIC)
    metas: list[BlobMetadata] = []
    for blob in blobs:
        if not blob.type:
            raise ValidationError("a Puffin blob needs a type")
        if blob.type == DELETION_VECTOR_V1 and blob.compression_codec is not None:
            # puffin-spec "deletion-vector-v1": omit compression-codec; never compressed.
            raise ValidationError("deletion-vector-v1 blobs must not be compressed")
        codec = PuffinCodec(blob.compression_codec) if blob.compression_codec is not None else None
        stored = _compress(blob.data, codec) if codec is not None else bytes(blob.data)
        meta = BlobMetadata(
            type=blob.type,
            fields=tuple(int(f) for f in blob.fields),
            snapshot_id=blob.snapshot_id,
            sequence_number=blob.sequence_number,
            offset=position,
            length=len(stored),
            compression_codec=codec,
            properties=MappingProxyType(_check_properties(blob.properties, f"blob {blob.type!r}")),
        )
        parts.append(stored)
        position += len(stored)
        metas.append(meta)

    document: dict[str, object] = {"blobs": [_blob_json(m) for m in metas]}
    if file_properties:
        document["properties"] = file_properties
    payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    flags = 0
    if compress_footer:
        payload = bytes(lz4.frame.compress(payload, store_size=True))
        flags |= FLAG_FOOTER_PAYLOAD_COMPRESSED
    if len(payload) > _INT32_MAX:
        raise ValidationError(f"Puffin footer payload of {len(payload)} bytes does not fit a 4-byte size")
    parts += [MAGIC, payload, _FOOTER_STRUCT.pack(len(payload), flags, MAGIC)]
    data = b"".join(parts)
    footer = PuffinFooter(
        blobs=tuple(metas),
        properties=MappingProxyType(file_properties),
        file_size_in_bytes=len(data),
        footer_size_in_bytes=len(payload) + FOOTER_OVERHEAD,
        footer_compressed=compress_footer,
    )
    return data, footer


def write_puffin(
    output: OutputFile,
    blobs: Iterable[PuffinBlob],
    *,
    created_by: str | None = DEFAULT_CREATED_BY,
    properties: Mapping[str, str] | None = None,
    compress_footer: bool = False,
) -> PuffinFooter:
    """Write a Puffin file to ``output`` (which must not exist); see :func:`serialize_puffin`."""
    data, footer = serialize_puffin(
        blobs, created_by=created_by, properties=properties, compress_footer=compress_footer
    )
    output.write(data)
    return footer


# -- reading ---------------------------------------------------------------------------


def _expect(condition: bool, message: str, location: str) -> None:
    if not condition:
        raise InvalidMetadata(message, location=location)


def _field(obj: Mapping[str, Any], name: str, kind: type, location: str, what: str) -> Any:
    if name not in obj:
        raise InvalidMetadata(f"Puffin footer: {what} is missing required field {name!r}", location=location)
    value = obj[name]
    # bool is an int subclass in Python but not a JSON number.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidMetadata(
            f"Puffin footer: {what} field {name!r} must be a JSON {kind.__name__}, got {value!r}",
            location=location,
        )
    return value


def _string_map(value: object, location: str, what: str) -> Mapping[str, str]:
    if value is None:
        return _EMPTY_PROPERTIES
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidMetadata(
            f"Puffin footer: {what} properties must map strings to strings", location=location
        )
    return MappingProxyType(dict(value))


def _parse_blob(obj: object, index: int, footer_start: int, location: str) -> BlobMetadata:
    what = f"blob {index}"
    if not isinstance(obj, dict):
        raise InvalidMetadata(f"Puffin footer: {what} is not a JSON object", location=location)
    fields = _field(obj, "fields", list, location, what)
    if not all(isinstance(f, int) and not isinstance(f, bool) for f in fields):
        raise InvalidMetadata(f"Puffin footer: {what} fields must be integers", location=location)
    offset = _field(obj, "offset", int, location, what)
    length = _field(obj, "length", int, location, what)
    # Blobs live between the header magic and the footer.
    _expect(
        len(MAGIC) <= offset and length >= 0 and offset + length <= footer_start,
        f"Puffin footer: {what} range [{offset}, {offset + length}) is outside the blob area "
        f"[{len(MAGIC)}, {footer_start})",
        location,
    )
    codec_name = obj.get("compression-codec")
    codec: PuffinCodec | None = None
    if codec_name is not None:
        try:
            codec = PuffinCodec(codec_name)
        except ValueError:
            raise InvalidMetadata(
                f"Puffin footer: {what} has unsupported compression-codec {codec_name!r}", location=location
            ) from None
    return BlobMetadata(
        type=_field(obj, "type", str, location, what),
        fields=tuple(fields),
        snapshot_id=_field(obj, "snapshot-id", int, location, what),
        sequence_number=_field(obj, "sequence-number", int, location, what),
        offset=offset,
        length=length,
        compression_codec=codec,
        properties=_string_map(obj.get("properties"), location, what),
    )


def _parse_tail(
    tail: bytes, tail_offset: int, file_size: int, location: str, limit: ReadLimit | None = None
) -> PuffinFooter:
    """Parse the footer from ``tail``, the file's bytes from ``tail_offset`` to its end; a
    compressed payload may not decompress past ``limit``.

    The caller guarantees ``tail`` covers the whole footer (see :func:`_footer_size`).
    """
    payload_size, flags, _magic = _FOOTER_STRUCT.unpack_from(tail, len(tail) - FOOTER_STRUCT_SIZE)
    footer_size = payload_size + FOOTER_OVERHEAD
    footer_start = file_size - footer_size
    at = footer_start - tail_offset
    _expect(
        tail[at : at + len(MAGIC)] == MAGIC,
        f"not a Puffin file: bad footer start magic {tail[at : at + len(MAGIC)]!r} at byte {footer_start}",
        location,
    )
    _expect(
        flags & ~FLAG_FOOTER_PAYLOAD_COMPRESSED == 0,
        f"Puffin footer has unknown flags 0x{flags:08x} (only byte 0 bit 0 is defined)",
        location,
    )
    payload = tail[at + len(MAGIC) : at + len(MAGIC) + payload_size]
    compressed = bool(flags & FLAG_FOOTER_PAYLOAD_COMPRESSED)
    if compressed:
        payload = _decompress(
            payload, PuffinCodec.LZ4, location=location, what="Puffin footer payload", limit=limit
        )
    try:
        document = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidMetadata(
            f"Puffin footer payload is not valid UTF-8 JSON: {exc}", location=location
        ) from exc
    except RecursionError:
        raise InvalidMetadata("Puffin footer payload is nested too deeply", location=location) from None
    _expect(isinstance(document, dict), "Puffin footer payload is not a JSON object", location)
    blobs = _field(document, "blobs", list, location, "FileMetadata")
    return PuffinFooter(
        blobs=tuple(_parse_blob(b, i, footer_start, location) for i, b in enumerate(blobs)),
        properties=_string_map(document.get("properties"), location, "file"),
        file_size_in_bytes=file_size,
        footer_size_in_bytes=footer_size,
        footer_compressed=compressed,
    )


def _footer_size(last: bytes, file_size: int, location: str) -> int:
    """Validate the fixed footer tail (its last 12 bytes) and return the whole footer's size."""
    _expect(
        file_size >= MIN_FILE_SIZE,
        f"not a Puffin file: {file_size} bytes is shorter than the minimum {MIN_FILE_SIZE}",
        location,
    )
    payload_size, _flags, magic = _FOOTER_STRUCT.unpack_from(last, len(last) - FOOTER_STRUCT_SIZE)
    _expect(magic == MAGIC, f"not a Puffin file: bad trailing magic {magic!r}", location)
    _expect(
        0 <= payload_size <= file_size - MIN_FILE_SIZE,
        f"Puffin footer payload size {payload_size} does not fit a {file_size}-byte file",
        location,
    )
    return int(payload_size) + FOOTER_OVERHEAD


def parse_puffin_footer(data: bytes, *, location: str) -> PuffinFooter:
    """Validate a whole Puffin file held in memory and return its footer."""
    size = len(data)
    _expect(
        size >= MIN_FILE_SIZE,
        f"not a Puffin file: {size} bytes is shorter than the minimum {MIN_FILE_SIZE}",
        location,
    )
    _expect(data[: len(MAGIC)] == MAGIC, f"not a Puffin file: bad header magic {data[:4]!r}", location)
    _footer_size(data[-FOOTER_STRUCT_SIZE:], size, location)
    return _parse_tail(data, 0, size, location)


def read_puffin_footer(file: InputFile, *, file_size: int | None = None) -> PuffinFooter:
    """Read and validate a Puffin file's footer with ranged reads.

    Pass ``file_size`` when known (a manifest's ``file_size_in_bytes``) to skip a length
    lookup. Usually one read of the tail suffices; the header magic costs a second small read
    only when the file is larger than that tail.
    """
    location = file.location
    size = file.length() if file_size is None else file_size
    _expect(
        size >= MIN_FILE_SIZE,
        f"not a Puffin file: {size} bytes is shorter than the minimum {MIN_FILE_SIZE}",
        location,
    )
    tail_offset = max(0, size - _TAIL_READ_SIZE)
    tail = file.read_range(tail_offset, size - tail_offset)
    _expect(len(tail) == size - tail_offset, f"short read of the Puffin footer: {len(tail)} bytes", location)
    footer_size = _footer_size(tail, size, location)
    # The footer size comes from the file: refuse a huge one before allocating it.
    limit = file.read_limits.puffin_footer
    limit.check(f"{location} (Puffin footer)", footer_size)
    if footer_size > len(tail):
        tail_offset = size - footer_size
        tail = file.read_range(tail_offset, footer_size)
    head = tail[: len(MAGIC)] if tail_offset == 0 else file.read_range(0, len(MAGIC))
    _expect(head == MAGIC, f"not a Puffin file: bad header magic {head!r}", location)
    return _parse_tail(tail, tail_offset, size, location, limit)


def decode_blob(stored: bytes, blob: BlobMetadata, *, location: str) -> bytes:
    """Decompress a blob's stored bytes according to its ``compression-codec``."""
    what = f"blob {blob.type!r} at offset {blob.offset}"
    _expect(len(stored) == blob.length, f"{what}: read {len(stored)} bytes, expected {blob.length}", location)
    if blob.compression_codec is None:
        return stored
    return _decompress(stored, blob.compression_codec, location=location, what=what)


def extract_blob(data: bytes, blob: BlobMetadata, *, location: str) -> bytes:
    """A blob's (decompressed) content from a whole Puffin file held in memory."""
    _expect(
        blob.offset + blob.length <= len(data),
        f"blob {blob.type!r} at offset {blob.offset} runs past the end of the {len(data)}-byte file",
        location,
    )
    return decode_blob(data[blob.offset : blob.offset + blob.length], blob, location=location)


def read_puffin_blob(file: InputFile, blob: BlobMetadata) -> bytes:
    """Read one blob (by its offset and length) and decompress it."""
    return decode_blob(file.read_range(blob.offset, blob.length), blob, location=file.location)


__all__ = [
    "BlobMetadata",
    "CREATED_BY_PROPERTY",
    "DEFAULT_CREATED_BY",
    "DELETION_VECTOR_V1",
    "FLAG_FOOTER_PAYLOAD_COMPRESSED",
    "MAGIC",
    "PuffinBlob",
    "PuffinCodec",
    "PuffinFooter",
    "decode_blob",
    "extract_blob",
    "parse_puffin_footer",
    "read_puffin_blob",
    "read_puffin_footer",
    "serialize_puffin",
    "write_puffin",
]
