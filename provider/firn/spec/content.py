"""The one in-memory model of tracked files (spec: "Manifests", "Manifest Lists").

Data files, delete files, manifest entries and manifest-list entries are frozen dataclasses
shared by every format version; what differs between v1, v2, v3 (Avro) and v4 (Parquet
content entries) lives only in the serde modules under ``firn.manifests``.

Metric maps are keyed by field id. Bounds are Appendix D binary single values, as in v1-v3
manifests; the V4 edge converts them to and from typed columns.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any


class FileContent(enum.IntEnum):
    """``content`` of a data_file (spec field 134). V4 adds manifests and manifest DVs (seed 004)."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2
    # V4 content types (seed 004 "V4 content entry structure"): only in root manifests.
    DATA_MANIFEST = 3
    DELETE_MANIFEST = 4
    MANIFEST_DV = 5


class FileFormat(enum.Enum):
    AVRO = "avro"
    ORC = "orc"
    PARQUET = "parquet"
    PUFFIN = "puffin"

    @classmethod
    def parse(cls, text: str) -> FileFormat:
        return cls(text.lower())


class EntryStatus(enum.IntEnum):
    """Manifest entry status (spec field 0)."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


class ManifestContent(enum.IntEnum):
    """Manifest-list ``content`` (spec field 517)."""

    DATA = 0
    DELETES = 1


# Separates a file's path from a blob offset in :attr:`DataFile.file_key`.
FILE_KEY_SEPARATOR = "#"

# Partition tuples are plain tuples of internal-representation values, in spec field order.
PartitionTuple = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file, delete file or deletion vector tracked by a manifest (the ``data_file`` struct)."""

    content: FileContent
    file_path: str
    file_format: FileFormat
    partition: PartitionTuple
    record_count: int
    file_size_in_bytes: int
    # The partition spec the partition tuple belongs to (from the manifest; V4 stores it per entry).
    spec_id: int = 0
    column_sizes: Mapping[int, int] | None = None
    value_counts: Mapping[int, int] | None = None
    null_value_counts: Mapping[int, int] | None = None
    nan_value_counts: Mapping[int, int] | None = None
    lower_bounds: Mapping[int, bytes] | None = None
    upper_bounds: Mapping[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    # v3 row lineage (spec "First Row ID Inheritance").
    first_row_id: int | None = None
    # v2+: the data file a position delete file / DV applies to.
    referenced_data_file: str | None = None
    # v3 DVs: the blob's offset and length inside the Puffin file.
    content_offset: int | None = None
    content_size_in_bytes: int | None = None

    @property
    def is_dv(self) -> bool:
        return self.content is FileContent.POSITION_DELETES and self.file_format is FileFormat.PUFFIN

    @property
    def file_key(self) -> str:
        """The identity of a tracked file: its path, or ``path#offset`` for a blob inside a
        file (a DV), since one Puffin file may hold the DVs of many data files and removing one
        must leave the others live (spec "Deletion Vectors"; Java's ``DeleteFileSet``)."""
        if self.content_offset is None:
            return self.file_path
        return f"{self.file_path}{FILE_KEY_SEPARATOR}{self.content_offset}"

    @property
    def is_delete(self) -> bool:
        return self.content in (FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES)

    def evolve(self, **changes: Any) -> DataFile:
        return replace(self, **changes)


# Building a DataFile through its frozen-dataclass ``__init__`` costs one ``object.__setattr__``
# call per field, and planning builds one per manifest entry. The slot descriptors below set
# the same fields directly, in about half the time (bench/README.md, 9c). ``make_data_file``
# takes the same arguments as ``DataFile`` and returns an equal object; a test keeps the two in
# step.
_new = object.__new__


def _slot_setter(name: str) -> Callable[[DataFile, Any], None]:
    setter: Callable[[DataFile, Any], None] = DataFile.__dict__[name].__set__
    return setter


_set_content = _slot_setter("content")
_set_file_path = _slot_setter("file_path")
_set_file_format = _slot_setter("file_format")
_set_partition = _slot_setter("partition")
_set_record_count = _slot_setter("record_count")
_set_file_size_in_bytes = _slot_setter("file_size_in_bytes")
_set_spec_id = _slot_setter("spec_id")
_set_column_sizes = _slot_setter("column_sizes")
_set_value_counts = _slot_setter("value_counts")
_set_null_value_counts = _slot_setter("null_value_counts")
_set_nan_value_counts = _slot_setter("nan_value_counts")
_set_lower_bounds = _slot_setter("lower_bounds")
_set_upper_bounds = _slot_setter("upper_bounds")
_set_key_metadata = _slot_setter("key_metadata")
_set_split_offsets = _slot_setter("split_offsets")
_set_equality_ids = _slot_setter("equality_ids")
_set_sort_order_id = _slot_setter("sort_order_id")
_set_first_row_id = _slot_setter("first_row_id")
_set_referenced_data_file = _slot_setter("referenced_data_file")
_set_content_offset = _slot_setter("content_offset")
_set_content_size_in_bytes = _slot_setter("content_size_in_bytes")


def make_data_file(
    content: FileContent,
    file_path: str,
    file_format: FileFormat,
    partition: PartitionTuple,
    record_count: int,
    file_size_in_bytes: int,
    spec_id: int = 0,
    column_sizes: Mapping[int, int] | None = None,
    value_counts: Mapping[int, int] | None = None,
    null_value_counts: Mapping[int, int] | None = None,
    nan_value_counts: Mapping[int, int] | None = None,
    lower_bounds: Mapping[int, bytes] | None = None,
    upper_bounds: Mapping[int, bytes] | None = None,
    key_metadata: bytes | None = None,
    split_offsets: tuple[int, ...] | None = None,
    equality_ids: tuple[int, ...] | None = None,
    sort_order_id: int | None = None,
    first_row_id: int | None = None,
    referenced_data_file: str | None = None,
    content_offset: int | None = None,
    content_size_in_bytes: int | None = None,
) -> DataFile:
    """``DataFile(...)`` built without the frozen dataclass's per-field ``__setattr__`` calls."""
    f: DataFile = _new(DataFile)
    _set_content(f, content)
    _set_file_path(f, file_path)
    _set_file_format(f, file_format)
    _set_partition(f, partition)
    _set_record_count(f, record_count)
    _set_file_size_in_bytes(f, file_size_in_bytes)
    _set_spec_id(f, spec_id)
    _set_column_sizes(f, column_sizes)
    _set_value_counts(f, value_counts)
    _set_null_value_counts(f, null_value_counts)
    _set_nan_value_counts(f, nan_value_counts)
    _set_lower_bounds(f, lower_bounds)
    _set_upper_bounds(f, upper_bounds)
    _set_key_metadata(f, key_metadata)
    _set_split_offsets(f, split_offsets)
    _set_equality_ids(f, equality_ids)
    _set_sort_order_id(f, sort_order_id)
    _set_first_row_id(f, first_row_id)
    _set_referenced_data_file(f, referenced_data_file)
    _set_content_offset(f, content_offset)
    _set_content_size_in_bytes(f, content_size_in_bytes)
    return f


@dataclass(frozen=True, slots=True)
class ManifestStats:
    """Counts a V4 manifest entry carries about its leaf (seed 004 ``manifest_stats``, id 521)."""

    added_files_count: int = 0
    existing_files_count: int = 0
    deleted_files_count: int = 0
    added_rows_count: int = 0
    existing_rows_count: int = 0
    deleted_rows_count: int = 0
    min_sequence_number: int | None = None

    @property
    def live_files_count(self) -> int:
        return self.added_files_count + self.existing_files_count


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A manifest entry: status, snapshot and sequence numbers, and the tracked file.

    After reading (inheritance applied, spec "Sequence Number Inheritance"), ``snapshot_id``,
    ``sequence_number`` and ``file_sequence_number`` are set for every live entry of a v2+
    table. When *writing* an ADDED entry, ``None`` means "inherit from the manifest list".
    """

    status: EntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile
    # V4 only (seed 004): counts for DATA_MANIFEST / DELETE_MANIFEST entries, and the inline
    # bitmap of a MANIFEST_DV entry (``deletion_vector.inline_content``).
    manifest_stats: ManifestStats | None = None
    inline_content: bytes | None = None

    @property
    def is_live(self) -> bool:
        return self.status is not EntryStatus.DELETED

    def evolve(self, **changes: Any) -> ManifestEntry:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """Manifest-list partition summary (spec element 508)."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A manifest-list entry (the ``manifest_file`` struct)."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int | None = None
    min_sequence_number: int | None = None
    added_snapshot_id: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        return self.deleted_files_count is None or self.deleted_files_count > 0

    def evolve(self, **changes: Any) -> ManifestFile:
        return replace(self, **changes)


__all__ = [
    "DataFile",
    "EntryStatus",
    "FileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestFile",
    "ManifestStats",
    "PartitionFieldSummary",
    "PartitionTuple",
]
