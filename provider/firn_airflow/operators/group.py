"""``firn_table_maintenance``: the six maintenance operators of a table as one TaskGroup, chained
in nightly order (``firn.maintenance.registry.nightly_order()``): rewrite deletion vectors ->
compact -> flush the V4 root -> rewrite manifests -> expire snapshots -> remove orphan files.
Deletes are merged before compaction so it reads fewer delete files; compaction comes before
the flush and the manifest rewrite, which then see its output; expiry after them frees the
files they replaced the same night; orphans last.

Each task after the first runs once its predecessor is done, whatever its outcome
(``TriggerRule.ALL_DONE``): a skipped step (not recommended, lease held, no V4 root) must not
skip the rest, and every step re-reads the table and validates against it, so a failed step
leaves nothing the next one could trip on -- it only means less to gain.

``table`` may be a name (``"db.events"``), a template, a list of names or an ``XComArg``
(``FirnHook.list_tables`` through a ``@task``): for the last two, every step is mapped over the
tables (``.partial(...).expand(table=...)``), the steps still in order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from airflow.sdk import TaskGroup, XComArg

from firn.errors import ValidationError
from firn.maintenance import registry
from firn.maintenance.operations import REMOVE_ORPHAN_FILES
from firn.maintenance.options import normalize_name
from firn_airflow.constants import DEFAULT_CONN_ID
from firn_airflow.operators.base import FirnMaintenanceBaseOperator
from firn_airflow.operators.maintenance import operator_for
from firn_airflow.operators.outlets import is_template
from firn_airflow.operators.recommended import operation_name

if TYPE_CHECKING:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

# Arguments that differ per operation and go only to the operators that take them.
_PER_OPERATION_KWARGS = {
    "older_than": ("expire_snapshots", "remove_orphan_files"),
    "retain_last": ("expire_snapshots",),
}


def _group_id(table: object, group_id: str | None) -> str:
    if group_id:
        return group_id
    if isinstance(table, str) and not is_template(table):
        return "maintain_" + re.sub(r"[^0-9A-Za-z_]", "_", table)
    raise ValidationError(
        "firn_table_maintenance: pass group_id when the table is templated, a list or mapped"
    )


def firn_table_maintenance(
    table: str | list[str] | XComArg | Any,
    *,
    firn_conn_id: str = DEFAULT_CONN_ID,
    execution: str = "spark",
    orphans_delete: bool | str = False,
    group_id: str | None = None,
    operations: list[str] | None = None,
    operation_options: Mapping[str, Mapping[str, Any]] | None = None,
    **common: Any,
) -> TaskGroup:
    """A TaskGroup of maintenance operators on ``table``, in nightly order (module docstring).

    :param table: a table name (templated), a list of names or an ``XComArg`` of names (each
        step is then mapped over them).
    :param firn_conn_id: the Firn connection.
    :param execution: ``"spark"``, ``"worker"`` or ``"auto"`` for every step.
    :param orphans_delete: orphan removal only lists orphans unless this is True (or renders
        to ``"true"``: it may be a template such as ``"{{ params.orphans_delete }}"``); it is
        the step's ``delete`` option (Iceberg's ``dry-run`` negated).
    :param group_id: the TaskGroup's id (default ``maintain_<table>``; required unless the
        table is a plain name).
    :param operations: only these steps (names or short names), default all six.
    :param operation_options: options per step, keyed by operation, e.g.
        ``{"rewrite_data_files": {"min-input-files": 2}}``.
    :param common: every other operator argument, for every step (``skip_if_not_recommended``,
        ``on_lease_held``, ``spark``, ...); ``older_than`` goes to expiry and
        orphan removal, ``retain_last`` to expiry.
    Task ids are the operation names (``rewrite_data_files``, ...) inside the group.
    """
    if "options" in common:
        raise ValidationError("firn_table_maintenance: options differ per step; pass operation_options")
    per_op = {operation_name(k): dict(v) for k, v in (operation_options or {}).items()}
    nightly = registry.nightly_order()
    chosen = [operation_name(o) for o in operations] if operations is not None else nightly
    steps = [op for op in nightly if op in chosen]
    mapped = isinstance(table, list | tuple | XComArg)
    with TaskGroup(group_id=_group_id(table, group_id)) as group:
        previous: FirnMaintenanceBaseOperator | MappedOperator | None = None
        for op in steps:
            kwargs: dict[str, Any] = {
                k: v
                for k, v in common.items()
                if k not in _PER_OPERATION_KWARGS or op in _PER_OPERATION_KWARGS[k]
            }
            options = dict(per_op.get(op, {}))
            if op == REMOVE_ORPHAN_FILES and not any(
                normalize_name(k) in ("delete", "dry-run") for k in options
            ):
                options["delete"] = orphans_delete
            kwargs.update(task_id=op, firn_conn_id=firn_conn_id, execution=execution, options=options or None)
            if previous is not None:
                kwargs.setdefault("trigger_rule", "all_done")
            cls = operator_for(op)
            task: FirnMaintenanceBaseOperator | MappedOperator
            if mapped:
                task = cls.partial(**kwargs).expand(table=list(table) if isinstance(table, tuple) else table)
            else:
                # A name, a template or a mapped task group's argument: a name once the task runs.
                task = cls(table=cast("str", table), **kwargs)
            if previous is not None:
                previous >> task
            previous = task
    return group


__all__ = ["firn_table_maintenance"]
