"""Reading and writing table metadata files (spec "Table Metadata", Appendix F file naming)."""

from __future__ import annotations

import re
import uuid

from firn.errors import AlreadyExists, InvalidMetadata
from firn.io.base import FileIO
from firn.io.limits import gunzip_capped
from firn.spec.metadata_json import metadata_from_json, metadata_to_gzip, metadata_to_json
from firn.spec.properties import METADATA_COMPRESSION, WRITE_METADATA_PATH
from firn.spec.table_metadata import TableMetadata
from firn.spec.versions import MIN_FORMAT_VERSION_ROOT_MANIFEST

_VERSION = re.compile(r"(?:^|/)(\d+)-[0-9a-fA-F-]+\.(?:gz\.)?metadata\.json(?:\.gz)?$")


def metadata_dir(metadata: TableMetadata) -> str:
    custom = metadata.properties.get(WRITE_METADATA_PATH)
    return custom.rstrip("/") if custom else f"{metadata.location.rstrip('/')}/metadata"


def parse_metadata_version(location: str | None) -> int:
    """The ``NNNNN`` counter of ``NNNNN-<uuid>.metadata.json``; -1 when absent or unparseable."""
    if not location:
        return -1
    m = _VERSION.search(location)
    return int(m.group(1)) if m else -1


def metadata_codec(metadata: TableMetadata) -> str:
    """``write.metadata.compression-codec`` when set; otherwise ``gzip`` for V4 tables and
    ``none`` (Iceberg's default) for v1-v3.

    V4 defaults to gzip (a deviation from Iceberg's default, and V4 tables are Firn's own):
    the metadata JSON lists every snapshot and a V4 commit otherwise writes only a small root
    manifest, so until snapshots expire the JSON is most of what a commit writes, and it
    compresses well (bench/README.md 9a). The gzip members of old snapshots are reused across
    commits (:func:`metadata_to_gzip`), so compressing costs about the same whatever the
    history.
    """
    if METADATA_COMPRESSION in metadata.properties:
        return metadata.table_properties.metadata_compression
    return "gzip" if metadata.format_version >= MIN_FORMAT_VERSION_ROOT_MANIFEST else "none"


def new_metadata_location(metadata: TableMetadata, previous_location: str | None) -> str:
    """``<location>/metadata/<NNNNN>-<uuid>.metadata.json`` (``.gz.metadata.json`` when
    compressed) with the counter after the previous one."""
    version = parse_metadata_version(previous_location) + 1
    suffix = ".gz.metadata.json" if metadata_codec(metadata) == "gzip" else ".metadata.json"
    return f"{metadata_dir(metadata)}/{version:05d}-{uuid.uuid4()}{suffix}"


def write_metadata(io: FileIO, metadata: TableMetadata, location: str) -> int:
    """Write the metadata file; it must not exist yet. Returns the bytes written. The file
    name decides the encoding: ``.gz.metadata.json`` (or ``.metadata.json.gz``) is gzip."""
    if location.endswith(".gz.metadata.json") or location.endswith(".metadata.json.gz"):
        data = metadata_to_gzip(metadata)
    else:
        data = metadata_to_json(metadata).encode("utf-8")
    try:
        return io.new_output(location).write(data, overwrite=False)
    except AlreadyExists:
        raise AlreadyExists(f"metadata file {location} already exists; refusing to overwrite it") from None


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file; errors name the file."""
    file = io.new_input(location)
    # Capped: the location may come from outside (a REST client's register request).
    limit = file.read_limits.metadata_json
    data = gunzip_capped(file.read(limit), limit, location, "table metadata")
    if not data:
        raise InvalidMetadata("metadata file is empty", location=location)
    return metadata_from_json(data, location=location)


__all__ = [
    "metadata_codec",
    "metadata_dir",
    "new_metadata_location",
    "parse_metadata_version",
    "read_metadata",
    "write_metadata",
]
