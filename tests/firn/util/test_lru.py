"""The one LRU cache type: LRU order, weight bounds, resizing, the keep-newest policy, threads."""

from __future__ import annotations

import threading

import pytest

from firn.util.lru import LRUCache


def test_lru_eviction_and_resize() -> None:
    c: LRUCache[int] = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # "b" is now least recently used
    c.put("c", 3)
    assert c.get("b") is None and c.get("a") == 1 and c.get("c") == 3
    c.configure(max_weight=1)
    assert len(c) == 1 and c.get("c") == 3
    c.configure(max_weight=0)
    c.put("d", 4)
    assert c.get("d") is None and not c.enabled
    with pytest.raises(ValueError):
        LRUCache(-1)


def test_bound_counts_entries_not_files() -> None:
    c: LRUCache[str] = LRUCache(100)
    c.put("big", "70 entries", weight=70)
    c.put("small", "20 entries", weight=20)
    assert c.stats().weight == 90 and c.stats().values == 2
    c.put("another", "30 entries", weight=30)  # evicts "big", the least recently used
    assert c.get("big") is None and c.get("small") is not None and c.stats().weight == 50
    c.put("huge", "more than the bound", weight=101)  # never cached
    assert c.get("huge") is None and c.stats().weight == 50
    c.put("small", "replaced", weight=5)
    assert c.get("small") == "replaced" and c.stats().weight == 35


def test_invalidate_by_predicate() -> None:
    c: LRUCache[int] = LRUCache(10)
    for k in ("s3://a/1", "s3://a/2", "s3://b/1"):
        c.put(k, 1)
    c.invalidate(lambda k: str(k).startswith("s3://a/"))
    assert c.get("s3://b/1") == 1 and c.get("s3://a/1") is None
    assert c.stats().weight == 1


def test_setdefault_returns_the_cached_value_and_caches_a_new_one() -> None:
    c: LRUCache[list[int]] = LRUCache(2)
    first = c.setdefault("a", [1])
    assert c.setdefault("a", [2]) is first
    c.setdefault("b", [3])
    c.setdefault("a", [4])  # "a" is now the most recently used
    c.setdefault("c", [5])
    assert "b" not in c and c.get("a") is first
    assert c.stats().hits == 3 and c.stats().misses == 3


def test_keep_newest_keeps_a_value_heavier_than_the_bound() -> None:
    c: LRUCache[str] = LRUCache(10, keep_newest=True)
    c.put("small", "s", weight=4)
    c.put("big", "b", weight=25)  # evicts everything older, stays itself
    assert c.get("small") is None and c.get("big") == "b"
    c.put("next", "n", weight=3)  # the big one is now the oldest and goes
    assert c.get("big") is None and c.get("next") == "n" and c.stats().weight == 3
    skipping: LRUCache[str] = LRUCache(10)
    skipping.put("big", "b", weight=25)
    assert skipping.get("big") is None and len(skipping) == 0


def test_disabled_cache_holds_nothing_and_pop_removes() -> None:
    c: LRUCache[int] = LRUCache(5)
    c.put("a", 1)
    assert c.pop("a") == 1 and c.pop("a") is None and c.stats().weight == 0
    c.put("b", 2)
    c.configure(enabled=False)
    assert len(c) == 0 and c.get("b") is None and c.setdefault("b", 3) == 3 and len(c) == 0
    c.configure(enabled=True)
    c.put("b", 2)
    assert c.get("b") == 2


def test_threads_keep_the_weight_consistent() -> None:
    c: LRUCache[int] = LRUCache(50)

    def work(offset: int) -> None:
        for i in range(2_000):
            key = (offset + i) % 120
            if c.get(key) is None:
                c.put(key, i, weight=1 + key % 3)

    threads = [threading.Thread(target=work, args=(k * 37,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = c.stats()
    assert stats.weight <= 50
    assert stats.weight == sum(1 + k % 3 for k in range(120) if k in c)
