"""``dangling_deletes``: the spec's rules beyond Java's (global equality deletes; v2 position
delete files that name only files gone), and never a delete that still applies."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from firn.deletes.writers import write_equality_delete_files
from firn.maintenance.dangling_deletes import dangling_deletes
from firn.maintenance.rewrite_planning import live_delete_entries
from firn.spec.content import FileContent
from tests.fixtures.catalogs import make_sqlite_catalog
from tests.fixtures.row_deletes import ids, make_table, rows


def _dangling(table: object, io: bool = True) -> list[FileContent]:
    t = table
    md = t.metadata  # type: ignore[attr-defined]
    entries = live_delete_entries(t.io, md, md.current_snapshot())  # type: ignore[attr-defined]
    found = dangling_deletes(md, t.scan().plan_files(), entries, t.io if io else None)  # type: ignore[attr-defined]
    return [d.content for d in found]


def test_a_global_equality_delete_dangles_once_every_live_file_is_newer(tmp_path: Path) -> None:
    t = make_table(make_sqlite_catalog(tmp_path), 2)
    t.append(rows(range(10)))  # data sequence number 1
    files = write_equality_delete_files(t.io, t.metadata, pa.table({"id": pa.array([3], pa.int64())}), ["id"])
    t.row_delta().add_deletes(files).commit()  # 2: applies to the first file
    t.append(rows(range(10, 20)))  # 3
    assert _dangling(t) == []  # the first file (1 < 2) still needs it
    assert 3 not in ids(t)
    t.delete("id < 10")  # drops the first file whole: only data sequence number 3 is left
    assert _dangling(t) == [FileContent.EQUALITY_DELETES]


def test_a_position_delete_file_dangles_when_it_names_no_live_file(tmp_path: Path) -> None:
    t = make_table(make_sqlite_catalog(tmp_path), 2, properties={"write.delete.mode": "merge-on-read"})
    for start in (0, 10, 20):
        t.append(rows(range(start, start + 10)))
    t.delete("id = 1 or id = 12")  # a position delete file naming two data files
    t.delete("id = 13 or id = 25")  # the last commit: another, naming two
    assert _dangling(t) == []
    # Compaction with the starting sequence number: the new file gets the last delete's
    # sequence number, so by numbers alone that delete file still applies to it, though it
    # names only files compaction removed; reading it shows that.
    t.maintenance.rewrite_data_files(rewrite_all=True).run()
    assert _dangling(t, io=False) == [FileContent.POSITION_DELETES]  # the older one, by numbers
    assert _dangling(t) == [FileContent.POSITION_DELETES] * 2
    assert ids(t) == [i for i in range(30) if i not in (1, 12, 13, 25)]
