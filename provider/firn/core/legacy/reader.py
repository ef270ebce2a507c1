"""Reading the v1-v3 metadata tree: a snapshot's manifest list and its manifests."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from firn.core.planning import MAX_PLANNING_THREADS, partition_type_or_none
from firn.errors import InvalidMetadata, Unsupported
from firn.io.base import FileIO
from firn.manifests.manifest import read_manifest
from firn.manifests.manifest_list import read_manifest_list
from firn.spec.content import ManifestEntry, ManifestFile
from firn.spec.schema import Schema
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata


def snapshot_manifests(io: FileIO, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The manifest-list entries of a v1-v3 snapshot (cached by location)."""
    if snapshot is None:
        return []
    if snapshot.manifest_list is None:
        if snapshot.manifests is not None:
            raise Unsupported(
                f"snapshot {snapshot.snapshot_id} lists manifests inline (pre-manifest-list v1); "
                "rewrite it with Iceberg Java first"
            )
        raise InvalidMetadata(f"snapshot {snapshot.snapshot_id} has no manifest list")
    return read_manifest_list(io.new_input(snapshot.manifest_list))


def read_manifests_parallel(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    metadata: TableMetadata,
    schema: Schema,
    *,
    include_deleted: bool = False,
) -> list[list[ManifestEntry]]:
    """Read manifests with threads (I/O and decompression release the GIL)."""

    def one(m: ManifestFile) -> list[ManifestEntry]:
        spec = metadata.specs.get(m.partition_spec_id)
        ptype = partition_type_or_none(spec, schema) if spec is not None else None
        return read_manifest(
            io.new_input(m.manifest_path), m, partition_type=ptype, include_deleted=include_deleted
        )

    if len(manifests) <= 1:
        return [one(m) for m in manifests]
    with ThreadPoolExecutor(max_workers=min(MAX_PLANNING_THREADS, len(manifests))) as pool:
        return list(pool.map(one, manifests))


__all__ = ["read_manifests_parallel", "snapshot_manifests"]
