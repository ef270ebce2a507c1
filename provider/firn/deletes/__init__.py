"""Deletion vectors (roaring position bitmaps), Puffin files and delete readers.

Modules: ``roaring`` (portable roaring bytes), ``bitmap`` (:class:`PositionBitmap`), ``dv``
(``deletion-vector-v1`` blobs and Puffin files of DVs), ``puffin`` (the Puffin container).
"""

from firn.deletes.bitmap import PositionBitmap, PositionsLike, merge_deletes
from firn.deletes.dv import (
    CARDINALITY_PROPERTY,
    REFERENCED_DATA_FILE_PROPERTY,
    ROW_POSITION_FIELD_ID,
    DVFile,
    WrittenDV,
    deserialize_dv,
    parse_dv_puffin,
    read_dv,
    read_dv_puffin,
    serialize_dv,
    serialize_dv_puffin,
    write_dv_puffin,
)
from firn.deletes.puffin import (
    DELETION_VECTOR_V1,
    BlobMetadata,
    PuffinBlob,
    PuffinCodec,
    PuffinFooter,
    extract_blob,
    parse_puffin_footer,
    read_puffin_blob,
    read_puffin_footer,
    serialize_puffin,
    write_puffin,
)
from firn.deletes.roaring import MAX_POSITION

__all__ = [
    "CARDINALITY_PROPERTY",
    "DELETION_VECTOR_V1",
    "MAX_POSITION",
    "REFERENCED_DATA_FILE_PROPERTY",
    "ROW_POSITION_FIELD_ID",
    "BlobMetadata",
    "DVFile",
    "PositionBitmap",
    "PositionsLike",
    "PuffinBlob",
    "PuffinCodec",
    "PuffinFooter",
    "WrittenDV",
    "deserialize_dv",
    "extract_blob",
    "merge_deletes",
    "parse_dv_puffin",
    "parse_puffin_footer",
    "read_dv",
    "read_dv_puffin",
    "read_puffin_blob",
    "read_puffin_footer",
    "serialize_dv",
    "serialize_dv_puffin",
    "serialize_puffin",
    "write_dv_puffin",
    "write_puffin",
]
