"""Health conditions: parsing (errors name the metric and list the valid ones) and evaluation
against the health of real tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn.maintenance.health import TableHealth
from firn_airflow.triggers.conditions import (
    HEALTH_METRICS,
    HealthCondition,
    check_match,
    evaluate,
    metric_value,
    parse_conditions,
)
from tests.firn_airflow.triggers.support import create_table, firn_connection

pytestmark = pytest.mark.airflow


def test_metrics_are_the_numeric_health_fields_plus_small_file_ratio() -> None:
    assert "small_files" in HEALTH_METRICS
    assert "delete_ratio" in HEALTH_METRICS
    assert "root_data_files" in HEALTH_METRICS
    assert "small_file_ratio" in HEALTH_METRICS
    # Identifiers of the measurement are not conditions.
    for name in ("table", "snapshot_id", "measured_at_ms"):
        assert name not in HEALTH_METRICS
    numeric = {f for f, v in TableHealth.__dataclass_fields__.items() if f not in ("table", "snapshot_id")}
    assert numeric - {"measured_at_ms"} <= set(HEALTH_METRICS)


def test_the_written_out_metric_list_is_exactly_the_numeric_health_fields() -> None:
    """conditions.py lists the metrics instead of importing TableHealth (the triggerer builds
    triggers in its event loop); the list must stay equal to what TableHealth defines."""
    import types
    import typing
    from dataclasses import fields

    def numeric(annotation: object) -> bool:
        hint = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
        return any(h in (int, float) for h in hint) and all(h in (int, float, type(None)) for h in hint)

    hints = typing.get_type_hints(TableHealth)
    derived = {
        f.name
        for f in fields(TableHealth)
        if f.name not in ("table", "snapshot_id", "measured_at_ms") and numeric(hints[f.name])
    }
    assert tuple(sorted([*derived, "small_file_ratio"])) == HEALTH_METRICS


def test_the_recommendable_operations_are_the_nightly_order() -> None:
    from firn.maintenance.operations import NIGHTLY_ORDER
    from firn_airflow.triggers.conditions import RECOMMENDABLE

    assert RECOMMENDABLE == NIGHTLY_ORDER


@pytest.mark.parametrize(
    ("expression", "op", "threshold"),
    [
        (">= 200", ">=", 200.0),
        (">=200", ">=", 200.0),
        ("  > 0.1 ", ">", 0.1),
        ("<= 5", "<=", 5.0),
        ("< .5", "<", 0.5),
        ("== 0", "==", 0.0),
        ("!= 3", "!=", 3.0),
        ("> 1e3", ">", 1000.0),
    ],
)
def test_parses_every_operator(expression: str, op: str, threshold: float) -> None:
    (condition,) = parse_conditions({"small_files": expression})
    assert condition == HealthCondition(metric="small_files", op=op, threshold=threshold)


def test_condition_writes_itself_back() -> None:
    big, ratio = parse_conditions({"root_data_files": ">=200", "delete_ratio": ">0.1"})
    assert str(big) == "root_data_files >= 200"
    assert str(ratio) == "delete_ratio > 0.1"


def test_unknown_metric_lists_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as info:
        parse_conditions({"small_file": ">= 50"})
    message = str(info.value)
    assert "unknown health metric 'small_file'" in message
    for metric in HEALTH_METRICS:
        assert metric in message


@pytest.mark.parametrize(
    ("expression", "wanted"),
    [
        ("50", "expected '<op> <number>'"),
        (">= fifty", "expected '<op> <number>'"),
        (">= property", "expected '<op> <number>'"),
        (">= properties x", "expected '<op> <number>'"),
        ("=> 5", "expected '<op> <number>'"),
        ("= 5", "expected '<op> <number>'"),
        ("", "expected '<op> <number>'"),
        (50, "must be a string"),
        (None, "must be a string"),
    ],
)
def test_malformed_expressions_name_the_metric(expression: object, wanted: str) -> None:
    with pytest.raises(ValidationError, match=wanted) as info:
        parse_conditions({"small_files": expression})  # type: ignore[dict-item]
    assert "'small_files'" in str(info.value)


def test_empty_or_non_mapping_conditions_are_errors() -> None:
    with pytest.raises(ValidationError, match="empty"):
        parse_conditions({})
    with pytest.raises(ValidationError, match="mapping"):
        parse_conditions([("small_files", ">= 1")])  # type: ignore[arg-type]


def test_match_is_all_or_any() -> None:
    assert check_match("all") == "all"
    assert check_match("any") == "any"
    with pytest.raises(ValidationError, match="'all' or 'any'"):
        check_match("some")


def test_evaluate_against_a_real_v2_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = firn_connection(tmp_path, monkeypatch)
    table = create_table(catalog, format_version=2, commits=3)
    health = table.health().to_dict()
    assert health["data_files"] == 3
    conditions = parse_conditions({"data_files": ">= 3", "delete_ratio": "> 0.1"})

    both = evaluate(health, conditions, "all")
    assert not both.satisfied and not both.impossible
    assert [str(c) for c in both.met] == ["data_files >= 3"]
    either = evaluate(health, conditions, "any")
    assert either.satisfied
    assert "data_files = 3 (wants >= 3: ok)" in either.describe(conditions, health)
    assert "delete_ratio = 0 (wants > 0.1: not yet)" in either.describe(conditions, health)

    # Every file of this table is small (a few hundred bytes against a 512 MB target).
    assert metric_value(health, "small_file_ratio") == 1.0
    assert evaluate(health, parse_conditions({"small_file_ratio": "== 1"}), "all").satisfied


def test_root_metrics_are_undefined_below_v4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = firn_connection(tmp_path, monkeypatch)
    v2 = create_table(catalog, "db.v2", format_version=2).health().to_dict()
    v4 = create_table(catalog, "db.v4", format_version=4).health().to_dict()
    root = parse_conditions({"root_data_files": ">= 1"})
    mixed = parse_conditions({"root_data_files": ">= 1", "data_files": ">= 1"})

    assert evaluate(v4, root, "all").satisfied
    on_v2 = evaluate(v2, root, "all")
    assert not on_v2.satisfied and on_v2.impossible
    assert [c.metric for c in on_v2.undefined] == ["root_data_files"]
    # "any" stays possible (and here holds) through the defined metric; "all" cannot hold.
    assert evaluate(v2, mixed, "any").satisfied
    assert not evaluate(v2, mixed, "any").impossible
    assert evaluate(v2, mixed, "all").impossible
