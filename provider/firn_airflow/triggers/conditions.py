"""Conditions on a table's health: ``{"small_files": ">= 50", "delete_ratio": "> 0.1"}``.

A condition names one numeric :class:`~firn.maintenance.health.TableHealth` metric (or the
derived ``small_file_ratio``) and compares it using ``>=``, ``>``, ``<=``, ``<``, ``==`` or
``!=`` with

* a number: ``"root_data_files": ">= 200"``;
* or a property of the table itself: ``"root_data_files": ">= property commit.root.max-data-files"``
  -- the table's own value of that property, or Firn's default for it when the table does not
  set it, read at every poll (so the sensor follows ``ALTER TABLE ... SET TBLPROPERTIES``). A
  property that Firn does not declare must be set on the table and be a number.

Besides metric conditions, :class:`Recommended` ``"flush_root"`` holds while
``table.maintenance.recommend()`` lists that operation (the recommendation's own thresholds,
``commit.root.*`` and ``maintenance.*``, decide). Conditions are parsed once, when the sensor
or trigger is built, so a misspelt metric, operation or a malformed expression is an error at
DAG parse time that lists what is valid.

Some metrics are undefined for some tables (the ``root_*`` metrics below format version 4,
``oldest_snapshot_age_ms`` for a table without snapshots): a condition on an undefined metric
is not met. When that makes the whole set impossible to meet (``match="all"`` with one such
condition, or ``match="any"`` with only such conditions), :func:`evaluate` says so, and the
sensor fails instead of waiting forever.

This module imports nothing of the Firn library but its errors: the triggerer builds triggers
in its event loop. What a poll reads from the table (health, properties, recommendations) is
:class:`Measurement`, made in the polling thread by
:func:`firn_airflow.triggers.health.measure`.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from firn.errors import ValidationError

Match = Literal["all", "any"]
MATCH_MODES: tuple[Match, ...] = ("all", "any")

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# Two-character operators first, so ">=" is not read as ">" followed by "=...".
_EXPRESSION = re.compile(rf"^\s*(>=|<=|==|!=|>|<)\s*(?:({_NUMBER})|property\s+([A-Za-z0-9_.\-]+))\s*$")
DERIVED_METRICS = ("small_file_ratio",)

HEALTH_METRICS: tuple[str, ...] = (
    "data_bytes",
    "data_files",
    "delete_files",
    "delete_ratio",
    "deletion_vectors",
    "equality_delete_files",
    "equality_deletes",
    "format_version",
    "last_commit_ms",
    "manifests",
    "oldest_snapshot_age_ms",
    "position_delete_files",
    "position_deletes",
    "records",
    "root_bytes",
    "root_data_files",
    "root_delete_files",
    "root_entries",
    "root_manifest_dvs",
    "small_file_ratio",
    "small_files",
    "small_manifests",
    "snapshots",
    "target_file_size_bytes",
)
"""Every metric a condition may name, sorted: the numeric fields of ``TableHealth`` (but the
measurement's identifiers ``snapshot_id`` and ``measured_at_ms``) and ``small_file_ratio``.
Written out rather than read from ``TableHealth``, whose module imports Arrow and the table
model; a test keeps the two equal."""

# The operations ``recommend()`` may list (``firn.maintenance.operations.NIGHTLY_ORDER``; a
# test keeps the two equal), for the same reason.
RECOMMENDABLE: tuple[str, ...] = (
    "rewrite_deletion_vectors",
    "rewrite_data_files",
    "flush_root",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
)


@dataclass(frozen=True, slots=True)
class Measurement:
    """What one poll read: ``health`` (``TableHealth.to_dict()``), the table's value of each
    property a condition compares with, and the operations ``recommend()`` listed (None when
    no condition asked)."""

    health: dict[str, Any]
    properties: dict[str, float] = field(default_factory=dict)
    recommended: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class HealthCondition:
    """One parsed condition: ``metric op threshold`` or ``metric op property <key>``."""

    metric: str
    op: str
    threshold: float | None = None
    table_property: str | None = None

    @property
    def expression(self) -> str:
        """The condition as written back: ``">= 200"`` (integral thresholds without ``.0``)
        or ``">= property commit.root.max-data-files"``."""
        if self.table_property is not None:
            return f"{self.op} property {self.table_property}"
        assert self.threshold is not None
        return f"{self.op} {_number(self.threshold)}"

    def limit(self, measurement: Measurement) -> float | None:
        """The number compared with: the threshold, or the table's value of the property."""
        if self.table_property is not None:
            return measurement.properties.get(self.table_property)
        return self.threshold

    def value(self, measurement: Measurement) -> float | None:
        return metric_value(measurement.health, self.metric)

    def holds(self, measurement: Measurement) -> bool | None:
        """Whether the condition holds; None when the metric is undefined for the table."""
        value, limit = self.value(measurement), self.limit(measurement)
        if value is None or limit is None:
            return None
        return _OPERATORS[self.op](value, limit)

    def test(self, value: float) -> bool:
        """Whether ``value`` satisfies a condition with a fixed threshold."""
        if self.threshold is None:
            raise ValidationError(f"{self}: the threshold is a table property; evaluate a Measurement")
        return _OPERATORS[self.op](value, self.threshold)

    def describe(self, measurement: Measurement) -> str:
        value = self.value(measurement)
        shown = "undefined" if value is None else f"{value:g}"
        wants = self.expression
        if self.table_property is not None:
            limit = self.limit(measurement)
            wants = f"{self.op} {'?' if limit is None else _number(limit)} (property {self.table_property})"
        return f"{self.metric} = {shown} (wants {wants}"

    def __str__(self) -> str:
        return f"{self.metric} {self.expression}"


@dataclass(frozen=True, slots=True)
class Recommended:
    """Holds while ``table.maintenance.recommend()`` lists ``operation``."""

    operation: str

    def holds(self, measurement: Measurement) -> bool | None:
        return measurement.recommended is not None and self.operation in measurement.recommended

    def describe(self, measurement: Measurement) -> str:
        listed = ", ".join(measurement.recommended or ()) or "nothing"
        return f"recommend() lists {listed} (wants {self.operation}"

    def __str__(self) -> str:
        return f"recommend() lists {self.operation}"


Condition = HealthCondition | Recommended


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def parse_conditions(conditions: Mapping[str, str] | None) -> tuple[HealthCondition, ...]:
    """Parse ``{"metric": "op number" | "op property <key>"}``; raises :class:`ValidationError`
    naming what is wrong. None gives no condition (see :func:`parse_condition_set`)."""
    if conditions is None:
        return ()
    if not isinstance(conditions, Mapping):
        raise ValidationError(
            f"health conditions must be a mapping of metric to expression, e.g. "
            f'{{"small_files": ">= 50"}}, got {type(conditions).__name__}'
        )
    if not conditions:
        raise ValidationError('health conditions are empty: give at least one, e.g. {"small_files": ">= 50"}')
    parsed = []
    for metric, expression in conditions.items():
        if metric not in HEALTH_METRICS:
            raise ValidationError(
                f"unknown health metric {metric!r}; valid metrics: {', '.join(HEALTH_METRICS)}"
            )
        if not isinstance(expression, str):
            raise ValidationError(
                f"condition on {metric!r} must be a string '<op> <number>' (e.g. '>= 50'), "
                f"got {type(expression).__name__} {expression!r}"
            )
        found = _EXPRESSION.match(expression)
        if found is None:
            raise ValidationError(
                f"condition on {metric!r} is {expression!r}; expected '<op> <number>' or "
                f"'<op> property <table property>' with op one of {', '.join(_OPERATORS)} "
                "(e.g. '>= 50', '> 0.1' or '>= property commit.root.max-data-files')"
            )
        if found.group(3) is not None:
            parsed.append(HealthCondition(metric=metric, op=found.group(1), table_property=found.group(3)))
            continue
        threshold = float(found.group(2))
        if not math.isfinite(threshold):
            raise ValidationError(f"condition on {metric!r}: threshold {found.group(2)!r} is not finite")
        parsed.append(HealthCondition(metric=metric, op=found.group(1), threshold=threshold))
    return tuple(parsed)


def parse_recommended(recommended: str | Iterable[str] | None) -> tuple[Recommended, ...]:
    """``recommend() lists X`` conditions, one per operation; unknown names list the valid ones."""
    if recommended is None:
        return ()
    names = [recommended] if isinstance(recommended, str) else list(recommended)
    for name in names:
        if name not in RECOMMENDABLE:
            raise ValidationError(
                f"recommended={name!r} is not an operation recommend() lists; valid: {', '.join(RECOMMENDABLE)}"
            )
    return tuple(Recommended(name) for name in dict.fromkeys(names))


def parse_condition_set(
    conditions: Mapping[str, str] | None, recommended: str | Iterable[str] | None = None
) -> tuple[Condition, ...]:
    """Metric conditions followed by recommendation conditions; at least one is needed."""
    parsed: tuple[Condition, ...] = (*parse_conditions(conditions), *parse_recommended(recommended))
    if not parsed:
        raise ValidationError(
            'health conditions are empty: give at least one, e.g. {"small_files": ">= 50"}, '
            'or recommended="flush_root"'
        )
    return parsed


def properties_needed(conditions: Iterable[Condition]) -> tuple[str, ...]:
    """The table properties the conditions compare with, in order, once each."""
    return tuple(
        dict.fromkeys(
            c.table_property for c in conditions if isinstance(c, HealthCondition) and c.table_property
        )
    )


def needs_recommend(conditions: Iterable[Condition]) -> bool:
    return any(isinstance(c, Recommended) for c in conditions)


def check_match(match: str) -> Match:
    """``match`` if it is ``"all"`` or ``"any"``; otherwise a :class:`ValidationError`."""
    if match not in MATCH_MODES:
        raise ValidationError(f"match must be 'all' or 'any', got {match!r}")
    return match


def metric_value(health: Mapping[str, Any], metric: str) -> float | None:
    """The value of ``metric`` in a ``TableHealth.to_dict()`` (None when undefined)."""
    if metric == "small_file_ratio":
        data_files = health.get("data_files") or 0
        return (health.get("small_files") or 0) / data_files if data_files else 0.0
    value = health.get(metric)
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The outcome of testing conditions against one measurement.

    ``met``: conditions that hold; ``undefined``: conditions whose metric the table does not
    have; ``satisfied``: whether the set holds under the match mode; ``impossible``: whether it
    can never hold for this table (because of undefined metrics).
    """

    satisfied: bool
    met: tuple[Condition, ...]
    undefined: tuple[Condition, ...]
    impossible: bool

    def describe(
        self, conditions: tuple[Condition, ...], measurement: Measurement | Mapping[str, Any]
    ) -> str:
        """``small_files = 12 (wants >= 50: not yet); ...`` for logs."""
        measured = _measurement(measurement)
        parts = []
        for c in conditions:
            mark = "ok" if c in self.met else "not yet"
            parts.append(f"{c.describe(measured)}: {mark})")
        return "; ".join(parts)


def _measurement(measurement: Measurement | Mapping[str, Any]) -> Measurement:
    if isinstance(measurement, Measurement):
        return measurement
    return Measurement(health=dict(measurement))


def evaluate(
    measurement: Measurement | Mapping[str, Any], conditions: tuple[Condition, ...], match: Match
) -> Evaluation:
    """Test ``conditions`` against a :class:`Measurement` (or a bare ``TableHealth.to_dict()``
    when no condition needs properties or recommendations) under ``match``."""
    measured = _measurement(measurement)
    met = []
    undefined = []
    for c in conditions:
        holds = c.holds(measured)
        if holds is None:
            undefined.append(c)
        elif holds:
            met.append(c)
    if match == "all":
        satisfied = len(met) == len(conditions)
        impossible = bool(undefined)
    else:
        satisfied = bool(met)
        impossible = len(undefined) == len(conditions)
    return Evaluation(satisfied=satisfied, met=tuple(met), undefined=tuple(undefined), impossible=impossible)


def impossible_message(table: str, health: Mapping[str, Any], evaluation: Evaluation, match: Match) -> str:
    """Why a condition set can never hold for ``table``."""
    names = ", ".join(c.metric for c in evaluation.undefined if isinstance(c, HealthCondition))
    return (
        f"table {table!r} (format version {health.get('format_version')}) does not define "
        f"{names}, so the health conditions (match={match!r}) can never be met; root_* metrics "
        f"exist only on format version 4 tables, oldest_snapshot_age_ms only once a snapshot exists"
    )


__all__ = [
    "DERIVED_METRICS",
    "HEALTH_METRICS",
    "MATCH_MODES",
    "RECOMMENDABLE",
    "Condition",
    "Evaluation",
    "HealthCondition",
    "Match",
    "Measurement",
    "Recommended",
    "check_match",
    "evaluate",
    "impossible_message",
    "metric_value",
    "needs_recommend",
    "parse_condition_set",
    "parse_conditions",
    "parse_recommended",
    "properties_needed",
]
