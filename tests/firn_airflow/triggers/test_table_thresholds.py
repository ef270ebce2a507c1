"""Thresholds from the table (issue 20 item 4): conditions relative to the table's own
properties, and "when recommend() lists X", parsed at DAG parse time and measured on real
SQLite-catalog tables by the sensor's poke and the trigger."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from firn.errors import ValidationError
from firn_airflow.sensors import FirnTableHealthSensor
from firn_airflow.triggers import FirnTableHealthTrigger
from firn_airflow.triggers.conditions import (
    HealthCondition,
    Recommended,
    evaluate,
    needs_recommend,
    parse_condition_set,
    parse_conditions,
    properties_needed,
)
from firn_airflow.triggers.health import measure
from firn_airflow.triggers.reader import TableReader
from tests.firn_airflow.triggers.support import (
    CONN_ID,
    assert_round_trip,
    collect_while,
    commit,
    create_table,
    firn_connection,
    run_trigger,
    watch_polls,
)

pytestmark = pytest.mark.airflow

ROOT = "commit.root.max-data-files"


def test_a_property_condition_parses_and_writes_itself_back() -> None:
    (condition,) = parse_conditions({"root_data_files": f">=  property {ROOT}"})
    assert condition == HealthCondition(metric="root_data_files", op=">=", table_property=ROOT)
    assert str(condition) == f"root_data_files >= property {ROOT}"
    assert properties_needed((condition,)) == (ROOT,)


def test_recommended_conditions_parse_and_name_the_valid_operations() -> None:
    parsed = parse_condition_set(None, ["flush_root", "flush_root", "rewrite_data_files"])
    assert parsed == (Recommended("flush_root"), Recommended("rewrite_data_files"))
    assert needs_recommend(parsed) and str(parsed[0]) == "recommend() lists flush_root"
    with pytest.raises(ValidationError, match=r"recommended='vacuum'.*valid: rewrite_deletion_vectors"):
        parse_condition_set(None, "vacuum")
    with pytest.raises(ValidationError, match='recommended="flush_root"'):
        parse_condition_set(None, None)
    with pytest.raises(ValidationError, match="recommended='compact'"):
        FirnTableHealthSensor(task_id="s", table="db.t", recommended="compact")


def measured(table_name: str, conditions: dict[str, str] | None = None, recommended: str | None = None):  # type: ignore[no-untyped-def]
    parsed = parse_condition_set(conditions, recommended)
    reader = TableReader(CONN_ID, table_name)
    try:
        result = measure(reader, properties=properties_needed(parsed), recommend=needs_recommend(parsed))
    finally:
        reader.close()
    return parsed, result


def test_a_property_threshold_follows_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), format_version=4, commits=3)
    conditions = {"root_data_files": f">= property {ROOT}"}

    # Not set: Firn's default (200).
    parsed, result = measured("db.events", conditions)
    assert result.properties == {ROOT: 200.0}
    assert result.health["root_data_files"] == 3
    assert not evaluate(result, parsed, "all").satisfied
    assert "root_data_files = 3 (wants >= 200 (property commit.root.max-data-files): not yet)" in (
        evaluate(result, parsed, "all").describe(parsed, result)
    )

    # The table's own value, read again at the next measurement.
    table.set_properties({ROOT: "3"})
    parsed, result = measured("db.events", conditions)
    assert result.properties == {ROOT: 3.0}
    assert evaluate(result, parsed, "all").satisfied
    table.set_properties({ROOT: "4"})
    parsed, result = measured("db.events", conditions)
    assert not evaluate(result, parsed, "all").satisfied


def test_an_undeclared_property_must_be_set_and_numeric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=2)
    conditions = {"data_files": ">= property team.alert.data-files"}
    with pytest.raises(ValidationError, match=r"no property 'team\.alert\.data-files'"):
        measured("db.events", conditions)
    table.set_properties({"team.alert.data-files": "two"})
    with pytest.raises(ValidationError, match="'two', not a number"):
        measured("db.events", conditions)
    table.set_properties({"team.alert.data-files": "2"})
    parsed, result = measured("db.events", conditions)
    assert evaluate(result, parsed, "all").satisfied


def test_recommended_holds_while_recommend_lists_the_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), commits=3)
    parsed, result = measured("db.events", recommended="rewrite_data_files")
    assert "rewrite_data_files" not in (result.recommended or ())  # 3 small files < 100
    assert not evaluate(result, parsed, "all").satisfied
    table.set_properties({"maintenance.compact.min-small-files": "3"})
    parsed, result = measured("db.events", recommended="rewrite_data_files")
    assert result.recommended is not None and "rewrite_data_files" in result.recommended
    assert evaluate(result, parsed, "all").satisfied
    assert [str(c) for c in evaluate(result, parsed, "all").met] == ["recommend() lists rewrite_data_files"]


def test_the_trigger_serializes_recommended_only_when_given() -> None:
    trigger = FirnTableHealthTrigger(
        table="db.events",
        conditions={"root_data_files": f">= property {ROOT}"},
        recommended="flush_root",
        match="any",
        firn_conn_id="c",
        poll_interval=1,
    )
    assert assert_round_trip(trigger) == {
        "table": "db.events",
        "conditions": {"root_data_files": f">= property {ROOT}"},
        "recommended": ["flush_root"],
        "match": "any",
        "firn_conn_id": "c",
        "poll_interval": 1.0,
    }
    only = FirnTableHealthTrigger(table="db.events", recommended=["flush_root"], firn_conn_id="c")
    assert assert_round_trip(only)["conditions"] is None


def test_the_trigger_fires_at_the_tables_own_root_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), format_version=4, commits=1)
    table.set_properties({ROOT: "3"})
    trigger = FirnTableHealthTrigger(
        table="db.events",
        conditions={"root_data_files": f">= property {ROOT}"},
        firn_conn_id=CONN_ID,
        poll_interval=0.05,
    )

    def two_more_commits() -> None:
        commit(table)
        commit(table)

    polls = watch_polls(monkeypatch)
    before, events = asyncio.run(collect_while(trigger, 1, 60, two_more_commits, polls=polls))
    assert before == []
    (event,) = events
    assert event["status"] == "success"
    assert event["met"] == [f"root_data_files >= property {ROOT}"]
    assert event["properties"] == {ROOT: 3.0}
    assert event["health"]["root_data_files"] == 3


def test_the_trigger_fires_when_recommend_lists_the_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_table(firn_connection(tmp_path, monkeypatch), format_version=4, commits=2)
    table.set_properties({ROOT: "1"})  # recommend() asks for a flush above the threshold
    (event,) = run_trigger(
        FirnTableHealthTrigger(
            table="db.events", recommended="flush_root", firn_conn_id=CONN_ID, poll_interval=0.05
        ),
        1,
        30,
    )
    assert event["status"] == "success"
    assert "flush_root" in event["recommended"]
    assert event["met"] == ["recommend() lists flush_root"]


def test_a_bad_property_value_ends_the_wait_with_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_table(firn_connection(tmp_path, monkeypatch), commits=1)
    (event,) = run_trigger(
        FirnTableHealthTrigger(
            table="db.events",
            conditions={"data_files": ">= property team.missing"},
            firn_conn_id=CONN_ID,
            poll_interval=0.05,
        ),
        1,
        30,
    )
    assert event["status"] == "error" and event["error"] == "ValidationError"
    assert "no property 'team.missing'" in event["message"]
