"""Conditions on ``table.health()``: ``{"small_files": ">= 50", "delete_ratio": "> 0.1"}``.

A condition names one numeric :class:`~firn.maintenance.health.TableHealth` metric (or the
derived ``small_file_ratio``) and compares it with a number using ``>=``, ``>``, ``<=``,
``<``, ``==`` or ``!=``. Conditions are parsed once, when the sensor or trigger is built, so a
misspelt metric or a malformed expression is an error at DAG parse time that lists what is
valid.

Some metrics are undefined for some tables (the ``root_*`` metrics below format version 4,
``oldest_snapshot_age_ms`` for a table without snapshots): a condition on an undefined metric
is not met. When that makes the whole set impossible to meet (``match="all"`` with one such
condition, or ``match="any"`` with only such conditions), :func:`evaluate` says so, and the
sensor fails instead of waiting forever.
"""

from __future__ import annotations

import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from firn.errors import ValidationError
from firn.maintenance.health import TableHealth

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
# Two-character operators first, so ">=" is not read as ">" followed by "=...".
_EXPRESSION = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
# Identifiers of the measurement, not properties of the table to wait on.
_NOT_METRICS = frozenset({"table", "snapshot_id", "measured_at_ms"})
DERIVED_METRICS = ("small_file_ratio",)


def _is_numeric(annotation: object) -> bool:
    hint = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return any(h in (int, float) for h in hint) and all(h in (int, float, type(None)) for h in hint)


def _health_metrics() -> tuple[str, ...]:
    hints = typing.get_type_hints(TableHealth)
    names = [f.name for f in fields(TableHealth) if f.name not in _NOT_METRICS and _is_numeric(hints[f.name])]
    return tuple(sorted([*names, *DERIVED_METRICS]))


HEALTH_METRICS: tuple[str, ...] = _health_metrics()
"""Every metric a condition may name, sorted."""


@dataclass(frozen=True, slots=True)
class HealthCondition:
    """One parsed condition: ``metric op threshold``."""

    metric: str
    op: str
    threshold: float

    @property
    def expression(self) -> str:
        """The condition as written back: ``">= 200"`` (integral thresholds without ``.0``)."""
        value = int(self.threshold) if self.threshold.is_integer() else self.threshold
        return f"{self.op} {value}"

    def test(self, value: float) -> bool:
        """Whether ``value`` satisfies the condition."""
        return _OPERATORS[self.op](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.metric} {self.expression}"


def parse_conditions(conditions: Mapping[str, str]) -> tuple[HealthCondition, ...]:
    """Parse ``{"metric": "op number"}``; raises :class:`ValidationError` naming what is wrong."""
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
                f"condition on {metric!r} is {expression!r}; expected '<op> <number>' with op one of "
                f"{', '.join(_OPERATORS)} (e.g. '>= 50' or '> 0.1')"
            )
        threshold = float(found.group(2))
        if not math.isfinite(threshold):
            raise ValidationError(f"condition on {metric!r}: threshold {found.group(2)!r} is not finite")
        parsed.append(HealthCondition(metric=metric, op=found.group(1), threshold=threshold))
    return tuple(parsed)


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
    """The outcome of testing conditions against one health measurement.

    ``met``: conditions that hold; ``undefined``: conditions whose metric the table does not
    have; ``satisfied``: whether the set holds under the match mode; ``impossible``: whether it
    can never hold for this table (because of undefined metrics).
    """

    satisfied: bool
    met: tuple[HealthCondition, ...]
    undefined: tuple[HealthCondition, ...]
    impossible: bool

    def describe(self, conditions: tuple[HealthCondition, ...], health: Mapping[str, Any]) -> str:
        """``small_files = 12 (wants >= 50); delete_ratio = 0.2 (wants > 0.1)`` for logs."""
        parts = []
        for c in conditions:
            value = metric_value(health, c.metric)
            shown = "undefined" if value is None else f"{value:g}"
            mark = "ok" if c in self.met else "not yet"
            parts.append(f"{c.metric} = {shown} (wants {c.expression}: {mark})")
        return "; ".join(parts)


def evaluate(health: Mapping[str, Any], conditions: tuple[HealthCondition, ...], match: Match) -> Evaluation:
    """Test ``conditions`` against a ``TableHealth.to_dict()`` under ``match``."""
    met = []
    undefined = []
    for c in conditions:
        value = metric_value(health, c.metric)
        if value is None:
            undefined.append(c)
        elif c.test(value):
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
    names = ", ".join(c.metric for c in evaluation.undefined)
    return (
        f"table {table!r} (format version {health.get('format_version')}) does not define "
        f"{names}, so the health conditions (match={match!r}) can never be met; root_* metrics "
        f"exist only on format version 4 tables, oldest_snapshot_age_ms only once a snapshot exists"
    )


__all__ = [
    "DERIVED_METRICS",
    "HEALTH_METRICS",
    "MATCH_MODES",
    "Evaluation",
    "HealthCondition",
    "Match",
    "check_match",
    "evaluate",
    "impossible_message",
    "metric_value",
    "parse_conditions",
]
