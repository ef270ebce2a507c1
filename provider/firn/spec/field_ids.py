"""Every field id the spec reserves, in one place (STYLE 2).

Sources: spec "Reserved Field IDs" (metadata columns), "Manifests"/"Manifest Lists" (Avro
manifest ids, also in notes §1-§2), and seed 004 "V4 content entry structure" for V4. The V4
ids follow seed 004, which differs from today's upstream draft (notes §10); they live only
here so they can be re-pointed.
"""

from __future__ import annotations

# -- metadata columns (spec "Reserved Field IDs") ---------------------------------------------
# Table columns must not use ids above Integer.MAX_VALUE - 200; the rest are reserved.
MAX_TABLE_FIELD_ID = 2147483447
FILE_PATH_COLUMN_ID = 2147483646  # _file
ROW_POSITION_COLUMN_ID = 2147483645  # _pos
IS_DELETED_COLUMN_ID = 2147483644  # _deleted
SPEC_ID_COLUMN_ID = 2147483643  # _spec_id
PARTITION_COLUMN_ID = 2147483642  # _partition
DELETE_FILE_PATH_ID = 2147483546  # file_path in position delete files
DELETE_FILE_POS_ID = 2147483545  # pos in position delete files
DELETE_FILE_ROW_ID = 2147483544  # row in position delete files
CHANGE_TYPE_COLUMN_ID = 2147483543
CHANGE_ORDINAL_COLUMN_ID = 2147483542
COMMIT_SNAPSHOT_ID_COLUMN_ID = 2147483541
ROW_ID_COLUMN_ID = 2147483540  # _row_id (v3 row lineage)
LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID = 2147483539  # _last_updated_sequence_number

METADATA_COLUMN_NAMES = {
    "_file": FILE_PATH_COLUMN_ID,
    "_pos": ROW_POSITION_COLUMN_ID,
    "_deleted": IS_DELETED_COLUMN_ID,
    "_spec_id": SPEC_ID_COLUMN_ID,
    "_partition": PARTITION_COLUMN_ID,
    "_row_id": ROW_ID_COLUMN_ID,
    "_last_updated_sequence_number": LAST_UPDATED_SEQUENCE_NUMBER_COLUMN_ID,
}

# -- manifest_entry (spec "Manifest Entry Fields") ---------------------------------------------
STATUS_ID = 0
SNAPSHOT_ID_ID = 1
DATA_FILE_ID = 2
SEQUENCE_NUMBER_ID = 3
FILE_SEQUENCE_NUMBER_ID = 4

# -- data_file (spec "Data File Fields") --------------------------------------------------------
FILE_PATH_ID = 100
FILE_FORMAT_ID = 101
PARTITION_ID = 102
RECORD_COUNT_ID = 103
FILE_SIZE_ID = 104
BLOCK_SIZE_ID = 105  # v1 only, deprecated: "always write a default in v1"
COLUMN_SIZES_ID = 108
VALUE_COUNTS_ID = 109
NULL_VALUE_COUNTS_ID = 110
LOWER_BOUNDS_ID = 125
UPPER_BOUNDS_ID = 128
KEY_METADATA_ID = 131
SPLIT_OFFSETS_ID = 132
CONTENT_ID = 134
EQUALITY_IDS_ID = 135
NAN_VALUE_COUNTS_ID = 137
SORT_ORDER_ID_ID = 140
FIRST_ROW_ID_ID = 142
REFERENCED_DATA_FILE_ID = 143
CONTENT_OFFSET_ID = 144
CONTENT_SIZE_ID = 145

# Key and value ids of the int-keyed metric maps, and the element ids of the lists.
COLUMN_SIZES_KEY_ID = 117
COLUMN_SIZES_VALUE_ID = 118
VALUE_COUNTS_KEY_ID = 119
VALUE_COUNTS_VALUE_ID = 120
NULL_VALUE_COUNTS_KEY_ID = 121
NULL_VALUE_COUNTS_VALUE_ID = 122
LOWER_BOUNDS_KEY_ID = 126
LOWER_BOUNDS_VALUE_ID = 127
UPPER_BOUNDS_KEY_ID = 129
UPPER_BOUNDS_VALUE_ID = 130
SPLIT_OFFSETS_ELEMENT_ID = 133
EQUALITY_IDS_ELEMENT_ID = 136
NAN_VALUE_COUNTS_KEY_ID = 138
NAN_VALUE_COUNTS_VALUE_ID = 139

