"""The one LRU cache type of the library: a thread-safe map bounded by the weight of its values.

Every process-wide cache (decoded manifests and manifest lists, V4 manifests, delete files,
catalog metadata, metadata JSON pieces, V4 layouts) is an :class:`LRUCache`. A value's weight
is what the bound counts: 1 per value for caches bounded by a number of values, the entries
or rows a value holds for caches bounded by memory. Least recently used values go first.

Every method takes the cache's lock, so one cache may be shared by threads (commits and scans
of different tables run in threads). Cached values are shared, not copied: callers cache
immutable objects only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters of one cache (for tests, benchmarks and health reporting)."""

    hits: int
    misses: int
    values: int
    weight: int
    max_weight: int
    enabled: bool


class LRUCache(Generic[V]):
    """A thread-safe LRU map whose values' total weight stays within ``max_weight``.

    ``max_weight=0`` or ``configure(enabled=False)`` turns the cache off: it then holds nothing
    and every lookup misses. A value heavier than the whole bound is not cached, unless
    ``keep_newest`` is set: then the value just put always stays (everything older is evicted
    to make room), so the last value written is still there for the next reader.
    """

    __slots__ = ("_data", "_enabled", "_hits", "_keep_newest", "_lock", "_max", "_misses", "_weight")

    def __init__(self, max_weight: int, *, keep_newest: bool = False) -> None:
        if max_weight < 0:
            raise ValueError(f"max_weight must be >= 0, got {max_weight}")
        self._data: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_weight
        self._keep_newest = keep_newest
        self._weight = 0
        self._enabled = True
        self._hits = 0
        self._misses = 0

    @property
    def enabled(self) -> bool:
        return self._enabled and self._max > 0

    def configure(self, *, max_weight: int | None = None, enabled: bool | None = None) -> None:
        """Resize or switch the cache on/off; shrinking or disabling evicts what no longer fits."""
        with self._lock:
            if max_weight is not None:
                if max_weight < 0:
                    raise ValueError(f"max_weight must be >= 0, got {max_weight}")
                self._max = max_weight
            if enabled is not None:
                self._enabled = enabled
            if not (self._enabled and self._max > 0):
                self._data.clear()
                self._weight = 0
            else:
                self._evict()

    def _evict(self) -> None:
        # Called with the lock held; the newest value is last.
        floor = 1 if self._keep_newest else 0
        while len(self._data) > floor and self._weight > self._max:
            _, (_, weight) = self._data.popitem(last=False)
            self._weight -= weight

    def get(self, key: Hashable) -> V | None:
        """The value cached under ``key`` (now the most recently used), or None."""
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
        """Cache ``value`` under ``key``, replacing what was there."""
        weight = max(1, weight)
        if not self.enabled or (weight > self._max and not self._keep_newest):
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._data[key] = (value, weight)
            self._weight += weight
            self._evict()

    def setdefault(self, key: Hashable, value: V, *, weight: int = 1) -> V:
        """The value cached under ``key`` if there is one (now the most recently used);
        otherwise cache ``value`` and return it."""
        weight = max(1, weight)
        if not self.enabled:
            return value
        with self._lock:
            item = self._data.get(key)
            if item is not None:
                self._data.move_to_end(key)
                self._hits += 1
                return item[0]
            self._misses += 1
            if weight > self._max and not self._keep_newest:
                return value
            self._data[key] = (value, weight)
            self._weight += weight
            self._evict()
            return value

    def pop(self, key: Hashable) -> V | None:
        """Remove and return the value under ``key`` (None if absent)."""
        with self._lock:
            item = self._data.pop(key, None)
            if item is None:
                return None
            self._weight -= item[1]
            return item[0]

    def invalidate(self, predicate: Callable[[Hashable], bool] | None = None) -> None:
        """Drop every value, or those whose key satisfies ``predicate(key)``."""
        with self._lock:
            keys = list(self._data) if predicate is None else [k for k in self._data if predicate(k)]
            for key in keys:
                self._weight -= self._data.pop(key)[1]

    def clear(self) -> None:
        """Drop every value and reset the hit and miss counters."""
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

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data


__all__ = ["CacheStats", "LRUCache"]
