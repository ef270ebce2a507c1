"""The orphan record: phase one of two-phase orphan removal (in the manner of S3 Tables).

``remove_orphan_files`` never deletes a file the first time it finds it unreferenced. It
records it, with the time it was first seen, in one JSON file under the table location::

    <table location>/metadata/orphans/orphan-record.json

    {
      "format": "firn-orphan-record",
      "format-version": 1,
      "table-uuid": "9c1e...",
      "updated-ms": 1767225600000,
      "files": [
        {"path": "s3://b/wh/db/t/data/x.parquet", "size": 1024,
         "modified-ms": 1766966400000, "first-seen-ms": 1767139200000},
        ...
      ]
    }

A later run deletes a recorded file only when it was first seen at least ``orphans.grace``
ago (a table property, default ``1d``) and is still unreferenced, still older than the
run's ``older_than`` and unchanged (same modification time). A recorded file that became
referenced again, disappeared or changed is dropped from the record. Until then, undoing a
removal is nothing more than referencing the file again (``add_files``), or deleting this
record, which restarts every clock. The directory ``metadata/orphans/`` is never listed as
orphans, and a record written for another table (a different ``table-uuid``: the table was
re-created at the same location) is ignored.

The record is rewritten whole, atomically (a local temp file renamed over it; one PUT on
object stores); the table's maintenance lease keeps two runs from writing it at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from firn.errors import InvalidMetadata, NotFound
from firn.io.base import FileIO
from firn.spec.locations import METADATA_DIR

log = logging.getLogger(__name__)

RECORD_FORMAT = "firn-orphan-record"
RECORD_FORMAT_VERSION = 1
ORPHANS_DIR = "orphans"
RECORD_FILE = "orphan-record.json"


@dataclass(frozen=True, kw_only=True)
class OrphanFile:
    """An unreferenced file: its path and size in bytes (-1: unknown)."""

    path: str
    size: int


@dataclass(frozen=True, kw_only=True)
class RecordedOrphan(OrphanFile):
    """An orphan as recorded: its modification time when seen, and when it was first seen."""

    modified_ms: int | None = None
    first_seen_ms: int


def record_dir(table_location: str) -> str:
    """``<table location>/metadata/orphans``: never listed as orphans."""
    return f"{table_location.rstrip('/')}/{METADATA_DIR}/{ORPHANS_DIR}"


def record_location(table_location: str) -> str:
    """Where the table's orphan record lives."""
    return f"{record_dir(table_location)}/{RECORD_FILE}"


def read_record(io: FileIO, location: str, table_uuid: str) -> dict[str, RecordedOrphan]:
    """The recorded orphans by path; empty when there is no record yet, or when it was
    written for another table. A damaged record is an ``InvalidMetadata`` naming it: nothing
    is deleted on the strength of a record that cannot be read."""
    try:
        raw = io.new_input(location).read()
    except NotFound:
        return {}
    try:
        data = json.loads(raw)
        if not isinstance(data, Mapping) or data.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a {RECORD_FORMAT} file")
        if int(data.get("format-version", 0)) > RECORD_FORMAT_VERSION:
            raise ValueError(f"format-version {data.get('format-version')} is newer than this Firn reads")
        if str(data.get("table-uuid")) != table_uuid:
            log.warning(
                "ignoring the orphan record %s: it was written for table %s, this table is %s",
                location,
                data.get("table-uuid"),
                table_uuid,
            )
            return {}
        out: dict[str, RecordedOrphan] = {}
        for item in data.get("files") or []:
            modified = item.get("modified-ms")
            entry = RecordedOrphan(
                path=str(item["path"]),
                size=int(item.get("size", -1)),
                modified_ms=int(modified) if modified is not None else None,
                first_seen_ms=int(item["first-seen-ms"]),
            )
            out[entry.path] = entry
        return out
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise InvalidMetadata(
            f"the orphan record is unreadable ({e}); delete it to start recording afresh "
            "(this only delays orphan deletion by one grace period)",
            location=location,
        ) from e


def write_record(
    io: FileIO, location: str, table_uuid: str, now_ms: int, files: Mapping[str, RecordedOrphan]
) -> None:
    """Replace the record with ``files`` (sorted by path)."""
    body: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "format-version": RECORD_FORMAT_VERSION,
        "table-uuid": table_uuid,
        "updated-ms": now_ms,
        "files": [
            {"path": f.path, "size": f.size, "modified-ms": f.modified_ms, "first-seen-ms": f.first_seen_ms}
            for f in sorted(files.values(), key=lambda f: f.path)
        ],
    }
    io.new_output(location).write(json.dumps(body, indent=1).encode(), overwrite=True)


__all__ = [
    "ORPHANS_DIR",
    "RECORD_FILE",
    "RECORD_FORMAT",
    "RECORD_FORMAT_VERSION",
    "OrphanFile",
    "RecordedOrphan",
    "read_record",
    "record_dir",
    "record_location",
    "write_record",
]