# -- manifest_file (spec "Manifest Lists") ------------------------------------------------------
MANIFEST_PATH_ID = 500
MANIFEST_LENGTH_ID = 501
PARTITION_SPEC_ID_ID = 502
ADDED_SNAPSHOT_ID_ID = 503
ADDED_FILES_COUNT_ID = 504
EXISTING_FILES_COUNT_ID = 505
DELETED_FILES_COUNT_ID = 506
PARTITIONS_ID = 507
PARTITIONS_ELEMENT_ID = 508
CONTAINS_NULL_ID = 509
LOWER_BOUND_ID = 510
UPPER_BOUND_ID = 511
ADDED_ROWS_COUNT_ID = 512
EXISTING_ROWS_COUNT_ID = 513
DELETED_ROWS_COUNT_ID = 514
MANIFEST_SEQUENCE_NUMBER_ID = 515
MIN_SEQUENCE_NUMBER_ID = 516
MANIFEST_CONTENT_ID = 517
CONTAINS_NAN_ID = 518
MANIFEST_KEY_METADATA_ID = 519
MANIFEST_FIRST_ROW_ID_ID = 520

# The spec's name of each manifest and manifest-list field id (readers fall back to them when a
# file's Avro schema lacks ``field-id`` properties).
MANIFEST_FIELD_NAMES: dict[int, str] = {
    STATUS_ID: "status",
    SNAPSHOT_ID_ID: "snapshot_id",
    DATA_FILE_ID: "data_file",
    SEQUENCE_NUMBER_ID: "sequence_number",
    FILE_SEQUENCE_NUMBER_ID: "file_sequence_number",
    FILE_PATH_ID: "file_path",
    FILE_FORMAT_ID: "file_format",
    PARTITION_ID: "partition",
    RECORD_COUNT_ID: "record_count",
    FILE_SIZE_ID: "file_size_in_bytes",
    BLOCK_SIZE_ID: "block_size_in_bytes",
    COLUMN_SIZES_ID: "column_sizes",
    VALUE_COUNTS_ID: "value_counts",
    NULL_VALUE_COUNTS_ID: "null_value_counts",
    NAN_VALUE_COUNTS_ID: "nan_value_counts",
    LOWER_BOUNDS_ID: "lower_bounds",
    UPPER_BOUNDS_ID: "upper_bounds",
    KEY_METADATA_ID: "key_metadata",
    SPLIT_OFFSETS_ID: "split_offsets",
    CONTENT_ID: "content",
    EQUALITY_IDS_ID: "equality_ids",
    SORT_ORDER_ID_ID: "sort_order_id",
    FIRST_ROW_ID_ID: "first_row_id",
    REFERENCED_DATA_FILE_ID: "referenced_data_file",
    CONTENT_OFFSET_ID: "content_offset",
    CONTENT_SIZE_ID: "content_size_in_bytes",
    MANIFEST_PATH_ID: "manifest_path",
    MANIFEST_LENGTH_ID: "manifest_length",
    PARTITION_SPEC_ID_ID: "partition_spec_id",
    ADDED_SNAPSHOT_ID_ID: "added_snapshot_id",
    ADDED_FILES_COUNT_ID: "added_files_count",
    EXISTING_FILES_COUNT_ID: "existing_files_count",
    DELETED_FILES_COUNT_ID: "deleted_files_count",
    PARTITIONS_ID: "partitions",
    CONTAINS_NULL_ID: "contains_null",
    LOWER_BOUND_ID: "lower_bound",
    UPPER_BOUND_ID: "upper_bound",
    ADDED_ROWS_COUNT_ID: "added_rows_count",
    EXISTING_ROWS_COUNT_ID: "existing_rows_count",
    DELETED_ROWS_COUNT_ID: "deleted_rows_count",
    MANIFEST_SEQUENCE_NUMBER_ID: "sequence_number",
    MIN_SEQUENCE_NUMBER_ID: "min_sequence_number",
    MANIFEST_CONTENT_ID: "content",
    CONTAINS_NAN_ID: "contains_nan",
    MANIFEST_KEY_METADATA_ID: "key_metadata",
    MANIFEST_FIRST_ROW_ID_ID: "first_row_id",
}


