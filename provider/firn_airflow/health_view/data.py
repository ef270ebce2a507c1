"""What the table-health view shows, gathered from a catalog and from Airflow's asset events.

* **Health now**: ``table.health()`` and ``table.maintenance.recommend()``, as JSON, with the
  text the page shows for each value (:mod:`firn.maintenance.present`, the formatter the CLI
  and the demo use: 24-hour UTC, durations, binary bytes; estimates as sentences). The raw
  values stay in the JSON for machines.
* **History from metadata**: one point per snapshot of the current branch, oldest first, with
  the spec's summary totals (Appendix F: ``total-data-files``, ``total-delete-files``,
  ``total-position-deletes``, ...) and V4's ``root-entries``.
* **History from maintenance**: the events of the table's maintenance asset
  ``firn://<conn_id>/<ns>/<table>?kind=maintenance`` (and of its data asset, where older
  maintenance runs recorded them); the maintenance operators put ``operation``, ``result`` and ``health`` into each event's
  ``extra`` (:mod:`firn_airflow.constants`). Events are read with the API server's own database
  session, as the view is served inside the API server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firn.errors import FirnError
from firn.maintenance.present import estimate_sentence, health_label, health_value, options_text
from firn.util import present
from firn_airflow.assets import table_asset_uri
from firn_airflow.constants import CONN_TYPE, EVENT_HEALTH, EVENT_OPERATION, EVENT_RESULT

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from firn.catalog.base import Catalog
    from firn.table.table import Table

# Snapshot-summary totals charted over time (Iceberg spec Appendix F; root-entries is V4's).
SUMMARY_TOTALS: dict[str, str] = {
    "records": "total-records",
    "data_files": "total-data-files",
    "delete_files": "total-delete-files",
    "position_deletes": "total-position-deletes",
    "equality_deletes": "total-equality-deletes",
    "files_size": "total-files-size",
    "root_entries": "root-entries",
}

MAX_EVENTS = 200
# JavaScript numbers are doubles: integers beyond 2**53 - 1 (snapshot ids are 64-bit) lose
# their last digits in the browser's JSON.parse.
MAX_SAFE_INTEGER = 2**53 - 1


# -- the table now -------------------------------------------------------------------------------
def table_health(table: Table) -> dict[str, Any]:
    """``table.health()`` as JSON (read from metadata only)."""
    return table.health().to_dict()


def table_recommendations(table: Table) -> list[dict[str, Any]]:
    """``table.maintenance.recommend()`` as JSON, in the order they would run, each with its
    estimate as a sentence and its options as Python (and the operators') keywords."""
    return [
        {
            **r.to_dict(),
            "estimate_text": estimate_sentence(r.estimate),
            "options_text": options_text(r.options, "python"),
        }
        for r in table.maintenance.recommend()
    ]


def health_display(health: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """Each field of a health dict as the page shows it: ``{"key", "label", "text"}``."""
    if health is None:
        return []
    return [{"key": k, "label": health_label(k), "text": health_value(k, v)} for k, v in health.items()]


def _result_text(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "-"
    return ", ".join(
        f"{health_label(k)} {health_value(k, v)}"
        for k, v in result.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and not k.endswith("_id")
    )


@dataclass(frozen=True)
class Outcome:
    """A value or the error that prevented it (shown on the page instead of failing it)."""

    value: Any = None
    error: str | None = None

    @classmethod
    def of(cls, fn: Any, *args: Any) -> Outcome:
        try:
            return cls(value=fn(*args))
        except FirnError as e:
            return cls(error=str(e))


def browser_safe(value: Any) -> Any:
    """``value`` (JSON data) with every integer a browser cannot hold exactly as a string, so
    ids such as ``snapshot_id`` reach the page digit for digit."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value) if abs(value) > MAX_SAFE_INTEGER else value
    if isinstance(value, Mapping):
        return {k: browser_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [browser_safe(v) for v in value]
    return value


# -- catalog ------------------------------------------------------------------------------------
def all_tables(catalog: Catalog) -> list[str]:
    """Every table of every namespace (nested ones too), as sorted dotted names."""
    names: list[str] = []
    pending: list[tuple[str, ...]] = list(catalog.list_namespaces())
    while pending:
        ns = pending.pop()
        names.extend(".".join(ident) for ident in catalog.list_tables(ns))
        pending.extend(catalog.list_namespaces(ns))
    return sorted(names)


def snapshot_history(table: Table) -> list[dict[str, Any]]:
    """One entry per snapshot of the current branch, oldest first: id, time, operation, the
    summary totals, and how many snapshots the metadata holds up to that time."""
    md = table.metadata
    lineage = []
    snap = md.current_snapshot()
    seen: set[int] = set()
    while snap is not None and snap.snapshot_id not in seen:
        seen.add(snap.snapshot_id)
        lineage.append(snap)
        snap = md.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
    times = sorted(s.timestamp_ms for s in md.snapshots)
    out = []
    for s in reversed(lineage):
        entry: dict[str, Any] = {
            "snapshot_id": s.snapshot_id,
            "timestamp_ms": s.timestamp_ms,
            "operation": s.summary.operation.value,
            "snapshots": sum(1 for t in times if t <= s.timestamp_ms),
        }
        for key, prop in SUMMARY_TOTALS.items():
            entry[key] = _int_or_none(s.summary.get(prop))
        out.append(entry)
    return out


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


# -- Airflow: connections and asset events (API server process only) ---------------------------
def firn_connection_ids(session: Session) -> list[str]:
    """Ids of ``firn`` connections in the metadata database and in ``AIRFLOW_CONN_*`` variables."""
    from airflow.models.connection import Connection
    from sqlalchemy import select

    ids = set(session.scalars(select(Connection.conn_id).where(Connection.conn_type == CONN_TYPE)))
    ids.update(_env_connection_ids(os.environ))
    return sorted(ids)


def _env_connection_ids(environ: Mapping[str, str]) -> Iterable[str]:
    for key, value in environ.items():
        if not key.startswith("AIRFLOW_CONN_"):
            continue
        conn_id = key[len("AIRFLOW_CONN_") :].lower()
        text = value.strip()
        if text.startswith("{"):
            try:
                conn_type = json.loads(text).get("conn_type")
            except (json.JSONDecodeError, AttributeError):
                continue
        else:
            conn_type = text.split(":", 1)[0]
        if conn_type == CONN_TYPE:
            yield conn_id


def maintenance_events(
    session: Session, conn_id: str, table: str, limit: int = MAX_EVENTS
) -> list[dict[str, Any]]:
    """The events of the table's maintenance asset (and of its data asset, where maintenance
    recorded them before it had an asset of its own), oldest first (at most ``limit``, the
    newest ones)."""
    from airflow.models.asset import AssetEvent, AssetModel
    from sqlalchemy import select

    from firn_airflow.assets import maintenance_asset_uri

    uris = [maintenance_asset_uri(conn_id, table), table_asset_uri(conn_id, table)]
    rows = session.execute(
        select(AssetEvent)
        .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
        .where(AssetModel.uri.in_(uris))
        .order_by(AssetEvent.timestamp.desc(), AssetEvent.id.desc())
        .limit(limit)
    ).scalars()
    events = []
    for ev in rows:
        extra = ev.extra if isinstance(ev.extra, dict) else {}
        result = extra.get(EVENT_RESULT) if isinstance(extra.get(EVENT_RESULT), dict) else None
        health = extra.get(EVENT_HEALTH) if isinstance(extra.get(EVENT_HEALTH), dict) else None
        operation = extra.get(EVENT_OPERATION) or (result or {}).get("operation")
        when = int(ev.timestamp.timestamp() * 1000)
        events.append(
            {
                "timestamp_ms": when,
                "when": present.timestamp(when),
                "result_text": _result_text(result),
                "health_text": {k: health_value(k, v) for k, v in (health or {}).items()},
                "operation": operation,
                "dag_id": ev.source_dag_id,
                "run_id": ev.source_run_id,
                "task_id": ev.source_task_id,
                "result": result,
                "health": health,
            }
        )
    events.reverse()
    return events


__all__ = [
    "MAX_EVENTS",
    "MAX_SAFE_INTEGER",
    "SUMMARY_TOTALS",
    "Outcome",
    "all_tables",
    "browser_safe",
    "firn_connection_ids",
    "health_display",
    "maintenance_events",
    "snapshot_history",
    "table_health",
    "table_recommendations",
]
