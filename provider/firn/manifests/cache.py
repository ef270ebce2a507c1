"""Process-wide LRU caches of decoded manifest lists and manifests.

Manifest lists and manifests are immutable once written (spec "Manifests": "A manifest is an
immutable Avro file"), so a decoded file can be reused by every later commit and scan in the
process — a commit reads the previous snapshot's manifest list, which is usually the one this
process just wrote. Decoding is the expensive part (notes perf §1c, §4a: tens of µs per
entry), so the caches hold the decoded, inheritance-applied objects.

Each cache is bounded by the number of *entries* it holds (manifest-list entries, or manifest
entries), not files: a manifest of 70k entries costs 70k, a small one a few, so memory stays
bounded whatever the manifest sizes (a fully-statted entry is a few KB of Python objects). A
file bigger than the whole bound is simply not cached. Both are :class:`firn.util.lru.LRUCache`
(thread-safe); values are immutable tuples of frozen dataclasses, so sharing them is safe.
"""

from __future__ import annotations

from typing import Any

from firn.util.lru import LRUCache

# Manifest-list entries (ManifestFile objects, ~1 KB each).
DEFAULT_MANIFEST_LIST_CACHE_ENTRIES = 20_000
# Manifest entries (with ~10 columns of stats, ~5 KB each: ~250 MB at the bound).
DEFAULT_MANIFEST_CACHE_ENTRIES = 50_000


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
    MANIFEST_LIST_CACHE.configure(max_weight=manifest_list_entries, enabled=enabled)
    MANIFEST_CACHE.configure(max_weight=manifest_entries, enabled=enabled)


def clear_caches() -> None:
    """Forget every cached manifest list and manifest."""
    MANIFEST_LIST_CACHE.clear()
    MANIFEST_CACHE.clear()


__all__ = [
    "DEFAULT_MANIFEST_CACHE_ENTRIES",
    "DEFAULT_MANIFEST_LIST_CACHE_ENTRIES",
    "MANIFEST_CACHE",
    "MANIFEST_LIST_CACHE",
    "clear_caches",
    "configure_caches",
]
