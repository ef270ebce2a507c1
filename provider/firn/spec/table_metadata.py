"""Table metadata (spec: "Table Metadata", Appendix C).

:class:`TableMetadata` is immutable. New versions are made with ``dataclasses.replace`` by the
metadata builder (``firn.core.metadata_builder``), which shares every unchanged tuple with the
base, so a commit costs O(change) in memory rather than a deep copy of the history.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from firn.errors import NotFound
from firn.spec.partitioning import PartitionSpec
from firn.spec.properties import TableProperties
from firn.spec.schema import Schema
from firn.spec.snapshots import (
    MAIN_BRANCH,
    EncryptionKey,
    MetadataLogEntry,
    PartitionStatisticsFile,
    RefType,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    StatisticsFile,
)
from firn.spec.sorting import SortOrder
from firn.spec.versions import (
    MIN_FORMAT_VERSION_ROOT_MANIFEST,
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
)

EMPTY_PROPERTIES: Mapping[str, str] = MappingProxyType({})


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, eq=False)
class TableMetadata:
    format_version: int
    table_uuid: uuid.UUID
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    properties: Mapping[str, str] = field(default_factory=lambda: EMPTY_PROPERTIES)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=lambda: MappingProxyType({}))
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None
    encryption_keys: tuple[EncryptionKey, ...] = ()

    # -- lookups (built once per metadata object) --------------------------------------------
    @cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def _specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    @cached_property
    def table_properties(self) -> TableProperties:
        """Typed view of :attr:`properties`, parsed once."""
        return TableProperties.parse(self.properties)

    @property
    def uses_root_manifest(self) -> bool:
        return self.format_version >= MIN_FORMAT_VERSION_ROOT_MANIFEST

    @property
    def tracks_row_lineage(self) -> bool:
        return self.format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE

    def schema(self) -> Schema:
        """The current schema."""
        return self._schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema:
        try:
            return self._schemas_by_id[schema_id]
        except KeyError:
            raise NotFound(f"table has no schema with id {schema_id}") from None

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self._specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec:
        try:
            return self._specs_by_id[spec_id]
        except KeyError:
            raise NotFound(f"table has no partition spec with id {spec_id}") from None

    @property
    def specs(self) -> Mapping[int, PartitionSpec]:
        return self._specs_by_id

    def sort_order(self) -> SortOrder:
        for so in self.sort_orders:
            if so.order_id == self.default_sort_order_id:
                return so
        raise NotFound(f"table has no sort order with id {self.default_sort_order_id}")

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._snapshots_by_id.get(snapshot_id)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        s = self._snapshots_by_id.get(snapshot_id)
        if s is None:
            raise NotFound(f"table has no snapshot with id {snapshot_id}")
        return s

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self._snapshots_by_id.get(self.current_snapshot_id)

    def ref(self, name: str) -> SnapshotRef | None:
        r = self.refs.get(name)
        if r is None and name == MAIN_BRANCH and self.current_snapshot_id is not None:
            return SnapshotRef(self.current_snapshot_id, RefType.BRANCH)
        return r

    def snapshot_for_ref(self, name: str) -> Snapshot | None:
        r = self.ref(name)
        return self._snapshots_by_id.get(r.snapshot_id) if r is not None else None

    def ancestors_of(self, snapshot_id: int | None) -> list[Snapshot]:
        """The snapshot and its ancestors, newest first (stops at an expired parent)."""
        out: list[Snapshot] = []
        cur = self._snapshots_by_id.get(snapshot_id) if snapshot_id is not None else None
        while cur is not None:
            out.append(cur)
            cur = (
                self._snapshots_by_id.get(cur.parent_snapshot_id)
                if cur.parent_snapshot_id is not None
                else None
            )
        return out

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current at ``timestamp_ms`` per the snapshot log (spec Appendix F)."""
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
            else:
                break
        return self._snapshots_by_id.get(found) if found is not None else None

    def next_sequence_number(self) -> int:
        return (
            self.last_sequence_number + 1 if self.format_version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS else 0
        )


__all__ = ["TableMetadata", "now_ms"]
