"""``rewrite_manifests`` (Iceberg's procedure; notes §11 "RewriteManifests").

v1-v3: as Iceberg Java's ``RewriteManifestsSparkAction``, every data manifest and then every
delete manifest of ``spec_id`` (default: the current spec) is rewritten, the entries clustered
by partition (``sort_by``: partition fields to cluster by, default all in spec order) into
``ceil(total size / commit.manifest.target-size-bytes)`` manifests. Nothing happens when one
manifest would be rewritten into one. Planning reads only the manifest list; each work unit
reads its manifests and writes the new ones. Outputs carry only EXISTING entries with the
sequence numbers and snapshot ids they had, so no data changes (and v3 row ids stay).
``use_caching`` is accepted for compatibility with the Spark procedure and has no effect.

V4: leaves are merged as :mod:`firn.maintenance.rewrite_manifests_v4` describes.

The commit is a ``replace`` snapshot that swaps each group's inputs for its outputs, applied
per group: a group whose input manifests a concurrent commit replaced (it removed files from
them, or merged them) is dropped and its outputs deleted; the others commit.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from firn.core.commit import CommitContext
from firn.core.legacy.reader import snapshot_manifests
from firn.core.metadata_io import metadata_dir
from firn.core.planning import partition_type_or_none
from firn.core.producer import SnapshotProducer
from firn.core.transaction import Transaction
from firn.core.tree_types import PendingFiles, TreeResult
from firn.core.updates import TableRequirement, TableUpdate
from firn.core.v4.entries import entries_table, root_for_next_snapshot
from firn.core.v4.reader import live_mdvs, manifest_refs, root_table
from firn.core.v4.writer import root_location
from firn.errors import FirnError, ValidationError
from firn.io.base import FileIO
from firn.io.deletion import delete_quietly
from firn.maintenance.base import (
    MaintainedTable,
    MaintenanceOperation,
    MaintenancePlan,
    MaintenanceResult,
    PlanWork,
    Skipped,
    plan_identity,
)
from firn.maintenance.options import RewriteManifestsOptions
from firn.maintenance.rewrite_manifests_v4 import (
    LeafGroup,
    entry_from_json,
    plan_leaf_groups,
    rewrite_leaf_group,
)
from firn.maintenance.rewrite_planning import pack
from firn.maintenance.runner import UnitContext, UnitFunction, UnitResult, WorkUnit, execute_unit, make_unit
from firn.maintenance.serde import from_jsonable, to_jsonable
from firn.maintenance.tree_writer import MaintenanceTreeWriter
from firn.manifests.manifest import read_manifest, write_manifest
from firn.manifests.manifest_list import write_manifest_list
from firn.spec import summary as S
from firn.spec import values
from firn.spec.content import EntryStatus, FileContent, ManifestContent, ManifestEntry, ManifestFile
from firn.spec.content_json import manifest_file_from_json, manifest_file_to_json
from firn.spec.deletion_scope import DeletionScope
from firn.spec.snapshots import Operation, Snapshot
from firn.spec.table_metadata import TableMetadata

LEGACY_KIND = "rewrite-manifests"
V4_KIND = "rewrite-leaves"
# A unit reads at most this many target sizes of input manifests (bounding its memory); a
# spec's manifests beyond that are split into several units, clustered by partition summary.
MAX_UNIT_INPUT_TARGETS = 8


@dataclass(frozen=True, kw_only=True)
class ManifestGroup:
    """Manifests of one content type and spec rewritten by one unit into ``output_manifests``."""

    group_id: int
    content: str  # "data" or "deletes"
    spec_id: int
    manifests: tuple[dict[str, Any], ...]
    input_bytes: int
    entries: int
    output_manifests: int


@dataclass(frozen=True, kw_only=True)
class RewriteManifestsResult(MaintenanceResult):
    """Java's procedure output, plus entries rewritten and manifest DVs folded (V4)."""

    OPERATION: ClassVar[str] = "rewrite_manifests"
    LINEAGE: ClassVar[Mapping[str, str]] = {
        "files_rewritten": "rewritten_manifests_count",
        "files_added": "added_manifests_count",
    }

    rewritten_manifests_count: int = 0
    added_manifests_count: int = 0
    entries_rewritten: int = 0
    manifest_dvs_folded: int = 0


