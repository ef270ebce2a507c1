"""Reading and writing view metadata files through a FileIO.

Names follow Iceberg Java's ``BaseViewOperations`` (and the view spec's Appendix A, "similar to
the path for Iceberg tables"): ``<location>/metadata/<NNNNN>-<uuid>.metadata.json``, with the
counter one past the previous file's, ``.gz.metadata.json`` when gzip-compressed (Java's
default for views, ``write.metadata.compression-codec``), and ``write.metadata.path`` in place
of ``<location>/metadata`` when set.
"""

from __future__ import annotations

import re
import uuid

from firn.errors import AlreadyExists, InvalidMetadata
from firn.io.base import FileIO
from firn.io.limits import gunzip_capped
from firn.spec.view_metadata import ViewMetadata
from firn.spec.view_metadata_json import view_metadata_from_json, view_metadata_to_gzip, view_metadata_to_json

METADATA_FOLDER = "metadata"
_VERSION = re.compile(r"(?:^|/)(\d+)-[^/]*$")
_GZIP_SUFFIXES = (".gz.metadata.json", ".metadata.json.gz")


def view_metadata_dir(metadata: ViewMetadata) -> str:
    custom = metadata.view_properties.write_metadata_path
    return custom if custom else f"{metadata.location.rstrip('/')}/{METADATA_FOLDER}"


def parse_view_metadata_version(location: str | None) -> int:
    """The ``NNNNN`` counter of a metadata file name; -1 when absent (Java ``parseVersion``)."""
    if not location:
        return -1
    m = _VERSION.search(location)
    return int(m.group(1)) if m else -1


def new_view_metadata_location(metadata: ViewMetadata, previous_location: str | None) -> str:
    """Where the next metadata file of this view goes."""
    version = parse_view_metadata_version(previous_location) + 1
    gzip = metadata.view_properties.metadata_compression == "gzip"
    suffix = ".gz.metadata.json" if gzip else ".metadata.json"
    return f"{view_metadata_dir(metadata)}/{version:05d}-{uuid.uuid4()}{suffix}"


def write_view_metadata(io: FileIO, metadata: ViewMetadata, location: str) -> int:
    """Write a new metadata file (never overwriting one); the name decides gzip. Returns bytes."""
    if location.endswith(_GZIP_SUFFIXES):
        data = view_metadata_to_gzip(metadata)
    else:
        data = view_metadata_to_json(metadata).encode("utf-8")
    try:
        return io.new_output(location).write(data, overwrite=False)
    except AlreadyExists:
        raise AlreadyExists(
            f"view metadata file {location} already exists; refusing to overwrite it"
        ) from None


def read_view_metadata(io: FileIO, location: str) -> ViewMetadata:
    """Read and parse a view metadata file (plain or gzip, whatever its name); errors name it."""
    file = io.new_input(location)
    # Capped: the location may come from outside (a REST client's register request).
    limit = file.read_limits.metadata_json
    data = gunzip_capped(file.read(limit), limit, location, "view metadata")
    if not data:
        raise InvalidMetadata("view metadata file is empty", location=location)
    return view_metadata_from_json(data, location=location)


__all__ = [
    "METADATA_FOLDER",
    "new_view_metadata_location",
    "parse_view_metadata_version",
    "read_view_metadata",
    "view_metadata_dir",
    "write_view_metadata",
]
