"""The incremental snapshot/snapshot-log JSON must equal a from-scratch encoding, whatever
sequence of commits and expirations produced the metadata."""

from __future__ import annotations

import dataclasses
import json
import uuid

from firn.spec.metadata_json import metadata_from_json, metadata_to_json
from firn.spec.schema import Schema
from firn.spec.snapshots import Operation, Snapshot, SnapshotLogEntry, Summary
from firn.spec.types import LONG, NestedField
from firn.table.create import new_table_metadata


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


def test_incremental_encoding_matches_full_encoding_across_appends_and_expiry() -> None:
    md = new_table_metadata(Schema(NestedField(1, "id", LONG)), location="s3://b/t", format_version=2)
    snaps: list[Snapshot] = []
    for i in range(1, 40):
        snaps.append(_snap(i, i - 1 if i > 1 else None))
        md = dataclasses.replace(
            md,
            snapshots=tuple(snaps),
            snapshot_log=tuple(SnapshotLogEntry(s.snapshot_id, s.timestamp_ms) for s in snaps),
            current_snapshot_id=i,
        )
        text = metadata_to_json(md)
        parsed = json.loads(text)
        assert [s["snapshot-id"] for s in parsed["snapshots"]] == list(range(1, i + 1))
        assert [e["snapshot-id"] for e in parsed["snapshot-log"]] == list(range(1, i + 1))
    # Expire a snapshot in the middle: same first/last ids and a different length must not hit
    # a stale cached text.
    kept = tuple(s for s in snaps if s.snapshot_id != 20)
    md = dataclasses.replace(md, snapshots=kept, snapshot_log=md.snapshot_log[20:], table_uuid=uuid.uuid4())
    back = metadata_from_json(metadata_to_json(md))
    assert [s.snapshot_id for s in back.snapshots] == [s.snapshot_id for s in kept]
    assert back.snapshot_log == md.snapshot_log