@dataclass(frozen=True, kw_only=True)
class RewriteManifestsPlan(MaintenancePlan[RewriteManifestsResult]):
    """Manifest groups (v1-v3) or leaf groups (V4) to rewrite."""

    OPERATION: ClassVar[str] = "rewrite_manifests"

    options: RewriteManifestsOptions
    branch: str
    spec_id: int | None
    sort_by: tuple[str, ...] = ()
    groups: tuple[ManifestGroup, ...] = ()
    leaf_groups: tuple[LeafGroup, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not self.groups and not self.leaf_groups

    def work(self) -> PlanWork:
        """The manifests (or V4 leaf manifests) it reads and rewrites."""
        leaves = sum(i.file_size_in_bytes for g in self.leaf_groups for i in g.inputs)
        return PlanWork(metadata_bytes=sum(g.input_bytes for g in self.groups) + leaves)

    def describe(self) -> str:
        lines = [
            f"  {g.content} manifests of spec {g.spec_id}: {len(g.manifests)} manifests, {g.input_bytes:,} bytes, "
            f"{g.entries:,} entries -> {g.output_manifests}"
            for g in self.groups
        ]
        lines += [
            f"  leaves: {len(g.data_leaves)} data + {len(g.delete_leaves)} delete, ~{g.entries:,} entries, "
            f"{sum(1 for x in g.inputs if x.mdv is not None)} manifest DV(s) to fold"
            for g in self.leaf_groups
        ]
        lines += [f"  skipped {s.item}: {s.reason}" for s in self.skipped]
        return "\n".join(lines)

    def validate(self, table: MaintainedTable) -> None:
        super().validate(table)
        if self.spec_id is not None and self.spec_id not in table.metadata.specs:
            raise ValidationError(f"{self.table} has no partition spec {self.spec_id}")

    def units(self, table: MaintainedTable, io_ref: str) -> list[WorkUnit]:
        def unit(kind: str, payload: dict[str, Any]) -> WorkUnit:
            return make_unit(
                kind, io=table.io, metadata_location=self.metadata_location, payload=payload, io_ref=io_ref
            )

        out = [
            unit(LEGACY_KIND, {"group": to_jsonable(g), "sort-by": list(self.sort_by)}) for g in self.groups
        ]
        out += [unit(V4_KIND, {"group": to_jsonable(g)}) for g in self.leaf_groups]
        return out

    def unit_function(self) -> UnitFunction:
        return rewrite_manifest_group

    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> RewriteManifestsResult:
        errors = [r for r in results if r.get("error")]
        if errors:
            written = [p for r in results for p in r.get("written", [])]
            delete_quietly(
                table.io, DeletionScope.for_written(table.name, table.metadata), written, "manifest"
            )
            raise FirnError(f"rewrite_manifests on {self.table}: {errors[0]['error']}; nothing was committed")
        action = _RewriteManifestsAction(self, results)
        committed = Transaction(table).add_action(action).commit()
        dropped = [p for gid in action.dropped for p in action.written.get(gid, [])]
        delete_quietly(table.io, DeletionScope.for_written(table.name, table.metadata), dropped, "manifest")
        snap = committed.snapshot
        groups = action.applied if snap is not None else []
        mdvs = sum(1 for g in self.leaf_groups if g.group_id in groups for x in g.inputs if x.mdv is not None)
        return RewriteManifestsResult(
            table=self.table,
            snapshot_id=snap.snapshot_id if snap is not None else None,
            rewritten_manifests_count=sum(action.inputs[g] for g in groups),
            added_manifests_count=sum(action.outputs[g] for g in groups),
            entries_rewritten=sum(action.entries[g] for g in groups),
            manifest_dvs_folded=mdvs,
            skipped=(
                *self.skipped,
                *(
                    Skipped(item=f"group {gid}", reason=reason)
                    for gid, reason in sorted(action.dropped.items())
                ),
            ),
        )


# -- the commit ------------------------------------------------------------------------------------------
class _RewriteManifestsAction(SnapshotProducer):
    """A ``replace`` snapshot swapping manifests (v1-v3) or leaves (V4), group by group."""

    operation = Operation.REPLACE

    def __init__(self, plan: RewriteManifestsPlan, results: Sequence[UnitResult]) -> None:
        written = [p for r in results for p in r.get("written", [])]
        super().__init__(
            branch=plan.branch,
            snapshot_properties={S.MAINTENANCE_OPERATION: plan.OPERATION},
            written_files=written,
        )
        self.plan = plan
        by_id = {int(r["group-id"]): r for r in results}
        self.results = by_id
        self.written = {gid: list(r.get("written", [])) for gid, r in by_id.items()}
        self.inputs = {g.group_id: len(g.manifests) for g in plan.groups}
        self.inputs.update({g.group_id: len(g.inputs) for g in plan.leaf_groups})
        self.outputs = {gid: len(r.get("manifests", []) or r.get("leaves", [])) for gid, r in by_id.items()}
        self.entries = {gid: int(r.get("entries", 0)) for gid, r in by_id.items()}
        self.applied: list[int] = []
        self.dropped: dict[int, str] = {}

    def make_tree_writer(self, base: TableMetadata) -> _Tree:
        return _Tree(self)

    def changes(self, base: TableMetadata, parent: Snapshot | None, ctx: CommitContext) -> PendingFiles:
        return PendingFiles()

    def apply(
        self, base: TableMetadata, ctx: CommitContext
    ) -> tuple[list[TableUpdate], list[TableRequirement]]:
        parent = base.snapshot_for_ref(self.branch)
        self._decide(ctx.io, base, parent)
        if not self.applied:
            return [], []
        return super().apply(base, ctx)

    def _decide(self, io: FileIO, base: TableMetadata, parent: Snapshot | None) -> None:
        """Which groups still apply to ``parent`` (their inputs unchanged)."""
        self.applied, self.dropped = [], {}
        if parent is None:
            self.dropped = {gid: "the table has no snapshot any more" for gid in self.results}
            return
        if not base.uses_root_manifest:
            present = {m.manifest_path for m in snapshot_manifests(io, parent)}
            for g in self.plan.groups:
                missing = [m["manifest-path"] for m in g.manifests if m["manifest-path"] not in present]
                self._mark(
                    g.group_id, f"manifest {missing[0]} was replaced concurrently" if missing else None
                )
            for lg in self.plan.leaf_groups:
                self._mark(lg.group_id, "the table's metadata tree changed kind")
            return
        root = root_for_next_snapshot(root_table(io, base, parent))
        refs = {r.location for r in manifest_refs(root)}
        mdvs = live_mdvs(io, root)
        for lg in self.plan.leaf_groups:
            reason = None
            for x in lg.inputs:
                now = len(mdvs[x.location][1]) if x.location in mdvs else 0
                if x.location not in refs:
                    reason = f"leaf {x.location} was replaced concurrently"
                elif now != x.mdv_cardinality:
                    reason = f"entries of leaf {x.location} were removed concurrently"
                if reason:
                    break
            self._mark(lg.group_id, reason)
        for g in self.plan.groups:
            self._mark(g.group_id, "the table was upgraded to V4 concurrently")

    def _mark(self, gid: int, reason: str | None) -> None:
        if gid not in self.results:
            return
        if reason is None:
            self.applied.append(gid)
        else:
            self.dropped[gid] = reason


class _Tree(MaintenanceTreeWriter["_RewriteManifestsAction"]):
    def write_tree(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        ctx: CommitContext,
        snapshot_id: int,
        sequence_number: int,
    ) -> tuple[TreeResult, set[str]]:
        a = self.action
        applied = set(a.applied)
        outputs = {p for gid in applied for p in a.written.get(gid, [])}
        if parent is not None and base.uses_root_manifest:
            location, extra = self._root(base, parent, ctx, snapshot_id, sequence_number, applied)
            added_rows = 0 if base.tracks_row_lineage else None
            return TreeResult(root_manifest=location, added_rows=added_rows, summary_extra=extra), {
                location,
                *outputs,
            }
        replaced = {m["manifest-path"] for g in a.plan.groups if g.group_id in applied for m in g.manifests}
        new = [
            manifest_file_from_json(m).evolve(added_snapshot_id=snapshot_id)
            for gid in applied
            for m in a.results[gid].get("manifests", [])
        ]
        kept = [m for m in snapshot_manifests(ctx.io, parent) if m.manifest_path not in replaced]
        data = [m for m in (*new, *kept) if m.content is ManifestContent.DATA]
        deletes = [m for m in (*new, *kept) if m.content is ManifestContent.DELETES]
        list_location = f"{metadata_dir(base)}/snap-{snapshot_id}-{ctx.attempt}-{uuid.uuid4()}.avro"
        ctx.written.append(list_location)
        result = write_manifest_list(
            ctx.io.new_output(list_location),
            [*data, *deletes],
            format_version=base.format_version,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            first_row_id=base.next_row_id,
        )
        added_rows = None
        if result.next_row_id is not None and base.next_row_id is not None:
            added_rows = result.next_row_id - base.next_row_id
        extra = {
            S.MANIFESTS_CREATED: str(len(new)),
            S.MANIFESTS_KEPT: str(len(kept)),
            S.MANIFESTS_REPLACED: str(len(replaced)),
            S.ENTRIES_PROCESSED: str(sum(a.entries[g] for g in applied)),
        }
        in_use = {list_location, *outputs}
        return TreeResult(manifest_list=list_location, added_rows=added_rows, summary_extra=extra), in_use

    def _root(
        self,
        base: TableMetadata,
        parent: Snapshot,
        ctx: CommitContext,
        snapshot_id: int,
        sequence_number: int,
        applied: set[int],
    ) -> tuple[str, dict[str, str]]:
        from firn.manifests.v4_io import write_v4_manifest

        a = self.action
        root = root_for_next_snapshot(root_table(ctx.io, base, parent))
        groups = [g for g in a.plan.leaf_groups if g.group_id in applied]
        replaced = {x.location for g in groups for x in g.inputs}
        locations = root.column("location").to_pylist()
        refs = root.column("referenced_file").to_pylist()
        ct = root.column("content_type").to_numpy()
        drop = np.array(
            [
                (loc in replaced and c in (FileContent.DATA_MANIFEST, FileContent.DELETE_MANIFEST))
                or (c == FileContent.MANIFEST_DV and ref in replaced)
                for loc, ref, c in zip(locations, refs, ct)
            ],
            dtype=bool,
        )
        rest = root.filter(pa.array(~drop))
        # A delete leaf affiliated with a replaced data leaf that this rewrite did not take
        # (added concurrently) stays readable as an unaffiliated leaf.
        is_dm = pc.equal(rest.column("content_type"), int(FileContent.DELETE_MANIFEST)).to_pylist()
        fixed = [
            None if d and r in replaced else r
            for r, d in zip(rest.column("referenced_file").to_pylist(), is_dm)
        ]
        rest = rest.set_column(
            rest.schema.get_field_index("referenced_file"), "referenced_file", pa.array(fixed, pa.string())
        )
        new = [
            entry_from_json(e, snapshot_id=snapshot_id, sequence_number=sequence_number)
            for g in groups
            for e in a.results[g.group_id].get("leaves", [])
        ]
        out = pa.concat_tables([rest, entries_table(base, new)]) if new else rest
        location = root_location(base, snapshot_id, ctx.attempt)
        ctx.written.append(location)
        size = write_v4_manifest(ctx.io, location, out, "root")
        extra = {
            S.MANIFESTS_CREATED: str(len(new)),
            S.MANIFESTS_REPLACED: str(len(replaced)),
            S.ENTRIES_PROCESSED: str(sum(a.entries[g.group_id] for g in groups)),
            S.ROOT_MANIFEST_SIZE: str(size),
            S.ROOT_ENTRIES: str(out.num_rows),
        }
        return location, extra


# -- the work units -------------------------------------------------------------------------------------
def _cluster_key(md: TableMetadata, spec_id: int, sort_by: Sequence[str]) -> Callable[[ManifestEntry], Any]:
    """The partition values an entry is clustered by (nulls first), as a sortable tuple."""
    spec = md.spec_by_id(spec_id)
    ptype = spec.partition_type(md.schema())
    names = [f.name for f in spec.fields]
    chosen = [names.index(n) for n in sort_by] if sort_by else list(range(len(names)))
    keys = [values.sort_key(ptype.fields[i].field_type) for i in chosen]

    def key(e: ManifestEntry) -> Any:
        p = e.data_file.partition
        return tuple((p[i] is not None, k(p[i]) if p[i] is not None else 0) for i, k in zip(chosen, keys))

    return key


def cluster_cuts(keys: Sequence[Any], count: int) -> list[int]:
    """Where to cut a sorted list into about ``count`` runs without splitting equal keys
    (Spark's range partitioning, which Java's action uses, keeps a key in one partition):
    each ideal cut moves to the nearest key boundary. Returns the start of every run."""
    n = len(keys)
    boundaries = [i for i in range(1, n) if keys[i] != keys[i - 1]]
    cuts = {0}
    if boundaries:
        for k in range(1, count):
            ideal = k * n / count
            cuts.add(min(boundaries, key=lambda b: (abs(b - ideal), b)))
    return sorted(cuts)


def rewrite_legacy_group(
    io: FileIO, md: TableMetadata, group: ManifestGroup, sort_by: Sequence[str]
) -> UnitResult:
    """Read a group's manifests, cluster their live entries and write ``output_manifests``
    manifests of EXISTING entries."""
    spec = md.spec_by_id(group.spec_id)
    schema = md.schema()
    ptype = partition_type_or_none(spec, schema)
    content = ManifestContent.DELETES if group.content == "deletes" else ManifestContent.DATA
    entries: list[ManifestEntry] = []
    for m in (manifest_file_from_json(x) for x in group.manifests):
        for e in read_manifest(io.new_input(m.manifest_path), m, partition_type=ptype):
            entries.append(e if e.status is EntryStatus.EXISTING else e.evolve(status=EntryStatus.EXISTING))
    cluster = _cluster_key(md, group.spec_id, sort_by)
    entries.sort(key=lambda e: (cluster(e), e.data_file.file_path))
    starts = cluster_cuts([cluster(e) for e in entries], group.output_manifests) if entries else []
    written: list[str] = []
    out: list[ManifestFile] = []
    try:
        for start, stop in itertools.pairwise([*starts, len(entries)]):
            location = f"{metadata_dir(md)}/{uuid.uuid4()}-m{len(out)}.avro"
            written.append(location)
            out.append(
                write_manifest(
                    io.new_output(location),
                    entries[start:stop],
                    spec=spec,
                    schema=schema,
                    format_version=md.format_version,
                    content=content,
                )
            )
    except BaseException:
        delete_quietly(io, DeletionScope.for_written(md.location, md), written, "manifest")
        raise
    return {
        "group-id": group.group_id,
        "manifests": [manifest_file_to_json(m) for m in out],
        "written": written,
        "entries": len(entries),
    }


def _unit(ctx: UnitContext, payload: dict[str, Any], kind: str) -> UnitResult:
    if kind == V4_KIND:
        group = from_jsonable(LeafGroup, payload["group"], where="leaf group")
        leaves, written = rewrite_leaf_group(ctx.io, ctx.metadata, group)
        return {"group-id": group.group_id, "leaves": leaves, "written": written, "entries": _entries(leaves)}
    mgroup = from_jsonable(ManifestGroup, payload["group"], where="manifest group")
    return rewrite_legacy_group(ctx.io, ctx.metadata, mgroup, payload.get("sort-by", []))


def _entries(leaves: Sequence[dict[str, Any]]) -> int:
    return sum(
        int(x["data-file"]["record-count"]) for x in leaves if x["data-file"]["content"] == "data-manifest"
    )


def rewrite_manifest_group(unit: WorkUnit) -> UnitResult:
    """The work unit of ``rewrite_manifests`` (v1-v3 manifests or V4 leaves, by ``kind``)."""
    kind = str(unit.get("kind"))

    def handler(ctx: UnitContext, payload: dict[str, Any]) -> UnitResult:
        try:
            return _unit(ctx, payload, kind)
        except (FirnError, OSError) as e:
            return {
                "group-id": payload["group"]["group_id"],
                "error": f"{type(e).__name__}: {e}",
                "written": [],
            }

    return execute_unit(handler, unit)


# -- planning ----------------------------------------------------------------------------------------------
def _plan_legacy(
    io: FileIO, md: TableMetadata, snapshot: Snapshot, spec_id: int, target: int
) -> tuple[list[ManifestGroup], list[Skipped]]:
    groups: list[ManifestGroup] = []
    skipped: list[Skipped] = []
    manifests = snapshot_manifests(io, snapshot)
    for content, name in ((ManifestContent.DATA, "data"), (ManifestContent.DELETES, "deletes")):
        matching = [m for m in manifests if m.content is content and m.partition_spec_id == spec_id]
        total = sum(m.manifest_length for m in matching)
        wanted = max(1, math.ceil(total / target))
        if not matching or (len(matching) == 1 and wanted == 1):
            if matching:
                skipped.append(
                    Skipped(
                        item=f"{name} manifests of spec {spec_id}",
                        reason="one manifest, within the target size",
                    )
                )
            continue
        # Manifests ordered by their first partition summary keep units roughly clustered.
        ordered = sorted(
            matching, key=lambda m: (m.partitions[0].lower_bound or b"") if m.partitions else b""
        )
        for bin_ in pack(ordered, lambda m: m.manifest_length, MAX_UNIT_INPUT_TARGETS * target):
            size = sum(m.manifest_length for m in bin_)
            groups.append(
                ManifestGroup(
                    group_id=len(groups),
                    content=name,
                    spec_id=spec_id,
                    manifests=tuple(manifest_file_to_json(m) for m in bin_),
                    input_bytes=size,
                    entries=sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in bin_),
                    output_manifests=max(1, math.ceil(size / target)),
                )
            )
    return groups, skipped


