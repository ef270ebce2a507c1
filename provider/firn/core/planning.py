"""Scan planning for v1-v3 snapshots (spec "Scan Planning").

Manifests are pruned by their partition summaries (inclusive projection of the row filter),
read in parallel, and their live entries pruned by partition values and column metrics. Delete
manifests go through the same pruning into a :class:`DeleteFileIndex`, which attaches the
applicable delete files to every data file. Each task carries its residual filter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from firn.deletes.index import DeleteFileIndex
from firn.expressions import (
    BooleanExpression,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
    ResidualEvaluator,
)
from firn.spec.content import DataFile, ManifestEntry
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema
from firn.spec.table_metadata import TableMetadata
from firn.spec.types import StructType

MAX_PLANNING_THREADS = 8


@dataclass(frozen=True, slots=True)
class FileScanTask:
    """One data file to read, with the delete files to apply and the residual row filter."""

    file: DataFile
    data_sequence_number: int
    delete_files: tuple[DataFile, ...] = ()
    residual: BooleanExpression | None = None
    # V4: where the file's live entry sits (manifest location or "root", ordinal), so a later
    # removal of the file can target it without searching the tree.
    origin: tuple[str, int] | None = None

    @property
    def record_count(self) -> int:
        return self.file.record_count

    @property
    def file_path(self) -> str:
        return self.file.file_path


_set_task_file = FileScanTask.__dict__["file"].__set__
_set_task_seq = FileScanTask.__dict__["data_sequence_number"].__set__
_set_task_deletes = FileScanTask.__dict__["delete_files"].__set__
_set_task_residual = FileScanTask.__dict__["residual"].__set__
_set_task_origin = FileScanTask.__dict__["origin"].__set__


def make_file_scan_task(
    file: DataFile,
    data_sequence_number: int,
    delete_files: tuple[DataFile, ...] = (),
    residual: BooleanExpression | None = None,
    origin: tuple[str, int] | None = None,
) -> FileScanTask:
    """``FileScanTask(...)`` built through its slot descriptors (as ``make_data_file``)."""
    t: FileScanTask = object.__new__(FileScanTask)
    _set_task_file(t, file)
    _set_task_seq(t, data_sequence_number)
    _set_task_deletes(t, delete_files)
    _set_task_residual(t, residual)
    _set_task_origin(t, origin)
    return t


def partition_type_or_none(spec: PartitionSpec, schema: Schema) -> StructType | None:
    """The spec's partition type against ``schema``; None when a source column was dropped."""
    try:
        return spec.partition_type(schema)
    except Exception:
        return None


class SpecEvaluators:
    """Per-spec evaluators, built lazily once per scan."""

    def __init__(
        self, metadata: TableMetadata, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool
    ) -> None:
        self.metadata = metadata
        self.schema = schema
        self.row_filter = row_filter
        self.case_sensitive = case_sensitive
        self._manifest: dict[int, ManifestEvaluator | None] = {}
        self._partition: dict[int, PartitionEvaluator | None] = {}
        self._residual: dict[int, ResidualEvaluator] = {}

    def _spec(self, spec_id: int) -> PartitionSpec | None:
        return self.metadata.specs.get(spec_id)

    def manifest(self, spec_id: int) -> ManifestEvaluator | None:
        if spec_id not in self._manifest:
            spec = self._spec(spec_id)
            ev = None
            if spec is not None and spec.fields and partition_type_or_none(spec, self.schema) is not None:
                ev = ManifestEvaluator.for_row_filter(
                    spec, self.schema, self.row_filter, case_sensitive=self.case_sensitive
                )
            self._manifest[spec_id] = ev
        return self._manifest[spec_id]

    def partition(self, spec_id: int) -> PartitionEvaluator | None:
        if spec_id not in self._partition:
            spec = self._spec(spec_id)
            ev = None
            if spec is not None and spec.fields and partition_type_or_none(spec, self.schema) is not None:
                ev = PartitionEvaluator.for_row_filter(
                    spec, self.schema, self.row_filter, case_sensitive=self.case_sensitive
                )
            self._partition[spec_id] = ev
        return self._partition[spec_id]

    def residual(self, spec_id: int) -> ResidualEvaluator:
        if spec_id not in self._residual:
            spec = self._spec(spec_id)
            if spec is None or partition_type_or_none(spec, self.schema) is None:
                spec = PartitionSpec(spec_id, ())
            self._residual[spec_id] = ResidualEvaluator(
                spec, self.schema, self.row_filter, case_sensitive=self.case_sensitive
            )
        return self._residual[spec_id]


def select_entries(
    entries: Iterable[ManifestEntry],
    evaluators: SpecEvaluators,
    metrics: InclusiveMetricsEvaluator,
) -> list[ManifestEntry]:
    out = []
    for e in entries:
        f = e.data_file
        pev = evaluators.partition(f.spec_id)
        if pev is not None and not pev.eval(f.partition):
            continue
        if not metrics.eval(f):
            continue
        out.append(e)
    return out


def build_tasks(
    data_entries: Iterable[ManifestEntry],
    index: DeleteFileIndex,
    evaluators: SpecEvaluators,
    origin: Callable[[ManifestEntry], tuple[str, int] | None] | None = None,
) -> list[FileScanTask]:
    tasks = []
    for e in data_entries:
        seq = e.sequence_number or 0
        f = e.data_file
        tasks.append(
            FileScanTask(
                file=f,
                data_sequence_number=seq,
                delete_files=index.for_data_file(f, seq),
                residual=evaluators.residual(f.spec_id).residual_for(f.partition),
                origin=origin(e) if origin is not None else None,
            )
        )
    return tasks


__all__ = [
    "FileScanTask",
    "SpecEvaluators",
    "build_tasks",
    "partition_type_or_none",
    "select_entries",
]
