"""Planning shared by the rewrite operations (data files, position deletes / DVs): file sizes,
bin-packing, file groups as JSON, job order and commit batches, the live delete files of a
snapshot.

Sizes and packing follow Iceberg Java's ``SizeBasedFileRewritePlanner`` and
``BinPacking.ListPacker`` (notes §11 "RewriteDataFiles"): a group never exceeds
``max-file-group-size-bytes``; files are packed in planning order with a lookback of one bin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from firn.core.handle import TableHandle
from firn.core.legacy.reader import read_manifests_parallel, snapshot_manifests
from firn.core.planning import FileScanTask, make_file_scan_task
from firn.core.scan import DataScan
from firn.core.v4.reader import live_mdvs, manifest_refs, mdv_keep_mask, read_leaves, root_table
from firn.deletes.writers import referenced_data_file_of
from firn.errors import ValidationError
from firn.expressions import BooleanExpression
from firn.io.base import FileIO
from firn.maintenance.options import FileRewriteOptions
from firn.manifests.v4_layout import V4Layout, specs_partition_ids
from firn.spec.content import DataFile, FileContent, ManifestContent, ManifestEntry
from firn.spec.content_json import data_file_from_json, data_file_to_json
from firn.spec.snapshots import Snapshot
from firn.spec.table_metadata import TableMetadata

T = TypeVar("T")

# Iceberg Java's defaults (RewriteDataFiles / SizeBasedFileRewritePlanner).
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.80


@dataclass(frozen=True, kw_only=True)
class FileSizes:
    """Target, minimum and maximum file sizes of a rewrite (bytes)."""

    target: int
    min: int
    max: int

    @classmethod
    def resolve(cls, options: FileRewriteOptions, default_target: int, operation: str) -> FileSizes:
        """Sizes from the options (Java's defaults: min 0.75x and max 1.8x the target),
        validated as Java's ``SizeBasedFileRewritePlanner.validateOptions`` does."""
        target = default_target if options.target_file_size_bytes is None else options.target_file_size_bytes
        low = options.min_file_size_bytes
        low = int(target * MIN_FILE_SIZE_RATIO) if low is None else low
        high = options.max_file_size_bytes
        high = int(target * MAX_FILE_SIZE_RATIO) if high is None else high
        if target <= 0:
            raise ValidationError(f"{operation}: target-file-size-bytes must be positive, got {target}")
        if low < 0:
            raise ValidationError(f"{operation}: min-file-size-bytes must be >= 0, got {low}")
        if not low <= target <= high:
            raise ValidationError(
                f"{operation}: need min-file-size-bytes ({low}) <= target-file-size-bytes ({target}) "
                f"<= max-file-size-bytes ({high})"
            )
        return cls(target=target, min=low, max=high)

    def wrongly_sized(self, size: int) -> bool:
        return size < self.min or size > self.max

    @property
    def write_max(self) -> int:
        """Java's ``writeMaxFileSize``: halfway between the target and the maximum."""
        return int(self.target + (self.max - self.target) * 0.5)

    def expected_output_files(self, input_bytes: int) -> int:
        """How many files a group of ``input_bytes`` is written as (Java's
        ``expectedOutputFiles``): the remainder becomes its own file when it is big enough,
        else it is spread over the others if that keeps them within 10% of the target."""
        if input_bytes < self.target:
            return 1
        with_remainder = math.ceil(input_bytes / self.target)
        without = input_bytes // self.target
        if input_bytes % self.target > self.min:
            return with_remainder
        if input_bytes / without < min(1.1 * self.target, self.write_max):
            return without
        return with_remainder


def pack(items: Iterable[T], weight: Callable[[T], int], max_weight: int) -> list[list[T]]:
    """Bin-pack ``items`` in order into bins of at most ``max_weight`` (Java ``ListPacker``
    with lookback 1: a new bin starts when the next item does not fit; an item heavier than
    ``max_weight`` gets a bin of its own)."""
    bins: list[list[T]] = []
    current: list[T] = []
    total = 0
    for item in items:
        w = weight(item)
        if current and total + w > max_weight:
            bins.append(current)
            current, total = [], 0
        current.append(item)
        total += w
    if current:
        bins.append(current)
    return bins


def is_file_scoped(delete: DataFile, data_path: str) -> bool:
    """A DV or position delete file that applies only to ``data_path`` (Java
    ``ContentFileUtil.isFileScoped``): it goes away with that data file."""
    return referenced_data_file_of(delete) == data_path


def known_deleted_records(task: FileScanTask) -> int:
    """Rows of the task's file that its file-scoped deletes remove (at most its row count)."""
    path = task.file.file_path
    n = sum(d.record_count for d in task.delete_files if is_file_scoped(d, path))
    return min(n, task.file.record_count)


def delete_ratio(task: FileScanTask) -> float:
    """Java's ``tooHighDeleteRatio`` measure: file-scoped deleted records / records."""
    if task.file.record_count <= 0:
        return 0.0
    return known_deleted_records(task) / task.file.record_count


def partition_label(md: TableMetadata, spec_id: int, partition: tuple[Any, ...]) -> str:
    """A partition as a path (``region=eu/day=2024-01-02``); ``unpartitioned`` when empty."""
    spec = md.specs.get(spec_id)
    if spec is None or not spec.fields or not partition:
        return "unpartitioned"
    try:
        return spec.partition_path(partition, md.schema())
    except Exception:  # a spec whose source column was dropped: show the raw values
        return f"spec {spec_id} {partition!r}"


# -- file groups as JSON ----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class GroupFile:
    """A data file to rewrite, with what it was planned with: its data sequence number, the
    delete files that apply to it, which of them go away with it (file-scoped), and (V4) where
    its entry lives."""

    file: dict[str, Any]
    data_sequence_number: int
    deletes: tuple[dict[str, Any], ...] = ()
    file_scoped: tuple[int, ...] = ()
    origin: tuple[str, int] | None = None

    @classmethod
    def of(cls, task: FileScanTask) -> GroupFile:
        path = task.file.file_path
        deletes = tuple(task.delete_files)
        gf = cls(
            file=data_file_to_json(task.file),
            data_sequence_number=task.data_sequence_number,
            deletes=tuple(data_file_to_json(d) for d in deletes),
            file_scoped=tuple(i for i, d in enumerate(deletes) if is_file_scoped(d, path)),
            origin=tuple(task.origin) if task.origin is not None else None,  # type: ignore[arg-type]
        )
        # The process that planned keeps the decoded files (not fields: JSON carries the rest).
        object.__setattr__(gf, "_decoded", (task.file, list(deletes)))
        return gf

    def data_file(self) -> DataFile:
        decoded = self.__dict__.get("_decoded")
        return decoded[0] if decoded is not None else data_file_from_json(self.file)

    def delete_files(self) -> list[DataFile]:
        decoded = self.__dict__.get("_decoded")
        return list(decoded[1]) if decoded is not None else [data_file_from_json(d) for d in self.deletes]

    def task(self) -> FileScanTask:
        """The scan task (no residual: the whole file is rewritten)."""
        return make_file_scan_task(
            self.data_file(), self.data_sequence_number, tuple(self.delete_files()), None, self.origin
        )

    @property
    def path(self) -> str:
        return str(self.file["file-path"])

    @property
    def size(self) -> int:
        return int(self.file["file-size-in-bytes"])

    @property
    def records(self) -> int:
        return int(self.file["record-count"])


@dataclass(frozen=True, kw_only=True)
class FileGroup:
    """Files rewritten together by one work unit and committed together."""

    group_id: int
    partition: str
    files: tuple[GroupFile, ...]
    input_bytes: int
    input_records: int
    output_files: int

    def to_json(self) -> dict[str, Any]:
        """As :func:`~firn.maintenance.serde.to_jsonable` writes it (without its generic walk
        over the files, which are JSON already)."""
        return {
            "group_id": self.group_id,
            "partition": self.partition,
            "files": [
                {
                    "file": gf.file,
                    "data_sequence_number": gf.data_sequence_number,
                    "deletes": list(gf.deletes),
                    "file_scoped": list(gf.file_scoped),
                    "origin": list(gf.origin) if gf.origin is not None else None,
                }
                for gf in self.files
            ],
            "input_bytes": self.input_bytes,
            "input_records": self.input_records,
            "output_files": self.output_files,
        }

    def describe(self) -> str:
        return (
            f"group {self.group_id} ({self.partition}): {len(self.files)} files, "
            f"{self.input_bytes:,} bytes, {self.input_records:,} records -> ~{self.output_files} file(s)"
        )


def order_groups(
    groups: Sequence[T], order: str, size: Callable[[T], int], count: Callable[[T], int]
) -> list[T]:
    """``rewrite-job-order``: none (planning order), bytes-asc/desc, files-asc/desc."""
    if order == "bytes-asc":
        return sorted(groups, key=size)
    if order == "bytes-desc":
        return sorted(groups, key=size, reverse=True)
    if order == "files-asc":
        return sorted(groups, key=count)
    if order == "files-desc":
        return sorted(groups, key=count, reverse=True)
    return list(groups)


def commit_batches(items: Sequence[T], max_commits: int) -> list[list[T]]:
    """Split groups into at most ``max_commits`` commits of consecutive groups (Java's
    partial progress: ``ceil(groups / max-commits)`` groups per commit)."""
    if not items:
        return []
    per = max(1, math.ceil(len(items) / max(1, max_commits)))
    return [list(items[i : i + per]) for i in range(0, len(items), per)]


def branch_scan(table: TableHandle, branch: str, row_filter: BooleanExpression | None = None) -> DataScan:
    """A scan of the branch head with the table's current schema (a scan by snapshot id would
    bind the filter to the schema that snapshot was written with)."""
    return DataScan(table, filter=row_filter, ref=branch)


# -- the live delete files of a snapshot ---------------------------------------------------------------
def live_delete_entries(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[ManifestEntry]:
    """Every live delete file of ``snapshot`` with its sequence numbers (delete manifests of a
    v1-v3 snapshot; root entries and delete leaves, manifest DVs applied, of a V4 one)."""
    if snapshot is None:
        return []
    if snapshot.root_manifest is None:
        manifests = [m for m in snapshot_manifests(io, snapshot) if m.content is ManifestContent.DELETES]
        return [e for entries in read_manifests_parallel(io, manifests, md, md.schema()) for e in entries]
    import numpy as np
    import pyarrow as pa

    from firn.core.v4.reader import live_np

    layout = V4Layout.for_metadata(md)
    ids = specs_partition_ids(md)
    root = root_table(io, md, snapshot)
    ct = root.column("content_type").to_numpy()
    sel = live_np(root) & np.isin(ct, [int(FileContent.POSITION_DELETES), int(FileContent.EQUALITY_DELETES)])
    out = layout.to_entries(root.filter(pa.array(sel)), ids, with_stats=True)
    refs = [r for r in manifest_refs(root) if r.content is FileContent.DELETE_MANIFEST]
    mdvs = live_mdvs(io, root)
    for ref, leaf in zip(refs, read_leaves(io, md, refs)):
        found = mdvs.get(ref.location)
        keep = mdv_keep_mask(found[1] if found else None, leaf.num_rows) & live_np(leaf)
        out.extend(layout.to_entries(leaf.filter(pa.array(keep)), ids, with_stats=True))
    return out


__all__ = [
    "FileGroup",
    "FileSizes",
    "GroupFile",
    "branch_scan",
    "commit_batches",
    "delete_ratio",
    "is_file_scoped",
    "known_deleted_records",
    "live_delete_entries",
    "order_groups",
    "pack",
    "partition_label",
]
