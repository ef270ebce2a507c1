"""One shape for every maintenance operation (DESIGN "Maintenance", STYLE 7):

``table.maintenance.<op>(**options)`` is an operation; ``.plan()`` is the dry run, a frozen
:class:`MaintenancePlan` that serializes to JSON; ``.run(runner=None)`` executes the plan's
work units through a :class:`~firn.maintenance.runner.Runner` and commits on the driver,
returning a typed, JSON-serializable :class:`MaintenanceResult`. A plan made earlier or
elsewhere runs with ``plan.execute(table, runner)``, which re-validates it against the table
as it is now and refuses a stale plan (:class:`~firn.errors.StalePlan`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, runtime_checkable

from firn.core.handle import TableHandle
from firn.errors import StalePlan, ValidationError
from firn.maintenance.options import MaintenanceOptions
from firn.maintenance.runner import LocalRunner, Runner, UnitFunction, UnitResult, WorkUnit, local_io
from firn.maintenance.serde import from_jsonable, to_jsonable
from firn.spec.deletion_scope import DeletionScope


class MaintainedTable(TableHandle, Protocol):
    """A table as maintenance sees it: the core's handle plus the per-table maintenance lease
    and deletion scope (implemented by the ``Table`` front object over its catalog)."""

    def deletion_scope(self) -> DeletionScope:
        """Where a destructive step on this table may delete: its own places minus every other
        catalog entry's place overlapping them (``firn.spec.deletion_scope``)."""
        ...

    def maintenance_lease(self, operation: str) -> contextlib.AbstractContextManager[object]:
        """Hold the table's maintenance lease while the block runs (``LeaseHeld`` if another
        run holds it)."""
        ...


@runtime_checkable
class RunLease(Protocol):
    """What a run asks of the lease it holds (``firn.catalog.lease.MaintenanceLease``): to keep
    the snapshot it started from while it runs, and which snapshots the runs holding the lease
    started from (expiry keeps them)."""

    def hold_snapshot(self, snapshot_id: int | None) -> None: ...

    def held_snapshots(self) -> frozenset[int]: ...


# While a run executes: the starting snapshots of the runs holding its table's lease.
_HELD_SNAPSHOTS: ContextVar[frozenset[int]] = ContextVar("firn_held_snapshots", default=frozenset())


def snapshots_held_by_runs() -> frozenset[int]:
    """The starting snapshots of the maintenance runs holding the lease of the table the
    current run executes on (its own included): expiry never removes them."""
    return _HELD_SNAPSHOTS.get()


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """Something an operation left alone, and why (a file group below ``min-input-files``,
    a file referenced by a snapshot still retained, ...)."""

    item: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class MaintenanceResult:
    """What a run did. ``snapshot_id`` is the snapshot it committed (None: no commit)."""

    OPERATION: ClassVar[str] = ""
    # The figures OpenLineage reports (``files_rewritten``, ``bytes_added``, ...) -> the field
    # of this result holding each (a field holding a mapping is summed).
    LINEAGE: ClassVar[Mapping[str, str]] = {}

    table: str
    snapshot_id: int | None = None
    duration_ms: int = 0
    skipped: tuple[Skipped, ...] = ()

    def lineage_figures(self) -> dict[str, int]:
        """The lineage figures of this run by name (see :attr:`LINEAGE`)."""
        out: dict[str, int] = {}
        for figure, name in self.LINEAGE.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                value = sum(int(v) for v in value.values())
            out[figure] = int(value)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operation": self.OPERATION}
        out.update(to_jsonable(self))
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        body = {k: v for k, v in data.items() if k != "operation"}
        return from_jsonable(cls, body, where=f"{cls.__name__} result")


# Lineage figures shared by several results (see ``MaintenanceResult.LINEAGE``).
DELETE_REWRITE_LINEAGE: Mapping[str, str] = {
    "files_rewritten": "rewritten_delete_files_count",
    "bytes_rewritten": "rewritten_bytes_count",
    "files_added": "added_delete_files_count",
    "bytes_added": "added_bytes_count",
}
DELETION_LINEAGE: Mapping[str, str] = {"files_deleted": "deleted_files", "bytes_deleted": "deleted_bytes"}


