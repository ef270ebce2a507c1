"""``rewrite_manifests`` on V4 tables: merging leaves (seed 004 "Manifest Compaction").

Candidates are the leaves of the chosen spec that are small (fewer live entries than 0.75x
``commit.leaf.target-entries``), carry a manifest DV, or are legacy Avro manifests of an
upgraded table (rewriting them gives the root per-column stats to prune with). Data leaves
are bin-packed by live entries into groups of at most the target; each group is one work unit
that reads its leaves with their manifest DVs applied (the DVs are *folded*: the removed
entries are simply absent from the output and the manifest DV entry disappears), clusters the
entries by partition and writes new leaves of EXISTING entries only — seed 004: "any
compactions performed must not create files which cause a net change to table state".

Data/delete affinity is kept: the delete leaves affiliated with a rewritten data leaf are
rewritten in the same unit, each DV into a delete leaf affiliated with the new data leaf that
holds its data file (entries without one go to an unaffiliated leaf). Unaffiliated delete
leaves that are small or carry a manifest DV are merged with each other.

Planning reads the root only; units read just the leaves they rewrite. At commit a group
applies only if its input leaves are all still in the root with the manifest DVs it planned
with (a concurrent removal extends a manifest DV: rewriting from the old state would bring
the removed entries back); other groups are dropped and reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from firn.core.v4.entries import set_version_info, write_leaf
from firn.core.v4.reader import ManifestRef, decode_mdv, live_np, manifest_refs, mdv_keep_mask, read_leaf
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.maintenance.rewrite_planning import pack
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec.content import EntryStatus, FileContent, FileFormat, ManifestEntry, ManifestStats
from firn.spec.content_json import data_file_from_json, data_file_to_json
from firn.spec.deletion_scope import DeletionScope
from firn.spec.table_metadata import TableMetadata

SMALL_LEAF_RATIO = 0.75


@dataclass(frozen=True, kw_only=True)
class LeafInput:
    """A leaf to rewrite, as its root entry described it when planned (with its manifest DV:
    inline bytes as hex, or a Puffin blob's location, offset and size)."""

    location: str
    content: str  # "data" or "delete"
    file_format: str
    spec_id: int
    snapshot_id: int | None
    sequence_number: int | None
    first_row_id: int | None
    record_count: int
    file_size_in_bytes: int
    referenced_file: str | None = None
    mdv_cardinality: int = 0
    mdv: dict[str, Any] | None = None

    def ref(self) -> ManifestRef:
        return ManifestRef(
            self.location,
            FileContent.DATA_MANIFEST if self.content == "data" else FileContent.DELETE_MANIFEST,
            FileFormat.parse(self.file_format),
            self.spec_id,
            self.snapshot_id,
            self.sequence_number,
            self.first_row_id,
            self.record_count,
            self.file_size_in_bytes,
            self.referenced_file,
            -1,
        )

    def bitmap(self, io: FileIO) -> BitMap | None:
        if self.mdv is None:
            return None
        dv = dict(self.mdv)
        if dv.get("inline_content") is not None:
            dv["inline_content"] = bytes.fromhex(dv["inline_content"])
        return decode_mdv(
            io,
            {"location": dv.pop("location", None), "deletion_vector": dv, "referenced_file": self.location},
        )

    @property
    def live_estimate(self) -> int:
        return max(0, self.record_count - self.mdv_cardinality)


@dataclass(frozen=True, kw_only=True)
class LeafGroup:
    """Leaves rewritten together by one unit: data leaves and the delete leaves that follow
    them (affiliated), or delete leaves only."""

    group_id: int
    data_leaves: tuple[LeafInput, ...] = ()
    delete_leaves: tuple[LeafInput, ...] = ()
    entries: int = 0

    @property
    def inputs(self) -> tuple[LeafInput, ...]:
        return (*self.data_leaves, *self.delete_leaves)


def _inputs(io: FileIO, root: pa.Table, spec_id: int | None) -> list[LeafInput]:
    refs = manifest_refs(root)
    ct = root.column("content_type").to_numpy()
    idx = np.nonzero(live_np(root) & (ct == int(FileContent.MANIFEST_DV)))[0]
    mdv_rows = root.select(["location", "deletion_vector", "referenced_file"]).take(pa.array(idx)).to_pylist()
    mdvs = {r["referenced_file"]: r for r in mdv_rows}
    out = []
    for r in refs:
        if spec_id is not None and r.spec_id != spec_id:
            continue
        row = mdvs.get(r.location)
        mdv = None
        card = 0
        if row is not None:
            dv = dict(row["deletion_vector"] or {})
            if dv.get("inline_content") is not None:
                dv["inline_content"] = bytes(dv["inline_content"]).hex()
            mdv = {**dv, "location": row["location"]}
            card = len(decode_mdv(io, row))
        out.append(
            LeafInput(
                location=r.location,
                content="data" if r.content is FileContent.DATA_MANIFEST else "delete",
                file_format=r.file_format.value,
                spec_id=r.spec_id,
                snapshot_id=r.snapshot_id,
                sequence_number=r.sequence_number,
                first_row_id=r.first_row_id,
                record_count=r.record_count,
                file_size_in_bytes=r.file_size_in_bytes,
                referenced_file=r.referenced_file,
                mdv_cardinality=card,
                mdv=mdv,
            )
        )
    return out


def plan_leaf_groups(io: FileIO, md: TableMetadata, root: pa.Table, spec_id: int | None) -> list[LeafGroup]:
    """The groups of a V4 manifest rewrite (see the module docstring)."""
    target = md.table_properties.leaf_target_entries
    small = int(target * SMALL_LEAF_RATIO)
    leaves = _inputs(io, root, spec_id)

    def candidate(leaf: LeafInput) -> bool:
        return leaf.live_estimate < small or leaf.mdv is not None or leaf.file_format == "avro"

    data = [x for x in leaves if x.content == "data" and candidate(x)]
    affiliated: dict[str, list[LeafInput]] = {}
    for x in leaves:
        if x.content == "delete" and x.referenced_file is not None:
            affiliated.setdefault(x.referenced_file, []).append(x)
    groups: list[LeafGroup] = []
    # A lone candidate is only worth rewriting when it has a manifest DV to fold or is Avro.
    if len(data) == 1 and data[0].mdv is None and data[0].file_format != "avro":
        data = []
    taken: set[str] = set()
    for bin_ in pack(data, lambda x: x.live_estimate, target):
        deletes = tuple(d for x in bin_ for d in affiliated.get(x.location, []))
        taken |= {d.location for d in deletes}
        groups.append(
            LeafGroup(
                group_id=len(groups),
                data_leaves=tuple(bin_),
                delete_leaves=deletes,
                entries=sum(x.live_estimate for x in bin_),
            )
        )
    rest = [
        x
        for x in leaves
        if x.content == "delete"
        and x.location not in taken
        and candidate(x)
        and (x.referenced_file is None or x.mdv is not None or x.file_format == "avro")
    ]
    unaffiliated = [x for x in rest if x.referenced_file is None]
    if len(unaffiliated) == 1 and unaffiliated[0].mdv is None and unaffiliated[0].file_format != "avro":
        unaffiliated = []
    for bin_ in pack(unaffiliated, lambda x: x.live_estimate, target):
        groups.append(
            LeafGroup(
                group_id=len(groups), delete_leaves=tuple(bin_), entries=sum(x.live_estimate for x in bin_)
            )
        )
    # An affiliated delete leaf with a manifest DV, whose data leaf stays, is rewritten alone.
    for x in rest:
        if x.referenced_file is not None:
            groups.append(LeafGroup(group_id=len(groups), delete_leaves=(x,), entries=x.live_estimate))
    return groups


# -- the work unit ---------------------------------------------------------------------------------------
def _live_rows(io: FileIO, md: TableMetadata, leaf: LeafInput) -> pa.Table:
    table = read_leaf(io, md, leaf.ref())
    keep = mdv_keep_mask(leaf.bitmap(io), table.num_rows) & live_np(table)
    rows = table.filter(pa.array(keep))
    return set_version_info(rows, np.ones(rows.num_rows, dtype=bool), status=EntryStatus.EXISTING)


def _clustered(rows: pa.Table) -> pa.Table:
    """Entries ordered by spec, partition values and location, so each output leaf covers a
    narrow range of partitions (Java clusters manifests by partition the same way)."""
    if rows.num_rows <= 1:
        return rows
    keys: dict[str, Any] = {"spec": rows.column("partition_spec_id")}
    if "partition" in rows.column_names and pa.types.is_struct(rows.schema.field("partition").type):
        part = rows.column("partition")
        for i, f in enumerate(rows.schema.field("partition").type):
            if pa.types.is_struct(f.type) or pa.types.is_list(f.type):
                continue
            keys[f"p{i}"] = pc.struct_field(part, [i])
    keys["location"] = rows.column("location")
    order = pc.sort_indices(pa.table(keys), sort_keys=[(k, "ascending", "at_start") for k in keys])
    return rows.take(order)


def entry_to_json(e: ManifestEntry) -> dict[str, Any]:
    s = e.manifest_stats
    return {
        "data-file": data_file_to_json(e.data_file),
        "manifest-stats": None
        if s is None
        else {
            "added-files-count": s.added_files_count,
            "existing-files-count": s.existing_files_count,
            "deleted-files-count": s.deleted_files_count,
            "added-rows-count": s.added_rows_count,
            "existing-rows-count": s.existing_rows_count,
            "deleted-rows-count": s.deleted_rows_count,
            "min-sequence-number": s.min_sequence_number,
        },
    }


def entry_from_json(data: dict[str, Any], *, snapshot_id: int, sequence_number: int) -> ManifestEntry:
    """A new leaf's root entry: EXISTING, stamped with the rewrite's snapshot (as a flush does)."""
    s = data.get("manifest-stats")
    stats = (
        ManifestStats(
            s["added-files-count"],
            s["existing-files-count"],
            s["deleted-files-count"],
            s["added-rows-count"],
            s["existing-rows-count"],
            s["deleted-rows-count"],
            s["min-sequence-number"],
        )
        if s is not None
        else None
    )
    f = data_file_from_json(data["data-file"])
    return ManifestEntry(
        EntryStatus.EXISTING, snapshot_id, sequence_number, sequence_number, f, manifest_stats=stats
    )


def rewrite_leaf_group(
    io: FileIO, md: TableMetadata, group: LeafGroup
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rewrite one group; returns the new leaves' root entries (JSON) and the files written."""
    target = md.table_properties.leaf_target_entries
    layout = V4Layout.for_metadata(md)
    ids = specs_partition_ids(md)
    written: list[str] = []
    out: list[dict[str, Any]] = []

    def emit(rows: pa.Table, kind: Any, referenced: str | None) -> str:
        location, row = write_leaf(
            io,
            md,
            rows,
            kind,
            status=EntryStatus.EXISTING,
            snapshot_id=0,
            sequence_number=0,
            written=written,
            referenced_file=referenced,
        )
        (entry,) = layout.to_entries(row, ids, with_stats=True)
        out.append(entry_to_json(entry))
        return location

    try:
        leaf_of: dict[str, str] = {}
        if group.data_leaves:
            rows = _clustered(pa.concat_tables([_live_rows(io, md, x) for x in group.data_leaves]))
            for start in range(0, rows.num_rows, target):
                chunk = rows.slice(start, target)
                location = emit(chunk, "data", None)
                for path in chunk.column("location").to_pylist():
                    leaf_of[path] = location
        if group.delete_leaves:
            rows = pa.concat_tables([_live_rows(io, md, x) for x in group.delete_leaves])
            if group.data_leaves:
                by_leaf: dict[str | None, list[int]] = {}
                refs = rows.column("referenced_file").to_pylist()
                cts = rows.column("content_type").to_pylist()
                for i, (ref, ct) in enumerate(zip(refs, cts)):
                    key = leaf_of.get(ref) if ct == int(FileContent.POSITION_DELETES) and ref else None
                    by_leaf.setdefault(key, []).append(i)
                parts = [(key, rows.take(pa.array(idx))) for key, idx in by_leaf.items()]
            else:
                parts = [
                    (group.delete_leaves[0].referenced_file if len(group.delete_leaves) == 1 else None, rows)
                ]
            for key, part in parts:
                part = _clustered(part)
                for start in range(0, part.num_rows, target):
                    emit(part.slice(start, target), "delete", key)
    except BaseException:
        delete_quietly(io, DeletionScope.for_written(md.location, md), written, "leaf manifest")
        raise
    return out, written


__all__ = [
    "LeafGroup",
    "LeafInput",
    "entry_from_json",
    "entry_to_json",
    "plan_leaf_groups",
    "rewrite_leaf_group",
]
