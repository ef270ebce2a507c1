"""Finding delete files that no longer apply to any live data file ("dangling" deletes).

Iceberg Java's ``RemoveDanglingDeleteFiles`` rules (notes §11), by data sequence numbers: per
(spec, partition) of the live data files, the minimum data sequence number ``m``; then

* a DV is dangling when the data file it references is not live;
* a position delete file (v2) is dangling when its partition has no live data file, or its
  sequence number is below ``m`` (position deletes apply to data files with a data sequence
  number at or below theirs), or it is file-scoped and its data file is not live;
* a partition-scoped equality delete file is dangling when its partition has no live data
  file or its sequence number is at or below ``m`` (equality deletes apply strictly below).

Global equality deletes (written with an unpartitioned spec) are never dangling here, and
position delete files whose positions match no live file are not detected (as Java).
"""

from __future__ import annotations

from collections.abc import Sequence

from firn.core.planning import FileScanTask
from firn.deletes.index import partition_key
from firn.deletes.writers import referenced_data_file_of
from firn.spec.content import DataFile, FileContent, ManifestEntry
from firn.spec.table_metadata import TableMetadata


def dangling_deletes(
    md: TableMetadata, tasks: Sequence[FileScanTask], deletes: Sequence[ManifestEntry]
) -> list[DataFile]:
    """The delete files among ``deletes`` (live entries with sequence numbers) that apply to
    none of ``tasks`` (every live data file of the same snapshot)."""
    live_paths = {t.file.file_path for t in tasks}
    min_seq: dict[tuple[object, ...], int] = {}
    for t in tasks:
        key = partition_key(t.file.spec_id, t.file.partition)
        seq = t.data_sequence_number
        if key not in min_seq or seq < min_seq[key]:
            min_seq[key] = seq
    out: list[DataFile] = []
    for e in deletes:
        d = e.data_file
        seq = e.sequence_number or 0
        if d.content is FileContent.POSITION_DELETES:
            target = referenced_data_file_of(d)
            if target is not None:
                if target not in live_paths:
                    out.append(d)
                continue
            low = min_seq.get(partition_key(d.spec_id, d.partition))
            if low is None or seq < low:
                out.append(d)
        elif d.content is FileContent.EQUALITY_DELETES:
            spec = md.specs.get(d.spec_id)
            if spec is None or spec.is_unpartitioned:
                continue
            low = min_seq.get(partition_key(d.spec_id, d.partition))
            if low is None or seq <= low:
                out.append(d)
    return out


__all__ = ["dangling_deletes"]
