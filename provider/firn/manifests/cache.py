"""Process-wide LRU caches of decoded manifest lists and manifests.

Manifest lists and manifests are immutable once written (spec "Manifests": "A manifest is an
immutable Avro file"), so a decoded file can be reused by every later commit and scan in the
process — a commit reads the previous snapshot's manifest list, which is usually the one this
process just wrote. Decoding is the expensive part (notes perf §1c, §4a: tens of µs per
entry), so the caches hold the decoded, inheritance-applied objects.

Each cache is bounded by the number of *entries* it holds (manifest-list entries, or manifest
entries), not files: a manifest of 70k entries costs 70k, a small one a few, so memory stays
bounded whatever the manifest sizes (a fully-statted entry is a few KB of Python objects). A
file bigger than the whole bound is simply not cached. Caches are thread-safe; values are
immutable tuples of frozen dataclasses, so sharing them is safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

V = TypeVar("V")

# Manifest-list entries (ManifestFile objects, ~1 KB each).
DEFAULT_MANIFEST_LIST_CACHE_ENTRIES = 20_000
# Manifest entries (with ~10 columns of stats, ~5 KB each: ~250 MB at the bound).
DEFAULT_MANIFEST_CACHE_ENTRIES = 50_000


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters of one cache (for tests, benchmarks and health reporting)."""

    hits: int
    misses: int
    files: int
    entries: int
    max_entries: int
    enabled: bool


class LRUCache(Generic[V]):
    """A thread-safe LRU map bounded by the total weight (entry count) of its values.

    ``max_entries=0`` or ``enabled=False`` turns it off.
    """

    def __init__(self, max_entries: int) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self._data: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries
        self._weight = 0
        self._enabled = True
        self._hits = 0
        self._misses = 0

    @property
    def enabled(self) -> bool:
        return self._enabled and self._max > 0

    def configure(self, *, max_entries: int | None = None, enabled: bool | None = None) -> None:
        """Resize or switch the cache on/off; shrinking or disabling evicts what no longer fits."""
        with self._lock:
            if max_entries is not None:
                if max_entries < 0:
                    raise ValueError(f"max_entries must be >= 0, got {max_entries}")
                self._max = max_entries
            if enabled is not None:
                self._enabled = enabled
            self._evict(self._max if self._enabled else 0)

    def _evict(self, limit: int) -> None:
        while self._data and self._weight > limit:
            _, (_, weight) = self._data.popitem(last=False)
            self._weight -= weight

    def get(self, key: Hashable) -> V | None:
        if not self.enabled:
            return None
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self._misses += 1
                return None
            self._data.move_to_end(key)
            self._hits += 1
            return item[0]

    def put(self, key: Hashable, value: V, *, weight: int = 1) -> None:
        """Cache ``value``, which holds ``weight`` entries (values heavier than the bound are skipped)."""
        weight = max(1, weight)
        if not self.enabled or weight > self._max:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._data[key] = (value, weight)
            self._weight += weight
            self._evict(self._max)

    def invalidate(self, predicate: Callable[[Hashable], bool] | None = None) -> None:
        """Drop every value, or those whose key satisfies ``predicate(key)``."""
        with self._lock:
            keys = list(self._data) if predicate is None else [k for k in self._data if predicate(k)]
            for key in keys:
                self._weight -= self._data.pop(key)[1]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weight = 0
            self._hits = self._misses = 0

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                self._hits, self._misses, len(self._data), self._weight, self._max, self._enabled
            )

    def __len__(self) -> int:
        return len(self._data)


# Keyed by manifest-list location; values are tuples of ManifestFile.
MANIFEST_LIST_CACHE: LRUCache[Any] = LRUCache(DEFAULT_MANIFEST_LIST_CACHE_ENTRIES)
# Keyed by (manifest location, length, inherited values, partition type); values are tuples of
# ManifestEntry with inheritance applied (deleted entries included).
MANIFEST_CACHE: LRUCache[Any] = LRUCache(DEFAULT_MANIFEST_CACHE_ENTRIES)


def configure_caches(
    *,
    enabled: bool | None = None,
    manifest_list_entries: int | None = None,
    manifest_entries: int | None = None,
) -> None:
    """Enable/disable both caches or change their bounds (in entries)."""
    MANIFEST_LIST_CACHE.configure(max_entries=manifest_list_entries, enabled=enabled)
    MANIFEST_CACHE.configure(max_entries=manifest_entries, enabled=enabled)


def clear_caches() -> None:
    """Forget every cached manifest list and manifest."""
    MANIFEST_LIST_CACHE.clear()
    MANIFEST_CACHE.clear()


__all__ = [
    "DEFAULT_MANIFEST_CACHE_ENTRIES",
    "DEFAULT_MANIFEST_LIST_CACHE_ENTRIES",
    "MANIFEST_CACHE",
    "MANIFEST_LIST_CACHE",
    "CacheStats",
    "LRUCache",
    "clear_caches",
    "configure_caches",
]
