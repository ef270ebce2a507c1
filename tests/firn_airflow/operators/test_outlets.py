"""Outlets chosen when the DAG is parsed, and events published through the task's outlets into
Airflow's real outlet-event accessors."""

from __future__ import annotations

from pathlib import Path

import pendulum
import pytest
from airflow.sdk import DAG, Asset, AssetAlias

from firn.errors import ValidationError
from firn_airflow.assets import firn_asset, maintenance_asset
from firn_airflow.constants import EVENT_OPERATION
from firn_airflow.operators import (
    FirnExpireSnapshotsOperator,
    FirnMaintenanceOperator,
    FirnRewriteDataFilesOperator,
    maintenance_alias,
)
from firn_airflow.operators.outlets import default_outlets, is_template, publish_event

pytestmark = pytest.mark.airflow


def test_default_outlets() -> None:
    assert default_outlets("firn_default", "db.events") == [maintenance_asset("firn_default", "db.events")]
    assert default_outlets("firn_default", "{{ params.table }}") == [maintenance_alias("firn_default")]
    assert default_outlets("firn_default", None) == [maintenance_alias("firn_default")]
    assert default_outlets("{{ params.conn }}", "db.events") == [
        AssetAlias(name="firn-maintenance", group="firn")
    ]
    assert is_template("{% if x %}a{% endif %}") and not is_template("db.events")
    with pytest.raises(ValidationError, match=r"must be '<namespace>\.<table>'"):
        default_outlets("firn_default", "events")


def test_operators_declare_outlets_at_parse_time(airflow_home: Path) -> None:
    with DAG("firn_outlets", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
        named = FirnRewriteDataFilesOperator(task_id="named", table="db.events", firn_conn_id="c1")
        templated = FirnRewriteDataFilesOperator(
            task_id="templated", table="{{ params.t }}", firn_conn_id="c1"
        )
        mapped = FirnRewriteDataFilesOperator.partial(task_id="mapped", firn_conn_id="c1").expand(
            table=["db.a", "db.b"]
        )
        fixed = FirnExpireSnapshotsOperator.partial(task_id="fixed", table="db.a").expand(retain_last=[1, 2])
        planned = FirnRewriteDataFilesOperator(task_id="planned", table="db.events", dry_run=True)
        mine = Asset(name="mine", uri="s3://bucket/mine")
        custom = FirnMaintenanceOperator(task_id="custom", table="db.events", outlets=[mine])
    assert named.outlets == [maintenance_asset("c1", "db.events")]
    assert templated.outlets == [maintenance_alias("c1")]
    assert mapped.outlets == [maintenance_alias("c1")]
    assert fixed.outlets == [maintenance_asset("firn_default", "db.a")]
    assert planned.outlets == []  # a dry run changes nothing: no event, no downstream trigger
    assert custom.outlets == [mine]


def test_bad_choices_fail_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValidationError, match="execution must be one of"):
        FirnRewriteDataFilesOperator(task_id="t", table="db.t", execution="yarn")
    with pytest.raises(ValidationError, match="on_lease_held must be one of"):
        FirnRewriteDataFilesOperator(task_id="t", table="db.t", on_lease_held="retry")
    with pytest.raises(ValidationError, match="unknown maintenance operation 'vacuum'"):
        FirnMaintenanceOperator(task_id="t", table="db.t", operations=["compact", "vacuum"])
    assert FirnMaintenanceOperator(task_id="t", table="db.t", operations="expire").operations == (
        "expire_snapshots",
    )


def test_template_fields() -> None:
    assert {"table", "options", "older_than", "retain_last"} <= set(
        FirnExpireSnapshotsOperator.template_fields
    )
    assert {"table", "options"} <= set(FirnRewriteDataFilesOperator.template_fields)


def test_events_go_to_the_maintenance_asset_or_through_the_alias(airflow_home: Path) -> None:
    from airflow.sdk.execution_time.context import OutletEventAccessors

    asset = firn_asset("c1", "db.events")
    maintenance = maintenance_asset("c1", "db.events")
    extra = {EVENT_OPERATION: "flush_root"}
    events = OutletEventAccessors()
    assert publish_event(events, [maintenance], asset, extra)
    assert events[maintenance].extra == extra

    alias = maintenance_alias("c1")
    events = OutletEventAccessors()
    assert publish_event(events, [alias], asset, extra)
    [event] = events[alias].asset_alias_events
    assert event.dest_asset_key.uri == maintenance.uri == "firn://c1/db/events?kind=maintenance"
    assert event.extra == extra

    # A user who declares the table's data asset as the outlet gets the event there.
    events = OutletEventAccessors()
    assert publish_event(events, [asset], asset, extra)
    assert events[asset].extra == extra

    events = OutletEventAccessors()
    assert not publish_event(events, [firn_asset("c1", "db.other")], asset, extra)
