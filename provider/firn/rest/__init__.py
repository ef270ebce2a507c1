"""firn.rest: an Iceberg REST catalog server for any Firn catalog (``firn serve``).

``firn.rest.app(catalog)`` is the FastAPI app; :func:`firn.rest.serve.serve` runs it with
uvicorn. The client side is :class:`firn.catalog.rest.RestCatalog`.
"""

from firn.rest.app import app

__all__ = ["app"]
