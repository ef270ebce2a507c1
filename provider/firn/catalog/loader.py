"""``load_catalog``: a catalog from a URI (``sqlite:///...``, ``postgresql://...``, ``memory://``,
``rest+http(s)://...``)."""

from __future__ import annotations

from firn.catalog.base import Catalog
from firn.catalog.base_catalog import WAREHOUSE
from firn.errors import Unsupported, ValidationError
from firn.util.secrets import mask_secrets

_SQL_BACKENDS = ("sqlite", "postgresql", "postgres")
_REST_SCHEMES = ("rest+http", "rest+https")
# ``type`` property naming the catalog kind (``type="rest"`` with an http(s):// URI).
CATALOG_TYPE = "type"


def load_catalog(
    uri: str, *, warehouse: str | None = None, name: str = "default", **properties: str
) -> Catalog:
    """Open a catalog.

    * ``sqlite:///path/to/catalog.db`` — the embedded default (a relative path is relative
      to the working directory, as in SQLAlchemy);
    * ``postgresql://user@host:5432/db`` (psycopg 3; ``postgresql+psycopg://`` also works);
    * ``memory://`` — an :class:`~firn.catalog.memory.InMemoryCatalog`. Its files live in an
      in-memory FileIO unless ``warehouse`` names real storage (a local path, ``s3://``, ...);
    * ``rest+http://host:port/base`` or ``rest+https://...`` (or an ``http(s)://`` URI with
      ``type="rest"``) — a :class:`~firn.catalog.rest.RestCatalog` for an Iceberg REST server
      whose routes are under ``<base>/v1/``. Its properties (``credential``, ``token``,
      ``oauth2-server-uri``, ``scope``, ``header.*``, ...) are named as in Iceberg Java and
      PyIceberg; ``warehouse`` is passed to the server, which may treat it as a name.

    ``warehouse`` is where new tables go (``<warehouse>/<namespace>/<table>``); a local
    relative path is made absolute; tables and views may live only inside it or inside a
    prefix listed in ``allowed-locations`` (comma-separated; :mod:`firn.catalog.confinement`).
    Other ``properties`` configure the FileIO (``s3.*``,
    ``gcs.*``) and the backend (``sqlite.busy-timeout-ms``, ``sqlite.journal-mode``, ...).
    """
    if not uri:
        raise ValidationError("a catalog URI is required, e.g. 'sqlite:///catalog.db' or 'memory://'")
    warehouse = warehouse or properties.pop(WAREHOUSE, None)
    scheme = uri.split(":", 1)[0].lower()
    kind = properties.pop(CATALOG_TYPE, "").lower()
    if scheme in _REST_SCHEMES or kind == "rest":
        from firn.catalog.rest import RestCatalog

        base_uri = uri.split("+", 1)[1] if scheme in _REST_SCHEMES else uri
        return RestCatalog(name, base_uri, warehouse=warehouse, properties=properties)
    if kind and kind not in ("sql", "memory"):
        raise Unsupported(f"unsupported catalog type {kind!r}: use 'rest', 'sql' or 'memory'")
    if scheme == "memory":
        from firn.catalog.memory import DEFAULT_MEMORY_WAREHOUSE, InMemoryCatalog
        from firn.io.pyarrow_io import load_file_io

        if warehouse and not warehouse.startswith("memory:"):
            io = load_file_io(properties, warehouse)
            return InMemoryCatalog(name, warehouse=warehouse, io=io, properties=properties)
        return InMemoryCatalog(name, warehouse=warehouse or DEFAULT_MEMORY_WAREHOUSE, properties=properties)
    if scheme.split("+", 1)[0] in _SQL_BACKENDS:
        from firn.catalog.sql import SqlCatalog

        return SqlCatalog(name, uri, warehouse=warehouse, properties=properties)
    raise Unsupported(
        f"unsupported catalog URI {mask_secrets(repr(uri))}: use sqlite:///path/to/catalog.db, postgresql://..., "
        "memory://, or rest+http(s)://host:port"
    )


__all__ = ["load_catalog"]