# The fields of the ``data_file`` record (r2), and the top-level fields of ``manifest_file``.
DATA_FILE_FIELD_IDS = (
    FILE_PATH_ID,
    FILE_FORMAT_ID,
    PARTITION_ID,
    RECORD_COUNT_ID,
    FILE_SIZE_ID,
    BLOCK_SIZE_ID,
    COLUMN_SIZES_ID,
    VALUE_COUNTS_ID,
    NULL_VALUE_COUNTS_ID,
    NAN_VALUE_COUNTS_ID,
    LOWER_BOUNDS_ID,
    UPPER_BOUNDS_ID,
    KEY_METADATA_ID,
    SPLIT_OFFSETS_ID,
    CONTENT_ID,
    EQUALITY_IDS_ID,
    SORT_ORDER_ID_ID,
    FIRST_ROW_ID_ID,
    REFERENCED_DATA_FILE_ID,
    CONTENT_OFFSET_ID,
    CONTENT_SIZE_ID,
)
MANIFEST_FILE_FIELD_IDS = (
    MANIFEST_PATH_ID,
    MANIFEST_LENGTH_ID,
    PARTITION_SPEC_ID_ID,
    ADDED_SNAPSHOT_ID_ID,
    ADDED_FILES_COUNT_ID,
    EXISTING_FILES_COUNT_ID,
    DELETED_FILES_COUNT_ID,
    PARTITIONS_ID,
    ADDED_ROWS_COUNT_ID,
    EXISTING_ROWS_COUNT_ID,
    DELETED_ROWS_COUNT_ID,
    MANIFEST_SEQUENCE_NUMBER_ID,
    MIN_SEQUENCE_NUMBER_ID,
    MANIFEST_CONTENT_ID,
    MANIFEST_KEY_METADATA_ID,
    MANIFEST_FIRST_ROW_ID_ID,
)

# -- V4 content entries (seed 004 "V4 content entry structure") ----------------------------------
V4_CONTENT_TYPE = 134
V4_LOCATION = 100
V4_FILE_FORMAT = 101
V4_PARTITION = 102  # Firn deviation: the partition tuple is kept, typed as the union of all specs
V4_RECORD_COUNT = 103
V4_FILE_SIZE_IN_BYTES = 104
V4_KEY_METADATA = 131
V4_SPLIT_OFFSETS = 132
V4_SPLIT_OFFSETS_ELEMENT = 133
V4_EQUALITY_IDS = 135
V4_EQUALITY_IDS_ELEMENT = 136
V4_SORT_ORDER_ID = 140
V4_FIRST_ROW_ID = 142
V4_REFERENCED_FILE = 143
V4_PARTITION_SPEC_ID = 148
V4_CONTENT_STATS = 149

V4_VERSION_INFO = 5
V4_STATUS = 0
V4_SNAPSHOT_ID = 1
V4_SEQUENCE_NUMBER = 3
V4_FILE_SEQUENCE_NUMBER = 4

V4_DELETION_VECTOR = 147
V4_DV_OFFSET = 144
V4_DV_SIZE_IN_BYTES = 145
V4_DV_INLINE_CONTENT = 146

V4_MANIFEST_STATS = 521
V4_ADDED_FILES_COUNT = 504
V4_EXISTING_FILES_COUNT = 505
V4_DELETED_FILES_COUNT = 506
V4_ADDED_ROWS_COUNT = 512
V4_EXISTING_ROWS_COUNT = 513
V4_DELETED_ROWS_COUNT = 514
V4_MIN_SEQUENCE_NUMBER = 516

# Per-column stats inside content_stats (Firn deviation: upstream's merged layout, notes §10):
# column f has its struct at 10000 + 200·f and these offsets within it.
STATS_BASE = 10_000
STATS_STRIDE = 200
STATS_LOWER_BOUND = 1
STATS_UPPER_BOUND = 2
STATS_VALUE_COUNT = 4
STATS_NULL_VALUE_COUNT = 5
STATS_NAN_VALUE_COUNT = 6
STATS_AVG_VALUE_SIZE = 7
# Stats ids are reserved up to here; columns whose stats id would exceed it get no stats.
STATS_MAX_ID = 200_000_000


def stats_field_id(column_id: int, offset: int = 0) -> int:
    """Field id of a column's stats struct (offset 0) or one of its members."""
    return STATS_BASE + STATS_STRIDE * column_id + offset


def stats_column_of(field_id: int) -> tuple[int, int] | None:
    """Inverse of :func:`stats_field_id`: (column id, offset), or None outside the stats range."""
    if field_id < STATS_BASE or field_id > STATS_MAX_ID:
        return None
    column, offset = divmod(field_id - STATS_BASE, STATS_STRIDE)
    return column, offset


__all__ = [name for name in dir() if name.isupper()] + ["stats_column_of", "stats_field_id"]