@dataclass(frozen=True)
class PlanWork:
    """How much work a plan holds, for deciding where it runs (``execution="auto"`` in the
    Airflow provider): bytes of data and delete files it reads and rewrites, bytes of manifests
    it rewrites, and files it deletes. A plan that only changes metadata (a flush of the root,
    an expiry that frees few files) holds none of the first and few of the last."""

    data_bytes: int = 0
    metadata_bytes: int = 0
    files_to_delete: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


_PLAN_TYPES: dict[str, type[MaintenancePlan]] = {}

R = TypeVar("R", bound=MaintenanceResult)


@dataclass(frozen=True, kw_only=True)
class MaintenancePlan(ABC, Generic[R]):
    """A frozen, JSON-serializable plan: what an operation would do to the table as planned.

    ``metadata_location`` / ``snapshot_id`` identify the table state it was planned on and
    ``options`` the option values it used (table-property defaults resolved); each plan class
    narrows it to its operation's options dataclass, which serializes by Iceberg's names.
    """

    OPERATION: ClassVar[str] = ""

    table: str
    table_uuid: str
    metadata_location: str
    snapshot_id: int | None
    options: MaintenanceOptions

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.OPERATION:
            _PLAN_TYPES[cls.OPERATION] = cls

    # -- JSON --------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operation": self.OPERATION}
        out.update(to_jsonable(self))
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> MaintenancePlan[Any]:
        """The plan ``data`` describes (its ``operation`` picks the plan type)."""
        operation = data.get("operation")
        cls = _PLAN_TYPES.get(str(operation))
        if cls is None:
            raise ValidationError(
                f"not a maintenance plan: operation {operation!r}; known: {sorted(_PLAN_TYPES)}"
            )
        body = {k: v for k, v in data.items() if k != "operation"}
        return from_jsonable(cls, body, where=f"{operation} plan")

    @staticmethod
    def from_json(text: str) -> MaintenancePlan[Any]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValidationError(f"a maintenance plan must be JSON: {e}") from e
        if not isinstance(data, dict):
            raise ValidationError("a maintenance plan must be a JSON object")
        return MaintenancePlan.from_dict(data)

    # -- what subclasses provide ----------------------------------------------------------------
    @property
    @abstractmethod
    def is_noop(self) -> bool:
        """Nothing to do: running the plan commits nothing."""

    @abstractmethod
    def describe(self) -> str:
        """Human-readable lines: what would change, and what is left alone and why."""

    def work(self) -> PlanWork:
        """How much work the plan holds (see :class:`PlanWork`); none by default (a plan that
        only writes new metadata)."""
        return PlanWork()

    def units(self, table: MaintainedTable, io_ref: str) -> list[WorkUnit]:
        """The plan's work units (run through a runner before the commit); none by default."""
        return []

    def default_runner(self) -> Runner:
        """The runner ``execute`` uses when none is given (operations size it from their
        options, e.g. ``max_concurrent_deletes``)."""
        return LocalRunner()

    def unit_function(self) -> UnitFunction | None:
        """The module-level function that executes the plan's work units, before and after the
        commit (dispatching on the unit's ``kind``); None when there are none."""
        return None

    def validate(self, table: MaintainedTable) -> None:
        """Refuse a stale plan: the table must be the one planned on, and the snapshot planned
        on must still exist. Operations add their own checks (files still live, ...)."""
        md = table.metadata
        if str(md.table_uuid) != self.table_uuid:
            raise StalePlan(
                f"{self.OPERATION} plan for {self.table} was made for table UUID {self.table_uuid}; "
                f"{table.name} is now {md.table_uuid} (dropped and re-created?); plan again"
            )
        if self.snapshot_id is not None and md.snapshot_by_id(self.snapshot_id) is None:
            raise StalePlan(
                f"{self.OPERATION} plan for {self.table} was made on snapshot {self.snapshot_id}, "
                "which has been expired since; plan again"
            )

    @abstractmethod
    def commit(self, table: MaintainedTable, results: Sequence[UnitResult]) -> R:
        """Commit what the units produced (or, without units, the plan itself) on the driver."""

    def cleanup_units(self, table: MaintainedTable, result: R, io_ref: str) -> list[WorkUnit]:
        """Work units to run after the commit landed (e.g. deleting files no snapshot reaches
        any more); none by default. They run through the same runner."""
        return []

    def finish(self, result: R, cleanup: Sequence[UnitResult]) -> R:
        """The final result, given what the cleanup units reported."""
        return result

    # -- running -------------------------------------------------------------------------------------
    def execute(self, table: MaintainedTable, runner: Runner | None = None) -> R:
        """Run the plan on ``table`` (re-validated first) and commit; see the module docstring."""
        started = time.monotonic()
        with table.maintenance_lease(self.OPERATION) as lease:
            table.refresh()
            self.validate(table)
            held: frozenset[int] = frozenset()
            if isinstance(lease, RunLease):
                lease.hold_snapshot(self.snapshot_id)
                held = lease.held_snapshots()
            token = _HELD_SNAPSHOTS.set(held)
            try:
                runner = runner or self.default_runner()
                with local_io(table.io) as io_ref:
                    results = self._run_units(runner, self.units(table, io_ref))
                    result = self.commit(table, results)
                    cleanup = self._run_units(runner, self.cleanup_units(table, result, io_ref))
                    result = self.finish(result, cleanup)
            finally:
                _HELD_SNAPSHOTS.reset(token)
        return dataclasses.replace(result, duration_ms=int((time.monotonic() - started) * 1000))

    def _run_units(self, runner: Runner, units: list[WorkUnit]) -> list[UnitResult]:
        if not units:
            return []
        fn = self.unit_function()
        if fn is None:
            raise ValidationError(f"{self.OPERATION} plan has work units but no unit function")
        return runner.map(fn, units)

    def __str__(self) -> str:
        state = f"snapshot {self.snapshot_id}" if self.snapshot_id is not None else "an empty table"
        head = f"{self.OPERATION} on {self.table} ({state})" + (": nothing to do" if self.is_noop else "")
        body = self.describe()
        return head + ("\n" + body if body else "")


