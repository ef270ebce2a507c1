"""Avro schemas of v1-v3 manifests (``manifest_entry``) and manifest lists (``manifest_file``).

Spec: "Manifests", "Manifest Lists", Appendix A (Avro). Field ids, record names and field order
follow Iceberg Java (notes §1 and §2: ``V{1,2,3}Metadata``, ``TypeToSchema``,
``AvroSchemaUtil.createMap``):

* nested records are named ``r<fieldId>`` (``data_file`` is ``r2``, ``partition`` is ``r102``,
  the partition-summary element is ``r508``);
* int-keyed maps are arrays of ``k<keyId>_v<valueId>`` records with logicalType ``map``;
* optional fields are ``["null", T]`` unions with default null;
* ids are stored as ``field-id`` on record fields and ``element-id`` on arrays.

The field ids are the spec's, named once in :mod:`firn.spec.field_ids` (STYLE 2); every reader
and writer in this package refers to them by name.
"""

from __future__ import annotations

import functools
from typing import Any

import fastavro

from firn.errors import Unsupported
from firn.spec.field_ids import (
    ADDED_FILES_COUNT_ID,
    ADDED_ROWS_COUNT_ID,
    ADDED_SNAPSHOT_ID_ID,
    BLOCK_SIZE_ID,
    COLUMN_SIZES_ID,
    COLUMN_SIZES_KEY_ID,
    COLUMN_SIZES_VALUE_ID,
    CONTAINS_NAN_ID,
    CONTAINS_NULL_ID,
    CONTENT_ID,
    CONTENT_OFFSET_ID,
    CONTENT_SIZE_ID,
    DATA_FILE_ID,
    DELETED_FILES_COUNT_ID,
    DELETED_ROWS_COUNT_ID,
    EQUALITY_IDS_ELEMENT_ID,
    EQUALITY_IDS_ID,
    EXISTING_FILES_COUNT_ID,
    EXISTING_ROWS_COUNT_ID,
    FILE_FORMAT_ID,
    FILE_PATH_ID,
    FILE_SEQUENCE_NUMBER_ID,
    FILE_SIZE_ID,
    FIRST_ROW_ID_ID,
    KEY_METADATA_ID,
    LOWER_BOUND_ID,
    LOWER_BOUNDS_ID,
    LOWER_BOUNDS_KEY_ID,
    LOWER_BOUNDS_VALUE_ID,
    MANIFEST_CONTENT_ID,
    MANIFEST_FIELD_NAMES,
    MANIFEST_FIRST_ROW_ID_ID,
    MANIFEST_KEY_METADATA_ID,
    MANIFEST_LENGTH_ID,
    MANIFEST_PATH_ID,
    MANIFEST_SEQUENCE_NUMBER_ID,
    MIN_SEQUENCE_NUMBER_ID,
    NAN_VALUE_COUNTS_ID,
    NAN_VALUE_COUNTS_KEY_ID,
    NAN_VALUE_COUNTS_VALUE_ID,
    NULL_VALUE_COUNTS_ID,
    NULL_VALUE_COUNTS_KEY_ID,
    NULL_VALUE_COUNTS_VALUE_ID,
    PARTITION_ID,
    PARTITION_SPEC_ID_ID,
    PARTITIONS_ELEMENT_ID,
    PARTITIONS_ID,
    RECORD_COUNT_ID,
    REFERENCED_DATA_FILE_ID,
    SEQUENCE_NUMBER_ID,
    SNAPSHOT_ID_ID,
    SORT_ORDER_ID_ID,
    SPLIT_OFFSETS_ELEMENT_ID,
    SPLIT_OFFSETS_ID,
    STATUS_ID,
    UPPER_BOUND_ID,
    UPPER_BOUNDS_ID,
    UPPER_BOUNDS_KEY_ID,
    UPPER_BOUNDS_VALUE_ID,
    VALUE_COUNTS_ID,
    VALUE_COUNTS_KEY_ID,
    VALUE_COUNTS_VALUE_ID,
)
from firn.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)
from firn.spec.versions import (
    MIN_FORMAT_VERSION_DELETION_VECTORS,
    MIN_FORMAT_VERSION_ROW_LEVEL_DELETES,
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
)

AvroSchema = dict[str, Any]

