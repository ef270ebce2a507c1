"""Where maintenance work runs: work units, the :class:`Runner` protocol, the local runner.

A plan is split into **work units**: JSON objects, each executable on another machine from its
JSON alone (DESIGN "Maintenance"). A unit names its ``kind``, the table's ``metadata-location``
and the ``io`` properties to build a FileIO from, and carries a kind-specific ``payload``; its
result is a JSON object too. Each operation module has one module-level function per unit kind
(so Spark can ship it by reference), built on :func:`execute_unit`; ``firn.maintenance.units``
maps kinds to those functions. A runner maps the function over the units:
:class:`LocalRunner` with threads in this process, ``firn.spark.SparkRunner`` as Spark tasks.
Either way the driver commits the results.

In the process that made the plan, a unit runs on the table's own FileIO (registered with
:func:`local_io` for the duration of the run), so in-memory tables work with the local
runner; elsewhere the FileIO is rebuilt from the unit's ``io`` properties.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Protocol

from firn.core.metadata_io import read_metadata
from firn.errors import ValidationError
from firn.io.base import FileIO
from firn.io.pyarrow_io import load_file_io
from firn.spec.table_metadata import TableMetadata
from firn.util.secrets import mask_secrets

WorkUnit = dict[str, Any]
UnitResult = dict[str, Any]
UnitFunction = Callable[[WorkUnit], UnitResult]

# Work units are I/O bound (object stores, Parquet encode/decode releasing the GIL).
DEFAULT_LOCAL_WORKERS = min(32, 4 * (os.cpu_count() or 2))


class Runner(Protocol):
    """Runs work units and returns their results in the same order."""

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]: ...


# ``progress(done, total)``: called as a batch of units starts (done 0) and as each finishes.
ProgressCallback = Callable[[int, int], None]


class LocalRunner:
    """Runs units on a thread pool in this process (sized for I/O by default).

    ``progress``, if given, is called with ``(0, n)`` when a batch of ``n`` units starts and
    ``(done, n)`` as each finishes (the CLI feeds a progress bar with it)."""

    def __init__(self, max_workers: int | None = None, *, progress: ProgressCallback | None = None) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValidationError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers or DEFAULT_LOCAL_WORKERS
        self.progress = progress

    def map(self, fn: UnitFunction, units: Sequence[WorkUnit]) -> list[UnitResult]:
        report = self.progress
        total = len(units)
        if report is not None:
            report(0, total)
        if total <= 1 or self.max_workers == 1:
            out = []
            for u in units:
                out.append(fn(u))
                if report is not None:
                    report(len(out), total)
            return out
        with ThreadPoolExecutor(max_workers=min(self.max_workers, total)) as pool:
            if report is None:
                return list(pool.map(fn, units))
            futures = [pool.submit(fn, u) for u in units]
            for done, _ in enumerate(as_completed(futures), 1):
                report(done, total)
            return [f.result() for f in futures]

    def __repr__(self) -> str:
        return f"LocalRunner(max_workers={self.max_workers})"


# -- handlers --------------------------------------------------------------------------------------
class UnitContext:
    """What a handler gets besides its payload: the FileIO and the table metadata."""

    def __init__(self, io: FileIO, metadata_location: str) -> None:
        self.io = io
        self.metadata_location = metadata_location
        self._metadata: TableMetadata | None = None

    @property
    def metadata(self) -> TableMetadata:
        """The table metadata the plan was made on (read once, on first use)."""
        if self._metadata is None:
            self._metadata = _read_metadata_cached(self.io, self.metadata_location)
        return self._metadata


UnitHandler = Callable[[UnitContext, dict[str, Any]], UnitResult]


class _MaskedUnit(dict[str, Any]):
    """A work unit as made on the driver: a plain dict (JSON, picklable) whose ``repr()``
    masks the credentials among its ``io`` properties."""

    def __repr__(self) -> str:
        return mask_secrets(super().__repr__())

    __str__ = __repr__


def make_unit(
    kind: str, *, io: FileIO, metadata_location: str, payload: Mapping[str, Any], io_ref: str | None = None
) -> WorkUnit:
    """A JSON work unit; ``io_ref`` is the :func:`local_io` registration of the driver's FileIO."""
    unit: WorkUnit = _MaskedUnit(
        {
            "kind": kind,
            "metadata-location": metadata_location,
            "io": dict(io.properties),
            "payload": dict(payload),
        }
    )
    if io_ref is not None:
        unit["io-ref"] = io_ref
    return unit


def execute_unit(handler: UnitHandler, unit: WorkUnit) -> UnitResult:
    """Run ``handler`` on ``unit``'s payload with the unit's FileIO and table metadata."""
    location = unit.get("metadata-location")
    if not isinstance(location, str):
        raise ValidationError(f"work unit {unit.get('kind')!r} has no metadata-location")
    ref = unit.get("io-ref")
    with _local_lock:
        io = _local_ios.get(str(ref)) if ref is not None else None
    if io is None:
        io = _io_for(unit.get("io") or {}, location)
    return handler(UnitContext(io, location), dict(unit.get("payload") or {}))


# -- FileIO: the driver's own, or rebuilt from properties (cached per process) ------------------------
_local_ios: dict[str, FileIO] = {}
_local_lock = threading.Lock()
_counter = itertools.count()


@contextlib.contextmanager
def local_io(io: FileIO) -> Iterator[str]:
    """Register ``io`` for units run in this process; yields the reference to put in units."""
    ref = f"{os.getpid()}-{next(_counter)}"
    with _local_lock:
        _local_ios[ref] = io
    try:
        yield ref
    finally:
        with _local_lock:
            _local_ios.pop(ref, None)


_io_cache: dict[str, FileIO] = {}
_metadata_cache: dict[tuple[int, str], TableMetadata] = {}


def _io_for(properties: Mapping[str, str], location: str) -> FileIO:
    key = json.dumps(dict(properties), sort_keys=True)
    with _local_lock:
        io = _io_cache.get(key)
        if io is None:
            io = _io_cache[key] = load_file_io(dict(properties), location)
    return io


def _read_metadata_cached(io: FileIO, location: str) -> TableMetadata:
    # Metadata files are immutable: a location always holds the same metadata.
    key = (id(io), location)
    with _local_lock:
        cached = _metadata_cache.get(key)
    if cached is not None:
        return cached
    metadata = read_metadata(io, location)
    with _local_lock:
        if len(_metadata_cache) > 64:
            _metadata_cache.clear()
        _metadata_cache[key] = metadata
    return metadata


__all__ = [
    "DEFAULT_LOCAL_WORKERS",
    "LocalRunner",
    "ProgressCallback",
    "Runner",
    "UnitContext",
    "UnitFunction",
    "UnitHandler",
    "UnitResult",
    "WorkUnit",
    "execute_unit",
    "local_io",
    "make_unit",
]
