"""JSON for tracked files (:class:`~firn.spec.content.DataFile`): what maintenance work units and
their results carry between machines.

The shape follows the REST catalog's ``ContentFile`` JSON (hyphenated names; metric maps as
``{"keys": [...], "values": [...]}``; binary values as uppercase hex, as the REST spec encodes
``BinaryTypeValue``), with one difference: a partition tuple is self-describing, so a file
decodes without its partition spec. Partition values that are plain JSON (``bool``, ``int``,
``str``, null) are written as is; the others carry a one-key tag: ``{"float": "<repr>"}``
(exact, and NaN/infinity are not JSON numbers), ``{"decimal": "1.20"}``, ``{"uuid": "..."}``,
``{"binary": "<HEX>"}``. ``DataFile`` → JSON → ``DataFile`` is the identity.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from firn.errors import InvalidMetadata
from firn.spec.content import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
    PartitionTuple,
)
from firn.spec.json_fields import (
    get_bool,
    get_int,
    get_long,
    get_str,
    opt_bool,
    opt_int,
    opt_int_list,
    opt_long,
    opt_long_list,
)

_CONTENT_NAMES = {
    FileContent.DATA: "data",
    FileContent.POSITION_DELETES: "position-deletes",
    FileContent.EQUALITY_DELETES: "equality-deletes",
    FileContent.DATA_MANIFEST: "data-manifest",
    FileContent.DELETE_MANIFEST: "delete-manifest",
    FileContent.MANIFEST_DV: "manifest-dv",
}
_CONTENT_BY_NAME = {v: k for k, v in _CONTENT_NAMES.items()}


def _bad(what: str, value: object) -> InvalidMetadata:
    return InvalidMetadata(f"content file JSON: {what}: {value!r}")


# -- partition values ---------------------------------------------------------------------------------
def partition_value_to_json(value: Any) -> Any:
    """One partition value (Firn's internal representation) as self-describing JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"binary": bytes(value).hex().upper()}
    raise _bad("unsupported partition value type " + type(value).__name__, value)


def partition_value_from_json(data: Any) -> Any:
    """The inverse of :func:`partition_value_to_json`."""
    if data is None or isinstance(data, bool | int | str):
        return data
    if isinstance(data, Mapping) and len(data) == 1:
        ((tag, text),) = data.items()
        if not isinstance(text, str):
            raise _bad(f"partition value tag {tag!r} needs a string", data)
        try:
            if tag == "float":
                return float(text)
            if tag == "decimal":
                return Decimal(text)
            if tag == "uuid":
                return uuid.UUID(text)
            if tag == "binary":
                return bytes.fromhex(text)
        except (ValueError, InvalidOperation):
            raise _bad(f"malformed {tag} partition value", text) from None
    raise _bad("unknown partition value", data)


def partition_to_json(partition: PartitionTuple) -> list[Any]:
    return [partition_value_to_json(v) for v in partition]


def partition_from_json(data: Any) -> PartitionTuple:
    if not isinstance(data, list):
        raise _bad("partition must be a list", data)
    return tuple(partition_value_from_json(v) for v in data)


# -- metric maps --------------------------------------------------------------------------------------
def _int_map_to_json(m: Mapping[int, int] | None) -> dict[str, list[int]] | None:
    if m is None:
        return None
    keys = sorted(m)
    return {"keys": keys, "values": [int(m[k]) for k in keys]}


def _bytes_map_to_json(m: Mapping[int, bytes] | None) -> dict[str, list[Any]] | None:
    if m is None:
        return None
    keys = sorted(m)
    return {"keys": keys, "values": [bytes(m[k]).hex().upper() for k in keys]}


def _keys_values(data: Any, name: str) -> tuple[list[Any], list[Any]]:
    if not isinstance(data, Mapping):
        raise _bad(f"{name} must be an object with keys and values", data)
    keys, vals = data.get("keys"), data.get("values")
    if not isinstance(keys, list) or not isinstance(vals, list) or len(vals) != len(keys):
        raise _bad(f"{name} needs lists of as many values as keys", data)
    # ``type(k) is int`` also refuses bools (planning decodes thousands of these maps).
    if not all(type(k) is int for k in keys):
        raise _bad(f"{name} keys must be field ids", keys)
    return keys, vals


def _int_map_from_json(data: Any, name: str) -> dict[int, int] | None:
    if data is None:
        return None
    keys, vals = _keys_values(data, name)
    if not all(type(v) is int for v in vals):
        raise _bad(f"{name} values must be integers", vals)
    return dict(zip(keys, vals))


def _bytes_map_from_json(data: Any, name: str) -> dict[int, bytes] | None:
    if data is None:
        return None
    keys, vals = _keys_values(data, name)
    try:
        return dict(zip(keys, map(bytes.fromhex, vals)))
    except (ValueError, TypeError):
        raise _bad(f"{name} values must be hex strings", vals) from None


# -- files ----------------------------------------------------------------------------------------------
def data_file_to_json(f: DataFile) -> dict[str, Any]:
    """``f`` as a JSON object (optional fields that are unset are left out)."""
    out: dict[str, Any] = {
        "content": _CONTENT_NAMES[f.content],
        "file-path": f.file_path,
        "file-format": f.file_format.value,
        "spec-id": f.spec_id,
        "partition": partition_to_json(f.partition),
        "record-count": f.record_count,
        "file-size-in-bytes": f.file_size_in_bytes,
    }
    optional: dict[str, Any] = {
        "column-sizes": _int_map_to_json(f.column_sizes),
        "value-counts": _int_map_to_json(f.value_counts),
        "null-value-counts": _int_map_to_json(f.null_value_counts),
        "nan-value-counts": _int_map_to_json(f.nan_value_counts),
        "lower-bounds": _bytes_map_to_json(f.lower_bounds),
        "upper-bounds": _bytes_map_to_json(f.upper_bounds),
        "key-metadata": f.key_metadata.hex().upper() if f.key_metadata is not None else None,
        "split-offsets": list(f.split_offsets) if f.split_offsets is not None else None,
        "equality-ids": list(f.equality_ids) if f.equality_ids is not None else None,
        "sort-order-id": f.sort_order_id,
        "first-row-id": f.first_row_id,
        "referenced-data-file": f.referenced_data_file,
        "content-offset": f.content_offset,
        "content-size-in-bytes": f.content_size_in_bytes,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


# Typed fields are read by firn.spec.json_fields with Java's widths (DataFile/ManifestFile:
# ids are ints, counts, sizes, offsets and sequence numbers longs).
_WHAT = "content file JSON"


def data_file_from_json(data: Any) -> DataFile:
    """The :class:`DataFile` that :func:`data_file_to_json` wrote (``InvalidMetadata`` naming
    the field when malformed)."""
    if not isinstance(data, Mapping):
        raise _bad("a content file must be an object", data)
    content = _CONTENT_BY_NAME.get(str(data.get("content")))
    if content is None:
        raise _bad("unknown content", data.get("content"))
    try:
        file_format = FileFormat.parse(get_str(data, "file-format", _WHAT))
    except ValueError:
        raise _bad("unknown file-format", data.get("file-format")) from None
    key_metadata = data.get("key-metadata")
    if key_metadata is not None and not isinstance(key_metadata, str):
        raise _bad("'key-metadata' must be a hex string", key_metadata)
    try:
        key_bytes = bytes.fromhex(key_metadata) if key_metadata is not None else None
    except ValueError:
        raise _bad("'key-metadata' is not hex", key_metadata) from None
    referenced = data.get("referenced-data-file")
    if referenced is not None and not isinstance(referenced, str):
        raise _bad("'referenced-data-file' must be a string", referenced)
    return DataFile(
        content=content,
        file_path=get_str(data, "file-path", _WHAT),
        file_format=file_format,
        partition=partition_from_json(data.get("partition", [])),
        record_count=get_long(data, "record-count", _WHAT),
        file_size_in_bytes=get_long(data, "file-size-in-bytes", _WHAT),
        spec_id=get_int(data, "spec-id", _WHAT),
        column_sizes=_int_map_from_json(data.get("column-sizes"), "column-sizes"),
        value_counts=_int_map_from_json(data.get("value-counts"), "value-counts"),
        null_value_counts=_int_map_from_json(data.get("null-value-counts"), "null-value-counts"),
        nan_value_counts=_int_map_from_json(data.get("nan-value-counts"), "nan-value-counts"),
        lower_bounds=_bytes_map_from_json(data.get("lower-bounds"), "lower-bounds"),
        upper_bounds=_bytes_map_from_json(data.get("upper-bounds"), "upper-bounds"),
        key_metadata=key_bytes,
        split_offsets=opt_long_list(data, "split-offsets", _WHAT),
        equality_ids=opt_int_list(data, "equality-ids", _WHAT),
        sort_order_id=opt_int(data, "sort-order-id", _WHAT),
        first_row_id=opt_long(data, "first-row-id", _WHAT),
        referenced_data_file=referenced,
        content_offset=opt_long(data, "content-offset", _WHAT),
        content_size_in_bytes=opt_long(data, "content-size-in-bytes", _WHAT),
    )


# -- manifest-list entries -----------------------------------------------------------------------------
def _hex(b: bytes | None) -> str | None:
    return b.hex().upper() if b is not None else None


def _unhex(data: Any, what: str) -> bytes | None:
    if data is None:
        return None
    if not isinstance(data, str):
        raise _bad(f"{what} must be a hex string", data)
    try:
        return bytes.fromhex(data)
    except ValueError:
        raise _bad(f"{what} is not hex", data) from None


def manifest_file_to_json(m: ManifestFile) -> dict[str, Any]:
    """A manifest-list entry (:class:`ManifestFile`) as JSON; unset fields are left out."""
    out: dict[str, Any] = {
        "manifest-path": m.manifest_path,
        "manifest-length": m.manifest_length,
        "partition-spec-id": m.partition_spec_id,
        "content": "deletes" if m.content is ManifestContent.DELETES else "data",
    }
    optional = {
        "sequence-number": m.sequence_number,
        "min-sequence-number": m.min_sequence_number,
        "added-snapshot-id": m.added_snapshot_id,
        "added-files-count": m.added_files_count,
        "existing-files-count": m.existing_files_count,
        "deleted-files-count": m.deleted_files_count,
        "added-rows-count": m.added_rows_count,
        "existing-rows-count": m.existing_rows_count,
        "deleted-rows-count": m.deleted_rows_count,
        "key-metadata": _hex(m.key_metadata),
        "first-row-id": m.first_row_id,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if m.partitions is not None:
        out["partitions"] = [
            {
                "contains-null": p.contains_null,
                "contains-nan": p.contains_nan,
                "lower-bound": _hex(p.lower_bound),
                "upper-bound": _hex(p.upper_bound),
            }
            for p in m.partitions
        ]
    return out


def manifest_file_from_json(data: Any) -> ManifestFile:
    """The :class:`ManifestFile` that :func:`manifest_file_to_json` wrote."""
    if not isinstance(data, Mapping):
        raise _bad("a manifest file must be an object", data)
    content = data.get("content", "data")
    if content not in ("data", "deletes"):
        raise _bad("unknown manifest content", content)
    partitions = data.get("partitions")
    summaries = None
    if partitions is not None:
        if not isinstance(partitions, list):
            raise _bad("'partitions' must be a list", partitions)
        summaries = tuple(
            PartitionFieldSummary(
                contains_null=get_bool(p, "contains-null", f"{_WHAT} partition summary"),
                contains_nan=opt_bool(p, "contains-nan", f"{_WHAT} partition summary"),
                lower_bound=_unhex(p.get("lower-bound"), "lower-bound"),
                upper_bound=_unhex(p.get("upper-bound"), "upper-bound"),
            )
            for p in partitions
        )
    return ManifestFile(
        manifest_path=get_str(data, "manifest-path", _WHAT),
        manifest_length=get_long(data, "manifest-length", _WHAT),
        partition_spec_id=get_int(data, "partition-spec-id", _WHAT),
        content=ManifestContent.DELETES if content == "deletes" else ManifestContent.DATA,
        sequence_number=opt_long(data, "sequence-number", _WHAT),
        min_sequence_number=opt_long(data, "min-sequence-number", _WHAT),
        added_snapshot_id=opt_long(data, "added-snapshot-id", _WHAT),
        added_files_count=opt_int(data, "added-files-count", _WHAT),
        existing_files_count=opt_int(data, "existing-files-count", _WHAT),
        deleted_files_count=opt_int(data, "deleted-files-count", _WHAT),
        added_rows_count=opt_long(data, "added-rows-count", _WHAT),
        existing_rows_count=opt_long(data, "existing-rows-count", _WHAT),
        deleted_rows_count=opt_long(data, "deleted-rows-count", _WHAT),
        partitions=summaries,
        key_metadata=_unhex(data.get("key-metadata"), "key-metadata"),
        first_row_id=opt_long(data, "first-row-id", _WHAT),
    )


__all__ = [
    "data_file_from_json",
    "data_file_to_json",
    "manifest_file_from_json",
    "manifest_file_to_json",
    "partition_from_json",
    "partition_to_json",
    "partition_value_from_json",
    "partition_value_to_json",
]
