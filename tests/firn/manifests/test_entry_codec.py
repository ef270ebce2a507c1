"""The decoder generated per manifest schema reads exactly what fastavro reads, and refuses
damaged files with an error naming them."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from firn.errors import InvalidMetadata
from firn.io.memory import InMemoryFileIO
from firn.maintenance.manifest_paths import read_manifest_paths
from firn.manifests import _entry_codec as codec
from firn.manifests import avro_schemas as ids
from firn.manifests import cache, read_manifest, write_manifest
from firn.manifests.projected import PROJECTABLE_TYPES, read_entry_columns
from firn.spec.content import ManifestContent, ManifestEntry, ManifestFile
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema

from .factories import added, data_file, deleted, dv, equality_delete_file, existing, position_delete_file

SNAP = 77


def _data_entries(n: int, version: int = 2) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for i in range(n):
        f = data_file(i, stats=i % 3 != 0, split_offsets=(4, 4000 + i) if i % 2 else None)
        new = added(f, SNAP if version == 1 else None)  # v1 entries carry their snapshot id
        out.append([new, existing(f, 3, 2, 2), deleted(f, 3, 2, 2)][i % 3])
    return out


def _delete_entries(n: int) -> list[ManifestEntry]:
    makers = (position_delete_file, equality_delete_file)
    return [added(makers[i % 2](i)) for i in range(n)]


def _write(
    fio: InMemoryFileIO,
    entries: list[ManifestEntry],
    spec: PartitionSpec,
    schema: Schema,
    version: int,
    codec_name: str,
    content: ManifestContent = ManifestContent.DATA,
) -> tuple[bytes, ManifestFile]:
    path = f"mem://m-{version}-{codec_name}-{content.name}.avro"
    mf = write_manifest(
        fio.new_output(path),
        entries,
        spec=spec,
        schema=schema,
        format_version=version,
        content=content,
        snapshot_id=SNAP,
        codec=codec_name,
    ).evolve(sequence_number=5, first_row_id=1000 if version >= 3 else None)
    return fio.new_input(path).read(), mf


def _both(fn: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    cache.clear_caches()
    generated = fn()
    with monkeypatch.context() as m:
        m.setattr(codec, "GENERATED_CODECS", ())
        cache.clear_caches()
        fallback = fn()
    return generated, fallback


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("codec_name", ["null", "deflate"])
def test_full_read_matches_fastavro(
    fio: InMemoryFileIO,
    schema: Schema,
    spec: PartitionSpec,
    version: int,
    codec_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Partitions of every kind the spec fixture has: date, decimal, uuid, double, int, string,
    # fixed; stats maps present and absent; split offsets; every entry status.
    entries = _data_entries(30, version)
    data, mf = _write(fio, entries, spec, schema, version, codec_name)
    ptype = spec.partition_type(schema)
    generated, fallback = _both(
        lambda: read_manifest(data, mf, partition_type=ptype, include_deleted=True), monkeypatch
    )
    assert generated == fallback
    assert len(generated) == len(entries)
    assert {int(e.status) for e in generated} == {0, 1, 2}
    assert any(e.data_file.lower_bounds for e in generated)
    # Without a partition type the tuple follows the file's own fields, still alike.
    g2, f2 = _both(lambda: read_manifest(data, mf, include_deleted=True), monkeypatch)
    assert g2 == f2


@pytest.mark.parametrize("version", [2, 3])
def test_delete_manifests_match_fastavro(
    fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = _delete_entries(6) if version == 2 else [added(dv(i)) for i in range(6)]
    data, mf = _write(fio, entries, spec, schema, version, "deflate", ManifestContent.DELETES)
    ptype = spec.partition_type(schema)
    generated, fallback = _both(lambda: read_manifest(data, mf, partition_type=ptype), monkeypatch)
    assert generated == fallback
    if version == 3:
        assert all(e.data_file.is_dv and e.data_file.content_offset is not None for e in generated)
    else:
        assert any(e.data_file.equality_ids for e in generated)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_projected_reads_match_fastavro(
    fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = _data_entries(12, version)
    data, mf = _write(fio, entries, spec, schema, version, "deflate")
    fields = tuple(PROJECTABLE_TYPES)
    g_cols, f_cols = _both(lambda: read_entry_columns(data, fields, location="mem://x"), monkeypatch)
    assert g_cols == f_cols
    assert g_cols.fields[ids.FILE_PATH_ID] == [e.data_file.file_path for e in entries]
    g_paths, f_paths = _both(lambda: read_manifest_paths(fio, mf), monkeypatch)
    assert g_paths == f_paths
    assert list(g_paths.path) == [e.data_file.file_path for e in entries]
    assert all(s is not None for s in g_paths.snapshot_id)  # ADDED entries inherit the snapshot


def test_other_codecs_fall_back_to_fastavro(fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec) -> None:
    entries = _data_entries(9)
    data, mf = _write(fio, entries, spec, schema, 2, "bzip2")
    assert codec.read_container(data).codec == "bzip2"
    got = read_manifest(data, mf, partition_type=spec.partition_type(schema), include_deleted=True)
    assert [e.data_file.file_path for e in got] == [e.data_file.file_path for e in entries]


def test_agrees_with_fastavro_record_by_record(
    fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec
) -> None:
    """The raw tuples equal fastavro's records field by field (maps as dicts)."""
    data, _ = _write(fio, _data_entries(10), spec, schema, 2, "deflate")
    container = codec.read_container(data)
    decoder = codec.entry_decoder(
        container.schema_json,
        (ids.STATUS_ID, ids.SNAPSHOT_ID_ID),
        (
            ids.FILE_PATH_ID,
            ids.COLUMN_SIZES_ID,
            ids.LOWER_BOUNDS_ID,
            ids.SPLIT_OFFSETS_ID,
            ids.SORT_ORDER_ID_ID,
        ),
        frozenset(),
    )
    rows = codec.decode_entries(data, container, decoder)
    records = list(fastavro.reader(io.BytesIO(data)))
    assert len(rows) == len(records) == 10

    def as_dict(kv: Any) -> Any:
        return None if kv is None else {x["key"]: x["value"] for x in kv}

    for row, rec in zip(rows, records, strict=True):
        f = rec["data_file"]
        assert row == (
            rec["status"],
            rec["snapshot_id"],
            f["file_path"],
            as_dict(f["column_sizes"]),
            as_dict(f["lower_bounds"]),
            f["split_offsets"],
            f["sort_order_id"],
        )


