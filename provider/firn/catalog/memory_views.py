"""The in-memory catalog's view pointers: a dict beside the tables' under the same lock.

Checking the tables' dict and the views' dict under one lock is what makes "a view and a
table never share a name" atomic here, as the shared primary key does in the SQL catalog.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from firn.catalog.views import ViewCatalogMixin
from firn.errors import AlreadyExists, CommitConflict, NoSuchView


class MemoryViewsMixin(ViewCatalogMixin):
    """View primitives over ``self._views``; mixed into :class:`~firn.catalog.memory.InMemoryCatalog`."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _tables: Mapping[tuple[str, str], object]
        _views: dict[tuple[str, str], str]

    def _name_taken(self, ns: str, name: str) -> bool:
        """True if a table or a view has the name (call with the lock held)."""
        return (ns, name) in self._tables or (ns, name) in self._views

    def _view_names(self, ns: str) -> list[str]:
        with self._lock:
            return [name for n, name in self._views if n == ns]

    def _view_get(self, ns: str, name: str) -> str | None:
        with self._lock:
            return self._views.get((ns, name))

    def _view_insert(self, ns: str, name: str, metadata_location: str) -> None:
        with self._lock:
            if self._name_taken(ns, name):
                raise AlreadyExists(f"a table or view '{ns}.{name}' already exists in catalog {self.name!r}")
            self._views[(ns, name)] = metadata_location

    def _view_delete(self, ns: str, name: str) -> bool:
        with self._lock:
            return self._views.pop((ns, name), None) is not None

    def _view_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:
        with self._lock:
            if self._name_taken(dst_ns, dst_name):
                raise AlreadyExists(f"a table or view '{dst_ns}.{dst_name}' already exists")
            location = self._views.pop((src_ns, src_name), None)
            if location is None:
                raise NoSuchView(f"view '{src_ns}.{src_name}' does not exist in catalog {self.name!r}")
            self._views[(dst_ns, dst_name)] = location

    def _view_swap(self, ns: str, name: str, expected: str, new: str) -> None:
        with self._lock:
            current = self._views.get((ns, name))
            if current is None:
                raise NoSuchView(f"cannot commit: view '{ns}.{name}' does not exist in catalog {self.name!r}")
            if current != expected:
                raise CommitConflict(
                    f"view '{ns}.{name}' was changed concurrently: expected metadata {expected}, "
                    f"catalog has {current}"
                )
            self._views[(ns, name)] = new


__all__ = ["MemoryViewsMixin"]
