"""Damaged metadata, manifests and delete files never escape as anything but a FirnError.

Small v2, v3 and V4 tables with merge-on-read deletes are written for real; then each of
their files — metadata JSON, manifests and manifest lists (Avro or Parquet), data files and
delete files (Parquet or Puffin) — is damaged in turn — truncated, a bit flipped, eight bytes overwritten, at positions drawn from a
fixed seed — and a fresh catalog loads the table and scans it. The scan may succeed (the
damage hit bytes nothing reads, or a value that is still valid) or fail, but only with a
FirnError; bare pyarrow, zlib, Unicode or enum errors are bugs.

Longer campaigns: ``FIRN_CORRUPTION_DAMAGES=200 FIRN_CORRUPTION_SEED=7 pytest
tests/firn/table/test_corruption_fuzz.py`` (damages per file; seed offset).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

import firn
from firn.deletes.apply import clear_delete_caches
from firn.errors import FirnError
from firn.manifests import cache as avro_cache
from firn.manifests.v4_io import clear_v4_cache

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
    rng = random.Random(SEED * 10 + version)
    escaped: list[str] = []
    files = _damageable(table.location)
    assert len(files) >= 4
    for path in files:
        original = Path(path).read_bytes()
        for _ in range(DAMAGES_PER_FILE):
            Path(path).write_bytes(_damage(original, rng))
            clear_v4_cache()
            avro_cache.clear_caches()
            clear_delete_caches()
            try:
                fresh = firn.load_catalog(uri, warehouse=warehouse)
                fresh.load_table("db.t").scan().to_arrow()
            except FirnError:
                pass
            except Exception as e:
                escaped.append(f"{os.path.basename(path)}: {type(e).__name__}: {e}")
        Path(path).write_bytes(original)
    assert not escaped, "\n".join(escaped)
    clear_v4_cache()
    avro_cache.clear_caches()
    assert firn.load_catalog(uri, warehouse=warehouse).load_table("db.t").scan().count() == expected