P = TypeVar("P", bound=MaintenancePlan[Any])
OptionsT = TypeVar("OptionsT", bound=MaintenanceOptions)


class MaintenanceOperation(ABC, Generic[P, R, OptionsT]):
    """``table.maintenance.<op>(...)``: options checked now, ``plan()`` / ``run()`` later."""

    OPERATION: ClassVar[str] = ""

    def __init__(self, table: MaintainedTable, options: OptionsT) -> None:
        self.table = table
        self.options = options

    @abstractmethod
    def plan(self) -> P:
        """The dry run: what would be done, from the table as it is now. Nothing is written."""

    def run(self, runner: Runner | None = None) -> R:
        """Plan, execute the work units (``runner``: default a local thread pool) and commit."""
        result: R = self.plan().execute(self.table, runner)
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.table.name!r}, {self.options.given()!r})"


def dry_run_entry(plan: MaintenancePlan[Any]) -> dict[str, Any]:
    """A dry run's JSON (the CLI, the Spark job's ``--dry-run``, an Airflow dry run): the plan's
    ``to_dict()`` marked ``dry_run`` with its human-readable ``description``, as plain JSON."""
    entry = plan.to_dict()
    entry.update({"dry_run": True, "description": str(plan)})
    out: dict[str, Any] = json.loads(json.dumps(entry))
    return out


def plan_identity(table: TableHandle, snapshot_id: int | None, options: MaintenanceOptions) -> dict[str, Any]:
    """The common fields of a plan for ``table`` planned on ``snapshot_id`` with the resolved
    ``options``."""
    md = table.metadata
    return {
        "table": table.name,
        "table_uuid": str(md.table_uuid),
        "metadata_location": table.metadata_location,
        "snapshot_id": snapshot_id,
        "options": options,
    }


__all__ = [
    "PlanWork",
    "DELETE_REWRITE_LINEAGE",
    "DELETION_LINEAGE",
    "MaintainedTable",
    "MaintenanceOperation",
    "MaintenancePlan",
    "MaintenanceResult",
    "RunLease",
    "Skipped",
    "dry_run_entry",
    "plan_identity",
    "snapshots_held_by_runs",
]
