"""Damaged metadata, manifests and delete files: what a reader can promise, and what it cannot.

**The random campaign** (``test_damaged_files_raise_firn_errors``): small v2, v3 and V4 tables
with merge-on-read deletes are written for real; then each of their files — metadata JSON,
manifests and manifest lists (Avro or Parquet), data files and delete files (Parquet or
Puffin) — is damaged in turn (truncated, a bit flipped, eight bytes overwritten, at positions
drawn from a fixed seed) and a fresh catalog loads the table and scans it. What it proves is
*error hygiene*: whatever the damage, nothing escapes but a FirnError (bare pyarrow, zlib,
Unicode or enum errors are bugs). It does not prove that damage is noticed: where a format
carries no checksum (metadata JSON, Avro blocks, Parquet footers and V4 manifests, Puffin
footers), damaged bytes can decode to other valid values, and the scan may then return
different rows without an error. The campaign counts those outcomes (in its failure message)
but cannot fail on them.

**Checksummed cases** prove detection where the format has checksums:

* Puffin ``deletion-vector-v1`` blobs (data DVs of v3, manifest DVs of V4 stored in Puffin)
  carry a length, a magic and a CRC-32: every single-bit flip and every 8-byte overwrite
  inside a blob fails the scan with InvalidMetadata naming the Puffin file, never a result.
* Parquet data pages: Firn writes a CRC-32 into each page header and verifies it when it
  reads. Every single-bit flip inside a data file's column chunks either fails with
  InvalidMetadata naming the file or reads back exactly the original rows (a page-header field
  the values do not depend on, such as page statistics); never other rows. Compaction's
  multi-file fast path verifies them too.
* Puffin footers have no checksum in the spec; their fixed part (header and footer magic,
  payload size, flags) is validated, so every flip there is an error. The JSON payload is not
  protected; the scan does not read it (a DV is located by its manifest entry and checked by
  its own CRC).

Longer campaigns: ``FIRN_CORRUPTION_DAMAGES=200 FIRN_CORRUPTION_SEED=7 pytest
tests/firn/table/test_corruption_fuzz.py`` (damages per file; seed offset).
"""

from __future__ import annotations

import io
import os
import random
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import firn
from firn.deletes.apply import clear_delete_caches
from firn.deletes.puffin import parse_puffin_footer
from firn.errors import FirnError, InvalidMetadata
from firn.io.parquet_read import read_parquet_table
from firn.manifests import cache as avro_cache
from firn.manifests.v4_io import clear_v4_cache
from firn.spec.content import FileContent

DAMAGES_PER_FILE = int(os.environ.get("FIRN_CORRUPTION_DAMAGES", "12"))
SEED = int(os.environ.get("FIRN_CORRUPTION_SEED", "0"))


