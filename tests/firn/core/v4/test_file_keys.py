"""One identity key per tracked file: ``DataFile.file_key`` and the V4 writer's vectorized
``entry_keys`` over content entries agree, for plain files, DVs sharing one Puffin file,
equality deletes and inline manifest DVs."""

from __future__ import annotations

from pathlib import Path

from firn.core.v4.entries import entries_table
from firn.core.v4.writer import entry_keys
from firn.spec.content import DataFile, EntryStatus, FileContent, FileFormat, ManifestEntry
from tests.firn.core.v4.support import new_table


def _files() -> list[DataFile]:
    puffin = "s3://b/t/data/dvs.puffin"
    return [
        DataFile(FileContent.DATA, "s3://b/t/data/a.parquet", FileFormat.PARQUET, (), 10, 100),
        DataFile(
            FileContent.POSITION_DELETES,
            puffin,
            FileFormat.PUFFIN,
            (),
            2,
            300,
            referenced_data_file="s3://b/t/data/a.parquet",
            content_offset=4,
            content_size_in_bytes=40,
        ),
        DataFile(
            FileContent.POSITION_DELETES,
            puffin,
            FileFormat.PUFFIN,
            (),
            1,
            300,
            referenced_data_file="s3://b/t/data/b.parquet",
            content_offset=44,
            content_size_in_bytes=38,
        ),
        DataFile(
            FileContent.EQUALITY_DELETES,
            "s3://b/t/data/eq.parquet",
            FileFormat.PARQUET,
            (),
            3,
            50,
            equality_ids=(1,),
        ),
    ]


def test_file_key_is_the_path_or_path_and_blob_offset() -> None:
    data, dv1, dv2, eq = _files()
    assert data.file_key == data.file_path
    assert eq.file_key == eq.file_path
    assert dv1.file_key == f"{dv1.file_path}#4"
    assert dv1.file_key != dv2.file_key  # two DVs in one Puffin file stay distinct


def test_vectorized_entry_keys_agree_with_file_key(tmp_path: Path) -> None:
    md = new_table(tmp_path).metadata
    files = _files()
    inline_mdv = DataFile(
        FileContent.MANIFEST_DV,
        "",
        FileFormat.PUFFIN,
        (),
        1,
        0,
        referenced_data_file="s3://b/t/metadata/leaf.parquet",
    )
    entries = [ManifestEntry(EntryStatus.ADDED, 1, 1, 1, f) for f in files]
    entries.append(ManifestEntry(EntryStatus.ADDED, 1, 1, 1, inline_mdv, inline_content=b"\x00"))
    table = entries_table(md, entries)
    assert entry_keys(table).to_pylist() == [f.file_key for f in [*files, inline_mdv]]
