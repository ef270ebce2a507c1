"""An in-process catalog for tests and notebooks: the SQL catalog's semantics over dicts.

Namespaces and table pointers live in dicts guarded by one lock, so the compare-and-swap of
:meth:`~firn.catalog.base_catalog.BaseCatalog.commit_table` is atomic across threads. Files go
through the FileIO you pass (an :class:`~firn.io.memory.InMemoryFileIO` by default).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from firn.catalog.base_catalog import EntryKind
from firn.catalog.lease import LeaseInfo
from firn.catalog.memory_views import MemoryViewsMixin
from firn.errors import AlreadyExists, CommitConflict, NoSuchTable
from firn.io.base import FileIO
from firn.io.memory import InMemoryFileIO

DEFAULT_MEMORY_WAREHOUSE = "memory://warehouse"


@dataclass(slots=True)
class _TableRow:
    metadata_location: str
    previous_metadata_location: str | None = None


class InMemoryCatalog(MemoryViewsMixin):
    """Thread-safe dict-backed catalog with the same errors and rules as ``SqlCatalog``."""

    def __init__(
        self,
        name: str = "memory",
        *,
        warehouse: str | None = DEFAULT_MEMORY_WAREHOUSE,
        io: FileIO | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            name,
            warehouse=warehouse,
            io=io if io is not None else InMemoryFileIO(properties),
            properties=properties,
        )
        self._lock = threading.RLock()
        self._namespaces: dict[str, dict[str, str]] = {}
        self._tables: dict[tuple[str, str], _TableRow] = {}
        self._views: dict[tuple[str, str], str] = {}  # view pointers (firn.catalog.memory_views)
        self._leases: dict[tuple[str, str], LeaseInfo] = {}

    def _all_namespace_strings(self) -> set[str]:
        return set(self._namespaces) | {ns for ns, _ in self._tables} | {ns for ns, _ in self._views}

    # -- namespaces ----------------------------------------------------------------------------
    def _ns_exists(self, ns: str) -> bool:
        below = ns + "."
        with self._lock:
            return any(n == ns or n.startswith(below) for n in self._all_namespace_strings())

    def _ns_names(self, prefix: str) -> set[str]:
        below = prefix + "."
        with self._lock:
            return {
                n for n in self._all_namespace_strings() if not prefix or n == prefix or n.startswith(below)
            }

    def _ns_entries(self, ns: str) -> list[str]:
        with self._lock:
            return [name for n, name in (*self._tables, *self._views) if n == ns]

    def _ns_load(self, ns: str) -> dict[str, str]:
        with self._lock:
            return dict(self._namespaces.get(ns, {}))

    def _ns_insert(self, ns: str, properties: Mapping[str, str]) -> None:
        with self._lock:
            if ns in self._namespaces:
                raise AlreadyExists(f"namespace {ns!r} already exists in catalog {self.name!r}")
            self._namespaces[ns] = dict(properties)

    def _ns_delete(self, ns: str) -> None:
        with self._lock:
            self._namespaces.pop(ns, None)

    def _ns_update(self, ns: str, removals: set[str], updates: Mapping[str, str]) -> None:
        with self._lock:
            props = self._namespaces.setdefault(ns, {})
            for key in removals:
                props.pop(key, None)
            props.update(updates)

    # -- tables --------------------------------------------------------------------------------
    def _all_entries(self) -> list[tuple[str, str, str, EntryKind]]:
        with self._lock:
            tables: list[tuple[str, str, str, EntryKind]] = [
                (ns, name, row.metadata_location, "table") for (ns, name), row in self._tables.items()
            ]
            tables += [(ns, name, location, "view") for (ns, name), location in self._views.items()]
        return tables

    def _tbl_names(self, ns: str) -> list[str]:
        with self._lock:
            return [name for n, name in self._tables if n == ns]

    def _tbl_get(self, ns: str, name: str) -> str | None:
        with self._lock:
            row = self._tables.get((ns, name))
            return row.metadata_location if row is not None else None

    def _tbl_insert(self, ns: str, name: str, metadata_location: str) -> None:
        with self._lock:
            if self._name_taken(ns, name):
                raise AlreadyExists(f"a table or view '{ns}.{name}' already exists in catalog {self.name!r}")
            self._tables[(ns, name)] = _TableRow(metadata_location)

    def _tbl_delete(self, ns: str, name: str) -> bool:
        with self._lock:
            return self._tables.pop((ns, name), None) is not None

    def _tbl_rename(self, src_ns: str, src_name: str, dst_ns: str, dst_name: str) -> None:
        with self._lock:
            if self._name_taken(dst_ns, dst_name):
                raise AlreadyExists(
                    f"a table or view '{dst_ns}.{dst_name}' already exists in catalog {self.name!r}"
                )
            row = self._tables.pop((src_ns, src_name), None)
            if row is None:
                raise NoSuchTable(f"table '{src_ns}.{src_name}' does not exist in catalog {self.name!r}")
            self._tables[(dst_ns, dst_name)] = row

    # -- the maintenance lease (firn.catalog.lease): a dict under the catalog's lock ----------
    @staticmethod
    def _now_ms() -> int:
        return int(time.time() * 1000)

    def _lease_acquire(
        self, ns: str, name: str, lease_id: str, owner: str, operation: str, duration_ms: int
    ) -> tuple[LeaseInfo, int]:
        with self._lock:
            now = self._now_ms()
            row = self._leases.get((ns, name))
            if row is None or row.expires_at_ms <= now:
                row = LeaseInfo(f"{ns}.{name}", owner, operation, lease_id, now, now + duration_ms)
                self._leases[(ns, name)] = row
            return row, now

    def _lease_renew(self, ns: str, name: str, lease_id: str, duration_ms: int) -> int | None:
        with self._lock:
            row = self._leases.get((ns, name))
            if row is None or row.lease_id != lease_id:
                return None
            expires = self._now_ms() + duration_ms
            self._leases[(ns, name)] = replace(row, expires_at_ms=expires)
            return expires

    def _lease_release(self, ns: str, name: str, lease_id: str) -> None:
        with self._lock:
            row = self._leases.get((ns, name))
            if row is not None and row.lease_id == lease_id:
                self._leases[(ns, name)] = replace(row, expires_at_ms=self._now_ms())

    def _lease_get(self, ns: str, name: str) -> tuple[LeaseInfo | None, int]:
        with self._lock:
            return self._leases.get((ns, name)), self._now_ms()

    def _tbl_swap(self, ns: str, name: str, expected: str, new: str) -> None:
        with self._lock:
            row = self._tables.get((ns, name))
            if row is None:
                raise NoSuchTable(
                    f"cannot commit: table '{ns}.{name}' does not exist in catalog {self.name!r}"
                )
            if row.metadata_location != expected:
                raise CommitConflict(
                    f"table '{ns}.{name}' was changed concurrently: expected metadata {expected}, "
                    f"catalog has {row.metadata_location}"
                )
            row.previous_metadata_location = row.metadata_location
            row.metadata_location = new


__all__ = ["DEFAULT_MEMORY_WAREHOUSE", "InMemoryCatalog"]
