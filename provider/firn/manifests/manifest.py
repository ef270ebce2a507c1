"""v1-v3 Avro manifests: :class:`ManifestWriter`, :func:`write_manifest`, :func:`read_manifest`.

Spec: "Manifests", "Manifest Entry Fields", "Data File Fields", "Sequence Number Inheritance",
"First Row ID Inheritance", Appendix A. The Avro layout is Java's (``avro_schemas``); the
in-memory model is ``firn.spec.content``.

Writing leaves inheritable values null (ADDED entries' sequence numbers, and their snapshot id
when unknown) so a manifest can be reused across commit retries; the manifest-list writer
assigns them. Reading applies inheritance from the manifest-list entry (``inheritance``).
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from firn.errors import FirnError, InvalidMetadata, ValidationError
from firn.io.base import InputFile, OutputFile
from firn.manifests import _entry_codec as codec
from firn.manifests import cache as _cache
from firn.manifests._avro_io import (
    DEFAULT_CODEC,
    check_array_items,
    check_types,
    corrupt,
    field_name,
    named_types,
    nested_record,
    open_avro,
    open_writer,
    record_fields_by_id,
    require_field,
    source_bytes,
)
from firn.manifests._partition_codec import PartitionDecoder, PartitionEncoder
from firn.manifests.avro_schemas import (
    AVRO_FORMAT_VERSIONS,
    V1_DEFAULT_BLOCK_SIZE,
    parsed_manifest_entry_schema,
)
from firn.manifests.inheritance import EntryInheritance
from firn.manifests.partition_summary import PartitionSummaryBuilder
from firn.spec import field_ids as ids
from firn.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    make_data_file,
)
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.schema_json import partition_field_to_json, schema_to_json
from firn.spec.types import StructType
from firn.spec.versions import (
    MIN_FORMAT_VERSION_DELETION_VECTORS,
    MIN_FORMAT_VERSION_ROW_LEVEL_DELETES,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
)
from firn.util.gc import gc_paused

# Key-value metadata keys (spec "Manifests").
META_SCHEMA = "schema"
META_SCHEMA_ID = "schema-id"
META_PARTITION_SPEC = "partition-spec"
META_PARTITION_SPEC_ID = "partition-spec-id"
META_FORMAT_VERSION = "format-version"
META_CONTENT = "content"
CONTENT_NAMES = {ManifestContent.DATA: "data", ManifestContent.DELETES: "deletes"}

_ADDED = EntryStatus.ADDED
_EXISTING = EntryStatus.EXISTING
_DELETED = EntryStatus.DELETED
_STATUS_BY_ID = {s.value: s for s in EntryStatus}
_CONTENT_BY_ID = {
    c.value: c for c in (FileContent.DATA, FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES)
}
_FORMAT_BY_NAME = {**{f.value: f for f in FileFormat}, **{f.name: f for f in FileFormat}}


def _int_map(m: Mapping[int, Any] | None) -> Any:
    # Union branch named explicitly ("tuple notation"): fastavro otherwise validates the whole
    # array against each branch, which doubles the write cost (notes perf §4a).
    if m is None:
        return None
    return ("array", [{"key": k, "value": v} for k, v in m.items()])


def _int_list(values: Iterable[int] | None) -> Any:
    return None if values is None else ("array", list(values))


class ManifestWriter:
    """Streams manifest entries into one Avro manifest; :meth:`close` writes it and returns its
    :class:`ManifestFile` (without a sequence number: the manifest-list writer assigns it).

    Use as a context manager, or call :meth:`close`. Nothing is written if the block raises.
    """

    def __init__(
        self,
        output_file: OutputFile,
        *,
        spec: PartitionSpec,
        schema: Schema,
        format_version: int,
        content: ManifestContent = ManifestContent.DATA,
        snapshot_id: int | None = None,
        codec: str = DEFAULT_CODEC,
    ) -> None:
        if format_version not in AVRO_FORMAT_VERSIONS:
            raise ValidationError(f"Avro manifests are written for format versions 1-3, not {format_version}")
        if content is ManifestContent.DELETES and format_version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
            raise ValidationError(
                f"delete manifests need format version {MIN_FORMAT_VERSION_ROW_LEVEL_DELETES}+"
            )
        self._output = output_file
        self._version = format_version
        self._content = ManifestContent(content)
        self._snapshot_id = snapshot_id
        self._spec_id = spec.spec_id
        partition_type = spec.partition_type(schema)
        self._partition = PartitionEncoder(partition_type)
        self._summaries = PartitionSummaryBuilder(partition_type)
        self._buffer = io.BytesIO()
        self._writer = open_writer(
            self._buffer,
            parsed_manifest_entry_schema(partition_type, format_version),
            _manifest_metadata(spec, schema, format_version, self._content),
            codec=codec,
        )
        self._counts = [0, 0, 0]  # files by status: EXISTING, ADDED, DELETED
        self._rows = [0, 0, 0]
        self._min_seq: int | None = None
        self._result: ManifestFile | None = None
        self._failure: str | None = None

    # -- adding entries ------------------------------------------------------------------------
    def add(self, data_file: DataFile, *, sequence_number: int | None = None) -> None:
        """Add a new file (ADDED). ``sequence_number`` is an explicit older data sequence
        number (compaction's ``use-starting-sequence-number``); by default it is inherited."""
        self.add_entry(ManifestEntry(_ADDED, self._snapshot_id, sequence_number, None, data_file))

    def existing(self, entry: ManifestEntry) -> None:
        """Carry a live file over unchanged (EXISTING), keeping its snapshot and sequence numbers."""
        self.add_entry(entry.evolve(status=_EXISTING))

    def delete(self, entry: ManifestEntry) -> None:
        """Mark a file deleted in this snapshot (DELETED), keeping its sequence numbers."""
        self.add_entry(entry.evolve(status=_DELETED, snapshot_id=self._snapshot_id))

    def add_entry(self, entry: ManifestEntry) -> None:
        """Write one entry as given, after checking the spec's rules for its version."""
        if self._result is not None:
            raise ValidationError(f"manifest {self._output.location} is already closed")
        if self._failure is not None:
            raise ValidationError(
                f"manifest {self._output.location} is unusable after an error: {self._failure}"
            )
        self._validate(entry)
        df = entry.data_file
        status = entry.status
        record = {
            "status": int(status),
            "snapshot_id": entry.snapshot_id,
            "sequence_number": entry.sequence_number,
            "file_sequence_number": entry.file_sequence_number,
            "data_file": {
                "content": int(df.content),
                "file_path": df.file_path,
                # Java and PyIceberg write the enum name ("PARQUET"); readers are case-insensitive.
                "file_format": df.file_format.name,
                "partition": self._partition.encode(df.partition),
                "record_count": df.record_count,
                "file_size_in_bytes": df.file_size_in_bytes,
                "block_size_in_bytes": V1_DEFAULT_BLOCK_SIZE,
                "column_sizes": _int_map(df.column_sizes),
                "value_counts": _int_map(df.value_counts),
                "null_value_counts": _int_map(df.null_value_counts),
                "nan_value_counts": _int_map(df.nan_value_counts),
                "lower_bounds": _int_map(df.lower_bounds),
                "upper_bounds": _int_map(df.upper_bounds),
                "key_metadata": df.key_metadata,
                "split_offsets": _int_list(df.split_offsets),
                "equality_ids": _int_list(df.equality_ids),
                "sort_order_id": df.sort_order_id,
                "first_row_id": df.first_row_id,
                "referenced_data_file": df.referenced_data_file,
                "content_offset": df.content_offset,
                "content_size_in_bytes": df.content_size_in_bytes,
            },
        }
        try:
            self._summaries.update(df.partition)
            self._writer.write(record)
        except Exception as e:
            # fastavro may have encoded part of the record into the current block, and the
            # summaries may hold some of its values: the file can no longer be finished.
            self._failure = f"cannot write manifest entry for {df.file_path}: {e}"
            if isinstance(e, ValidationError):
                raise
            if isinstance(e, TypeError | ValueError | OverflowError | AttributeError):
                raise ValidationError(self._failure) from e
            raise
        self._counts[status] += 1
        self._rows[status] += df.record_count
        seq = entry.sequence_number
        if status is not _DELETED and seq is not None and (self._min_seq is None or seq < self._min_seq):
            self._min_seq = seq

    def _validate(self, entry: ManifestEntry) -> None:
        df = entry.data_file
        v = self._version
        where = f"manifest {self._output.location}, file {df.file_path}"
        if df.is_delete:
            if v < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
                raise ValidationError(f"{where}: format version {v} has no delete files")
            if self._content is not ManifestContent.DELETES:
                raise ValidationError(
                    f"{where}: delete files belong in a delete manifest, not a data manifest"
                )
            if df.is_dv:
                # Spec "Deletion Vectors": DVs are v3+, and need the referenced file and blob range.
                if v < MIN_FORMAT_VERSION_DELETION_VECTORS:
                    raise ValidationError(f"{where}: deletion vectors need format version 3+, table is v{v}")
                if (
                    df.referenced_data_file is None
                    or df.content_offset is None
                    or df.content_size_in_bytes is None
                ):
                    raise ValidationError(
                        f"{where}: a deletion vector needs referenced_data_file, content_offset and "
                        "content_size_in_bytes"
                    )
            elif (
                df.content is FileContent.POSITION_DELETES
                and v >= MIN_FORMAT_VERSION_DELETION_VECTORS
                and entry.status is _ADDED
            ):
                # notes §2 (MergingSnapshotProducer.validateDeleteFileForVersion): v3 adds position
                # deletes only as DVs. Carried-over (EXISTING/DELETED) v2 files stay legal.
                raise ValidationError(
                    f"{where}: format version {v} does not allow new position delete files; write a deletion vector"
                )
            if df.content is FileContent.EQUALITY_DELETES and not df.equality_ids:
                raise ValidationError(f"{where}: equality delete files need equality_ids")
            if df.first_row_id is not None:
                raise ValidationError(f"{where}: delete files never have a first_row_id")
        elif self._content is not ManifestContent.DATA:
            raise ValidationError(f"{where}: data files belong in a data manifest, not a delete manifest")
        if df.content_offset is not None and v < MIN_FORMAT_VERSION_DELETION_VECTORS:
            raise ValidationError(f"{where}: content_offset needs format version 3+")
        if v < MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
            if entry.snapshot_id is None:
                raise ValidationError(f"{where}: v1 manifest entries need a snapshot id")
            return
        status = entry.status
        if status is _ADDED:
            if (
                entry.sequence_number is None
                and entry.snapshot_id is not None
                and self._snapshot_id is not None
                and entry.snapshot_id != self._snapshot_id
            ):
                # Java's check: a null sequence number is inherited from *this* commit.
                raise ValidationError(
                    f"{where}: an entry from snapshot {entry.snapshot_id} cannot inherit the sequence number "
                    f"of snapshot {self._snapshot_id}"
                )
        else:
            # Spec: EXISTING and DELETED entries must carry both sequence numbers explicitly.
            if entry.sequence_number is None or entry.file_sequence_number is None:
                raise ValidationError(f"{where}: {status.name} entries need explicit sequence numbers")
            if status is _EXISTING and entry.snapshot_id is None:
                raise ValidationError(f"{where}: EXISTING entries need the snapshot id that added the file")

    # -- finishing ---------------------------------------------------------------------------------
    def close(self) -> ManifestFile:
        """Write the file and return its manifest-list entry (idempotent)."""
        if self._result is not None:
            return self._result
        if self._failure is not None:
            raise ValidationError(
                f"manifest {self._output.location} was not written because an entry failed: {self._failure}"
            )
        self._writer.flush()
        data = self._buffer.getvalue()
        self._output.write(data)
        self._buffer = io.BytesIO()
        existing, added, deleted = self._counts
        existing_rows, added_rows, deleted_rows = self._rows
        self._result = ManifestFile(
            manifest_path=self._output.location,
            manifest_length=len(data),
            partition_spec_id=self._spec_id,
            content=self._content,
            sequence_number=None,
            min_sequence_number=self._min_seq,
            added_snapshot_id=self._snapshot_id,
            added_files_count=added,
            existing_files_count=existing,
            deleted_files_count=deleted,
            added_rows_count=added_rows,
            existing_rows_count=existing_rows,
            deleted_rows_count=deleted_rows,
            partitions=self._summaries.summaries(),
            key_metadata=None,
            first_row_id=None,
        )
        return self._result

    @property
    def manifest_file(self) -> ManifestFile:
        """The result of :meth:`close`."""
        if self._result is None:
            raise ValidationError(f"manifest {self._output.location} is not closed yet")
        return self._result

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()


def _manifest_metadata(
    spec: PartitionSpec, schema: Schema, version: int, content: ManifestContent
) -> dict[str, str]:
    # Spec "Manifests": key-value metadata; JSON is compact like Java's JsonUtil output.
    meta = {
        META_SCHEMA: json.dumps(schema_to_json(schema), separators=(",", ":")),
        META_SCHEMA_ID: str(schema.schema_id),
        # Only the fields array (spec, clarified by apache/iceberg#13895).
        META_PARTITION_SPEC: json.dumps(
            [partition_field_to_json(f) for f in spec.fields], separators=(",", ":")
        ),
        META_PARTITION_SPEC_ID: str(spec.spec_id),
        META_FORMAT_VERSION: str(version),
    }
    if version >= MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        meta[META_CONTENT] = CONTENT_NAMES[content]
    return meta


def write_manifest(
    output_file: OutputFile,
    entries: Iterable[ManifestEntry],
    *,
    spec: PartitionSpec,
    schema: Schema,
    format_version: int,
    content: ManifestContent = ManifestContent.DATA,
    snapshot_id: int | None = None,
    codec: str = DEFAULT_CODEC,
) -> ManifestFile:
    """Write ``entries`` as they are into one manifest and return its :class:`ManifestFile`."""
    writer = ManifestWriter(
        output_file,
        spec=spec,
        schema=schema,
        format_version=format_version,
        content=content,
        snapshot_id=snapshot_id,
        codec=codec,
    )
    with gc_paused():
        for entry in entries:
            writer.add_entry(entry)
    return writer.close()


# -- reading ---------------------------------------------------------------------------------------
_ENTRY_IDS = (
    ids.STATUS_ID,
    ids.SNAPSHOT_ID_ID,
    ids.SEQUENCE_NUMBER_ID,
    ids.FILE_SEQUENCE_NUMBER_ID,
    ids.DATA_FILE_ID,
)
_FILE_IDS = ids.DATA_FILE_FIELD_IDS


_ENTRY_TYPES = {
    ids.STATUS_ID: "int",
    ids.SNAPSHOT_ID_ID: "long",
    ids.SEQUENCE_NUMBER_ID: "long",
    ids.FILE_SEQUENCE_NUMBER_ID: "long",
}
_FILE_TYPES = {
    ids.CONTENT_ID: "int",
    ids.FILE_PATH_ID: "string",
    ids.FILE_FORMAT_ID: "string",
    ids.RECORD_COUNT_ID: "long",
    ids.FILE_SIZE_ID: "long",
    ids.KEY_METADATA_ID: "bytes",
    ids.SPLIT_OFFSETS_ID: "array<long>",
    ids.EQUALITY_IDS_ID: "array<int>",
    ids.SORT_ORDER_ID_ID: "int",
    ids.FIRST_ROW_ID_ID: "long",
    ids.REFERENCED_DATA_FILE_ID: "string",
    ids.CONTENT_OFFSET_ID: "long",
    ids.CONTENT_SIZE_ID: "long",
}


class _EntryDecoder:
    """Field names and partition conversions resolved once per (file schema, partition type)."""

    def __init__(self, writer_schema: dict[str, Any], partition_type: StructType | None) -> None:
        named = named_types(writer_schema)
        entry_fields = record_fields_by_id(writer_schema, _ENTRY_IDS)
        self.status = require_field(entry_fields, ids.STATUS_ID, "manifest_entry")
        self.snapshot_id = field_name(entry_fields, ids.SNAPSHOT_ID_ID)
        self.sequence_number = field_name(entry_fields, ids.SEQUENCE_NUMBER_ID)
        self.file_sequence_number = field_name(entry_fields, ids.FILE_SEQUENCE_NUMBER_ID)
        self.data_file = require_field(entry_fields, ids.DATA_FILE_ID, "manifest_entry")
        file_record = nested_record(entry_fields[ids.DATA_FILE_ID], named)
        f = record_fields_by_id(file_record, _FILE_IDS)
        for required in (
            ids.FILE_PATH_ID,
            ids.FILE_FORMAT_ID,
            ids.PARTITION_ID,
            ids.RECORD_COUNT_ID,
            ids.FILE_SIZE_ID,
        ):
            require_field(f, required, "data_file")
        check_types(entry_fields, _ENTRY_TYPES, named, "manifest_entry")
        check_types(f, _FILE_TYPES, named, "data_file")
        self.names = {fid: field_name(f, fid) for fid in _FILE_IDS}
        self.partition = PartitionDecoder(
            nested_record(f[ids.PARTITION_ID], named), partition_type, writer_schema
        )


@functools.lru_cache(maxsize=128)
def _decoder_for(schema_json: str, partition_type: StructType | None) -> _EntryDecoder:
    # Keyed by the schema text: every manifest of one spec shares it, so resolution runs once.
    return _EntryDecoder(json.loads(schema_json), partition_type)


def _to_dict(m: Any) -> dict[Any, Any] | None:
    if m is None:
        return None
    if type(m) is list:
        return {kv["key"]: kv["value"] for kv in m}
    # Tolerate an Avro map with string keys from nonconforming writers (Appendix A wants arrays).
    return {int(k): v for k, v in m.items()}


def _decode_entries(
    records: Iterable[dict[Any, Any]], dec: _EntryDecoder, manifest: ManifestFile
) -> list[ManifestEntry]:
    inherit = EntryInheritance.of(manifest)
    n = dec.names
    n_path, n_format, n_part = n[ids.FILE_PATH_ID], n[ids.FILE_FORMAT_ID], n[ids.PARTITION_ID]
    n_count, n_size, n_content = n[ids.RECORD_COUNT_ID], n[ids.FILE_SIZE_ID], n[ids.CONTENT_ID]
    n_cs, n_vc, n_nc = n[ids.COLUMN_SIZES_ID], n[ids.VALUE_COUNTS_ID], n[ids.NULL_VALUE_COUNTS_ID]
    n_nan, n_lo, n_hi = n[ids.NAN_VALUE_COUNTS_ID], n[ids.LOWER_BOUNDS_ID], n[ids.UPPER_BOUNDS_ID]
    n_key, n_split, n_eq = n[ids.KEY_METADATA_ID], n[ids.SPLIT_OFFSETS_ID], n[ids.EQUALITY_IDS_ID]
    n_sort, n_frid, n_ref = n[ids.SORT_ORDER_ID_ID], n[ids.FIRST_ROW_ID_ID], n[ids.REFERENCED_DATA_FILE_ID]
    n_off, n_csize = n[ids.CONTENT_OFFSET_ID], n[ids.CONTENT_SIZE_ID]
    n_status, n_snap, n_seq, n_fseq, n_df = (
        dec.status,
        dec.snapshot_id,
        dec.sequence_number,
        dec.file_sequence_number,
        dec.data_file,
    )
    decode_partition = dec.partition.decode
    spec_id = manifest.partition_spec_id
    data = FileContent.DATA
    out: list[ManifestEntry] = []
    append = out.append
    for rec in records:
        status = _STATUS_BY_ID[rec[n_status]]
        f = rec[n_df]
        content = data if n_content is None else _CONTENT_BY_ID[f[n_content]]
        fmt = f[n_format]
        file_format = _FORMAT_BY_NAME.get(fmt) or FileFormat.parse(fmt)
        record_count = f[n_count]
        split = f.get(n_split)
        eq = f.get(n_eq)
        data_file = make_data_file(
            content=content,
            file_path=f[n_path],
            file_format=file_format,
            partition=decode_partition(f[n_part]),
            record_count=record_count,
            file_size_in_bytes=f[n_size],
            spec_id=spec_id,
            column_sizes=_to_dict(f.get(n_cs)),
            value_counts=_to_dict(f.get(n_vc)),
            null_value_counts=_to_dict(f.get(n_nc)),
            nan_value_counts=_to_dict(f.get(n_nan)),
            lower_bounds=_to_dict(f.get(n_lo)),
            upper_bounds=_to_dict(f.get(n_hi)),
            key_metadata=f.get(n_key),
            split_offsets=None if split is None else tuple(split),
            equality_ids=None if eq is None else tuple(eq),
            sort_order_id=f.get(n_sort),
            first_row_id=inherit.first_row_id(status, content, f.get(n_frid), record_count),
            referenced_data_file=f.get(n_ref),
            content_offset=f.get(n_off),
            content_size_in_bytes=f.get(n_csize),
        )
        append(
            ManifestEntry(
                status,
                inherit.snapshot(rec.get(n_snap)),
                inherit.sequence(status, rec.get(n_seq)),
                inherit.sequence(status, rec.get(n_fseq)),
                data_file,
            )
        )
    return out


# The order of the fields the generated decoder returns per entry (``_entry_codec``).
_GEN_ENTRY_IDS = (ids.STATUS_ID, ids.SNAPSHOT_ID_ID, ids.SEQUENCE_NUMBER_ID, ids.FILE_SEQUENCE_NUMBER_ID)
_GEN_FILE_IDS = (
    ids.CONTENT_ID,
    ids.FILE_PATH_ID,
    ids.FILE_FORMAT_ID,
    ids.PARTITION_ID,
    ids.RECORD_COUNT_ID,
    ids.FILE_SIZE_ID,
    ids.COLUMN_SIZES_ID,
    ids.VALUE_COUNTS_ID,
    ids.NULL_VALUE_COUNTS_ID,
    ids.NAN_VALUE_COUNTS_ID,
    ids.LOWER_BOUNDS_ID,
    ids.UPPER_BOUNDS_ID,
    ids.KEY_METADATA_ID,
    ids.SPLIT_OFFSETS_ID,
    ids.EQUALITY_IDS_ID,
    ids.SORT_ORDER_ID_ID,
    ids.FIRST_ROW_ID_ID,
    ids.REFERENCED_DATA_FILE_ID,
    ids.CONTENT_OFFSET_ID,
    ids.CONTENT_SIZE_ID,
)
_MAP_IDS = frozenset(
    (
        ids.COLUMN_SIZES_ID,
        ids.VALUE_COUNTS_ID,
        ids.NULL_VALUE_COUNTS_ID,
        ids.NAN_VALUE_COUNTS_ID,
        ids.LOWER_BOUNDS_ID,
        ids.UPPER_BOUNDS_ID,
    )
)


def _as_map(m: Any) -> Any:
    # The generated decoder builds dicts for Appendix A's key/value arrays and Avro maps; any
    # other shape in a stats field is a damaged or foreign file.
    if m is None or type(m) is dict:
        return m
    raise ValueError(f"stats field is a {type(m).__name__}, not a map")


def _build_entries(
    rows: list[tuple[Any, ...]], dec: _EntryDecoder, manifest: ManifestFile
) -> list[ManifestEntry]:
    """ManifestEntry objects from the generated decoder's tuples (fields in ``_GEN_*`` order)."""
    inherit = EntryInheritance.of(manifest)
    snapshot, sequence, first_row_id = inherit.snapshot, inherit.sequence, inherit.first_row_id
    decode_partition = dec.partition.decode
    spec_id = manifest.partition_spec_id
    data = FileContent.DATA
    status_by_id, content_by_id, format_by_name = _STATUS_BY_ID, _CONTENT_BY_ID, _FORMAT_BY_NAME
    new, entry = make_data_file, ManifestEntry
    out: list[ManifestEntry] = []
    append = out.append
    for (
        status_id, snap, seq, fseq,
        content_id, path, fmt, part, record_count, size,
        cs, vc, nc, nan, lo, hi, key, split, eq, sort, frid, ref, off, csize,
    ) in rows:  # fmt: skip
        status = status_by_id[status_id]
        content = data if content_id is None else content_by_id[content_id]
        if type(path) is not str:
            raise ValueError("data_file.file_path is missing")
        data_file = new(
            content,
            path,
            format_by_name.get(fmt) or FileFormat.parse(fmt),
            decode_partition(part),
            record_count,
            size,
            spec_id,
            _as_map(cs),
            _as_map(vc),
            _as_map(nc),
            _as_map(nan),
            _as_map(lo),
            _as_map(hi),
            key,
            None if split is None else tuple(split),
            None if eq is None else tuple(eq),
            sort,
            first_row_id(status, content, frid, record_count),
            ref,
            off,
            csize,
        )
        append(entry(status, snapshot(snap), sequence(status, seq), sequence(status, fseq), data_file))
    return out


def _read_generated(
    data: bytes, location: str, manifest: ManifestFile, partition_type: StructType | None
) -> list[ManifestEntry] | None:
    """Decode with the decoder generated for the file's schema; None when the schema or codec
    is one it does not handle (the caller then uses fastavro)."""
    try:
        container = codec.read_container(data)
    except Exception as e:
        raise corrupt(location, e) from e
    if container.codec not in codec.GENERATED_CODECS:
        return None
    check_array_items(container.schema_json, location)
    try:
        dec = _decoder_for(container.schema_json, partition_type)
        block_decoder = codec.entry_decoder(container.schema_json, _GEN_ENTRY_IDS, _GEN_FILE_IDS, _MAP_IDS)
    except codec.NotGenerated:
        return None
    except FirnError:
        raise
    except Exception as e:
        raise corrupt(location, e) from e
    try:
        with gc_paused():
            return _build_entries(codec.decode_entries(data, container, block_decoder), dec, manifest)
    except FirnError:
        raise
    except Exception as e:  # truncated blocks, bad varints, a field of the wrong shape
        raise corrupt(location, e) from e


def _check_counts(entries: list[ManifestEntry], manifest: ManifestFile, location: str) -> None:
    """Compare entry counts with the manifest-list entry: catches a file cut at a block boundary,
    which Avro itself cannot detect (there is no footer)."""
    expected = (manifest.existing_files_count, manifest.added_files_count, manifest.deleted_files_count)
    if None in expected:
        return
    found = [0, 0, 0]
    for e in entries:
        found[e.status] += 1
    if tuple(found) != expected:
        raise InvalidMetadata(
            f"manifest has {found[1]} added, {found[0]} existing and {found[2]} deleted entries but its "
            f"manifest-list entry says {expected[1]}, {expected[0]} and {expected[2]}; it may be truncated",
            location=location,
        )


def read_manifest(
    source: InputFile | bytes,
    manifest: ManifestFile,
    *,
    partition_type: StructType | None = None,
    include_deleted: bool = False,
    use_cache: bool = True,
) -> list[ManifestEntry]:
    """Read a v1-v3 manifest's entries with inheritance from ``manifest`` applied.

    ``partition_type`` (``spec.partition_type(schema)`` of the manifest's spec) orders and types
    the partition tuples; without it they follow the file's own partition struct. DELETED
    entries are skipped unless ``include_deleted``. Decoded files are cached by location
    (``firn.manifests.cache``). Accepts manifests written by Iceberg Java and PyIceberg.
    """
    location = manifest.manifest_path
    # Everything the decoded entries depend on; the length guards against a reused path.
    key = (
        location,
        manifest.manifest_length,
        manifest.sequence_number,
        manifest.added_snapshot_id,
        manifest.first_row_id,
        manifest.partition_spec_id,
        partition_type,
    )
    cached = _cache.MANIFEST_CACHE.get(key) if use_cache else None
    if cached is None:
        data, location = source_bytes(source, location)
        generated = _read_generated(data, location, manifest, partition_type)
        if generated is not None:
            entries = generated
        else:
            contents = open_avro(data, location)
            try:
                dec = _decoder_for(contents.schema_json, partition_type)
                with gc_paused():
                    entries = _decode_entries(contents.records, dec, manifest)
            except FirnError:
                raise
            except Exception as e:  # truncated blocks surface while iterating; bad records as Key/TypeError
                raise corrupt(location, e) from e
        _check_counts(entries, manifest, location)
        cached = tuple(entries)
        if use_cache:
            _cache.MANIFEST_CACHE.put(key, cached, weight=len(cached))
    if include_deleted:
        return list(cached)
    return [e for e in cached if e.status is not _DELETED]


def read_manifest_metadata(source: InputFile | bytes, *, location: str | None = None) -> dict[str, str]:
    """The key-value metadata of a manifest (``schema``, ``partition-spec``, ``format-version``...)."""
    data, where = source_bytes(source, location)
    contents = open_avro(data, where)
    return {k: v for k, v in contents.metadata.items() if not k.startswith("avro.")}


__all__ = [
    "CONTENT_NAMES",
    "ManifestWriter",
    "read_manifest",
    "read_manifest_metadata",
    "write_manifest",
]