# (map field id, key id, value id, value Avro type) of the int-keyed metric maps.
COLUMN_SIZES_MAP = (COLUMN_SIZES_ID, COLUMN_SIZES_KEY_ID, COLUMN_SIZES_VALUE_ID, "long")
VALUE_COUNTS_MAP = (VALUE_COUNTS_ID, VALUE_COUNTS_KEY_ID, VALUE_COUNTS_VALUE_ID, "long")
NULL_VALUE_COUNTS_MAP = (NULL_VALUE_COUNTS_ID, NULL_VALUE_COUNTS_KEY_ID, NULL_VALUE_COUNTS_VALUE_ID, "long")
NAN_VALUE_COUNTS_MAP = (NAN_VALUE_COUNTS_ID, NAN_VALUE_COUNTS_KEY_ID, NAN_VALUE_COUNTS_VALUE_ID, "long")
LOWER_BOUNDS_MAP = (LOWER_BOUNDS_ID, LOWER_BOUNDS_KEY_ID, LOWER_BOUNDS_VALUE_ID, "bytes")
UPPER_BOUNDS_MAP = (UPPER_BOUNDS_ID, UPPER_BOUNDS_KEY_ID, UPPER_BOUNDS_VALUE_ID, "bytes")

# Java writes 64 MB for the deprecated v1 block_size_in_bytes (V1Metadata.DEFAULT_BLOCK_SIZE).
V1_DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024

# Record names (notes §1/§2).
MANIFEST_ENTRY_RECORD = "manifest_entry"
MANIFEST_FILE_RECORD = "manifest_file"


# -- small builders ------------------------------------------------------------------------------
def _required(field_id: int, avro_type: Any, name: str | None = None) -> AvroSchema:
    return {"name": name or MANIFEST_FIELD_NAMES[field_id], "type": avro_type, "field-id": field_id}


def _optional(field_id: int, avro_type: Any, name: str | None = None) -> AvroSchema:
    # Appendix A: optional fields are ["null", T] unions with an Avro default of null.
    return {
        "name": name or MANIFEST_FIELD_NAMES[field_id],
        "type": ["null", avro_type],
        "default": None,
        "field-id": field_id,
    }


def _int_map(spec: tuple[int, int, int, str]) -> AvroSchema:
    """An optional int-keyed map as Java writes it (``AvroSchemaUtil.createMap``)."""
    field_id, key_id, value_id, value_type = spec
    array = {
        "type": "array",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value_type, "field-id": value_id},
            ],
        },
        "logicalType": "map",
    }
    return _optional(field_id, array)


def _list(field_id: int, element_id: int, element_type: str) -> AvroSchema:
    return _optional(field_id, {"type": "array", "items": element_type, "element-id": element_id})


def avro_name(name: str) -> str:
    """Make a partition field name a valid Avro name the way Java does (``AvroSchemaUtil.sanitize``).

    A leading digit is prefixed with ``_``; any other invalid character becomes ``_x`` plus its
    upper-case hex code point (``ts-day`` -> ``ts_x2Dday``).
    """
    if (
        name
        and (name[0].isascii() and (name[0].isalpha() or name[0] == "_"))
        and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    ):
        return name
    out: list[str] = []
    for i, c in enumerate(name):
        valid = c.isascii() and (c.isalpha() or c == "_" or (i > 0 and c.isdigit()))
        if valid:
            out.append(c)
        elif i == 0 and c.isascii() and c.isdigit():
            out.append("_" + c)
        else:
            out.append("_x" + format(ord(c), "X"))
    return "".join(out) or "_"


def decimal_required_bytes(precision: int) -> int:
    """Bytes needed to store any unscaled value of ``precision`` digits (Appendix A)."""
    n = 1
    while 2 ** (8 * n - 1) - 1 < 10**precision - 1:
        n += 1
    return n


