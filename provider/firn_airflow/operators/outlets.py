"""Per-table outlets of the maintenance operators, and the asset event each run records.

A maintenance task updates one table, and records its result on the table's **maintenance
asset**, ``maintenance_asset(firn_conn_id, table)`` (``firn://<conn>/<ns>/<table>?kind=maintenance``),
not on the table's own asset ``firn_asset(firn_conn_id, table)``. The table's asset is for new
data (the ingest DAGs' outlets): a DAG scheduled on it runs after an ingest and never because
the table was compacted, flushed or expired -- not even after its own compaction. Maintenance
history stays visible: the maintenance asset's events (the table-health view reads them), the
task's XCom, and DAGs that schedule on the maintenance asset to follow maintenance.

When the table is known while the DAG is parsed (a plain ``table="db.events"``), the task's
outlet is the maintenance asset and the run sets ``context["outlet_events"][asset].extra``.

When it is not -- a templated table (``"{{ params.table }}"``), dynamic task mapping
(``Op.partial(...).expand(table=[...])`` or ``.expand(table=list_tables.output)``), an argument
of a mapped task group -- no asset can be declared at parse time. Declaring the asset only once
the task runs does not work: Airflow records events only for assets some DAG already declared
(it logs "inactive assets" and drops the event). So such tasks declare an **asset alias** per
Firn connection, :func:`maintenance_alias`, and the run attaches the table's maintenance asset
to it (``outlet_events[alias].add(asset, extra=...)``). Airflow then records the event on that
asset -- creating it if no DAG declared it -- so the table-health view sees it exactly as for a
declared asset, and DAGs may also be scheduled on the alias (maintenance of any table of that
connection).

A user who declares ``outlets=[firn_asset(conn, table)]`` explicitly asks for the table's data
asset: the event then goes there (and re-triggers what is scheduled on it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Asset, AssetAlias

from firn_airflow.assets import maintenance_asset, maintenance_asset_of
from firn_airflow.constants import ASSET_GROUP

ALIAS_PREFIX = "firn-maintenance"


def maintenance_alias(firn_conn_id: str | None) -> AssetAlias:
    """The asset alias that maintenance on tables of ``firn_conn_id`` reports through when the
    table is known only at run time (``None``: the connection itself is mapped or templated)."""
    name = f"{ALIAS_PREFIX}:{firn_conn_id}" if firn_conn_id else ALIAS_PREFIX
    return AssetAlias(name=name, group=ASSET_GROUP)


def is_template(value: object) -> bool:
    """Jinja text, rendered only when the task runs."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def default_outlets(firn_conn_id: object, table: object) -> list[Asset | AssetAlias]:
    """``[maintenance_asset(conn, table)]`` for a table named at parse time, else the
    connection's :func:`maintenance_alias` (see the module docstring)."""
    conn = firn_conn_id if isinstance(firn_conn_id, str) and not is_template(firn_conn_id) else None
    if conn is not None and isinstance(table, str) and not is_template(table):
        return [maintenance_asset(conn, table)]
    return [maintenance_alias(conn)]


def publish_event(
    outlet_events: Any, outlets: Sequence[object], asset: Asset, extra: Mapping[str, Any]
) -> bool:
    """Record ``extra`` as the maintenance event of the table whose asset is ``asset`` (its
    :func:`~firn_airflow.assets.firn_asset`, or its maintenance asset) through the task's
    outlets: on the table's maintenance asset when it is an outlet (or on its data asset when the
    user declared that one), through every asset alias outlet otherwise (attaching the
    maintenance asset). False when no outlet can carry it (the user declared other outlets only)."""
    maintenance = maintenance_asset_of(asset)
    ours = {(maintenance.uri, maintenance.name), (asset.uri, asset.name)}
    published = False
    for outlet in outlets:
        if isinstance(outlet, Asset) and (outlet.uri, outlet.name) in ours:
            outlet_events[outlet].extra = dict(extra)
            published = True
        elif isinstance(outlet, AssetAlias):
            outlet_events[outlet].add(maintenance, extra=dict(extra))
            published = True
    return published


__all__ = ["ALIAS_PREFIX", "default_outlets", "is_template", "maintenance_alias", "publish_event"]
