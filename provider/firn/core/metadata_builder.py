"""Applying updates to table metadata, sharing structure with the base (DESIGN: O(change)).

``apply_updates(base, updates)`` returns new metadata; unchanged tuples and mappings are the
base's own objects, so a commit on a table with a long history copies pointers, not history.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from firn.core.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemovePartitionSpecs,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableUpdate,
    UpgradeFormatVersion,
)
from firn.errors import ValidationError
from firn.spec.snapshots import MAIN_BRANCH, MetadataLogEntry, RefType, SnapshotLogEntry, SnapshotRef
from firn.spec.table_metadata import TableMetadata, now_ms
from firn.spec.versions import (
    MIN_FORMAT_VERSION_ROW_LINEAGE,
    MIN_FORMAT_VERSION_SEQUENCE_NUMBERS,
    check_format_version,
)

# TableMetadata's lazily built lookups and the fields they derive from.
_LOOKUPS = (
    ("snapshots", "_snapshots_by_id"),
    ("schemas", "_schemas_by_id"),
    ("partition_specs", "_specs_by_id"),
    ("properties", "table_properties"),
)


def evolve(md: TableMetadata, **changes: Any) -> TableMetadata:
    """``dataclasses.replace`` that hands the base's built lookups to the new metadata when
    their source fields are unchanged, and extends the snapshot index when one snapshot was
    appended, so a commit does not rebuild an index over the whole history."""
    new = replace(md, **changes)
    cached = md.__dict__
    for source, lookup in _LOOKUPS:
        if lookup in cached and source not in changes:
            new.__dict__[lookup] = cached[lookup]
    by_id = cached.get("_snapshots_by_id")
    snapshots = changes.get("snapshots")
    if (
        by_id is not None
        and snapshots is not None
        and len(snapshots) == len(md.snapshots) + 1
        and snapshots[-1].snapshot_id not in by_id
        and snapshots[:-1] == md.snapshots
    ):
        new.__dict__["_snapshots_by_id"] = {**by_id, snapshots[-1].snapshot_id: snapshots[-1]}
    return new


class _Builder:
    """Accumulates field changes and applies them once with ``dataclasses.replace``."""

    def __init__(self, base: TableMetadata) -> None:
        self.base = base
        self.md = base
        self.last_added_schema_id: int | None = None
        self.last_added_spec_id: int | None = None
        self.last_added_order_id: int | None = None
        self.added_snapshot_ids: set[int] = set()

    def set(self, **changes: Any) -> None:
        self.md = evolve(self.md, **changes)

    def apply(self, u: TableUpdate) -> None:
        _apply(u, self)


# -- one function per update type (STYLE 12: singledispatch over the update classes) ----------
@functools.singledispatch
def _apply(u: TableUpdate, b: _Builder) -> None:
    raise ValidationError(f"unknown metadata update {u!r}")


@_apply.register
def _assign_uuid(u: AssignUUID, b: _Builder) -> None:
    b.set(table_uuid=u.uuid)


@_apply.register
def _upgrade_format_version(u: UpgradeFormatVersion, b: _Builder) -> None:
    md = b.md
    v = check_format_version(u.format_version)
    if v < md.format_version:
        raise ValidationError(f"cannot downgrade format version from {md.format_version} to {v}")
    changes: dict[str, Any] = {"format_version": v}
    if v >= MIN_FORMAT_VERSION_ROW_LINEAGE and md.next_row_id is None:
        # Spec "Row Lineage for Upgraded Tables": next-row-id starts at 0.
        changes["next_row_id"] = 0
    b.set(**changes)


@_apply.register
def _add_schema(u: AddSchema, b: _Builder) -> None:
    md = b.md
    existing = next((s for s in md.schemas if s == u.schema), None)
    if existing is not None:
        b.last_added_schema_id = existing.schema_id
        return
    new_id = max((s.schema_id for s in md.schemas), default=-1) + 1
    schema = u.schema.with_schema_id(new_id)
    schema.validate(md.format_version)
    b.last_added_schema_id = new_id
    b.set(schemas=(*md.schemas, schema), last_column_id=max(md.last_column_id, u.last_column_id))


@_apply.register
def _set_current_schema(u: SetCurrentSchema, b: _Builder) -> None:
    sid = b.last_added_schema_id if u.schema_id == LAST_ADDED else u.schema_id
    if sid is None:
        raise ValidationError("cannot set the last added schema: no schema was added")
    b.md.schema_by_id(sid)
    b.set(current_schema_id=sid)


@_apply.register
def _add_partition_spec(u: AddPartitionSpec, b: _Builder) -> None:
    md = b.md
    existing = next((s for s in md.partition_specs if s.compatible_with(u.spec)), None)
    if existing is not None:
        b.last_added_spec_id = existing.spec_id
        return
    new_id = max((s.spec_id for s in md.partition_specs), default=-1) + 1
    spec = replace(u.spec, spec_id=new_id)
    b.last_added_spec_id = new_id
    b.set(
        partition_specs=(*md.partition_specs, spec),
        last_partition_id=max(md.last_partition_id, spec.last_assigned_field_id),
    )


@_apply.register
def _set_default_spec(u: SetDefaultSpec, b: _Builder) -> None:
    spec_id = b.last_added_spec_id if u.spec_id == LAST_ADDED else u.spec_id
    if spec_id is None:
        raise ValidationError("cannot set the last added spec: no spec was added")
    b.md.spec_by_id(spec_id)
    b.set(default_spec_id=spec_id)


@_apply.register
def _add_sort_order(u: AddSortOrder, b: _Builder) -> None:
    md = b.md
    existing = next((o for o in md.sort_orders if o.same_order(u.sort_order)), None)
    if existing is not None:
        b.last_added_order_id = existing.order_id
        return
    new_id = max((o.order_id for o in md.sort_orders), default=0) + 1
    order = replace(u.sort_order, order_id=new_id)
    b.last_added_order_id = new_id
    b.set(sort_orders=(*md.sort_orders, order))


@_apply.register
def _set_default_sort_order(u: SetDefaultSortOrder, b: _Builder) -> None:
    oid = b.last_added_order_id if u.sort_order_id == LAST_ADDED else u.sort_order_id
    if oid is None:
        raise ValidationError("cannot set the last added sort order: none was added")
    if oid not in {o.order_id for o in b.md.sort_orders}:
        raise ValidationError(f"no sort order with id {oid}")
    b.set(default_sort_order_id=oid)


@_apply.register
def _add_snapshot(u: AddSnapshot, b: _Builder) -> None:
    md = b.md
    s = u.snapshot
    if md.snapshot_by_id(s.snapshot_id) is not None:
        raise ValidationError(f"snapshot id {s.snapshot_id} already exists")
    changes: dict[str, Any] = {"snapshots": (*md.snapshots, s)}
    if md.format_version >= MIN_FORMAT_VERSION_SEQUENCE_NUMBERS:
        if s.sequence_number <= md.last_sequence_number and s.parent_snapshot_id is not None:
            raise ValidationError(
                f"snapshot sequence number {s.sequence_number} is not newer than the table's "
                f"last sequence number {md.last_sequence_number}"
            )
        changes["last_sequence_number"] = max(md.last_sequence_number, s.sequence_number)
    if md.format_version >= MIN_FORMAT_VERSION_ROW_LINEAGE:
        if s.first_row_id is None or s.added_rows is None:
            raise ValidationError("v3+ snapshots need first-row-id and added-rows")
        if s.first_row_id < (md.next_row_id or 0):
            raise ValidationError(
                f"snapshot first-row-id {s.first_row_id} is behind the table's next-row-id {md.next_row_id}"
            )
        changes["next_row_id"] = s.first_row_id + s.added_rows
    b.added_snapshot_ids.add(s.snapshot_id)
    b.set(**changes)


@_apply.register
def _set_snapshot_ref(u: SetSnapshotRef, b: _Builder) -> None:
    md = b.md
    snap = md.snapshot_by_id(u.snapshot_id)
    if snap is None:
        raise ValidationError(f"cannot point ref {u.ref_name!r} at unknown snapshot {u.snapshot_id}")
    if u.ref_name == MAIN_BRANCH and u.ref_type is not RefType.BRANCH:
        raise ValidationError("main must be a branch")
    ref = SnapshotRef(
        u.snapshot_id, u.ref_type, u.min_snapshots_to_keep, u.max_snapshot_age_ms, u.max_ref_age_ms
    )
    if md.refs.get(u.ref_name) == ref:
        return
    refs = dict(md.refs)
    refs[u.ref_name] = ref
    changes: dict[str, Any] = {"refs": MappingProxyType(refs)}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = u.snapshot_id
        ts = snap.timestamp_ms if u.snapshot_id in b.added_snapshot_ids else now_ms()
        changes["snapshot_log"] = (*md.snapshot_log, SnapshotLogEntry(u.snapshot_id, ts))
    b.set(**changes)


@_apply.register
def _remove_snapshot_ref(u: RemoveSnapshotRef, b: _Builder) -> None:
    md = b.md
    if u.ref_name not in md.refs:
        return
    refs = {k: v for k, v in md.refs.items() if k != u.ref_name}
    changes: dict[str, Any] = {"refs": MappingProxyType(refs)}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = None
    b.set(**changes)


@_apply.register
def _remove_snapshots(u: RemoveSnapshots, b: _Builder) -> None:
    md = b.md
    remove = set(u.snapshot_ids)
    if not remove:
        return
    for name, r in md.refs.items():
        if r.snapshot_id in remove:
            raise ValidationError(f"cannot expire snapshot {r.snapshot_id}: ref {name!r} points at it")
    snapshots = tuple(s for s in md.snapshots if s.snapshot_id not in remove)
    # Spec "snapshot-log": remove entries before (and including) the last expired snapshot.
    log = list(md.snapshot_log)
    last_removed = max((i for i, e in enumerate(log) if e.snapshot_id in remove), default=-1)
    log = [e for e in log[last_removed + 1 :] if e.snapshot_id not in remove]
    stats = tuple(s for s in md.statistics if s.snapshot_id not in remove)
    pstats = tuple(s for s in md.partition_statistics if s.snapshot_id not in remove)
    b.set(snapshots=snapshots, snapshot_log=tuple(log), statistics=stats, partition_statistics=pstats)


@_apply.register
def _set_location(u: SetLocation, b: _Builder) -> None:
    b.set(location=u.location.rstrip("/"))


@_apply.register
def _set_properties(u: SetProperties, b: _Builder) -> None:
    props = dict(b.md.properties)
    props.update({str(k): str(v) for k, v in u.updates.items()})
    b.set(properties=MappingProxyType(props))


@_apply.register
def _remove_properties(u: RemoveProperties, b: _Builder) -> None:
    removals = set(u.removals)
    b.set(properties=MappingProxyType({k: v for k, v in b.md.properties.items() if k not in removals}))


@_apply.register
def _set_statistics(u: SetStatistics, b: _Builder) -> None:
    stats = tuple(s for s in b.md.statistics if s.snapshot_id != u.statistics.snapshot_id)
    b.set(statistics=(*stats, u.statistics))


@_apply.register
def _remove_statistics(u: RemoveStatistics, b: _Builder) -> None:
    b.set(statistics=tuple(s for s in b.md.statistics if s.snapshot_id != u.snapshot_id))


@_apply.register
def _remove_partition_specs(u: RemovePartitionSpecs, b: _Builder) -> None:
    md = b.md
    if md.default_spec_id in u.spec_ids:
        raise ValidationError("cannot remove the default partition spec")
    b.set(partition_specs=tuple(s for s in md.partition_specs if s.spec_id not in u.spec_ids))


@_apply.register
def _remove_schemas(u: RemoveSchemas, b: _Builder) -> None:
    md = b.md
    if md.current_schema_id in u.schema_ids:
        raise ValidationError("cannot remove the current schema")
    b.set(schemas=tuple(s for s in md.schemas if s.schema_id not in u.schema_ids))


def apply_updates(
    base: TableMetadata, updates: Iterable[TableUpdate], *, timestamp_ms: int | None = None
) -> TableMetadata:
    """Apply updates in order; returns new metadata (``base`` itself if nothing changed)."""
    b = _Builder(base)
    for u in updates:
        b.apply(u)
    if b.md is base:
        return base
    return evolve(b.md, last_updated_ms=max(timestamp_ms or now_ms(), base.last_updated_ms))


def with_metadata_log(
    metadata: TableMetadata, previous_location: str | None, previous: TableMetadata | None
) -> TableMetadata:
    """Append the previous metadata file to the metadata log, trimmed to
    ``write.metadata.previous-versions-max`` entries (spec "metadata-log")."""
    if previous_location is None or previous is None:
        return metadata
    keep = metadata.table_properties.metadata_previous_versions_max
    log = (*metadata.metadata_log, MetadataLogEntry(previous_location, previous.last_updated_ms))
    if len(log) > keep:
        log = log[len(log) - keep :]
    return evolve(metadata, metadata_log=log)


__all__ = ["apply_updates", "evolve", "with_metadata_log"]
