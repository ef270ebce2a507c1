"""Every field id the spec reserves, in one place (STYLE 2).

Sources: spec "Reserved Field IDs" (metadata columns), "Manifests"/"Manifest Lists" (Avro
manifest ids, also in notes §1-§2), and seed 004 "V4 content entry structure" for V4. The V4
ids follow seed 004, which differs from today's upstream draft (notes §10); they live only
here so they can be re-pointed.
"""

from __future__ import annotations

# -- metadata columns (spec "Reserved Field IDs") ---------------------------------------------
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
