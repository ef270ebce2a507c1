"""Matching delete files to data files (spec "Scan Planning", "Deletion Vectors").

Rules (notes §7):

=====================  ==========================================================================
DV                     ``referenced_data_file`` is the data file, data seq <= DV seq
position delete file   same spec and partition (and ``referenced_data_file`` if set),
                       data seq <= delete seq, and the data file has **no** DV (a DV wins)
equality delete file   data seq < delete seq (strictly), and same spec and partition, or the
                       delete's spec is unpartitioned (a global delete)
=====================  ==========================================================================

Lookups are dictionary hits plus a bisect over sequence numbers, so planning stays linear in
the number of data files.
"""

from __future__ import annotations

import bisect
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from firn.errors import InvalidMetadata
from firn.spec.content import DataFile, FileContent, ManifestEntry
from firn.spec.field_ids import DELETE_FILE_PATH_ID
from firn.spec.partitioning import PartitionSpec


def _canonical(value: object) -> object:
    # Spec: floats in partition tuples compare equal on their canonical bits (NaN == NaN).
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)
        return struct.pack("<d", value)
    return value


def partition_key(spec_id: int, partition: tuple[object, ...]) -> tuple[object, ...]:
    return (spec_id, *(_canonical(v) for v in partition))


@dataclass
class _SeqList:
    """Delete files sorted by sequence number, for "all with seq >= s" / "seq > s" lookups."""

    seqs: list[int]
    files: list[DataFile]

    @classmethod
    def build(cls, items: Iterable[tuple[int, DataFile]]) -> _SeqList:
        ordered = sorted(items, key=lambda x: x[0])
        return cls([s for s, _ in ordered], [f for _, f in ordered])

    def at_least(self, seq: int) -> list[DataFile]:
        return self.files[bisect.bisect_left(self.seqs, seq) :]

    def greater_than(self, seq: int) -> list[DataFile]:
        return self.files[bisect.bisect_right(self.seqs, seq) :]


def _single_referenced_path(f: DataFile) -> str | None:
    """A v2 position delete file whose file_path bounds are equal covers only that file."""
    if f.referenced_data_file is not None:
        return f.referenced_data_file
    lo = (f.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (f.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lo is not None and lo == hi:
        try:
            return lo.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


class DeleteFileIndex:
    """Index of live delete entries, answering "which deletes apply to this data file?"."""

    def __init__(self, delete_entries: Iterable[ManifestEntry], specs: Mapping[int, PartitionSpec]) -> None:
        dvs: dict[str, tuple[int, DataFile]] = {}
        pos_by_path: dict[str, list[tuple[int, DataFile]]] = {}
        pos_by_partition: dict[tuple[object, ...], list[tuple[int, DataFile]]] = {}
        eq_by_partition: dict[tuple[object, ...], list[tuple[int, DataFile]]] = {}
        eq_global: list[tuple[int, DataFile]] = []
        self.count = 0
        for e in delete_entries:
            if not e.is_live:
                continue
            f = e.data_file
            seq = e.sequence_number or 0
            self.count += 1
            if f.content is FileContent.POSITION_DELETES:
                if f.is_dv:
                    if f.referenced_data_file is None:
                        raise InvalidMetadata(f"deletion vector {f.file_path} has no referenced_data_file")
                    prev = dvs.get(f.referenced_data_file)
                    if prev is not None and prev[0] == seq:
                        raise InvalidMetadata(
                            f"two deletion vectors for {f.referenced_data_file} in one snapshot: "
                            f"{prev[1].file_path} and {f.file_path} (spec allows at most one)"
                        )
                    if prev is None or prev[0] < seq:
                        dvs[f.referenced_data_file] = (seq, f)
                    continue
                path = _single_referenced_path(f)
                if path is not None:
                    pos_by_path.setdefault(path, []).append((seq, f))
                else:
                    pos_by_partition.setdefault(partition_key(f.spec_id, f.partition), []).append((seq, f))
            elif f.content is FileContent.EQUALITY_DELETES:
                spec = specs.get(f.spec_id)
                if spec is None or spec.is_unpartitioned:
                    eq_global.append((seq, f))
                else:
                    eq_by_partition.setdefault(partition_key(f.spec_id, f.partition), []).append((seq, f))
        self._dvs = dvs
        self._pos_by_path = {k: _SeqList.build(v) for k, v in pos_by_path.items()}
        self._pos_by_partition = {k: _SeqList.build(v) for k, v in pos_by_partition.items()}
        self._eq_by_partition = {k: _SeqList.build(v) for k, v in eq_by_partition.items()}
        self._eq_global = _SeqList.build(eq_global)

    @property
    def is_empty(self) -> bool:
        return self.count == 0

    def dv_for(self, data_path: str, data_sequence_number: int) -> DataFile | None:
        found = self._dvs.get(data_path)
        if found is not None and data_sequence_number <= found[0]:
            return found[1]
        return None

    def for_data_file(
        self,
        data_file: DataFile,
        data_sequence_number: int,
        *,
        may_match: Callable[[DataFile], bool] | None = None,
    ) -> tuple[DataFile, ...]:
        """The delete files to apply to ``data_file`` (``may_match`` prunes by delete metrics)."""
        if self.count == 0:
            return ()
        out: list[DataFile] = []
        dv = self.dv_for(data_file.file_path, data_sequence_number)
        if dv is not None:
            out.append(dv)
        else:
            by_path = self._pos_by_path.get(data_file.file_path)
            if by_path is not None:
                out.extend(by_path.at_least(data_sequence_number))
            if self._pos_by_partition:
                key = partition_key(data_file.spec_id, data_file.partition)
                part = self._pos_by_partition.get(key)
                if part is not None:
                    out.extend(part.at_least(data_sequence_number))
        if self._eq_by_partition:
            key = partition_key(data_file.spec_id, data_file.partition)
            eq = self._eq_by_partition.get(key)
            if eq is not None:
                out.extend(
                    f for f in eq.greater_than(data_sequence_number) if may_match is None or may_match(f)
                )
        if self._eq_global.files:
            out.extend(
                f
                for f in self._eq_global.greater_than(data_sequence_number)
                if may_match is None or may_match(f)
            )
        return tuple(out)

    def dvs(self) -> Mapping[str, tuple[int, DataFile]]:
        """Live DVs by referenced data file: (sequence number, DV)."""
        return self._dvs


__all__ = ["DeleteFileIndex", "partition_key"]
