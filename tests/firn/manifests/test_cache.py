"""The process-wide manifest caches: hits avoid re-reading, LRU bound, disabling, keys."""

from __future__ import annotations

import pytest

from firn.io.limits import ReadLimit, ReadLimits
from firn.io.memory import InMemoryFileIO
from firn.manifests import cache, read_manifest, read_manifest_list, write_manifest, write_manifest_list
from firn.spec.content import ManifestFile
from firn.spec.partitioning import PartitionSpec
from firn.spec.schema import Schema

from .factories import added, data_file


class CountingInput:
    """An InputFile that counts whole-file reads."""

    def __init__(self, fio: InMemoryFileIO, location: str) -> None:
        self._inner = fio.new_input(location)
        self.reads = 0

    @property
    def location(self) -> str:
        return self._inner.location

    @property
    def read_limits(self) -> ReadLimits:
        return self._inner.read_limits

    def read(self, limit: ReadLimit | None = None) -> bytes:
        self.reads += 1
        return self._inner.read(limit)

    def read_range(self, offset: int, length: int) -> bytes:
        return self._inner.read_range(offset, length)

    def length(self) -> int:
        return self._inner.length()

    def exists(self) -> bool:
        return self._inner.exists()

    def open_arrow(self):  # type: ignore[no-untyped-def]
        return self._inner.open_arrow()


@pytest.fixture
def committed(fio: InMemoryFileIO, spec: PartitionSpec, schema: Schema) -> ManifestFile:
    mf = write_manifest(
        fio.new_output("m.avro"),
        [added(data_file(i)) for i in range(5)],
        spec=spec,
        schema=schema,
        format_version=2,
        snapshot_id=1,
    )
    return mf.evolve(sequence_number=1, min_sequence_number=1)


def test_manifest_cache_hits_skip_reading(fio: InMemoryFileIO, committed: ManifestFile) -> None:
    src = CountingInput(fio, "m.avro")
    first = read_manifest(src, committed)
    second = read_manifest(src, committed)
    assert src.reads == 1 and first == second and first is not second
    assert cache.MANIFEST_CACHE.stats().hits == 1


def test_manifest_cache_key_includes_inherited_values(fio: InMemoryFileIO, committed: ManifestFile) -> None:
    src = CountingInput(fio, "m.avro")
    a = read_manifest(src, committed)
    # A retried commit may give the same manifest another sequence number.
    b = read_manifest(src, committed.evolve(sequence_number=2))
    assert src.reads == 2
    assert {e.sequence_number for e in a} == {1} and {e.sequence_number for e in b} == {2}


def test_use_cache_false_and_disabled(fio: InMemoryFileIO, committed: ManifestFile) -> None:
    src = CountingInput(fio, "m.avro")
    read_manifest(src, committed, use_cache=False)
    read_manifest(src, committed, use_cache=False)
    assert src.reads == 2
    cache.configure_caches(enabled=False)
    read_manifest(src, committed)
    read_manifest(src, committed)
    assert src.reads == 4 and len(cache.MANIFEST_CACHE) == 0


def test_written_manifest_list_is_cached(fio: InMemoryFileIO, committed: ManifestFile) -> None:
    result = write_manifest_list(
        fio.new_output("l.avro"),
        [committed],
        format_version=2,
        snapshot_id=1,
        parent_snapshot_id=None,
        sequence_number=1,
    )
    src = CountingInput(fio, "l.avro")
    assert read_manifest_list(src) == list(result.manifests)
    assert src.reads == 0
    cache.clear_caches()
    assert read_manifest_list(src) == list(result.manifests)
    assert read_manifest_list(src) == list(result.manifests)
    assert src.reads == 1


def test_manifest_cache_bound_applies_to_reads(fio: InMemoryFileIO, committed: ManifestFile) -> None:
    cache.configure_caches(manifest_entries=4)  # the fixture's manifest has 5 entries
    src = CountingInput(fio, "m.avro")
    read_manifest(src, committed)
    read_manifest(src, committed)
    assert src.reads == 2
    cache.configure_caches(manifest_entries=cache.DEFAULT_MANIFEST_CACHE_ENTRIES)
    read_manifest(src, committed)
    read_manifest(src, committed)
    assert src.reads == 3 and cache.MANIFEST_CACHE.stats().weight == 5
