"""Builders of data files, delete files and DVs with realistic metrics, for the manifest tests."""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any

from firn.spec.content import DataFile, EntryStatus, FileContent, FileFormat, ManifestEntry

COLUMNS = tuple(range(1, 11))


def partition(i: int) -> tuple[Any, ...]:
    """A partition tuple for the ``spec`` fixture (day, amount, uid, score, bucket, region, code, hour)."""
    return (
        19_000 + i,
        Decimal(f"{i}.25"),
        uuid.UUID(int=i + 1),
        i * 0.5,
        i % 4,
        f"region-{i % 3}",
        bytes([i % 256, 1, 2]),
        456_000 + i,
    )


def data_file(i: int, part: tuple[Any, ...] | None = None, *, stats: bool = True, **changes: Any) -> DataFile:
    """A Parquet data file with ~10 columns of metrics (like real manifests)."""
    df = DataFile(
        content=FileContent.DATA,
        file_path=f"s3://bucket/warehouse/db/tbl/data/{i:05d}-0-{uuid.UUID(int=i)}.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition(i) if part is None else part,
        record_count=1000 + i,
        file_size_in_bytes=100_000 + i,
        column_sizes={c: 1000 * c + i for c in COLUMNS} if stats else None,
        value_counts={c: 1000 + i for c in COLUMNS} if stats else None,
        null_value_counts={c: c % 2 for c in COLUMNS} if stats else None,
        nan_value_counts={5: 0, 8: 1} if stats else None,
        lower_bounds={c: struct.pack("<q", c * 10 + i) for c in COLUMNS} if stats else None,
        upper_bounds={c: struct.pack("<q", c * 1000 + i) for c in COLUMNS} if stats else None,
        split_offsets=(4, 1_000_000 + i),
        sort_order_id=0,
    )
    return df.evolve(**changes) if changes else df


def position_delete_file(i: int, part: tuple[Any, ...] | None = None, **changes: Any) -> DataFile:
    df = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path=f"s3://bucket/warehouse/db/tbl/data/{i:05d}-deletes.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition(i) if part is None else part,
        record_count=7,
        file_size_in_bytes=1234,
        value_counts={2147483546: 7, 2147483545: 7},
        lower_bounds={2147483546: b"s3://a"},
        upper_bounds={2147483546: b"s3://z"},
        referenced_data_file=data_file(i).file_path,
    )
    return df.evolve(**changes) if changes else df


def equality_delete_file(i: int, part: tuple[Any, ...] | None = None, **changes: Any) -> DataFile:
    df = DataFile(
        content=FileContent.EQUALITY_DELETES,
        file_path=f"s3://bucket/warehouse/db/tbl/data/{i:05d}-eq-deletes.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition(i) if part is None else part,
        record_count=3,
        file_size_in_bytes=999,
        equality_ids=(1, 6),
        sort_order_id=0,
    )
    return df.evolve(**changes) if changes else df


def dv(i: int, part: tuple[Any, ...] | None = None, **changes: Any) -> DataFile:
    """A v3 deletion vector entry (notes §2 "v3 DV entry in a delete manifest")."""
    df = DataFile(
        content=FileContent.POSITION_DELETES,
        file_path="s3://bucket/warehouse/db/tbl/data/dvs-00001.puffin",
        file_format=FileFormat.PUFFIN,
        partition=partition(i) if part is None else part,
        record_count=5,
        file_size_in_bytes=4096,
        referenced_data_file=data_file(i).file_path,
        content_offset=4 + 100 * i,
        content_size_in_bytes=60 + i,
    )
    return df.evolve(**changes) if changes else df


def added(df: DataFile, snapshot_id: int | None = None, sequence_number: int | None = None) -> ManifestEntry:
    return ManifestEntry(EntryStatus.ADDED, snapshot_id, sequence_number, None, df)


def existing(
    df: DataFile, snapshot_id: int, sequence_number: int, file_sequence_number: int | None = None
) -> ManifestEntry:
    fseq = sequence_number if file_sequence_number is None else file_sequence_number
    return ManifestEntry(EntryStatus.EXISTING, snapshot_id, sequence_number, fseq, df)


def deleted(
    df: DataFile, snapshot_id: int, sequence_number: int, file_sequence_number: int | None = None
) -> ManifestEntry:
    fseq = sequence_number if file_sequence_number is None else file_sequence_number
    return ManifestEntry(EntryStatus.DELETED, snapshot_id, sequence_number, fseq, df)