class RewriteManifests(
    MaintenanceOperation[RewriteManifestsPlan, RewriteManifestsResult, RewriteManifestsOptions]
):
    """``table.maintenance.rewrite_manifests(spec_id=None, sort_by=(), use_caching=False)``."""

    OPERATION = "rewrite_manifests"

    def plan(self) -> RewriteManifestsPlan:
        md = self.table.metadata
        branch = self.options.branch
        spec_id = md.default_spec_id if self.options.spec_id is None else self.options.spec_id
        if spec_id not in md.specs:
            raise ValidationError(
                f"rewrite_manifests: {self.table.name} has no partition spec {spec_id}; specs: {sorted(md.specs)}"
            )
        sort_by = tuple(self.options.sort_by)
        names = [f.name for f in md.spec_by_id(spec_id).fields]
        unknown = [n for n in sort_by if n not in names]
        if unknown:
            raise ValidationError(
                f"rewrite_manifests: sort_by {unknown} are not partition fields of spec {spec_id}: {names}"
            )
        snap = md.snapshot_for_ref(branch)
        options = dataclasses.replace(self.options, spec_id=spec_id)
        groups: list[ManifestGroup] = []
        leaf_groups: list[LeafGroup] = []
        skipped: list[Skipped] = []
        if snap is not None and snap.root_manifest is None and not md.uses_root_manifest:
            groups, skipped = _plan_legacy(
                self.table.io, md, snap, spec_id, md.table_properties.manifest_target_size_bytes
            )
        elif snap is not None:
            root = root_table(self.table.io, md, snap)
            leaf_groups = plan_leaf_groups(self.table.io, md, root, spec_id)
        return RewriteManifestsPlan(
            **plan_identity(self.table, snap.snapshot_id if snap else None, options),
            branch=branch,
            spec_id=spec_id,
            sort_by=sort_by,
            groups=tuple(groups),
            leaf_groups=tuple(leaf_groups),
            skipped=tuple(skipped),
        )


__all__ = [
    "ManifestGroup",
    "RewriteManifests",
    "RewriteManifestsPlan",
    "RewriteManifestsResult",
    "rewrite_manifest_group",
]
