"""Metadata inheritance through the v1-v3 metadata tree (spec "Sequence Number Inheritance",
"First Row ID Inheritance", "First Row ID Assignment"; notes §7).

Two directions:

* **Reading** a manifest fills an entry's null ``snapshot_id``, ``sequence_number`` and
  ``file_sequence_number`` and a data file's null ``first_row_id`` from the manifest-list entry
  (:class:`EntryInheritance`).
* **Writing** a manifest list assigns the snapshot's sequence number to manifests written by
  this commit and, in v3, a ``first_row_id`` to data manifests that lack one
  (:func:`assign_sequence_numbers`, :func:`assign_first_row_ids`).

Keeping inheritance out of the files is what lets a manifest written for a failed commit
attempt be reused in the retry: only the manifest list is rewritten (spec "Sequence Number
Inheritance", last paragraph).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from firn.errors import ValidationError
from firn.spec.content import EntryStatus, FileContent, ManifestContent, ManifestFile

_ADDED = EntryStatus.ADDED
_DELETED = EntryStatus.DELETED
_DATA = FileContent.DATA


@dataclass(slots=True)
class EntryInheritance:
    """Applies a manifest's inherited values to the entries read from it, in file order.

    Rules (spec "Sequence Number Inheritance" and "First Row ID Inheritance"):

    * a null ``snapshot_id`` becomes the manifest's ``added_snapshot_id``;
    * null sequence numbers become the manifest's ``sequence_number`` only for ADDED entries.
      Java (``InheritableMetadataFactory``) also inherits for any status when the manifest's
      sequence number is 0, which is how v1 manifests (no sequence columns) read as 0;
    * a data file's null ``first_row_id`` becomes the manifest's ``first_row_id`` plus the
      record counts of the earlier data files that also inherited one. Like Java's
      ``ManifestReader`` id assigner, DELETED entries neither inherit nor advance the counter,
      matching the manifest-list estimate ``added_rows_count + existing_rows_count``.
    """

    snapshot_id: int | None
    sequence_number: int | None
    next_row_id: int | None

    @classmethod
    def of(cls, manifest: ManifestFile) -> EntryInheritance:
        return cls(manifest.added_snapshot_id, manifest.sequence_number, manifest.first_row_id)

    def snapshot(self, snapshot_id: int | None) -> int | None:
        return self.snapshot_id if snapshot_id is None else snapshot_id

    def sequence(self, status: EntryStatus, sequence_number: int | None) -> int | None:
        if sequence_number is None and (status is _ADDED or self.sequence_number == 0):
            return self.sequence_number
        return sequence_number

    def first_row_id(
        self, status: EntryStatus, content: FileContent, first_row_id: int | None, record_count: int
    ) -> int | None:
        if first_row_id is not None or self.next_row_id is None or content is not _DATA or status is _DELETED:
            return first_row_id
        assigned = self.next_row_id
        self.next_row_id = assigned + record_count
        return assigned


def assign_sequence_numbers(
    manifests: Iterable[ManifestFile], *, snapshot_id: int, sequence_number: int
) -> list[ManifestFile]:
    """Give manifests written by this commit the snapshot's sequence number (spec "Manifest Lists").

    A manifest whose ``sequence_number`` is unassigned must have been written by this commit,
    so its ``added_snapshot_id`` must be ``snapshot_id`` (or unset, then it becomes
    ``snapshot_id``) — the same sanity check Java's manifest-list writer makes. An unassigned
    ``min_sequence_number`` means no entry carried an explicit data sequence number, so every
    live entry inherits the manifest's (this commit's) number.
    """
    out: list[ManifestFile] = []
    for m in manifests:
        changes: dict[str, object] = {}
        if m.sequence_number is None:
            if m.added_snapshot_id is not None and m.added_snapshot_id != snapshot_id:
                raise ValidationError(
                    f"manifest {m.manifest_path} has no sequence number but was added by snapshot "
                    f"{m.added_snapshot_id}, not by the snapshot being committed ({snapshot_id})"
                )
            changes["sequence_number"] = sequence_number
        if m.min_sequence_number is None:
            changes["min_sequence_number"] = changes.get("sequence_number", m.sequence_number)
        if m.added_snapshot_id is None:
            changes["added_snapshot_id"] = snapshot_id
        out.append(m.evolve(**changes) if changes else m)
    return out


def assign_first_row_ids(
    manifests: Iterable[ManifestFile], first_row_id: int
) -> tuple[list[ManifestFile], int]:
    """Assign ``first_row_id`` to data manifests without one (spec "First Row ID Assignment").

    Existing values are kept; delete manifests always have none. Each assigned manifest
    reserves ``added_rows_count + existing_rows_count`` ids — the spec's "simple and valid
    approach", which covers every data file that inherits an id when the manifest is read.
    Returns the manifests and the table's next row id.
    """
    next_row_id = first_row_id
    out: list[ManifestFile] = []
    for m in manifests:
        if m.content is ManifestContent.DELETES:
            if m.first_row_id is not None:
                raise ValidationError(
                    f"delete manifest {m.manifest_path} has first_row_id {m.first_row_id}; "
                    "delete manifests never have one (spec 'First Row ID Assignment')"
                )
            out.append(m)
            continue
        if m.first_row_id is not None:
            out.append(m)
            continue
        if m.added_rows_count is None or m.existing_rows_count is None:
            raise ValidationError(
                f"data manifest {m.manifest_path} has no added/existing row counts, so no row id range can "
                "be reserved for it"
            )
        out.append(m.evolve(first_row_id=next_row_id))
        next_row_id += m.added_rows_count + m.existing_rows_count
    return out, next_row_id


__all__ = ["EntryInheritance", "assign_first_row_ids", "assign_sequence_numbers"]
