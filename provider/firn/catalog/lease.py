"""The per-table maintenance lease: two maintenance runs on one table never overlap.

A lease is a row per table in the catalog (SQL: ``firn_maintenance_leases``; in memory: a dict)
holding the owner, the operation and an expiry time. Acquiring it is one atomic statement
that inserts the row or takes it over only where it has expired, so of two processes racing
exactly one wins; the loser gets :class:`~firn.errors.LeaseHeld` naming the holder, its
operation and when the lease expires. While the run works, a background thread renews the
lease every ``maintenance.lease.heartbeat-interval-ms``; at the end it is released (the row
is kept, expired, as a record of the last run). A run that crashes stops renewing, and its
lease is taken over once it expires (``maintenance.lease.duration-ms``).

Writers never take the lease and never wait for it: commit validation protects them from a
concurrent maintenance run (DESIGN "Maintenance").

Catalog properties (defaults): ``maintenance.lease.duration-ms`` (300,000: five minutes,
Airflow's default ``retry_delay``, so a retried task finds a crashed run's lease expired),
``maintenance.lease.heartbeat-interval-ms`` (60,000: a lease survives four failed renewals),
``maintenance.lease.owner-label`` (appended to the owner ``hostname:pid``, e.g. an Airflow
task instance).

Within one thread the lease is re-entrant: an operation that runs another on the same table
(a delete rewrite handing files to compaction) keeps the lease it holds.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import socket
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from firn.errors import LeaseHeld, ValidationError

logger = logging.getLogger(__name__)

LEASE_DURATION_MS = "maintenance.lease.duration-ms"
DEFAULT_LEASE_DURATION_MS = 300_000
LEASE_HEARTBEAT_INTERVAL_MS = "maintenance.lease.heartbeat-interval-ms"
DEFAULT_LEASE_HEARTBEAT_INTERVAL_MS = 60_000
LEASE_OWNER_LABEL = "maintenance.lease.owner-label"


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """A lease row: who holds (or last held) the table's maintenance lease, for what, until when."""

    table: str
    owner: str
    operation: str
    lease_id: str
    acquired_at_ms: int
    expires_at_ms: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "owner": self.owner,
            "operation": self.operation,
            "lease_id": self.lease_id,
            "acquired_at_ms": self.acquired_at_ms,
            "expires_at_ms": self.expires_at_ms,
        }


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    """The lease's catalog properties, parsed."""

    duration_ms: int = DEFAULT_LEASE_DURATION_MS
    heartbeat_interval_ms: int = DEFAULT_LEASE_HEARTBEAT_INTERVAL_MS
    owner_label: str | None = None

    @classmethod
    def parse(cls, properties: Mapping[str, str]) -> LeaseSettings:
        def positive(key: str, default: int) -> int:
            raw = properties.get(key)
            if raw is None:
                return default
            try:
                value = int(str(raw).strip())
            except ValueError:
                raise ValidationError(f"catalog property {key!r} must be an integer, got {raw!r}") from None
            if value <= 0:
                raise ValidationError(f"catalog property {key!r} must be positive, got {value}")
            return value

        duration = positive(LEASE_DURATION_MS, DEFAULT_LEASE_DURATION_MS)
        heartbeat = positive(
            LEASE_HEARTBEAT_INTERVAL_MS, min(DEFAULT_LEASE_HEARTBEAT_INTERVAL_MS, duration // 5)
        )
        if heartbeat >= duration:
            raise ValidationError(
                f"{LEASE_HEARTBEAT_INTERVAL_MS} ({heartbeat}) must be shorter than {LEASE_DURATION_MS} "
                f"({duration}), or the lease expires between renewals"
            )
        label = properties.get(LEASE_OWNER_LABEL) or None
        return cls(duration, max(1, heartbeat), label)


def default_owner(label: str | None = None) -> str:
    """``hostname:pid`` (plus ``:label``): who holds a lease, as shown to whoever is refused."""
    owner = f"{socket.gethostname()}:{os.getpid()}"
    return f"{owner}:{label}" if label else owner


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def lease_held_error(info: LeaseInfo, operation: str, now_ms: int) -> LeaseHeld:
    """The error for a run of ``operation`` refused because ``info`` holds the lease."""
    left = max(0, info.expires_at_ms - now_ms) / 1000
    return LeaseHeld(
        f"cannot run {operation} on {info.table}: its maintenance lease is held by {info.owner} "
        f"(running {info.operation} since {_when(info.acquired_at_ms)}) until {_when(info.expires_at_ms)} "
        f"({left:.0f} s from now unless renewed)",
        holder=info.owner,
        operation=info.operation,
        expires_at_ms=info.expires_at_ms,
    )


# Leases this thread holds, by (catalog name, table): nested runs on the same table re-enter.
_held = threading.local()


# The snapshots that runs holding a lease in this process started from, by lease key
# (``MaintenanceLease.hold_snapshot``). Another process cannot expire while the lease is held
# (it is refused the lease); an expiry in this process re-enters the lease, and keeps these.
_run_snapshots: dict[tuple[str, str], set[int]] = {}
_run_snapshots_lock = threading.Lock()


def _held_keys() -> dict[tuple[str, str], LeaseInfo]:
    keys: dict[tuple[str, str], LeaseInfo] | None = getattr(_held, "keys", None)
    if keys is None:
        keys = _held.keys = {}
    return keys


class LeaseStore(Protocol):
    """The storage primitives a catalog provides for leases (``BaseCatalog`` declares them;
    the SQL and in-memory catalogs implement them)."""

    def _lease_acquire(
        self, ns: str, name: str, lease_id: str, owner: str, operation: str, duration_ms: int
    ) -> tuple[LeaseInfo, int]:
        """Insert the lease row, or take it over only where it has expired, atomically; return
        the row as it is afterwards (ours if ``lease_id`` matches) and the store's clock."""
        ...

    def _lease_renew(self, ns: str, name: str, lease_id: str, duration_ms: int) -> int | None:
        """Extend our lease to now + ``duration_ms``; its new expiry, or None when it is no
        longer ours (it expired and was taken over)."""
        ...

    def _lease_release(self, ns: str, name: str, lease_id: str) -> None:
        """End our lease now (the row stays, expired, as the record of the last run)."""
        ...

    def _lease_get(self, ns: str, name: str) -> tuple[LeaseInfo | None, int]:
        """The table's lease row (perhaps expired) and the store's clock."""
        ...


class MaintenanceLease(contextlib.AbstractContextManager["MaintenanceLease"]):
    """The lease on one table, held while the ``with`` block runs (``LeaseHeld`` on entry if
    another run holds it) and renewed in the background until the block ends.

    ``info`` is the lease as last acquired or renewed; ``lost`` turns true if a renewal found
    it taken over (possible only after the heartbeat failed for a whole lease duration).
    """

    def __init__(
        self,
        store: LeaseStore,
        catalog_name: str,
        ns: str,
        name: str,
        operation: str,
        *,
        owner: str,
        settings: LeaseSettings,
    ) -> None:
        self._store = store
        self._key = (catalog_name, f"{ns}.{name}")
        self._ns = ns
        self._name = name
        self.table = f"{ns}.{name}"
        self.operation = operation
        self.owner = owner
        self.settings = settings
        self.lease_id = uuid.uuid4().hex
        self.info: LeaseInfo | None = None
        self.lost = False
        self.reentered = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the context manager ---------------------------------------------------------------------
    def __enter__(self) -> MaintenanceLease:
        held = _held_keys()
        outer = held.get(self._key)
        if outer is not None:
            self.info, self.reentered = outer, True
            return self
        row, now = self._store._lease_acquire(
            self._ns, self._name, self.lease_id, self.owner, self.operation, self.settings.duration_ms
        )
        if row.lease_id != self.lease_id:
            raise lease_held_error(row, self.operation, now)
        self.info = row
        held[self._key] = row
        self._thread = threading.Thread(target=self._heartbeat, name=f"firn-lease-{self.table}", daemon=True)
        self._thread.start()
        logger.info("maintenance lease on %s acquired by %s for %s", self.table, self.owner, self.operation)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.reentered:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        _held_keys().pop(self._key, None)
        with _run_snapshots_lock:
            _run_snapshots.pop(self._key, None)
        try:
            self._store._lease_release(self._ns, self._name, self.lease_id)
        except Exception as e:  # the lease then simply expires
            logger.warning("could not release the maintenance lease on %s: %s", self.table, e)

    # -- the starting snapshots of the runs holding the lease -------------------------------------
    def hold_snapshot(self, snapshot_id: int | None) -> None:
        """Record ``snapshot_id`` as the starting snapshot of a run holding this lease, until
        the lease is released: expiry keeps it (see :meth:`held_snapshots`)."""
        if snapshot_id is None:
            return
        with _run_snapshots_lock:
            _run_snapshots.setdefault(self._key, set()).add(snapshot_id)

    def held_snapshots(self) -> frozenset[int]:
        """The starting snapshots of the runs holding this lease (this one and the runs it
        re-entered), which expiry must keep."""
        with _run_snapshots_lock:
            return frozenset(_run_snapshots.get(self._key, ()))

    # -- renewal -------------------------------------------------------------------------------------
    def renew(self) -> bool:
        """Extend the lease now (the heartbeat does this on its own); False if it was lost."""
        expires = self._store._lease_renew(self._ns, self._name, self.lease_id, self.settings.duration_ms)
        if expires is None:
            self.lost = True
            return False
        if self.info is not None:
            self.info = LeaseInfo(
                self.info.table,
                self.info.owner,
                self.info.operation,
                self.info.lease_id,
                self.info.acquired_at_ms,
                expires,
            )
        return True

    def _heartbeat(self) -> None:
        interval = self.settings.heartbeat_interval_ms / 1000
        while not self._stop.wait(interval):
            try:
                if not self.renew():
                    logger.warning(
                        "maintenance lease on %s held by %s was taken over after it expired; "
                        "another run may now work on the table",
                        self.table,
                        self.owner,
                    )
                    return
            except Exception as e:  # a database hiccup: try again at the next beat
                logger.warning("could not renew the maintenance lease on %s: %s", self.table, e)


def acquire_lease(
    store: LeaseStore,
    catalog_name: str,
    ns: str,
    name: str,
    operation: str,
    *,
    properties: Mapping[str, str],
    owner: str | None = None,
    duration_ms: int | None = None,
    heartbeat_interval_ms: int | None = None,
) -> MaintenanceLease:
    """A :class:`MaintenanceLease` for ``ns.name`` (acquired when its ``with`` block starts)."""
    settings = LeaseSettings.parse(properties)
    if duration_ms is not None or heartbeat_interval_ms is not None:
        merged = dict(properties)
        if duration_ms is not None:
            merged[LEASE_DURATION_MS] = str(duration_ms)
            if heartbeat_interval_ms is None and LEASE_HEARTBEAT_INTERVAL_MS not in properties:
                merged[LEASE_HEARTBEAT_INTERVAL_MS] = str(max(1, duration_ms // 5))
        if heartbeat_interval_ms is not None:
            merged[LEASE_HEARTBEAT_INTERVAL_MS] = str(heartbeat_interval_ms)
        settings = LeaseSettings.parse(merged)
    return MaintenanceLease(
        store,
        catalog_name,
        ns,
        name,
        operation,
        owner=owner or default_owner(settings.owner_label),
        settings=settings,
    )


def current_holder(info: LeaseInfo | None, now_ms: int) -> LeaseInfo | None:
    """``info`` if it is an unexpired lease, else None."""
    return info if info is not None and info.expires_at_ms > now_ms else None


__all__ = [
    "DEFAULT_LEASE_DURATION_MS",
    "DEFAULT_LEASE_HEARTBEAT_INTERVAL_MS",
    "LEASE_DURATION_MS",
    "LEASE_HEARTBEAT_INTERVAL_MS",
    "LEASE_OWNER_LABEL",
    "LeaseInfo",
    "LeaseSettings",
    "LeaseStore",
    "MaintenanceLease",
    "acquire_lease",
    "current_holder",
    "default_owner",
    "lease_held_error",
]
