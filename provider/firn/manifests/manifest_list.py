"""v1-v3 Avro manifest lists: :func:`write_manifest_list`, :func:`read_manifest_list`.

Spec: "Manifest Lists", "First Row ID Assignment", Appendix E (reading v1 lists: content 0 and
sequence numbers 0). Layout and key-value metadata follow Java's ``ManifestListWriter``
(notes §1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firn.errors import FirnError, ValidationError
from firn.io.base import InputFile, OutputFile
from firn.manifests import cache as _cache
from firn.manifests._avro_io import (
    DEFAULT_CODEC,
    check_types,
    corrupt,
    field_name,
    named_types,
    nested_record,
    open_avro,
    record_fields_by_id,
    require_field,
    source_bytes,
    write_avro,
)
from firn.manifests.avro_schemas import AVRO_FORMAT_VERSIONS, parsed_manifest_file_schema
from firn.manifests.inheritance import assign_first_row_ids, assign_sequence_numbers
from firn.spec import field_ids as ids
from firn.spec.content import ManifestContent, ManifestFile, PartitionFieldSummary
from firn.spec.versions import (
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
)

# Key-value metadata keys (Java ManifestListWriter; notes §1).
META_SNAPSHOT_ID = "snapshot-id"
META_PARENT_SNAPSHOT_ID = "parent-snapshot-id"
META_SEQUENCE_NUMBER = "sequence-number"
META_FORMAT_VERSION = "format-version"
META_FIRST_ROW_ID = "first-row-id"


@dataclass(frozen=True, slots=True)
class ManifestListResult:
    """What :func:`write_manifest_list` wrote.

    ``manifests`` are the entries as written (sequence numbers and first row ids assigned), so
    they equal what :func:`read_manifest_list` returns. ``next_row_id`` is the table's new
    ``next-row-id`` (v3; ``None`` before), and ``added_rows`` the snapshot's ``added-rows``.
    """

    location: str
    length: int
    manifests: tuple[ManifestFile, ...]
    first_row_id: int | None = None
    next_row_id: int | None = None

    @property
    def added_rows(self) -> int | None:
        if self.first_row_id is None or self.next_row_id is None:
            return None
        return self.next_row_id - self.first_row_id


def _summaries(partitions: Sequence[PartitionFieldSummary] | None) -> Any:
    if partitions is None:
        return None
    return (
        "array",
        [
            {
                "contains_null": p.contains_null,
                "contains_nan": p.contains_nan,
                "lower_bound": p.lower_bound,
                "upper_bound": p.upper_bound,
            }
            for p in partitions
        ],
    )


def _record(m: ManifestFile, version: int) -> dict[str, Any]:
    if version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        # v2+: counts are required (spec "Manifest Lists"); a manifest from a v1 list without
        # them cannot be carried into a v2 list without re-reading it.
        missing = [
            name
            for name, value in (
                ("added_files_count", m.added_files_count),
                ("existing_files_count", m.existing_files_count),
                ("deleted_files_count", m.deleted_files_count),
                ("added_rows_count", m.added_rows_count),
                ("existing_rows_count", m.existing_rows_count),
                ("deleted_rows_count", m.deleted_rows_count),
            )
            if value is None
        ]
        if missing:
            raise ValidationError(
                f"manifest {m.manifest_path} lacks {', '.join(missing)}, required in a v{version} manifest list"
            )
    return {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": m.sequence_number,
        "min_sequence_number": m.min_sequence_number,
        "added_snapshot_id": m.added_snapshot_id,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": _summaries(m.partitions),
        "key_metadata": m.key_metadata,
        "first_row_id": m.first_row_id,
    }


def write_manifest_list(
    output_file: OutputFile,
    manifests: Iterable[ManifestFile],
    *,
    format_version: int,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int | None,
    first_row_id: int | None = None,
    codec: str = DEFAULT_CODEC,
) -> ManifestListResult:
    """Write a snapshot's manifest list.

    Manifests written by this commit (no ``sequence_number`` yet) get ``sequence_number``; in
    v3, data manifests without a ``first_row_id`` get one starting at ``first_row_id`` (the
    snapshot's ``first-row-id``; spec "First Row ID Assignment"). The written list is also put
    in the manifest-list cache, since the next commit reads it back.
    """
    if format_version not in AVRO_FORMAT_VERSIONS:
        raise ValidationError(
            f"Avro manifest lists are written for format versions 1-3, not {format_version}"
        )
    items = list(manifests)
    next_row_id: int | None = None
    if format_version < MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        # v1 has no sequence numbers or delete manifests; they read back as 0 (Appendix E).
        for m in items:
            if m.content is not ManifestContent.DATA:
                raise ValidationError(f"manifest {m.manifest_path}: v1 tables have no delete manifests")
        items = [
            m.evolve(
                sequence_number=0,
                min_sequence_number=0,
                added_snapshot_id=snapshot_id if m.added_snapshot_id is None else m.added_snapshot_id,
                first_row_id=None,
            )
            for m in items
        ]
    else:
        if sequence_number is None:
            raise ValidationError(f"a v{format_version} manifest list needs the snapshot's sequence number")
        items = assign_sequence_numbers(items, snapshot_id=snapshot_id, sequence_number=sequence_number)
        if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
            if first_row_id is None:
                raise ValidationError("a v3 manifest list needs the snapshot's first-row-id")
            items, next_row_id = assign_first_row_ids(items, first_row_id)
        else:
            items = [m.evolve(first_row_id=None) if m.first_row_id is not None else m for m in items]

    metadata = {
        META_SNAPSHOT_ID: str(snapshot_id),
        META_PARENT_SNAPSHOT_ID: "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        META_FORMAT_VERSION: str(format_version),
    }
    if format_version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        metadata[META_SEQUENCE_NUMBER] = str(sequence_number)
    if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        metadata[META_FIRST_ROW_ID] = str(first_row_id)

    try:
        data = write_avro(
            parsed_manifest_file_schema(format_version),
            (_record(m, format_version) for m in items),
            metadata,
            codec=codec,
        )
    except FirnError:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise ValidationError(f"cannot write manifest list {output_file.location}: {e}") from e
    output_file.write(data)
    written = tuple(items)
    _cache.MANIFEST_LIST_CACHE.put(output_file.location, written, weight=len(written))
    return ManifestListResult(
        location=output_file.location,
        length=len(data),
        manifests=written,
        first_row_id=first_row_id if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE else None,
        next_row_id=next_row_id,
    )


# -- reading ---------------------------------------------------------------------------------------
_LIST_IDS = ids.MANIFEST_FILE_FIELD_IDS
_SUMMARY_IDS = (ids.CONTAINS_NULL_ID, ids.CONTAINS_NAN_ID, ids.LOWER_BOUND_ID, ids.UPPER_BOUND_ID)


_LIST_TYPES = {
    ids.MANIFEST_PATH_ID: "string",
    ids.MANIFEST_LENGTH_ID: "long",
    ids.PARTITION_SPEC_ID_ID: "int",
    ids.MANIFEST_CONTENT_ID: "int",
    ids.MANIFEST_SEQUENCE_NUMBER_ID: "long",
    ids.MIN_SEQUENCE_NUMBER_ID: "long",
    ids.ADDED_SNAPSHOT_ID_ID: "long",
    ids.ADDED_FILES_COUNT_ID: "int",
    ids.EXISTING_FILES_COUNT_ID: "int",
    ids.DELETED_FILES_COUNT_ID: "int",
    ids.ADDED_ROWS_COUNT_ID: "long",
    ids.EXISTING_ROWS_COUNT_ID: "long",
    ids.DELETED_ROWS_COUNT_ID: "long",
    ids.MANIFEST_KEY_METADATA_ID: "bytes",
    ids.MANIFEST_FIRST_ROW_ID_ID: "long",
}


def _decode_list(records: Iterable[dict[Any, Any]], writer_schema: Mapping[str, Any]) -> list[ManifestFile]:
    f = record_fields_by_id(writer_schema, _LIST_IDS)
    check_types(f, _LIST_TYPES, named_types(writer_schema), "manifest_file")
    n_path = require_field(f, ids.MANIFEST_PATH_ID, "manifest_file")
    n_len = require_field(f, ids.MANIFEST_LENGTH_ID, "manifest_file")
    n_spec = require_field(f, ids.PARTITION_SPEC_ID_ID, "manifest_file")
    n_content = field_name(f, ids.MANIFEST_CONTENT_ID)
    n_seq = field_name(f, ids.MANIFEST_SEQUENCE_NUMBER_ID)
    n_min_seq = field_name(f, ids.MIN_SEQUENCE_NUMBER_ID)
    n_snap = field_name(f, ids.ADDED_SNAPSHOT_ID_ID)
    n_af, n_ef, n_df = (
        field_name(f, i)
        for i in (ids.ADDED_FILES_COUNT_ID, ids.EXISTING_FILES_COUNT_ID, ids.DELETED_FILES_COUNT_ID)
    )
    n_ar, n_er, n_dr = (
        field_name(f, i)
        for i in (ids.ADDED_ROWS_COUNT_ID, ids.EXISTING_ROWS_COUNT_ID, ids.DELETED_ROWS_COUNT_ID)
    )
    n_parts = field_name(f, ids.PARTITIONS_ID)
    n_key = field_name(f, ids.MANIFEST_KEY_METADATA_ID)
    n_frid = field_name(f, ids.MANIFEST_FIRST_ROW_ID_ID)
    s_null = s_nan = s_lo = s_hi = None
    if n_parts is not None:
        sf = record_fields_by_id(
            nested_record(f[ids.PARTITIONS_ID], named_types(writer_schema)), _SUMMARY_IDS
        )
        s_null = require_field(sf, ids.CONTAINS_NULL_ID, "field_summary")
        s_nan, s_lo, s_hi = (field_name(sf, i) for i in _SUMMARY_IDS[1:])

    out: list[ManifestFile] = []
    for r in records:
        parts = r.get(n_parts)
        content = r.get(n_content)
        seq = r.get(n_seq)
        min_seq = r.get(n_min_seq)
        out.append(
            ManifestFile(
                manifest_path=r[n_path],
                manifest_length=r[n_len],
                partition_spec_id=r[n_spec],
                # Appendix E: v1 lists have no content or sequence numbers; read 0.
                content=ManifestContent.DATA if content is None else ManifestContent(content),
                sequence_number=0 if seq is None else seq,
                min_sequence_number=0 if min_seq is None else min_seq,
                added_snapshot_id=r.get(n_snap),
                added_files_count=r.get(n_af),
                existing_files_count=r.get(n_ef),
                deleted_files_count=r.get(n_df),
                added_rows_count=r.get(n_ar),
                existing_rows_count=r.get(n_er),
                deleted_rows_count=r.get(n_dr),
                partitions=None
                if parts is None
                else tuple(
                    PartitionFieldSummary(p[s_null], p.get(s_nan), p.get(s_lo), p.get(s_hi)) for p in parts
                ),
                key_metadata=r.get(n_key),
                first_row_id=r.get(n_frid),
            )
        )
    return out


def read_manifest_list(
    source: InputFile | bytes,
    *,
    location: str | None = None,
    use_cache: bool = True,
) -> list[ManifestFile]:
    """Read a v1-v3 manifest list (also those written by Iceberg Java and PyIceberg).

    ``location`` names the file in errors and keys the cache; it defaults to the input file's
    location (bytes without a location are never cached).
    """
    if location is None and not isinstance(source, bytes | bytearray | memoryview):
        location = source.location
    if use_cache and location is not None:
        cached = _cache.MANIFEST_LIST_CACHE.get(location)
        if cached is not None:
            return list(cached)
    data, where = source_bytes(source, location)
    contents = open_avro(data, where)
    try:
        manifests = _decode_list(contents.records, contents.writer_schema)
    except FirnError:
        raise
    except Exception as e:  # truncated blocks surface while iterating; bad records as Key/TypeError
        raise corrupt(where, e) from e
    if use_cache and location is not None:
        _cache.MANIFEST_LIST_CACHE.put(location, tuple(manifests), weight=len(manifests))
    return manifests


__all__ = ["ManifestListResult", "read_manifest_list", "write_manifest_list"]
