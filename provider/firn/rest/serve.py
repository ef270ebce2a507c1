"""``firn serve``: run the REST catalog server (uvicorn) for a catalog URI."""

from __future__ import annotations

from collections.abc import Mapping

from firn.catalog.loader import load_catalog
from firn.rest.app import app

DEFAULT_PORT = 8181  # the port Iceberg's REST catalog examples use


def serve(
    catalog_uri: str,
    *,
    warehouse: str | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    oauth_clients: Mapping[str, str] | None = None,
    prefix: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    table_defaults: Mapping[str, str] | None = None,
    log_level: str = "info",
) -> None:
    """Open the catalog and serve it until interrupted (blocks)."""
    import uvicorn

    catalog = load_catalog(catalog_uri, warehouse=warehouse, **dict(catalog_properties or {}))
    application = app(
        catalog, token=token, oauth_clients=oauth_clients, prefix=prefix, table_defaults=table_defaults
    )
    try:
        uvicorn.run(application, host=host, port=port, log_level=log_level)
    finally:
        close = getattr(catalog, "close", None)
        if callable(close):
            close()


__all__ = ["DEFAULT_PORT", "serve"]
