"""Firn table assets: URIs, names, and Airflow's own URI sanitizing through our handler."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

import pytest
from airflow.sdk import Asset

from firn.errors import ValidationError
from firn_airflow.assets import (
    asset_name,
    create_asset,
    firn_asset,
    is_maintenance_uri,
    maintenance_asset,
    maintenance_asset_of,
    parse_asset_uri,
    sanitize_uri,
    table_asset_uri,
)

pytestmark = pytest.mark.airflow


def test_firn_asset_has_name_uri_and_group() -> None:
    asset = firn_asset("firn_default", "db.events", extra={"owner": "data"})
    assert asset.name == "firn_default.db.events"
    assert asset.uri == "firn://firn_default/db/events"
    assert asset.group == "firn"
    assert asset.extra == {"owner": "data"}
    assert create_asset(catalog="firn_default", table="db.events") == firn_asset("firn_default", "db.events")


def test_nested_namespaces_and_unusual_characters_round_trip() -> None:
    uri = table_asset_uri("prod", "a.b.my table/x")
    assert uri == "firn://prod/a/b/my%20table%2Fx"
    assert parse_asset_uri(uri) == ("prod", "a.b.my table/x")
    assert asset_name("prod", "a.b.t") == "prod.a.b.t"
    # Airflow keeps the encoded URI as is (the handler accepts it).
    assert Asset(name="n", uri=uri).uri == uri


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("firn://firn_default/db/events/", "firn://firn_default/db/events"),
        ("FIRN://firn_default/db/events#frag", "firn://firn_default/db/events"),
        ("firn://user:pw@firn_default/db/events", "firn://firn_default/db/events"),
    ],
)
def test_airflow_normalizes_firn_uris_through_the_handler(uri: str, expected: str) -> None:
    # Airflow drops user info from asset URIs, with a warning.
    with pytest.warns(UserWarning, match="password") if "pw@" in uri else contextlib.nullcontext():
        assert Asset(name="n", uri=uri).uri == expected


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("firn://firn_default/db", "must name a namespace and a table"),
        ("firn://firn_default/db//events", "must name a namespace and a table"),
        ("firn:///db/events", "name a catalog"),
        ("firn://firn_default:99/db/events", "cannot have a port"),
        ("firn://firn_default/db/events?x=1", "takes no query"),
        ("firn://firn_default/db/events?kind=data", "takes no query"),
    ],
)
def test_invalid_firn_uris_are_refused_by_airflow(uri: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Asset(name="n", uri=uri)
    with pytest.raises(ValueError, match=problem):
        sanitize_uri(urlsplit(uri))


@pytest.mark.parametrize(
    ("catalog", "table"),
    [("firn_default", "events"), ("firn_default", "db..t"), ("", "db.t"), ("a/b", "db.t"), ("c", "")],
)
def test_bad_catalog_or_table_names_are_validation_errors(catalog: str, table: str) -> None:
    with pytest.raises(ValidationError):
        firn_asset(catalog, table)


def test_parse_refuses_other_schemes() -> None:
    with pytest.raises(ValidationError, match="not a firn:// asset URI"):
        parse_asset_uri("s3://bucket/db/t")
    with pytest.raises(ValidationError, match="must name a namespace and a table"):
        parse_asset_uri("firn://c/only")


def test_the_maintenance_asset_is_apart_from_the_tables_asset() -> None:
    data = firn_asset("firn_default", "db.events")
    maintenance = maintenance_asset("firn_default", "db.events")
    assert maintenance.uri == "firn://firn_default/db/events?kind=maintenance"
    assert maintenance.name == "firn_default.db.events:maintenance"
    assert maintenance.group == "firn"
    assert (maintenance.uri, maintenance.name) != (data.uri, data.name)
    assert is_maintenance_uri(maintenance.uri) and not is_maintenance_uri(data.uri)
    # Both name the same table; Airflow's sanitizer (through our handler) keeps the query.
    assert parse_asset_uri(maintenance.uri) == parse_asset_uri(data.uri) == ("firn_default", "db.events")
    assert Asset(name="m", uri=maintenance.uri).uri == maintenance.uri
    assert maintenance_asset_of(data) == maintenance
    assert maintenance_asset_of(maintenance) == maintenance
