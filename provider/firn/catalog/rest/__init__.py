"""The Iceberg REST catalog client (:class:`RestCatalog`); the protocol in :mod:`.protocol`."""

from firn.catalog.rest.catalog import RestCatalog

__all__ = ["RestCatalog"]