def test_long_varints_round_trip() -> None:
    for v in (0, -1, 1, 63, -64, 64, 8191, -8192, 8192, 2**31, -(2**63), 2**63 - 1):
        zz = (v << 1) ^ (v >> 63)
        enc = bytearray()
        while True:
            b = zz & 0x7F
            zz >>= 7
            if zz:
                enc.append(b | 0x80)
            else:
                enc.append(b)
                break
        assert codec.read_long(bytes(enc) + b"\x00", 0) == (v, len(enc))
    assert codec.skip_varints(b"\x80\x01\x02\xff\x7f", 0, 3) == 5
    with pytest.raises(ValueError, match="past the end"):
        codec.skip_varints(b"\x80\x01\x02", 0, 3)


@pytest.mark.parametrize("damage", ["truncate", "sync", "count", "body"])
def test_damaged_files_are_named(
    fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec, damage: str
) -> None:
    data, mf = _write(fio, _data_entries(40), spec, schema, 2, "null")
    body = codec.read_container(data).body
    buf = bytearray(data)
    if damage == "truncate":
        buf = buf[: len(buf) - 40]
    elif damage == "sync":
        buf[-3] ^= 0xFF
    elif damage == "count":
        buf[body] = 0x7E  # the block's record count: 63 instead of 40
    else:
        buf[body + 40 : body + 60] = b"\xff" * 20  # a varint that never ends, mid-block
    with pytest.raises(InvalidMetadata, match=r"m-2-null-DATA\.avro"):
        read_manifest(bytes(buf), mf, include_deleted=True, use_cache=False)
    with pytest.raises(InvalidMetadata, match=r"mem://named"):
        read_entry_columns(bytes(buf), (ids.FILE_PATH_ID,), location="mem://named")


def test_uncommon_encodings_take_the_generic_path(
    fio: InMemoryFileIO, schema: Schema, spec: PartitionSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Skipped fields outside the regex's common form (a stats map of 70 columns, a 100-byte
    bound) are stepped over field by field, with the same result."""
    wide = {c: 1000 + c for c in range(1, 71)}
    entries = [
        added(data_file(i, column_sizes=wide, value_counts=wide, lower_bounds={1: b"x" * (60 + 20 * i)}))
        for i in range(4)
    ]
    data, mf = _write(fio, entries, spec, schema, 2, "deflate")
    g_cols, f_cols = _both(
        lambda: read_entry_columns(data, (ids.RECORD_COUNT_ID, ids.FILE_SIZE_ID), location="mem://w"),
        monkeypatch,
    )
    assert g_cols == f_cols
    assert g_cols.fields[ids.RECORD_COUNT_ID] == [1000 + i for i in range(4)]
    g_paths, f_paths = _both(lambda: read_manifest_paths(fio, mf), monkeypatch)
    assert g_paths == f_paths
    full, _ = _both(lambda: read_manifest(data, mf, partition_type=spec.partition_type(schema)), monkeypatch)
    assert full[3].data_file.lower_bounds == {1: b"x" * 120}
    assert full[0].data_file.column_sizes == wide
