"""Airflow assets for Firn tables: ``firn://<catalog>/<namespace>/<table>``.

``<catalog>`` names the catalog inside this Airflow deployment; the provider's tasks use the
Firn connection id, so ``firn_asset("firn_default", "db.events")`` is the asset that
maintenance on ``db.events`` through ``firn_default`` updates (and that the table-health view
reads events from). A nested namespace takes one path segment per level
(``firn://firn_default/a/b/t`` is table ``t`` in namespace ``a.b``); each segment is
percent-encoded.

Maintenance results go to an asset of their own per table, :func:`maintenance_asset`:
``firn://<catalog>/<namespace>/<table>?kind=maintenance`` (named
``<catalog>.<namespace>.<table>:maintenance``). The table's own asset carries new data only (the
ingest DAGs' outlets), so a DAG scheduled on it runs for new data and never for the table's
compaction; a DAG that wants to follow maintenance schedules on the maintenance asset.

Registered with Airflow as the ``firn`` scheme's URI handler (:func:`sanitize_uri`) and asset
factory (:func:`create_asset`) in :mod:`firn_airflow.get_provider_info`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, quote, unquote, urlsplit

from airflow.sdk import Asset

from firn.errors import ValidationError
from firn_airflow.constants import ASSET_GROUP, ASSET_SCHEME, MAINTENANCE_KIND

# The query that marks a table's maintenance asset (the only query a firn:// URI may have).
MAINTENANCE_QUERY = f"kind={MAINTENANCE_KIND}"

if TYPE_CHECKING:
    from collections.abc import Mapping


def _split_table(table: str) -> tuple[str, ...]:
    parts = tuple(table.split("."))
    if len(parts) < 2 or any(not p.strip() for p in parts):
        raise ValidationError(f"table name {table!r} must be '<namespace>.<table>', e.g. 'db.events'")
    return parts


def table_asset_uri(catalog: str, table: str) -> str:
    """``firn://<catalog>/<namespace...>/<table>`` for ``table`` (``"db.events"``) in ``catalog``."""
    if not catalog or not catalog.strip():
        raise ValidationError("a Firn asset needs a catalog (the Firn connection id)")
    if any(c in catalog for c in "/?#@:"):
        raise ValidationError(f"catalog {catalog!r} cannot be used in an asset URI (it contains '/?#@:')")
    path = "/".join(quote(part, safe="") for part in _split_table(table))
    return f"{ASSET_SCHEME}://{catalog}/{path}"


def maintenance_asset_uri(catalog: str, table: str) -> str:
    """``firn://<catalog>/<namespace...>/<table>?kind=maintenance``: the table's maintenance asset."""
    return f"{table_asset_uri(catalog, table)}?{MAINTENANCE_QUERY}"


def is_maintenance_uri(uri: str) -> bool:
    """Whether ``uri`` is a table's maintenance asset (not the table's data asset)."""
    return urlsplit(uri).query == MAINTENANCE_QUERY


def parse_asset_uri(uri: str) -> tuple[str, str]:
    """``(catalog, "ns.table")`` from a ``firn://`` asset URI (a table's or its maintenance asset)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != ASSET_SCHEME:
        raise ValidationError(f"{uri!r} is not a {ASSET_SCHEME}:// asset URI")
    try:
        sanitize_uri(parts)
    except ValueError as e:
        raise ValidationError(str(e)) from None
    segments = [unquote(s) for s in parts.path.strip("/").split("/")]
    return parts.netloc, ".".join(segments)


def asset_name(catalog: str, table: str) -> str:
    """The asset's human-facing name: ``<catalog>.<namespace>.<table>``."""
    return f"{catalog}.{'.'.join(_split_table(table))}"


def firn_asset(catalog: str, table: str, *, extra: Mapping[str, Any] | None = None) -> Asset:
    """The Airflow asset for ``table`` (``"db.events"``) in ``catalog`` (usually a Firn connection id).

    ``Asset(name=..., uri=...)`` by keyword: the first positional parameter is ``name``.
    """
    return Asset(
        name=asset_name(catalog, table),
        uri=table_asset_uri(catalog, table),
        group=ASSET_GROUP,
        extra=dict(extra or {}),
    )


def maintenance_asset(catalog: str, table: str, *, extra: Mapping[str, Any] | None = None) -> Asset:
    """The asset that maintenance on ``table`` in ``catalog`` records its results on.

    Apart from :func:`firn_asset` so that DAGs scheduled on the table run for new data only.
    """
    return Asset(
        name=f"{asset_name(catalog, table)}:{MAINTENANCE_KIND}",
        uri=maintenance_asset_uri(catalog, table),
        group=ASSET_GROUP,
        extra=dict(extra or {}),
    )


def maintenance_asset_of(asset: Asset) -> Asset:
    """The maintenance asset of the table whose :func:`firn_asset` is ``asset`` (itself when it
    is one already)."""
    if is_maintenance_uri(asset.uri):
        return asset
    catalog, table = parse_asset_uri(asset.uri)
    return maintenance_asset(catalog, table)


def create_asset(*, catalog: str, table: str, extra: Mapping[str, Any] | None = None) -> Asset:
    """Asset factory for the ``firn`` scheme (Airflow's hook-lineage and provider factories)."""
    return firn_asset(catalog, table, extra=extra)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's URI handler for ``firn://``: check the shape, drop a trailing slash.

    Airflow has already lower-cased the scheme, dropped user info and fragments and sorted the
    query. Raises ``ValueError`` (what Airflow expects) for a URI that names no table.
    """
    if not uri.netloc:
        raise ValueError(f"{ASSET_SCHEME}:// asset URIs name a catalog: firn://<catalog>/<namespace>/<table>")
    if ":" in uri.netloc:
        raise ValueError(f"{ASSET_SCHEME}:// asset URI {uri.geturl()!r}: the catalog part cannot have a port")
    if uri.query and uri.query != MAINTENANCE_QUERY:
        raise ValueError(
            f"{ASSET_SCHEME}:// asset URI {uri.geturl()!r} takes no query but {MAINTENANCE_QUERY!r} "
            "(the table's maintenance asset)"
        )
    path = uri.path.rstrip("/")
    segments = path.lstrip("/").split("/") if path else []
    if len(segments) < 2 or any(not s for s in segments):
        raise ValueError(
            f"{ASSET_SCHEME}:// asset URI {uri.geturl()!r} must name a namespace and a table: "
            "firn://<catalog>/<namespace>/<table>"
        )
    return uri._replace(path=path)


__all__ = [
    "MAINTENANCE_QUERY",
    "asset_name",
    "create_asset",
    "firn_asset",
    "is_maintenance_uri",
    "maintenance_asset",
    "maintenance_asset_of",
    "maintenance_asset_uri",
    "parse_asset_uri",
    "sanitize_uri",
    "table_asset_uri",
]
