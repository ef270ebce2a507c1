"""Read limits: how many bytes of a metadata file Firn reads into memory, at most.

Metadata JSON, manifest lists, manifests and Puffin footers are read whole into memory, and
their locations may come from outside (a REST client registering a table, a damaged pointer).
Without a cap, a location such as a huge file, or one that never ends, would be read until the
process runs out of memory. Each kind has a cap, a FileIO (catalog) property with a default far
above real tables; a file past it is refused, before it is read, with a ``ValidationError``
naming the file, its size, the cap and the property that raises it. Files that are not regular
files (devices such as ``/dev/zero``, FIFOs, directories) are refused by the FileIO itself.

Data files are not capped: they are streamed, never read whole.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from firn.errors import InvalidMetadata, ValidationError

MIB = 1024 * 1024

# -- property names and defaults -----------------------------------------------------------------
# Table and view metadata JSON files, also after gzip decompression. Metadata JSON grows with
# snapshots and schemas; tables with 100,000 snapshots stay below 100 MiB.
METADATA_JSON_MAX_BYTES = "io.read-limit.metadata-json"
DEFAULT_METADATA_JSON_MAX_BYTES = 512 * MIB
# Manifest lists, Avro manifests, and V4 root and leaf manifests (Parquet). Writers target
# 8 MiB manifests (Iceberg's commit.manifest.target-size-bytes); a list of 100,000 manifests
# is about 100 MiB.
MANIFEST_MAX_BYTES = "io.read-limit.manifest"
DEFAULT_MANIFEST_MAX_BYTES = 1024 * MIB
# The footer of a Puffin file (the JSON list of its blobs, also after decompression): about
# 300 bytes per blob, so the default holds close to a million deletion vectors in one file.
PUFFIN_FOOTER_MAX_BYTES = "io.read-limit.puffin-footer"
DEFAULT_PUFFIN_FOOTER_MAX_BYTES = 256 * MIB

READ_LIMIT_PROPERTIES = (METADATA_JSON_MAX_BYTES, MANIFEST_MAX_BYTES, PUFFIN_FOOTER_MAX_BYTES)

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class ReadLimit:
    """One cap: at most ``max_bytes``, set by the FileIO property ``property``."""

    max_bytes: int
    property: str

    def check(self, location: str, size: int) -> None:
        """Refuse a file of ``size`` bytes past the cap (a ``ValidationError`` naming it)."""
        if size > self.max_bytes:
            raise ValidationError(
                f"{location}: the file is {size} bytes, more than the {self.max_bytes} bytes allowed "
                f"(FileIO property {self.property}; raise it if the file is genuine)"
            )


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The caps of the files read whole (parsed once from FileIO properties)."""

    metadata_json: ReadLimit = ReadLimit(DEFAULT_METADATA_JSON_MAX_BYTES, METADATA_JSON_MAX_BYTES)
    manifest: ReadLimit = ReadLimit(DEFAULT_MANIFEST_MAX_BYTES, MANIFEST_MAX_BYTES)
    puffin_footer: ReadLimit = ReadLimit(DEFAULT_PUFFIN_FOOTER_MAX_BYTES, PUFFIN_FOOTER_MAX_BYTES)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ReadLimits:
        """The limits ``properties`` set (the defaults for those not set); a value that is not
        a positive integer is a ``ValidationError`` naming the property."""
        return cls(
            metadata_json=_limit(properties, METADATA_JSON_MAX_BYTES, DEFAULT_METADATA_JSON_MAX_BYTES),
            manifest=_limit(properties, MANIFEST_MAX_BYTES, DEFAULT_MANIFEST_MAX_BYTES),
            puffin_footer=_limit(properties, PUFFIN_FOOTER_MAX_BYTES, DEFAULT_PUFFIN_FOOTER_MAX_BYTES),
        )


DEFAULT_READ_LIMITS = ReadLimits()


def _limit(properties: Mapping[str, str], key: str, default: int) -> ReadLimit:
    raw = properties.get(key)
    if raw is None or str(raw).strip() == "":
        return ReadLimit(default, key)
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"{key} must be a number of bytes, got {raw!r}") from None
    if value < 1:
        raise ValidationError(f"{key} must be a positive number of bytes, got {raw!r}")
    return ReadLimit(value, key)


def gunzip_capped(data: bytes, cap: ReadLimit, location: str, what: str = "metadata") -> bytes:
    """``data`` decompressed if it is gzip (every member, RFC 1952 2.2), refusing output past
    the cap before it is produced (a small file may inflate a thousandfold); other data is
    returned as it is. Damaged gzip data is ``InvalidMetadata`` ("``what`` is not valid JSON")."""
    if data[:2] != _GZIP_MAGIC:
        return data
    limit = cap.max_bytes
    out: list[bytes] = []
    total = 0
    rest = data
    try:
        while rest:
            inflater = zlib.decompressobj(wbits=31)  # 31: a gzip member, header and trailer
            while True:
                chunk = inflater.decompress(rest, limit + 1 - total)
                total += len(chunk)
                out.append(chunk)
                if total > limit:
                    raise ValidationError(
                        f"{location}: the file decompresses to more than the {limit} bytes allowed "
                        f"(FileIO property {cap.property}; raise it if the file is genuine)"
                    )
                rest = inflater.unconsumed_tail
                if inflater.eof or (not rest and not chunk):  # done, or the input ran out
                    break
            if not inflater.eof:
                raise InvalidMetadata(
                    f"{what} is not valid JSON (its gzip data is truncated)", location=location
                )
            rest = inflater.unused_data
            # Padding after the last member (some writers add zeros) ends the stream.
            if rest and rest[:2] != _GZIP_MAGIC:
                if rest.strip(b"\x00"):
                    raise InvalidMetadata(
                        f"{what} is not valid JSON (trailing garbage after its gzip data)", location=location
                    )
                break
    except zlib.error as e:
        raise InvalidMetadata(f"{what} is not valid JSON (bad gzip data: {e})", location=location) from e
    return b"".join(out)


__all__ = [
    "DEFAULT_MANIFEST_MAX_BYTES",
    "DEFAULT_METADATA_JSON_MAX_BYTES",
    "DEFAULT_PUFFIN_FOOTER_MAX_BYTES",
    "DEFAULT_READ_LIMITS",
    "MANIFEST_MAX_BYTES",
    "METADATA_JSON_MAX_BYTES",
    "PUFFIN_FOOTER_MAX_BYTES",
    "READ_LIMIT_PROPERTIES",
    "ReadLimit",
    "ReadLimits",
    "gunzip_capped",
]
