"""Errors the provider raises on purpose; all derive from :class:`firn.errors.FirnError`."""

from __future__ import annotations

from firn.errors import FirnError, NotFound


class FirnConnectionError(FirnError):
    """An Airflow connection for Firn is missing, has another type, or is malformed.

    The message names the connection id and what is wrong; it never contains a secret.
    """


class FirnConnectionNotFound(FirnConnectionError, NotFound):
    """No Airflow connection has the requested id."""


__all__ = ["FirnConnectionError", "FirnConnectionNotFound"]
