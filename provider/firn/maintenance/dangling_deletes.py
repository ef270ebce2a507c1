"""Finding delete files that no longer apply to any live data file ("dangling" deletes).

Iceberg Java's ``RemoveDanglingDeleteFiles`` rules (notes §11), by data sequence numbers: per
(spec, partition) of the live data files, the minimum data sequence number ``m``; then

* a DV is dangling when the data file it references is not live;
* a position delete file (v2) is dangling when its partition has no live data file, or its
  sequence number is below ``m`` (position deletes apply to data files with a data sequence
  number at or below theirs), or it is file-scoped and its data file is not live;
* a partition-scoped equality delete file is dangling when its partition has no live data
  file or its sequence number is at or below ``m`` (equality deletes apply strictly below).

Two rules go further than Java, both from the spec's "Scan Planning" section:

* a *global* equality delete (written with an unpartitioned spec) applies to every data file
  whose data sequence number is below its own, whatever the partition; it is dangling once
  every live data file's data sequence number is at or above its own (Java keeps it forever);
* given ``io``, a partition-scoped position delete file that the sequence rule keeps is read,
  and it is dangling when none of the paths it names is a live data file the sequence rule
  lets it apply to. Compaction writes its files with the data sequence number of the
  snapshot it started from (``use-starting-sequence-number``), so a position delete file
  committed in that snapshot keeps "applying" to the new files by number alone, though it
  names only the files they replaced; without this check it outlived every compaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from firn.core.planning import FileScanTask
from firn.deletes.apply import referenced_paths
from firn.deletes.index import partition_key
from firn.deletes.writers import referenced_data_file_of
from firn.io.base import FileIO
from firn.spec.content import DataFile, FileContent, ManifestEntry
from firn.spec.table_metadata import TableMetadata


def _names_a_live_file(io: FileIO, delete_file: DataFile, seq: int, live_seq: dict[str, int]) -> bool:
    """Does the position delete file name a live data file it applies to (data sequence
    number at or below its own)?"""
    return any(live_seq.get(path, seq + 1) <= seq for path in referenced_paths(io, delete_file))


def dangling_deletes(
    md: TableMetadata,
    tasks: Sequence[FileScanTask],
    deletes: Sequence[ManifestEntry],
    io: FileIO | None = None,
) -> list[DataFile]:
    """The delete files among ``deletes`` (live entries with sequence numbers) that apply to
    none of ``tasks`` (every live data file of the same snapshot). With ``io``, partition-scoped
    position delete files are also read to check the paths they name (module docstring)."""
    live_seq = {t.file.file_path: t.data_sequence_number for t in tasks}
    min_seq: dict[tuple[object, ...], int] = {}
    for t in tasks:
        key = partition_key(t.file.spec_id, t.file.partition)
        seq = t.data_sequence_number
        if key not in min_seq or seq < min_seq[key]:
            min_seq[key] = seq
    global_min = min(live_seq.values(), default=None)
    out: list[DataFile] = []
    for e in deletes:
        d = e.data_file
        seq = e.sequence_number or 0
        if d.content is FileContent.POSITION_DELETES:
            target = referenced_data_file_of(d)
            if target is not None:
                if target not in live_seq:
                    out.append(d)
                continue
            low = min_seq.get(partition_key(d.spec_id, d.partition))
            if low is None or seq < low or (io is not None and not _names_a_live_file(io, d, seq, live_seq)):
                out.append(d)
        elif d.content is FileContent.EQUALITY_DELETES:
            spec = md.specs.get(d.spec_id)
            if spec is None:
                continue
            if spec.is_unpartitioned:
                # Spec "Scan Planning": a global equality delete applies to data files with a
                # lower data sequence number in every partition.
                if global_min is None or seq <= global_min:
                    out.append(d)
                continue
            low = min_seq.get(partition_key(d.spec_id, d.partition))
            if low is None or seq <= low:
                out.append(d)
    return out


__all__ = ["dangling_deletes"]