def _damage(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    mode = rng.randrange(3)
    if mode == 0:
        return bytes(b[: rng.randrange(len(b))])
    pos = rng.randrange(len(b))
    if mode == 1:
        b[pos] ^= 1 << rng.randrange(8)
    else:
        b[pos : pos + 8] = bytes(rng.randrange(256) for _ in range(8))
    return bytes(b)


def _sorted_rows(data: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _clear_caches() -> None:
    clear_v4_cache()
    avro_cache.clear_caches()
    clear_delete_caches()


def _damageable(location: str) -> list[str]:
    out = []
    for d, _, names in os.walk(location):
        for n in names:
            out.append(os.path.join(d, n))
    return sorted(out)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_damaged_files_raise_firn_errors(tmp_path: Path, version: int) -> None:
    uri, warehouse = f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh")
    catalog = firn.load_catalog(uri, warehouse=warehouse)
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    rows = pa.table({"id": range(50), "name": [f"n{i}" for i in range(50)]}, schema=schema)
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    if version == 4:
        props["commit.root.max-added-files"] = "0"  # data goes to leaves: roots and leaves both exist
    table = catalog.create_table("db.t", schema=schema, properties=props)
    table.append(rows)
    table.append(rows)
    table.delete("id < 5")
    expected = table.scan().count()
    expected_rows = _sorted_rows(table.scan().to_arrow())
    rng = random.Random(SEED * 10 + version)
    escaped: list[str] = []
    outcomes = {"FirnError": 0, "same rows": 0, "other rows (undetected)": 0}
    files = _damageable(table.location)
    assert len(files) >= 4
    for path in files:
        original = Path(path).read_bytes()
        for _ in range(DAMAGES_PER_FILE):
            Path(path).write_bytes(_damage(original, rng))
            _clear_caches()
            try:
                fresh = firn.load_catalog(uri, warehouse=warehouse)
                got = _sorted_rows(fresh.load_table("db.t").scan().to_arrow())
            except FirnError:
                outcomes["FirnError"] += 1
            except Exception as e:
                escaped.append(f"{os.path.basename(path)}: {type(e).__name__}: {e}")
            else:
                outcomes["same rows" if got == expected_rows else "other rows (undetected)"] += 1
        Path(path).write_bytes(original)
    assert not escaped, "\n".join(escaped) + f"\n(outcomes: {outcomes})"
    clear_v4_cache()
    avro_cache.clear_caches()
    assert firn.load_catalog(uri, warehouse=warehouse).load_table("db.t").scan().count() == expected


# -- checksummed: Puffin deletion-vector blobs --------------------------------------------------------
def _dv_blob_table(tmp_path: Path, kind: str) -> tuple[Any, str, int, int]:
    """A table whose scan reads one deletion-vector blob: (table, Puffin file, offset, length).
    ``data-dv``: a v3 table's DV; ``manifest-dv``: a V4 manifest DV stored in Puffin."""
    catalog = firn.load_catalog(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    if kind == "data-dv":
        props = {"format-version": "3", "write.delete.mode": "merge-on-read"}
        table = catalog.create_table("db.t", schema=schema, properties=props)
        table.append(pa.table({"id": range(100)}, schema=schema))
        table.delete("id in (3, 30, 31, 77)")
        (task,) = table.scan().plan_files()
        (dv,) = task.delete_files
        assert dv.content_offset is not None and dv.content_size_in_bytes is not None
        return table, dv.file_path, dv.content_offset, dv.content_size_in_bytes
    props = {
        "format-version": "4",
        "commit.root.max-added-files": "0",  # the appends' files go to leaves
        "write.manifest-dv.inline-max-bytes": "0",  # every manifest DV goes to Puffin
    }
    table = catalog.create_table("db.t", schema=schema, properties=props)
    for i in range(4):
        table.append(pa.table({"id": [i]}, schema=schema))
    table.delete("id = 2")  # a whole file: a manifest DV on its leaf
    from firn.core.v4.reader import root_table

    root = root_table(table.io, table.metadata, table.current_snapshot())
    mdvs = [
        r
        for r in root.select(["content_type", "location", "deletion_vector"]).to_pylist()
        if r["content_type"] == int(FileContent.MANIFEST_DV)
    ]
    (mdv,) = mdvs
    dv = mdv["deletion_vector"]
    assert dv["inline_content"] is None
    return table, mdv["location"], int(dv["offset"]), int(dv["size_in_bytes"])


@pytest.mark.parametrize("kind", ["data-dv", "manifest-dv"])
def test_every_damage_inside_a_dv_blob_fails_the_scan(tmp_path: Path, kind: str) -> None:
    table, puffin, offset, length = _dv_blob_table(tmp_path, kind)
    expected = _sorted_rows(table.scan().to_arrow())
    original = Path(puffin).read_bytes()
    rng = random.Random(SEED)
    damages = [(pos, 1 << bit) for pos in range(offset, offset + length) for bit in range(8)]
    damages += [(pos, -1) for pos in range(offset, offset + length)]  # 8 bytes overwritten
    undetected = []
    for pos, flip in damages:
        data = bytearray(original)
        if flip > 0:
            data[pos] ^= flip
        else:
            data[pos : pos + 8] = bytes(b ^ (rng.randrange(255) + 1) for b in original[pos : pos + 8])
        Path(puffin).write_bytes(bytes(data))
        _clear_caches()
        try:
            got = table.refresh().scan().to_arrow()
        except InvalidMetadata as e:
            assert Path(puffin).name in str(e), e
            continue
        undetected.append((pos - offset, flip, _sorted_rows(got) == expected))
    Path(puffin).write_bytes(original)
    _clear_caches()
    assert undetected == [], f"damage inside the {length}-byte blob went unnoticed at {undetected[:10]}"
    assert _sorted_rows(table.scan().to_arrow()) == expected


def test_the_puffin_footer_s_fixed_fields_are_validated(tmp_path: Path) -> None:
    _, puffin, _, _ = _dv_blob_table(tmp_path, "data-dv")
    original = Path(puffin).read_bytes()
    parse_puffin_footer(original, location=puffin)  # undamaged: fine
    payload_size = struct.unpack_from("<i", original, len(original) - 12)[0]
    footer_start = len(original) - payload_size - 16
    # Header magic, footer start magic, and the fixed tail: payload size, flags, magic.
    fixed = [*range(4), *range(footer_start, footer_start + 4), *range(len(original) - 12, len(original))]
    accepted = []
    for pos in fixed:
        for bit in range(8):
            data = bytearray(original)
            data[pos] ^= 1 << bit
            try:
                parse_puffin_footer(bytes(data), location=puffin)
            except InvalidMetadata:
                continue
            accepted.append((pos, bit))
    assert accepted == []


# -- checksummed: Parquet page CRCs ---------------------------------------------------------------------
def _column_chunks(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of every column chunk (page headers and pages) of a Parquet file."""
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    ranges = []
    for g in range(metadata.num_row_groups):
        for c in range(metadata.num_columns):
            chunk = metadata.row_group(g).column(c)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            ranges.append((start, start + chunk.total_compressed_size))
    return ranges


ROWS_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def _one_data_file_table(tmp_path: Path) -> tuple[Any, str]:
    catalog = firn.load_catalog(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": range(50), "name": [f"n{i}" for i in range(50)]}, schema=ROWS_SCHEMA))
    (task,) = table.scan().plan_files()
    return table, task.file.file_path


def test_every_bit_flip_in_a_data_page_fails_or_reads_back_the_same_rows(tmp_path: Path) -> None:
    table, path = _one_data_file_table(tmp_path)
    original = Path(path).read_bytes()
    expected = read_parquet_table(table.io, path, projected=table.schema())
    outcomes = {"detected": 0, "same rows": 0}
    other_rows = []
    for start, end in _column_chunks(original):
        for pos in range(start, end):
            for bit in range(8):
                data = bytearray(original)
                data[pos] ^= 1 << bit
                Path(path).write_bytes(bytes(data))
                try:
                    got = read_parquet_table(table.io, path, projected=table.schema())
                except InvalidMetadata as e:
                    assert Path(path).name in str(e), e
                    outcomes["detected"] += 1
                    continue
                if got.equals(expected):
                    outcomes["same rows"] += 1
                else:
                    other_rows.append((pos, bit))
    Path(path).write_bytes(original)
    assert other_rows == [], f"damage read back as other rows at (byte, bit) {other_rows[:10]} ({outcomes})"
    # Most flips hit page payloads, which the CRC covers: detected, not merely harmless.
    assert outcomes["detected"] > 3 * outcomes["same rows"], outcomes
    assert table.scan().to_arrow().num_rows == 50


def test_compaction_refuses_a_data_file_with_a_damaged_page(tmp_path: Path) -> None:
    table, path = _one_data_file_table(tmp_path)
    table.append(pa.table({"id": [100], "name": ["x"]}, schema=ROWS_SCHEMA))
    original = Path(path).read_bytes()
    # The last byte of the first column chunk is page payload: its CRC no longer matches.
    _, end = _column_chunks(original)[0]
    data = bytearray(original)
    data[end - 1] ^= 0x10
    Path(path).write_bytes(bytes(data))
    with pytest.raises(FirnError, match=Path(path).name) as refused:
        table.maintenance.rewrite_data_files(min_input_files=2).run()
    assert "CRC checksum verification failed" in str(refused.value)
    Path(path).write_bytes(original)
    assert table.refresh().scan().to_arrow().num_rows == 51  # nothing was committed
