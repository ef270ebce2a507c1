"""``deletion-vector-v1`` blobs and Puffin files of deletion vectors (spec "Deletion Vectors").

Blob layout (puffin-spec ``deletion-vector-v1``)::

    u32 BE  length = 4 + len(vector)      (magic plus vector)
    4       magic D1 D3 39 64
    ...     vector: 64-bit portable roaring (firn.deletes.roaring), little-endian
    u32 BE  CRC-32 (IEEE, zlib.crc32) of magic + vector

The blob's total size is ``length + 8`` and must equal the manifest entry's
``content_size_in_bytes``; its offset in the Puffin file is ``content_offset``. Big-endian
length and CRC keep the blob compatible with Delta's deletion vectors.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from firn.deletes.bitmap import PositionBitmap
from firn.deletes.puffin import (
    DEFAULT_CREATED_BY,
    DELETION_VECTOR_V1,
    BlobMetadata,
    PuffinBlob,
    parse_puffin_footer,
    read_puffin_footer,
    serialize_puffin,
)
from firn.errors import InvalidMetadata, Unsupported, ValidationError
from firn.io.base import InputFile, OutputFile
from firn.spec.field_ids import ROW_POSITION_COLUMN_ID

DV_MAGIC = bytes.fromhex("d1d33964")
# Length prefix (4) + CRC (4): what a blob adds around magic + vector.
DV_FRAMING_BYTES = 8
# Length (4) + magic (4) + empty-count vector (8) + CRC (4): the smallest valid blob.
MIN_DV_BLOB_SIZE = 20

# Blob properties required by the spec (puffin-spec "deletion-vector-v1").
REFERENCED_DATA_FILE_PROPERTY = "referenced-data-file"
CARDINALITY_PROPERTY = "cardinality"
# The reserved ``_pos`` metadata column (spec "Reserved Field IDs"); Java writes it as the DV
# blob's ``fields``.
ROW_POSITION_FIELD_ID = ROW_POSITION_COLUMN_ID

_BE_U32 = struct.Struct(">I")
# Java stores the length in a signed int.
_MAX_LENGTH = (1 << 31) - 1


def serialize_dv(bitmap: PositionBitmap) -> bytes:
    """The ``deletion-vector-v1`` blob for ``bitmap``.

    Byte-identical to what Iceberg Java writes for the same positions set one by one (see the
    canonical form in :mod:`firn.deletes.roaring`). Run-optimizes ``bitmap`` in place.
    """
    body = DV_MAGIC + bitmap.serialize()
    if len(body) > _MAX_LENGTH:
        raise Unsupported(f"deletion vector of {len(body)} bytes exceeds the 2 GiB blob limit")
    return _BE_U32.pack(len(body)) + body + _BE_U32.pack(zlib.crc32(body))


def deserialize_dv(
    data: bytes,
    *,
    location: str,
    offset: int | None = None,
    expected_length: int | None = None,
    expected_cardinality: int | None = None,
) -> PositionBitmap:
    """Parse and validate a ``deletion-vector-v1`` blob.

    ``location`` (the Puffin file) and ``offset`` (the blob's ``content_offset``) only label
    errors. ``expected_length`` is the manifest's ``content_size_in_bytes`` and
    ``expected_cardinality`` its ``record_count``; both are checked when given, as Java's
    ``BitmapPositionDeleteIndex.deserialize`` does. Every problem (length, magic, CRC, roaring
    structure, key order) raises :class:`InvalidMetadata` naming the file.
    """
    what = "deletion vector" if offset is None else f"deletion vector at offset {offset}"
    size = len(data)
    if expected_length is not None and size != expected_length:
        raise InvalidMetadata(
            f"{what}: got {size} bytes but content_size_in_bytes is {expected_length}", location=location
        )
    if size < MIN_DV_BLOB_SIZE:
        raise InvalidMetadata(
            f"{what}: truncated, {size} bytes is shorter than the minimum {MIN_DV_BLOB_SIZE}",
            location=location,
        )
    (length,) = _BE_U32.unpack_from(data, 0)
    if length != size - DV_FRAMING_BYTES:
        raise InvalidMetadata(
            f"{what}: length field {length} does not match the blob size {size} (expected {size - 8})",
            location=location,
        )
    magic = bytes(data[4:8])
    if magic != DV_MAGIC:
        raise InvalidMetadata(
            f"{what}: bad magic {magic.hex()}, expected {DV_MAGIC.hex()}", location=location
        )
    (stored_crc,) = _BE_U32.unpack_from(data, 4 + length)
    computed_crc = zlib.crc32(memoryview(data)[4 : 4 + length])
    if stored_crc != computed_crc:
        raise InvalidMetadata(
            f"{what}: CRC mismatch, stored 0x{stored_crc:08x}, computed 0x{computed_crc:08x}",
            location=location,
        )
    bitmap = PositionBitmap.deserialize(bytes(data[8 : 4 + length]), location=location, what=what)
    if expected_cardinality is not None and bitmap.cardinality != expected_cardinality:
        raise InvalidMetadata(
            f"{what}: cardinality {bitmap.cardinality} does not match the expected {expected_cardinality}",
            location=location,
        )
    return bitmap


@dataclass(frozen=True, slots=True)
class WrittenDV:
    """Where one DV landed: the fields of its delete-manifest entry (spec "Deletion Vectors").

    ``offset`` -> ``content_offset``, ``length`` -> ``content_size_in_bytes``,
    ``cardinality`` -> ``record_count``; ``file_path`` is the Puffin file.
    """

    referenced_data_file: str
    offset: int
    length: int
    cardinality: int


@dataclass(frozen=True, slots=True)
class DVFile:
    """A written Puffin file of DVs: its location and size, and one :class:`WrittenDV` per blob."""

    location: str
    file_size_in_bytes: int
    dvs: tuple[WrittenDV, ...]


def _dv_items(
    dvs: Mapping[str, PositionBitmap] | Iterable[tuple[str, PositionBitmap]],
) -> list[tuple[str, PositionBitmap]]:
    items = list(dvs.items()) if isinstance(dvs, Mapping) else list(dvs)
    seen: set[str] = set()
    for path, bitmap in items:
        if path in seen:
            # Spec: at most one DV per data file; merge first (firn.deletes.merge_deletes).
            raise ValidationError(f"more than one deletion vector for data file {path}")
        seen.add(path)
        if not bitmap:
            raise ValidationError(f"deletion vector for data file {path} deletes no rows")
    return items


def serialize_dv_puffin(
    dvs: Mapping[str, PositionBitmap] | Iterable[tuple[str, PositionBitmap]],
    *,
    created_by: str | None = DEFAULT_CREATED_BY,
) -> tuple[bytes, tuple[WrittenDV, ...]]:
    """A Puffin file holding one DV per referenced data file, in the given order.

    Blob metadata as Iceberg Java writes it (``BaseDVFileWriter``): ``fields`` = [_pos id],
    ``snapshot-id`` and ``sequence-number`` -1, properties ``referenced-data-file`` and
    ``cardinality``, no compression.
    """
    items = _dv_items(dvs)
    blobs = []
    cardinalities = []
    for path, bitmap in items:
        cardinality = bitmap.cardinality
        cardinalities.append(cardinality)
        blobs.append(
            PuffinBlob(
                type=DELETION_VECTOR_V1,
                data=serialize_dv(bitmap),
                fields=(ROW_POSITION_FIELD_ID,),
                snapshot_id=-1,
                sequence_number=-1,
                properties={REFERENCED_DATA_FILE_PROPERTY: path, CARDINALITY_PROPERTY: str(cardinality)},
            )
        )
    data, footer = serialize_puffin(blobs, created_by=created_by)
    written = tuple(
        WrittenDV(referenced_data_file=path, offset=meta.offset, length=meta.length, cardinality=card)
        for (path, _), meta, card in zip(items, footer.blobs, cardinalities)
    )
    return data, written


def write_dv_puffin(
    output: OutputFile,
    dvs: Mapping[str, PositionBitmap] | Iterable[tuple[str, PositionBitmap]],
    *,
    created_by: str | None = DEFAULT_CREATED_BY,
) -> DVFile:
    """Write :func:`serialize_dv_puffin`'s file to ``output`` and say where each DV is."""
    data, written = serialize_dv_puffin(dvs, created_by=created_by)
    output.write(data)
    return DVFile(location=output.location, file_size_in_bytes=len(data), dvs=written)


def read_dv(
    file: InputFile, offset: int, length: int, *, expected_cardinality: int | None = None
) -> PositionBitmap:
    """Read one DV from a Puffin file by its manifest ``content_offset``/``content_size_in_bytes``.

    Like Java, the footer is not consulted: the blob is self-describing and CRC-checked.
    """
    if offset < 0 or length < 0:
        raise InvalidMetadata(
            f"invalid deletion vector range offset={offset} length={length}", location=file.location
        )
    data = file.read_range(offset, length)
    return deserialize_dv(
        data,
        location=file.location,
        offset=offset,
        expected_length=length,
        expected_cardinality=expected_cardinality,
    )


def _check_dv_blob(blob: BlobMetadata, location: str) -> tuple[str, int]:
    """The referenced data file and cardinality a DV blob's metadata declares (spec-required)."""
    what = f"deletion vector at offset {blob.offset}"
    path = blob.properties.get(REFERENCED_DATA_FILE_PROPERTY)
    if not path:
        raise InvalidMetadata(
            f"{what}: missing blob property {REFERENCED_DATA_FILE_PROPERTY!r}", location=location
        )
    if blob.compression_codec is not None:
        raise InvalidMetadata(f"{what}: deletion-vector-v1 blobs must not be compressed", location=location)
    text = blob.properties.get(CARDINALITY_PROPERTY)
    if text is None or not text.isdigit():
        raise InvalidMetadata(
            f"{what}: blob property {CARDINALITY_PROPERTY!r} must be a non-negative integer, got {text!r}",
            location=location,
        )
    return path, int(text)


def _collect(pairs: Iterable[tuple[str, PositionBitmap]], location: str) -> dict[str, PositionBitmap]:
    result: dict[str, PositionBitmap] = {}
    for path, bitmap in pairs:
        if path in result:
            raise InvalidMetadata(f"more than one deletion vector for data file {path}", location=location)
        result[path] = bitmap
    return result


def parse_dv_puffin(data: bytes, *, location: str) -> dict[str, PositionBitmap]:
    """Every DV in a Puffin file held in memory, keyed by referenced data file.

    Blobs of other types are skipped. The blob properties are checked against the vectors.
    """
    footer = parse_puffin_footer(data, location=location)

    def load(blob: BlobMetadata) -> tuple[str, PositionBitmap]:
        path, cardinality = _check_dv_blob(blob, location)
        bitmap = deserialize_dv(
            data[blob.offset : blob.offset + blob.length],
            location=location,
            offset=blob.offset,
            expected_length=blob.length,
            expected_cardinality=cardinality,
        )
        return path, bitmap

    return _collect((load(b) for b in footer.blobs if b.type == DELETION_VECTOR_V1), location)


def read_dv_puffin(file: InputFile) -> dict[str, PositionBitmap]:
    """Every DV in a Puffin file, keyed by referenced data file (footer, then one read per DV)."""
    footer = read_puffin_footer(file)

    def load(blob: BlobMetadata) -> tuple[str, PositionBitmap]:
        path, cardinality = _check_dv_blob(blob, file.location)
        return path, read_dv(file, blob.offset, blob.length, expected_cardinality=cardinality)

    return _collect((load(b) for b in footer.blobs if b.type == DELETION_VECTOR_V1), file.location)


__all__ = [
    "CARDINALITY_PROPERTY",
    "DVFile",
    "DV_MAGIC",
    "REFERENCED_DATA_FILE_PROPERTY",
    "ROW_POSITION_FIELD_ID",
    "WrittenDV",
    "deserialize_dv",
    "parse_dv_puffin",
    "read_dv",
    "read_dv_puffin",
    "serialize_dv",
    "serialize_dv_puffin",
    "write_dv_puffin",
]
