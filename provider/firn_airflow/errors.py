"""Errors the provider raises on purpose; all derive from :class:`firn.errors.FirnError`.

Each is one clear task error: the message names the table, the connection or the Spark job and
what went wrong, and is raised without a chain of wrapped causes.
"""

from __future__ import annotations

from firn.errors import FirnError, NotFound


class FirnConnectionError(FirnError):
    """An Airflow connection for Firn is missing, has another type, or is malformed.

    The message names the connection id and what is wrong; it never contains a secret.
    """


class FirnConnectionNotFound(FirnConnectionError, NotFound):
    """No Airflow connection has the requested id."""


class FirnTaskError(FirnError):
    """A maintenance task could not run as configured."""


class SparkConnectionError(FirnTaskError):
    """The Spark connection is missing or unusable, or ``spark-submit`` cannot be found."""


class SparkJobFailed(FirnTaskError):
    """The spark-submit job failed without reporting the table's own error (a killed job, a
    driver that could not start, a result file that is missing or malformed)."""


__all__ = [
    "FirnConnectionError",
    "FirnConnectionNotFound",
    "FirnTaskError",
    "SparkConnectionError",
    "SparkJobFailed",
]