def partition_value_avro_type(t: IcebergType, named: set[str]) -> Any:
    """The Avro type of one partition value (Appendix A "Data Type Mappings", Java's names).

    ``named`` collects the named (fixed) types already defined in this schema: Avro allows a
    name to be defined once, later uses refer to it by name (as Java's schema printer does).
    """
    if isinstance(t, BooleanType):
        return "boolean"
    if isinstance(t, IntegerType):
        return "int"
    if isinstance(t, LongType):
        return "long"
    if isinstance(t, FloatType):
        return "float"
    if isinstance(t, DoubleType):
        return "double"
    if isinstance(t, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(t, TimeType):
        return {"type": "long", "logicalType": "time-micros"}
    if isinstance(t, TimestampType | TimestamptzType):
        return {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": isinstance(t, TimestamptzType),
        }
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return {
            "type": "long",
            "logicalType": "timestamp-nanos",
            "adjust-to-utc": isinstance(t, TimestamptzNanoType),
        }
    if isinstance(t, StringType):
        return "string"
    if isinstance(t, BinaryType):
        return "bytes"
    if isinstance(t, UUIDType | FixedType | DecimalType):
        if isinstance(t, UUIDType):
            name, schema = (
                "uuid_fixed",
                {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"},
            )
        elif isinstance(t, FixedType):
            name = f"fixed_{t.length}"
            schema = {"type": "fixed", "name": name, "size": t.length}
        else:
            name = f"decimal_{t.precision}_{t.scale}"
            schema = {
                "type": "fixed",
                "name": name,
                "size": decimal_required_bytes(t.precision),
                "logicalType": "decimal",
                "precision": t.precision,
                "scale": t.scale,
            }
        if name in named:
            return name
        named.add(name)
        return schema
    raise Unsupported(f"partition values of type {t} cannot be stored in an Avro manifest")


def partition_record(partition_type: StructType) -> AvroSchema:
    """The ``r102`` partition record: one optional field per partition field, ids = partition ids."""
    named: set[str] = set()
    fields: list[AvroSchema] = []
    for f in partition_type.fields:
        name = avro_name(f.name)
        if isinstance(f.field_type, UnknownType):
            # Appendix A: unknown is Avro "null" (always null, so no union).
            fields.append({"name": name, "type": "null", "default": None, "field-id": f.field_id})
            continue
        avro_type = partition_value_avro_type(f.field_type, named)
        if f.required:
            fields.append(_required(f.field_id, avro_type, name))
        else:
            fields.append(_optional(f.field_id, avro_type, name))
    return {"type": "record", "name": f"r{PARTITION_ID}", "fields": fields}


# -- manifest_entry ------------------------------------------------------------------------------
def data_file_record(partition_type: StructType, format_version: int) -> AvroSchema:
    """The ``r2`` data_file record in Java's field order for ``format_version`` (notes §2)."""
    partition = _required(PARTITION_ID, partition_record(partition_type))
    fields: list[AvroSchema] = []
    if format_version >= MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        fields.append(_required(CONTENT_ID, "int"))
    fields += [
        _required(FILE_PATH_ID, "string"),
        _required(FILE_FORMAT_ID, "string"),
        partition,
        _required(RECORD_COUNT_ID, "long"),
        _required(FILE_SIZE_ID, "long"),
    ]
    if format_version < MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        fields.append(_required(BLOCK_SIZE_ID, "long"))
    fields += [
        _int_map(COLUMN_SIZES_MAP),
        _int_map(VALUE_COUNTS_MAP),
        _int_map(NULL_VALUE_COUNTS_MAP),
        _int_map(NAN_VALUE_COUNTS_MAP),
        _int_map(LOWER_BOUNDS_MAP),
        _int_map(UPPER_BOUNDS_MAP),
        _optional(KEY_METADATA_ID, "bytes"),
        _list(SPLIT_OFFSETS_ID, SPLIT_OFFSETS_ELEMENT_ID, "long"),
    ]
    if format_version >= MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        fields.append(_list(EQUALITY_IDS_ID, EQUALITY_IDS_ELEMENT_ID, "int"))
    fields.append(_optional(SORT_ORDER_ID_ID, "int"))
    if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        fields.append(_optional(FIRST_ROW_ID_ID, "long"))
    if format_version >= MIN_FORMAT_VERSION_ROW_LEVEL_DELETES:
        fields.append(_optional(REFERENCED_DATA_FILE_ID, "string"))
    if format_version >= MIN_FORMAT_VERSION_DELETION_VECTORS:
        fields += [_optional(CONTENT_OFFSET_ID, "long"), _optional(CONTENT_SIZE_ID, "long")]
    return {"type": "record", "name": f"r{DATA_FILE_ID}", "fields": fields}


def manifest_entry_schema(partition_type: StructType, format_version: int) -> AvroSchema:
    """The ``manifest_entry`` Avro schema for a partition type and format version (1-3)."""
    _check_avro_version(format_version)
    data_file = _required(DATA_FILE_ID, data_file_record(partition_type, format_version))
    if format_version < MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        fields = [_required(STATUS_ID, "int"), _required(SNAPSHOT_ID_ID, "long"), data_file]
    else:
        # v2+: snapshot id and both sequence numbers are optional so they can be inherited.
        fields = [
            _required(STATUS_ID, "int"),
            _optional(SNAPSHOT_ID_ID, "long"),
            _optional(SEQUENCE_NUMBER_ID, "long"),
            _optional(FILE_SEQUENCE_NUMBER_ID, "long"),
            data_file,
        ]
    return {"type": "record", "name": MANIFEST_ENTRY_RECORD, "fields": fields}


# -- manifest_file -------------------------------------------------------------------------------
def _field_summary_list() -> AvroSchema:
    element = {
        "type": "record",
        "name": f"r{PARTITIONS_ELEMENT_ID}",
        "fields": [
            _required(CONTAINS_NULL_ID, "boolean"),
            _optional(CONTAINS_NAN_ID, "boolean"),
            _optional(LOWER_BOUND_ID, "bytes"),
            _optional(UPPER_BOUND_ID, "bytes"),
        ],
    }
    return _optional(PARTITIONS_ID, {"type": "array", "items": element, "element-id": PARTITIONS_ELEMENT_ID})


def manifest_file_schema(format_version: int) -> AvroSchema:
    """The ``manifest_file`` Avro schema of a manifest list, in Java's order (notes §1)."""
    _check_avro_version(format_version)
    head = [
        _required(MANIFEST_PATH_ID, "string"),
        _required(MANIFEST_LENGTH_ID, "long"),
        _required(PARTITION_SPEC_ID_ID, "int"),
    ]
    if format_version < MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        # v1: counts are optional and the summaries sit between file and row counts.
        fields = [
            *head,
            _required(ADDED_SNAPSHOT_ID_ID, "long"),
            _optional(ADDED_FILES_COUNT_ID, "int"),
            _optional(EXISTING_FILES_COUNT_ID, "int"),
            _optional(DELETED_FILES_COUNT_ID, "int"),
            _field_summary_list(),
            _optional(ADDED_ROWS_COUNT_ID, "long"),
            _optional(EXISTING_ROWS_COUNT_ID, "long"),
            _optional(DELETED_ROWS_COUNT_ID, "long"),
            _optional(MANIFEST_KEY_METADATA_ID, "bytes"),
        ]
    else:
        fields = [
            *head,
            _required(MANIFEST_CONTENT_ID, "int"),
            _required(MANIFEST_SEQUENCE_NUMBER_ID, "long"),
            _required(MIN_SEQUENCE_NUMBER_ID, "long"),
            _required(ADDED_SNAPSHOT_ID_ID, "long"),
            _required(ADDED_FILES_COUNT_ID, "int"),
            _required(EXISTING_FILES_COUNT_ID, "int"),
            _required(DELETED_FILES_COUNT_ID, "int"),
            _required(ADDED_ROWS_COUNT_ID, "long"),
            _required(EXISTING_ROWS_COUNT_ID, "long"),
            _required(DELETED_ROWS_COUNT_ID, "long"),
            _field_summary_list(),
            _optional(MANIFEST_KEY_METADATA_ID, "bytes"),
        ]
        if format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
            fields.append(_optional(MANIFEST_FIRST_ROW_ID_ID, "long"))
    return {"type": "record", "name": MANIFEST_FILE_RECORD, "fields": fields}


# Avro manifests exist for v1-v3; V4 uses Parquet root/leaf manifests (seed 004).
AVRO_FORMAT_VERSIONS = (1, 2, 3)


def _check_avro_version(format_version: int) -> None:
    if format_version not in AVRO_FORMAT_VERSIONS:
        raise Unsupported(
            f"Avro manifests exist for format versions 1-3, not {format_version} "
            "(v4 tables use Parquet root and leaf manifests)"
        )


# -- parsed-schema caches (fastavro parsing is far from free; notes perf §1b #3662) -----------------
@functools.lru_cache(maxsize=256)
def parsed_manifest_entry_schema(partition_type: StructType, format_version: int) -> Any:
    """``fastavro.parse_schema`` of :func:`manifest_entry_schema`, cached per (type, version)."""
    return fastavro.parse_schema(manifest_entry_schema(partition_type, format_version))


@functools.lru_cache(maxsize=8)
def parsed_manifest_file_schema(format_version: int) -> Any:
    """``fastavro.parse_schema`` of :func:`manifest_file_schema`, cached per version."""
    return fastavro.parse_schema(manifest_file_schema(format_version))


__all__ = [
    "AVRO_FORMAT_VERSIONS",
    "MANIFEST_ENTRY_RECORD",
    "MANIFEST_FILE_RECORD",
    "V1_DEFAULT_BLOCK_SIZE",
    "avro_name",
    "data_file_record",
    "decimal_required_bytes",
    "manifest_entry_schema",
    "manifest_file_schema",
    "parsed_manifest_entry_schema",
    "parsed_manifest_file_schema",
    "partition_record",
    "partition_value_avro_type",
]
