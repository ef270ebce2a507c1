"""The incremental snapshot/snapshot-log JSON must equal a from-scratch encoding, whatever
sequence of commits and expirations produced the metadata."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator

from firn.core.create import new_table_metadata
from firn.spec.metadata_json import metadata_from_json, metadata_to_json
from firn.spec.schema import Schema
from firn.spec.snapshots import Operation, Snapshot, SnapshotLogEntry, Summary
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import LONG, NestedField


def _snap(i: int, parent: int | None) -> Snapshot:
    return Snapshot(
        i,
        parent,
        i,
        1_700_000_000_000 + i,
        Summary(Operation.APPEND),
        manifest_list=f"s3://b/ml-{i}.avro",
        schema_id=0,
    )


def _growing(md: TableMetadata, n: int) -> Iterator[tuple[int, TableMetadata]]:
    """``md`` with snapshots 1..i and their log, for i = 1..n (one commit each)."""
    snaps: list[Snapshot] = []
    for i in range(1, n + 1):
        snaps.append(_snap(i, i - 1 if i > 1 else None))
        md = dataclasses.replace(
            md,
            snapshots=tuple(snaps),
            snapshot_log=tuple(SnapshotLogEntry(s.snapshot_id, s.timestamp_ms) for s in snaps),
            current_snapshot_id=i,
        )
        yield i, md


def test_incremental_encoding_matches_full_encoding_across_appends_and_expiry() -> None:
    base = new_table_metadata(Schema(NestedField(1, "id", LONG)), location="s3://b/t", format_version=2)
    for i, md in _growing(base, 39):
        text = metadata_to_json(md)
        parsed = json.loads(text)
        assert [s["snapshot-id"] for s in parsed["snapshots"]] == list(range(1, i + 1))
        assert [e["snapshot-id"] for e in parsed["snapshot-log"]] == list(range(1, i + 1))
    # Expire a snapshot in the middle: same first/last ids and a different length must not hit
    # a stale cached text.
    kept = tuple(s for s in md.snapshots if s.snapshot_id != 20)
    md = dataclasses.replace(md, snapshots=kept, snapshot_log=md.snapshot_log[20:], table_uuid=uuid.uuid4())
    back = metadata_from_json(metadata_to_json(md))
    assert [s.snapshot_id for s in back.snapshots] == [s.snapshot_id for s in kept]
    assert back.snapshot_log == md.snapshot_log


def _members(data: bytes) -> list[bytes]:
    """The gzip members ``data`` is made of, as their compressed bytes."""
    import zlib

    out = []
    while data:
        d = zlib.decompressobj(wbits=31)
        d.decompress(data)
        assert d.eof, "truncated gzip member"
        out.append(data[: len(data) - len(d.unused_data)])
        data = d.unused_data
    return out


def test_gzip_encoding_is_the_json_text_in_reused_members() -> None:
    import gzip

    from firn.spec.metadata_json import SNAPSHOT_BLOCK, metadata_to_gzip

    base = new_table_metadata(Schema(NestedField(1, "id", LONG)), location="s3://b/t", format_version=2)
    assert gzip.decompress(metadata_to_gzip(base)).decode() == metadata_to_json(base)  # no snapshots
    previous: list[bytes] = []
    for i, md in _growing(base, 3 * SNAPSHOT_BLOCK + 2):
        data = metadata_to_gzip(md)
        assert gzip.decompress(data).decode() == metadata_to_json(md), f"at {i} snapshots"
        full_blocks = i // SNAPSHOT_BLOCK
        members = _members(data)
        # head, one member per full block of snapshots, then the rest (partial block and tail)
        assert len(members) == (full_blocks + 2 if full_blocks else 1)
        if full_blocks and i % SNAPSHOT_BLOCK:
            # A full block's member is the same bytes commit after commit (compressed once).
            assert members[1:-1] == previous[1:-1]
        previous = members
    back = metadata_from_json(metadata_to_gzip(md))
    assert [s.snapshot_id for s in back.snapshots] == list(range(1, 3 * SNAPSHOT_BLOCK + 3))


def test_gzip_blocks_shifted_by_expiry_are_not_reused() -> None:
    """Expiring the oldest snapshots shifts every block: same block index, same last snapshot
    object in some block — the cached member must not be served for different contents."""
    import gzip

    from firn.spec.metadata_json import SNAPSHOT_BLOCK, metadata_to_gzip

    md = new_table_metadata(Schema(NestedField(1, "id", LONG)), location="s3://b/t", format_version=2)
    snaps = tuple(_snap(i, i - 1 if i > 1 else None) for i in range(1, 2 * SNAPSHOT_BLOCK + 1))
    md = dataclasses.replace(md, snapshots=snaps, current_snapshot_id=snaps[-1].snapshot_id)
    gzip.decompress(metadata_to_gzip(md))  # primes the member cache
    for cut in (1, SNAPSHOT_BLOCK - 1, SNAPSHOT_BLOCK):
        shorter = dataclasses.replace(md, snapshots=snaps[cut:])
        assert gzip.decompress(metadata_to_gzip(shorter)).decode() == metadata_to_json(shorter)
    # A different table whose blocks end on the very same snapshot objects, in other company.
    mixed = dataclasses.replace(md, snapshots=(_snap(999, None), *snaps[1:]))
    assert gzip.decompress(metadata_to_gzip(mixed)).decode() == metadata_to_json(mixed)
